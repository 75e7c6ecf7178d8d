"""tritium.ops.attention through the kernels on the CPU interpreter against torch's fp32 SDPA (run by
test_ops_attention.py in a TRITON_INTERPRET=1 process): one and two K/V blocks, causal or not, a
given sm_scale, strided inputs, and the op under torch.compile(fullgraph=True)."""
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




def test_strided_inputs():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 30, 2, 64, dtype=torch.float16).transpose(1, 2) for _ in range(3))
    _check(attention(q, k, v, causal=True), q, k, v, True, None, 2e-3)


def test_under_torch_compile_fullgraph():
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 1, 24, 64, dtype=torch.float16) for _ in range(3))
    torch._dynamo.reset()
    o = torch.compile(lambda q, k, v: attention(q, k, v, causal=False), fullgraph=True, backend="aot_eager")(q, k, v)
    _check(o, q, k, v, False, None, 2e-3)
    torch._dynamo.reset()
