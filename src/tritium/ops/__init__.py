"""Torch operators backed by tritium's kernels: ``tritium.ops.matmul`` (``torch.ops.tritium.matmul``) and
``tritium.ops.attention`` (``torch.ops.tritium.attention``); docs/torch.md lists which kernel each runs."""
from .attention import attention
from .gemm import matmul
from .trimul import trimul  # torch.ops.tritium.trimul, the fused triangle multiplicative update

__all__ = ["matmul", "attention", "trimul"]
