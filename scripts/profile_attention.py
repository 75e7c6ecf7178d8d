"""One launch of the persistent attention forward at a real size, for ncu on the GPU machine.

Usage: ncu --clock-control none -k regex:attn_fwd_persistent -c 1 --section SpeedOfLight --section WarpStateStats \
           python scripts/profile_attention.py [D] [causal|noncausal] [SEQ]
Batch x heads fill the GPU as in ``tritium bench attention`` (16384 tokens, 2048 / D heads). The kernel is
launched twice (the first compiles) and checked against SDPA.
"""
import sys

import torch

from tritium.kernels.attention import attention_forward

D = int((sys.argv[1:] or ["128"])[0])
causal = (sys.argv[2:] or ["noncausal"])[0] == "causal"
S = int((sys.argv[3:] or ["4096"])[0])
q, k, v = (torch.randn(16384 // S, 2048 // D, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
for _ in range(2):
    o, _lse = attention_forward(q, k, v, causal)
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
print(f"profile_attention d{D} {'causal' if causal else 'noncausal'} s{S}: relative error "
      f"{((o.float() - ref.float()).norm() / ref.float().norm()).item():.2e}")
