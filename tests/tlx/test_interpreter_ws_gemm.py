"""The warp-specialized persistent Hopper GEMM on the CPU interpreter against a float64 reference."""
import pytest
import torch

from interp_shim import require_interpret_mode

require_interpret_mode()

from tritium.kernels import gemm_ws_hopper as ws  # noqa: E402

# Ragged in every dimension, more tiles than programs (the persistent loop runs several tiles,
# and stages wrap around so barrier phases flip), and a single tile.
SHAPES = [(100, 70, 90), (200, 96, 136), (64, 8, 16)]


@pytest.mark.parametrize("split", [False, True], ids=["one-store", "split-epilogue"])
@pytest.mark.parametrize("group", [1, 8])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_ws_gemm_matches_float64(M, N, K, group, split):
    torch.manual_seed(M * 1000 + N + K)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    cfg = ws.Config(BM=128, BN=32, BK=32, GROUP_SIZE_M=group, NUM_STAGES=2, EPILOGUE_SPLIT=split, NUM_REGS=232)
    c = ws.matmul(a, b, cfg, num_sms=2)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert c.shape == (M, N) and torch.isfinite(c).all() and err < 2e-3, f"{M}x{N}x{K}: relative error {err:.2e}"
