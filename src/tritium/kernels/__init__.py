"""GEMM kernels written with TLX, as a TLX user writes them; ``TriMul`` (imported on first use, it needs torch)."""


def __getattr__(name: str):
    if name == "TriMul":
        from .trimul_module import TriMul
        return TriMul
    raise AttributeError(f"module 'tritium.kernels' has no attribute {name!r}")
