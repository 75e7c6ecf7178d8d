"""One small TLX attention launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_attention.py [ws|pipelined|persistent|backward] [causal|noncausal] [64|128]
(default: pipelined causal 64). The case is ragged (seq 300: three Q tiles, the last one partial; three K/V
blocks, the last one partial), so every TMA edge, both masks, the two-stage ring's wrap-around and barrier
phase flips run. ``backward`` runs tritium.ops.attention forward and backward with GQA (4 query heads over 2
KV heads, so the backward's loop over a KV head's query heads runs): the delta kernel and the backward's main
kernel (at head dim 128 with its split dQ and the consumers' named barrier), checking O, dQ, dK and dV.
"""
import sys

import torch

from tritium.kernels.attention import attention_forward
from tritium.kernels.attention_ws_hopper import attention_ws
from tritium.kernels.attention_ws_pipelined_hopper import attention_ws_pipelined
from tritium.ops import attention

S = 300
which = (sys.argv[1:] or ["pipelined"])[0]
causal = (sys.argv[2:] or ["causal"])[0] == "causal"
D = int((sys.argv[3:] or ["64"])[0])
B, H, H_KV = (1, 4, 2) if which == "backward" else (1, 2, 2)
q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
k, v = (torch.randn(B, H_KV, S, D, device="cuda", dtype=torch.float16) for _ in range(2))
refs = [x.float().requires_grad_() for x in (q, k, v)]
ref = torch.nn.functional.scaled_dot_product_attention(*refs, is_causal=causal, enable_gqa=H_KV != H)
if which == "backward":
    do = torch.randn_like(q)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    o = attention(*leaves, causal=causal, enable_gqa=True)
    o.backward(do)
    ref.backward(do.float())
    outs, refs = [o, *(x.grad for x in leaves)], [ref, *(x.grad for x in refs)]
else:
    attn = {"ws": attention_ws, "pipelined": attention_ws_pipelined,
            "persistent": lambda q, k, v, causal: attention_forward(q, k, v, causal)[0]}[which]
    outs, refs = [attn(q, k, v, causal=causal)], [ref]
torch.cuda.synchronize()
errs = [((x.float() - r).norm() / r.norm()).item() for x, r in zip(outs, refs)]
print(f"sanitize_attention {which} {'causal' if causal else 'noncausal'} {B}x{H}/{H_KV}x{S}x{D}: relative error "
      + ", ".join(f"{n} {e:.2e}" for n, e in zip(("o", "dq", "dk", "dv"), errs)))
sys.exit(0 if max(errs) < 2e-3 else 1)
