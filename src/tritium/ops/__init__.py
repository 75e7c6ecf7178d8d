"""Torch operators backed by tritium's kernels: ``tritium.ops.matmul`` (``torch.ops.tritium.matmul``)."""
from .gemm import matmul

__all__ = ["matmul"]
