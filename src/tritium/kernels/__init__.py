"""GEMM kernels written with TLX, as a TLX user writes them."""
