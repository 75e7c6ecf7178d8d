"""Torch operators backed by tritium's kernels: ``tritium.ops.matmul`` (``torch.ops.tritium.matmul``) and
``tritium.ops.attention`` (``torch.ops.tritium.attention``); docs/torch.md lists which kernel each runs.
``use_kernels`` lets torch.compile pick them where they are faster (:mod:`tritium.ops.inductor`)."""
from .attention import attention
from .gemm import matmul
from .inductor import use_kernels
from .trimul import trimul  # torch.ops.tritium.trimul, the fused triangle multiplicative update

__all__ = ["matmul", "attention", "trimul", "use_kernels"]
