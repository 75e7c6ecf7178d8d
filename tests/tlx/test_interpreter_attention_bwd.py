"""The flash-attention backward kernels on the CPU interpreter against fp32 torch autograd (the logsumexp the
kernel reads is computed with torch, base 2)."""
import math

import pytest
import torch

from interp_shim import require_interpret_mode

require_interpret_mode()

from tritium.kernels import attention_bwd_hopper as bwd  # noqa: E402


def reference(q, k, v, do, causal):
    """(o, lse in base 2, dq, dk, dv) in fp32, GQA by repeating K/V heads (the kernel never does)."""
    q, k, v = (x.detach().float().requires_grad_() for x in (q, k, v))
    s = (q @ k.repeat_interleave(q.shape[1] // k.shape[1], 1).transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    o = torch.softmax(s, -1) @ v.repeat_interleave(q.shape[1] // k.shape[1], 1)
    o.backward(do.float())
    return o.detach(), (torch.logsumexp(s, -1) / math.log(2)).detach(), q.grad, k.grad, v.grad


def rel_err(x, ref):
    """Relative Frobenius error; a reference of norm < 1e-3 (seq 1: dq, dk are 0) is compared absolutely."""
    return ((x.float() - ref).norm() / ref.norm().clamp_min(1e-3)).item()


# (batch, q heads, kv heads, seq, head dim, causal, dtype): a ragged causal head-64 case (diagonal and
# padded keys masked, a partial Q block); GQA 4/2 at head dim 128 with two K/V blocks per head (split dQ,
# the Q/dO ring wrapping around over the group's heads); one row.
CASES = [(1, 2, 2, 77, 64, True, torch.float16), (1, 4, 2, 130, 128, False, torch.bfloat16),
         (2, 1, 1, 1, 128, True, torch.float16)]


@pytest.mark.parametrize("B,Hq,Hkv,S,D,causal,dtype", CASES,
                         ids=[f"{c[0]}x{c[1]}/{c[2]}x{c[3]}x{c[4]}-{'causal' if c[5] else 'full'}-{str(c[6])[6:]}"
                              for c in CASES])
def test_backward_matches_fp32_autograd(B, Hq, Hkv, S, D, causal, dtype):
    gen = torch.Generator().manual_seed(S + D + Hq)
    q, do = (torch.randn(B, Hq, S, D, dtype=dtype, generator=gen) for _ in range(2))
    k, v = (torch.randn(B, Hkv, S, D, dtype=dtype, generator=gen) for _ in range(2))
    o, lse, *grads = reference(q, k, v, do, causal)
    out = bwd.attention_bwd(q, k, v, o.to(dtype), lse, do, causal=causal)
    for name, x, ref, like in zip(("dq", "dk", "dv"), out, grads, (q, k, v)):
        assert x.shape == like.shape and x.dtype == dtype, name
        assert rel_err(x, ref) <= 1e-2, f"{name}: relative error {rel_err(x, ref):.2e}"


def test_lse_of_another_shape_is_refused():
    q = torch.zeros(1, 2, 8, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"attention_bwd: lse must be a float32 tensor of shape \(1, 2, 8\) on cpu, "
                                         r"got torch.float16"):
        bwd.attention_bwd(q, q, q, q, torch.zeros(1, 2, 8, dtype=torch.float16), q, causal=False)
    with pytest.raises(ValueError, match=r"attention_bwd: lse must be a float32 tensor of shape \(1, 2, 8\) on cpu, "
                                         r"got torch.float32 \(2, 8\)"):
        bwd.attention_bwd(q, q, q, q, torch.zeros(2, 8), q, causal=False)
