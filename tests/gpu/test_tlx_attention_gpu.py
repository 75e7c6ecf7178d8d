"""The warp-specialized TLX flash-attention kernels on a real GPU: fresh random data against torch fp32 SDPA."""
import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import attention_ws_hopper as ws  # noqa: E402
from tritium.kernels import attention_ws_pipelined_hopper as pp  # noqa: E402
from tritium.kernels.attention import attention  # noqa: E402

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

VARIANTS = {"ws": ws.attention_ws, "pipelined": pp.attention_ws_pipelined, "attention": attention}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {torch.float16: 2e-3, torch.bfloat16: 1e-2}
# (batch, heads, seq): square tiles, ragged (partial Q tile and K/V block), one row, one block,
# more blocks than stages, and a long one.
SHAPES = [(2, 3, 1024), (1, 2, 1000), (3, 2, 1), (1, 4, 128), (2, 2, 257), (1, 2, 4096)]


def check(fn, B, H, S, D, dtype, causal, q_layout="bhsd"):
    gen = torch.Generator(device="cuda").manual_seed(B * 1000 + H * 100 + S + D + causal)
    if q_layout == "offset":  # contiguous, but 2 bytes into a larger buffer: a base TMA cannot address
        q, k, v = (torch.randn(B * H * S * D + 1, device="cuda", dtype=dtype, generator=gen)[1:].view(B, H, S, D)
                   for _ in range(3))
    elif q_layout == "bshd":  # [B, S, H, D] memory seen as [B, H, S, D]
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
                   for _ in range(3))
    else:
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
    o = fn(q, k, v, causal=causal)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert o.shape == q.shape and o.dtype == dtype and torch.isfinite(o).all()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < TOLERANCE[dtype], f"relative error {err:.2e}"
    # Every row, the last ones of a ragged sequence included, is right (not only on average).
    row_err = ((o.float() - ref).norm(dim=-1) / ref.norm(dim=-1)).amax().item()
    assert row_err < 5 * TOLERANCE[dtype], f"worst row: relative error {row_err:.2e}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,H,S", SHAPES)
def test_attention_matches_sdpa_fp32(B, H, S, D, dtype, causal, variant):
    check(VARIANTS[variant], B, H, S, D, DTYPES[dtype], causal)


@pytest.mark.parametrize("variant", VARIANTS)
def test_strided_bshd_inputs(variant):
    check(VARIANTS[variant], 2, 4, 777, 128, torch.float16, True, q_layout="bshd")


def test_misaligned_base_inputs_through_the_op():
    from tritium.ops import attention as op
    check(op, 1, 2, 300, 64, torch.bfloat16, False, q_layout="offset")


def test_results_are_deterministic_and_leave_inputs_alone():
    q, k, v = (torch.randn(2, 4, 1000, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    before = [x.clone() for x in (q, k, v)]
    o1, o2 = attention(q, k, v, causal=True), attention(q, k, v, causal=True)
    assert torch.equal(o1, o2) and all(torch.equal(a, b) for a, b in zip(before, (q, k, v)))
