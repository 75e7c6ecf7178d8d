"""tritium.ops.attention through the kernels on the CPU interpreter against torch's fp32 SDPA (run by
test_ops_attention.py in a TRITON_INTERPRET=1 process): one and two K/V blocks, causal or not, a
given sm_scale, strided inputs; its gradients (GQA, ragged) against fp32 SDPA's, gradcheck in float64, and
the op's forward and backward under torch.compile(fullgraph=True)."""
import os

import pytest

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs TRITON_INTERPRET=1 before triton is imported; test_ops_attention.py runs this module "
                "in such a process", allow_module_level=True)

import torch  # noqa: E402

from tritium.ops import attention  # noqa: E402


def _check(o, q, k, v, causal, sm_scale, tol):
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                                           scale=sm_scale)
    assert o.shape == q.shape and o.dtype == q.dtype and o.is_contiguous()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < tol, f"relative error {err:.2e}"


@pytest.mark.parametrize("shape,causal,dtype,sm_scale", [
    ((1, 2, 20, 64), True, torch.float16, None),  # one K/V block
    ((1, 1, 150, 64), False, torch.bfloat16, 0.3),  # two K/V blocks
])
def test_op_matches_sdpa(shape, causal, dtype, sm_scale):
    torch.manual_seed(sum(shape))
    q, k, v = (torch.randn(shape, dtype=dtype) for _ in range(3))
    o = attention(q, k, v, causal=causal, sm_scale=sm_scale)
    _check(o, q, k, v, causal, sm_scale, 2e-3 if dtype == torch.float16 else 1e-2)


def test_eager_calls_check_the_flags_the_dispatcher_would():
    """An eager call without gradients skips the dispatcher (registration.direct_ok), so the op checks the types of
    its non-tensor arguments itself, naming each."""
    q = torch.randn(1, 1, 16, 64, dtype=torch.float16)
    for kwargs, name in (({"causal": "yes"}, "causal"), ({"enable_gqa": 1}, "enable_gqa"),
                         ({"sm_scale": "0.125"}, "sm_scale"), ({"sm_scale": True}, "sm_scale")):
        with pytest.raises(TypeError, match=f"tritium.ops.attention: {name} must be a"):
            attention(q, q, q, **kwargs)


def test_strided_inputs():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 30, 2, 64, dtype=torch.float16).transpose(1, 2) for _ in range(3))
    _check(attention(q, k, v, causal=True), q, k, v, True, None, 2e-3)


def _grads(fn, q, k, v, grad_out):
    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    o = fn(q, k, v)
    o.backward(grad_out)
    return o, q.grad, k.grad, v.grad


def _rel(x, ref):
    return ((x.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("shape,kv_heads,causal,dtype", [
    ((1, 4, 77, 64), 2, True, torch.float16),  # GQA 4/2, ragged: a partial Q block, padded keys
    ((1, 1, 70, 128), 1, False, torch.bfloat16),  # head dim 128 (dQ's columns split between the consumers)
])
def test_gradients_match_fp32_sdpa(shape, kv_heads, causal, dtype):
    gen = torch.Generator().manual_seed(sum(shape))
    B, H, S, D = shape
    q, grad_out = (torch.randn(shape, dtype=dtype, generator=gen) for _ in range(2))
    k, v = (torch.randn(B, kv_heads, S, D, dtype=dtype, generator=gen) for _ in range(2))
    gqa = kv_heads != H
    got = _grads(lambda q, k, v: attention(q, k, v, causal=causal, enable_gqa=gqa), q, k, v, grad_out)
    ref = _grads(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                                  enable_gqa=gqa),
                 q.float(), k.float(), v.float(), grad_out.float())
    for name, x, r, like in zip(("o", "dq", "dk", "dv"), got, ref, (q, q, k, v)):
        assert x.shape == like.shape and x.dtype == dtype, name
        assert _rel(x, r) <= 1e-2, f"{name}: relative error {_rel(x, r):.2e}"


def test_gradcheck_float64():
    """Through the forward and backward kernels (fp32 accumulation inside), in gradcheck's fast mode: a few
    directional derivatives instead of the full Jacobian, which would take one backward per output element."""
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 5, 64, dtype=torch.float64, generator=gen, requires_grad=True)
    k, v = (torch.randn(1, 1, 5, 64, dtype=torch.float64, generator=gen, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda q, k, v: attention(q, k, v, causal=True, enable_gqa=True), (q, k, v),
                                    eps=1e-4, atol=1e-4, rtol=1e-3, fast_mode=True)


def test_forward_and_backward_under_torch_compile_fullgraph():
    torch.manual_seed(4)
    q, k, v, grad_out = (torch.randn(1, 1, 24, 64, dtype=torch.float16) for _ in range(4))
    torch._dynamo.reset()
    fn = torch.compile(lambda q, k, v: attention(q, k, v, causal=True), fullgraph=True, backend="aot_eager")
    got = _grads(fn, q, k, v, grad_out)
    torch._dynamo.reset()
    ref = _grads(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                 q.float(), k.float(), v.float(), grad_out.float())
    for name, x, r in zip(("o", "dq", "dk", "dv"), got, ref):
        assert _rel(x, r) <= 1e-2, f"{name}: relative error {_rel(x, r):.2e}"
