"""tritium.ops.scaled_matmul on a Hopper GPU: FP8 numerics against the fp32 product of the dequantised inputs
(relative error at most 2e-2) for every FP8 plan on ragged shapes, per-tensor and per-row/column scales,
both layouts of B, the direct launch after the JIT one, agreement with torch._scaled_mm, torch.compile."""
import pytest

torch = pytest.importorskip("torch")

from tritium.ops import launch, plans, scaled_gemm, scaled_matmul  # noqa: E402

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

RAGGED = [(1, 1, 1), (1000, 1000, 1000), (4097, 4095, 513), (300, 200, 16), (77, 5000, 3000), (128, 13312, 2048)]


def problem(M, N, K, vectors, b_column_major, device="cuda"):
    """Fresh random FP8 operands (unit-scale data through e4m3) and positive fp32 scales."""
    gen = torch.Generator(device=device).manual_seed(M * 7 + N * 3 + K + vectors)
    a = torch.randn(M, K, device=device, generator=gen).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=device, generator=gen).to(torch.float8_e4m3fn).t() if b_column_major
         else torch.randn(K, N, device=device, generator=gen).to(torch.float8_e4m3fn))
    if vectors:
        sa = torch.rand(M, 1, device=device, generator=gen) + 0.5
        sb = torch.rand(1, N, device=device, generator=gen) + 0.5
    else:
        sa, sb = torch.tensor(0.5, device=device), torch.tensor([1.5], device=device)
    return a, b, sa, sb


def rel_err(c, a, b, sa, sb) -> float:
    ref = (a.float() @ b.float()) * sa * sb
    return ((c.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("b_column_major", [True, False], ids=["B-column-major", "B-row-major"])
@pytest.mark.parametrize("vectors", [False, True], ids=["per-tensor", "per-row-col"])
@pytest.mark.parametrize("M,N,K", RAGGED)
def test_matches_the_dequantised_reference(M, N, K, vectors, b_column_major):
    a, b, sa, sb = problem(M, N, K, vectors, b_column_major)
    for out_dtype in (torch.bfloat16, torch.float16, torch.bfloat16):  # the last: a direct launch
        c = scaled_matmul(a, b, sa, sb, out_dtype=out_dtype)
        assert c.shape == (M, N) and c.dtype == out_dtype and torch.isfinite(c).all()
        assert rel_err(c, a, b, sa, sb) <= 2e-2


@pytest.mark.parametrize("plan", plans.FP8_SWEEP, ids=lambda p: f"{p.config.BM}x{p.config.BN}-s{p.config.NUM_STAGES}"
                                                                   f"-e{p.config.EPILOGUE_SUBTILES}-g{p.config.GROUP_SIZE_M}")
@pytest.mark.parametrize("M,N,K", [(1000, 1000, 1000), (4097, 4095, 513)])
def test_every_fp8_plan(plan, M, N, K):
    a, b, sa, sb = problem(M, N, K, True, True)
    call = launch.Call(plan, a, b.t(), torch.bfloat16, {"ROW_SCALES": True, "COL_SCALES": True})
    for _ in range(2):  # JIT launch, then direct launch
        assert rel_err(call(a, b.t(), sa, sb), a, b, sa, sb) <= 2e-2


def test_agrees_with_torch_scaled_mm():
    a, b, sa, sb = problem(2048, 2048, 2048, False, True)
    ours = scaled_matmul(a, b, sa, sb).float()
    theirs = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16).float()
    assert ((ours - theirs).norm() / theirs.norm()).item() <= 1e-2


def test_torch_compile_fullgraph_inductor_and_the_dispatcher():
    a, b, sa, sb = problem(1000, 1000, 1000, True, True)
    torch._dynamo.reset()
    got = torch.compile(lambda *t: torch.relu(scaled_matmul(*t)) + 1, fullgraph=True)(a, b, sa, sb)
    ref = torch.relu((a.float() @ b.float()) * sa * sb) + 1
    assert ((got.float() - ref).norm() / ref.norm()).item() <= 2e-2
    torch._dynamo.reset()
    scaled_gemm._calls.clear()
    assert rel_err(torch.ops.tritium.scaled_matmul(a, b, sa, sb), a, b, sa, sb) <= 2e-2
