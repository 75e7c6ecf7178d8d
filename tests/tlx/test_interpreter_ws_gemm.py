"""The warp-specialized persistent Hopper GEMMs (hopper_gemm_ws, cooperative, ping-pong, dual-K) on the CPU
interpreter against a float64 reference."""
import pytest
import torch

from interp_shim import require_interpret_mode

require_interpret_mode()

from tritium.kernels import gemm_ws_cooperative_hopper as coop  # noqa: E402
from tritium.kernels import gemm_ws_dualk_hopper as dualk  # noqa: E402
from tritium.kernels import gemm_ws_hopper as ws  # noqa: E402
from tritium.kernels import gemm_ws_pingpong_hopper as pingpong  # noqa: E402
from tritium.kernels.tiles import WSConfig  # noqa: E402

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
    cfg = WSConfig(BM=128, BN=32, BK=32, GROUP_SIZE_M=group, NUM_STAGES=2, EPILOGUE_SUBTILES=2 if split else 1)
    c = ws.matmul(a, b, cfg, num_sms=2)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert c.shape == (M, N) and torch.isfinite(c).all() and err < 2e-3, f"{M}x{N}x{K}: relative error {err:.2e}"


# Small tiles so the ragged shapes span several tiles per program (2 programs): stages wrap, phases
# flip, ping-pong replicas alternate and one of them gets the extra tile; every epilogue slicing runs.
PERSISTENT = {
    "cooperative": (coop.matmul, [WSConfig(BM=128, BN=32, BK=32, NUM_STAGES=2, EPILOGUE_SUBTILES=2),
                                  WSConfig(BM=128, BN=32, BK=32, GROUP_SIZE_M=1, NUM_STAGES=3, EPILOGUE_SUBTILES=1,
                                           NUM_REGS=None)]),
    "pingpong": (pingpong.matmul, [WSConfig(BM=64, BN=32, BK=32, NUM_STAGES=2, EPILOGUE_SUBTILES=2),
                                   WSConfig(BM=64, BN=32, BK=32, GROUP_SIZE_M=1, NUM_STAGES=3, EPILOGUE_SUBTILES=4,
                                            NUM_REGS=None)]),
    "dualk": (dualk.matmul, [WSConfig(BM=64, BN=32, BK=32, NUM_STAGES=4, EPILOGUE_SUBTILES=2),
                             WSConfig(BM=64, BN=32, BK=32, GROUP_SIZE_M=1, NUM_STAGES=4, EPILOGUE_SUBTILES=4,
                                      NUM_REGS=None)]),
}


@pytest.mark.parametrize("M,N,K", [(100, 70, 90), (200, 96, 136), (128, 64, 64)])
@pytest.mark.parametrize("variant,dtype", [(0, torch.float16), (1, torch.bfloat16)], ids=["v0-fp16", "v1-bf16"])
@pytest.mark.parametrize("design", PERSISTENT)
def test_persistent_ws_gemms_match_float64(design, variant, dtype, M, N, K):
    matmul, configs = PERSISTENT[design]
    torch.manual_seed(M * 1000 + N + K)
    a, b = torch.randn(M, K, dtype=dtype), torch.randn(K, N, dtype=dtype)
    c = matmul(a, b, configs[variant], num_sms=2)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    tol = 2e-3 if dtype == torch.float16 else 1e-2  # output rounding: 2^-11 vs 2^-8 relative
    assert c.shape == (M, N) and c.dtype == dtype and err < tol, f"{M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.parametrize("M,N,K", [(100, 70, 16), (64, 8, 1), (130, 40, 160)])
def test_dualk_odd_and_single_k_steps(M, N, K):
    """Dual-K with one K step per tile (replica 1 owns none of some tiles' steps and adds a zero
    partial) and with an odd count (the replicas alternate who takes the extra step), several tiles per
    program and the shallowest ring (3 stages)."""
    torch.manual_seed(M + N + K)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    c = dualk.matmul(a, b, WSConfig(BM=64, BN=16, BK=32, GROUP_SIZE_M=2, NUM_STAGES=4, EPILOGUE_SUBTILES=1), num_sms=2)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert c.shape == (M, N) and err < 2e-3, f"{M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.parametrize("vectors", [False, True], ids=["per-tensor", "per-row-col"])
def test_fp8_gemm_matches_the_dequantised_product(vectors):
    """gemm_fp8_hopper on 2 programs, 6 tiles of 128x32 and 3 K steps of 32 on a 2-stage ring (stages wrap,
    phases flip): B read K-major from its transpose, the scales applied in the epilogue."""
    from tritium.kernels import gemm_fp8_hopper as fp8
    gen = torch.Generator().manual_seed(7)
    M, N, K = 200, 90, 80
    a = torch.randn(M, K, generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(K, N, generator=gen).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1, generator=gen) + 0.5 if vectors else torch.tensor(0.5)
    sb = torch.rand(1, N, generator=gen) + 0.5 if vectors else torch.tensor(2.0)
    cfg = WSConfig(BM=128, BN=32, BK=32, NUM_STAGES=2, EPILOGUE_SUBTILES=2)
    c = fp8.matmul(a, b, sa, sb, cfg, num_sms=2)
    ref = (a.double() @ b.double()) * sa.double() * sb.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert c.shape == (M, N) and c.dtype == torch.bfloat16 and err < 1e-2, f"relative error {err:.2e}"


@pytest.mark.parametrize("M,N,K,programs", [
    (100, 30, 320, 3),  # one tile of 10 K steps in three runs: a contributor whose run lies inside the tile
    (256, 64, 448, 3),  # 4 tiles of 14 steps on 3 programs (under two waves): all stream-K, runs of 19 steps
    (300, 70, 200, 2),  # 9 tiles on 2 programs: 6 data-parallel, 3 in runs of 11 steps (7 per tile)
])
def test_stream_k_gemm_matches_float64(M, N, K, programs):
    """gemm_streamk_hopper: data-parallel tiles, then stream-K runs walked backwards, partial tiles summed by
    the program holding their last step (the interpreter runs programs one after another, so an owner that
    waited for a later program would hang)."""
    from tritium.kernels import gemm_streamk_hopper as streamk
    torch.manual_seed(M + N + K)
    a = torch.randn(M, K, dtype=torch.bfloat16)
    b = torch.randn(K, N, dtype=torch.bfloat16)
    cfg = WSConfig(BM=128, BN=32, BK=32, NUM_STAGES=2, EPILOGUE_SUBTILES=2)
    c = streamk.matmul(a, b, cfg, num_sms=programs)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert c.shape == (M, N) and err < 1e-2, f"{M}x{N}x{K}: relative error {err:.2e}"
