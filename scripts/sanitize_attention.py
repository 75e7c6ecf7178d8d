"""One small TLX attention launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_attention.py [ws|pipelined|persistent] [causal|noncausal]   (default: pipelined causal)
The case is ragged (seq 300: three Q tiles, the last one partial; three K/V blocks, the last one
partial), so every TMA edge, both masks, the two-stage ring's wrap-around and barrier phase flips run.
"""
import sys

import torch

from tritium.kernels.attention import attention_forward
from tritium.kernels.attention_ws_hopper import attention_ws
from tritium.kernels.attention_ws_pipelined_hopper import attention_ws_pipelined

B, H, S, D = 1, 2, 300, 64
which = (sys.argv[1:] or ["pipelined"])[0]
causal = (sys.argv[2:] or ["causal"])[0] == "causal"
attn = {"ws": attention_ws, "pipelined": attention_ws_pipelined,
        "persistent": lambda q, k, v, causal: attention_forward(q, k, v, causal)[0]}[which]
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
o = attn(q, k, v, causal=causal)
torch.cuda.synchronize()
ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
err = ((o.float() - ref).norm() / ref.norm()).item()
print(f"sanitize_attention {which} {'causal' if causal else 'noncausal'} {B}x{H}x{S}x{D}: relative error {err:.2e}")
sys.exit(0 if err < 2e-3 else 1)
