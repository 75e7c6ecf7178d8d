"""tritium.ops.attention's gradients on a real GPU: fresh random data against torch fp32 SDPA's (O, dQ, dK, dV), ragged
sequence lengths, both head dims and dtypes, causal or not, and GQA."""
import pytest

torch = pytest.importorskip("torch")

from tritium.ops import attention  # noqa: E402

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def rel_err(x, ref) -> float:
    """Relative Frobenius error; a reference of norm < 1e-3 (seq 1: dq and dk are 0) is compared absolutely."""
    return ((x.float() - ref).norm() / ref.norm().clamp_min(1e-3)).item()


def check(B, Hq, Hkv, S, D, dtype, causal):
    gen = torch.Generator(device="cuda").manual_seed(B * 1000 + Hq * 100 + Hkv * 10 + S + D + causal)
    q, do = (torch.randn(B, Hq, S, D, device="cuda", dtype=dtype, generator=gen) for _ in range(2))
    k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=dtype, generator=gen) for _ in range(2))
    inputs = [x.clone() for x in (q, k, v, do)]
    gqa = Hkv != Hq
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    o = attention(*leaves, causal=causal, enable_gqa=gqa)
    o.backward(do)
    torch.cuda.synchronize()
    ref_leaves = [x.float().requires_grad_() for x in (q, k, v)]
    ref = torch.nn.functional.scaled_dot_product_attention(*ref_leaves, is_causal=causal, enable_gqa=gqa)
    ref.backward(do.float())
    for name, x, r, like in zip(("o", "dq", "dk", "dv"), (o, *(t.grad for t in leaves)),
                                (ref, *(t.grad for t in ref_leaves)), (q, q, k, v)):
        assert x.shape == like.shape and x.dtype == dtype and torch.isfinite(x).all(), name
        assert rel_err(x, r) <= 1e-2, f"{name}: relative error {rel_err(x, r):.2e}"
    assert all(torch.equal(a, b) for a, b in zip(inputs, (q, k, v, do)))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("S", [1, 77, 1000, 4097])
def test_gradients_match_sdpa_fp32(S, dtype, D, causal):
    check(1, 2, 2, S, D, DTYPES[dtype], causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("S", [1000, 4096])
def test_gqa_32_over_8_gradients(S, causal):
    """Each KV head's dK and dV summed over its four query heads inside the kernel."""
    check(1, 32, 8, S, 128, torch.bfloat16, causal)


def test_strided_grad_out_and_inputs():
    """A [B, S, H, D] layout seen as [B, H, S, D] and an expanded (stride-0) dO, as ``o.sum().backward()`` gives."""
    q, k, v = (torch.randn(2, 300, 4, 64, device="cuda", dtype=torch.float16).transpose(1, 2).requires_grad_()
               for _ in range(3))
    attention(q, k, v, causal=True).sum().backward()
    ref_leaves = [x.detach().float().requires_grad_() for x in (q, k, v)]
    torch.nn.functional.scaled_dot_product_attention(*ref_leaves, is_causal=True).sum().backward()
    for x, r in zip((q, k, v), ref_leaves):
        assert rel_err(x.grad, r.grad) <= 1e-2
