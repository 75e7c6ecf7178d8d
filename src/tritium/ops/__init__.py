"""Torch operators backed by tritium's kernels: ``tritium.ops.matmul`` (``torch.ops.tritium.matmul``),
``tritium.ops.scaled_matmul`` (``torch.ops.tritium.scaled_matmul``, FP8) and ``tritium.ops.attention`` (``torch.ops.tritium.attention``), ``tritium.ops.trimul`` and its module ``TriMul``; docs/torch.md lists which kernel each runs.
``use_kernels`` lets torch.compile pick them where they are faster (:mod:`tritium.ops.inductor`)."""
import logging as _logging

from .attention import attention
from .gemm import matmul
from .inductor import use_kernels
from .scaled_gemm import scaled_matmul
from .trimul import trimul  # torch.ops.tritium.trimul, the fused triangle multiplicative update
from .trimul_module import TriMul  # its nn.Module, state_dict-compatible with the reference


class _OwnArgumentErrors(_logging.Filter):
    """Drops torch's log of a TypeError that an op's fake implementation raised while tracing (a dtype error
    naming the argument): torch raises it again right after, and the log adds 28 lines of its own frames."""

    def filter(self, record: _logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, TypeError) and str(error).startswith("tritium.ops."))


_logging.getLogger("torch._subclasses.fake_tensor").addFilter(_OwnArgumentErrors())

__all__ = ["matmul", "scaled_matmul", "attention", "trimul", "TriMul", "use_kernels"]
