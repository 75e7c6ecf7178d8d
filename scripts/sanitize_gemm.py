"""One small TLX GEMM launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_gemm.py [KERNEL] [programs]   (default: pipelined)
KERNEL: pipelined, small (the pipelined kernel with tritium.ops' small-problem tile), or a persistent
warp-specialized GEMM: ws, coop (cooperative), pingpong, splitk (3 K slices asked, 2 run: K has 4 steps), dualk
(K has 4 steps of 64, so each replica takes 2 per tile, on the shallowest ring of 3 stages); with the
suffix ``-noregs`` these leave register counts to the compiler (no setmaxnreg). ``programs`` caps the
persistent grid (default 2).
"""
import sys

import torch

from tritium.kernels import gemm_pipelined_hopper as hopper
from tritium.kernels import gemm_splitk_hopper as splitk
from tritium.kernels import gemm_ws_cooperative_hopper as coop
from tritium.kernels import gemm_ws_dualk_hopper as dualk
from tritium.kernels import gemm_ws_hopper as ws
from tritium.kernels import gemm_ws_pingpong_hopper as pingpong

M, N, K = 192, 136, 200  # ragged: every mask (pipelined) and every TMA edge (persistent) is exercised
# Small tiles, so that on 2 programs the persistent loop runs several tiles, the 2-stage ring wraps
# (K has 4 steps) and barrier phases flip: ws 4 tiles, cooperative 6, ping-pong 9 (program 0: 5, so
# its consumers alternate and consumer 0 takes the odd last tile).
PERSISTENT = {"ws": (ws, ws.Config(128, 128, 64, 8, 2, True, 232)),
              "coop": (coop, coop.Config(128, 64, 64, 8, 2, 2, 232)),
              "pingpong": (pingpong, pingpong.Config(64, 64, 64, 8, 2, 2, 232)),
              "splitk": (splitk, splitk.Config(128, 64, 64, 8, 2, 2, 232, 3)),  # 6 tiles x 2 K slices (4 steps)
              "dualk": (dualk, dualk.Config(64, 64, 64, 8, 4, 2, 232))}  # 9 tiles: the partial buffer is reused

a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
which = (sys.argv[1:] or ["pipelined"])[0]
design = which.removesuffix("-noregs")
if design in PERSISTENT:
    module, cfg = PERSISTENT[design]
    if which.endswith("-noregs"):
        cfg = cfg._replace(NUM_REGS=None)
    c = module.matmul(a, b, cfg, num_sms=int(sys.argv[2]) if len(sys.argv) > 2 else 2)
elif which == "pipelined":
    c = hopper.matmul(a, b, hopper.SMALL)
elif which == "small":
    from tritium.ops.plans import SMALL_TILE
    c = hopper.matmul(a, b, SMALL_TILE)
else:
    sys.exit(f"sanitize_gemm: unknown kernel {which!r}; use pipelined, small or one of {sorted(PERSISTENT)} "
             "(optionally with -noregs)")
torch.cuda.synchronize()
ref = a.float() @ b.float()
err = ((c.float() - ref).norm() / ref.norm()).item()
print(f"sanitize_gemm {which} {M}x{N}x{K}: relative error {err:.2e}")
sys.exit(0 if err < 2e-3 else 1)
