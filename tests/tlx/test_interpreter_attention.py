"""The warp-specialized flash-attention kernels on the CPU interpreter against torch fp32 SDPA."""
import math

import pytest
import torch

from interp_shim import require_interpret_mode

require_interpret_mode()

from tritium.kernels import attention_persistent_hopper as ph  # noqa: E402
from tritium.kernels import attention_ws_hopper as ws  # noqa: E402
from tritium.kernels import attention_ws_pipelined_hopper as pp  # noqa: E402
from tritium.kernels.attention import attention  # noqa: E402

VARIANTS = {"ws": ws.attention_ws, "pipelined": pp.attention_ws_pipelined}
TOLERANCE = {torch.float16: 2e-3, torch.bfloat16: 1e-2}


def check(fn, shape, causal, dtype, sm_scale=None, **kwargs):
    torch.manual_seed(sum(shape) + causal)
    q, k, v = (torch.randn(shape, dtype=dtype) for _ in range(3))
    o = fn(q, k, v, causal=causal, sm_scale=sm_scale, **kwargs)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                                           scale=sm_scale)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert o.shape == q.shape and o.dtype == dtype and torch.isfinite(o).all()
    assert err < TOLERANCE[dtype], f"relative error {err:.2e}"


# Small K/V blocks so that a short sequence still runs several: the ring wraps around (barrier
# phases flip), the ragged last block and the causal diagonal take the masked loop, and seq 300
# has three Q tiles, the last one partial (TMA zero-fills and clips it).
CASES = [((1, 2, 100, 64), False, torch.float16, 32), ((1, 2, 300, 64), True, torch.float16, 32),
         ((2, 1, 200, 128), True, torch.bfloat16, 64), ((1, 1, 130, 64), False, torch.bfloat16, 128),
         ((1, 1, 1, 64), True, torch.float16, 32)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape, causal, dtype, block_n", CASES,
                         ids=[f"{'x'.join(map(str, c[0]))}-{'causal' if c[1] else 'full'}-{str(c[2])[6:]}-bn{c[3]}"
                              for c in CASES])
def test_attention_matches_sdpa(variant, shape, causal, dtype, block_n):
    check(VARIANTS[variant], shape, causal, dtype, config=ws.Config(128, block_n, 2, 232))


def test_strided_inputs_and_sm_scale():
    """A [B, S, H, D] tensor seen as [B, H, S, D] goes to TMA in place (4-D descriptor with its strides)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 100, 2, 64, dtype=torch.float16).transpose(1, 2) for _ in range(3))
    o = pp.attention_ws_pipelined(q, k, v, causal=True, sm_scale=0.3, config=ws.Config(128, 32, 2, 232))
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True, scale=0.3)
    assert ((o.float() - ref).norm() / ref.norm()).item() < 2e-3


@pytest.mark.parametrize("seq", [20, 150])  # one K/V block (plain kernel), two (pipelined)
def test_attention_default_configs(seq):
    check(attention, (1, 1, seq, 64), True, torch.float16)


# The persistent kernel: 4 programs under the interpreter, so each walks several units (causal pairs, the
# odd middle tile, GQA heads), and its logsumexp against torch's.
PERSISTENT = [((1, 4, 2, 300, 64), True, torch.float16, ph.PersistentConfig(BLOCK_N=32)),
              ((2, 2, 1, 200, 128), False, torch.bfloat16, ph.PersistentConfig(BLOCK_N=64, PINGPONG=False)),
              ((1, 2, 1, 450, 64), True, torch.float16,
               ph.PersistentConfig(BLOCK_M=192, BLOCK_N=128, NUM_STAGES=3, NUM_REGS=160, CONSUMERS=3, PINGPONG=False))]


@pytest.mark.parametrize("shape, causal, dtype, config", PERSISTENT,
                         ids=["gqa-causal-pingpong", "gqa-full-free", "three-consumers-causal"])
def test_persistent_kernel_and_its_logsumexp(shape, causal, dtype, config):
    B, H, HK, S, D = shape
    torch.manual_seed(S)
    q = torch.randn(B, H, S, D, dtype=dtype)
    k, v = (torch.randn(B, HK, S, D, dtype=dtype) for _ in range(2))
    o, lse = ph.forward(q, k, v, causal, None, config)
    kr, vr = (x.float().repeat_interleave(H // HK, 1) for x in (k, v))
    scores = q.float() @ kr.transpose(-1, -2) / D ** 0.5
    if causal:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    ref = torch.softmax(scores, -1) @ vr
    assert ((o.float() - ref).norm() / ref.norm()).item() < TOLERANCE[dtype]
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1) / math.log(2), rtol=0, atol=1e-4)
