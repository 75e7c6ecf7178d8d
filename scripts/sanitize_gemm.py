"""One small TLX GEMM launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_gemm.py [KERNEL] [programs]   (default: pipelined)
KERNEL: pipelined, small (the pipelined kernel with tritium.ops' small-problem tile), or a persistent
warp-specialized GEMM: ws, coop (cooperative), pingpong, splitk (3 K slices asked, 2 run: K has 4 steps), streamk
(the stream-K candidate, 4 programs by default), dualk
(K has 4 steps of 64, so each replica takes 2 per tile, on the shallowest ring of 3 stages); with the
suffix ``-noregs`` these leave register counts to the compiler (no setmaxnreg). ``fp8`` and ``fp8-rows``:
the FP8 kernel (gemm_fp8_hopper, tritium.ops.scaled_matmul's) with per-tensor or per-row/column scales, 6
tiles of 128x64 and 2 K steps of 128 on a 2-stage ring, B read K-major from its transpose. ``programs`` sets
the persistent grid (default 2; streamk 4).
"""
import sys
from dataclasses import replace

import torch

from tritium.kernels import gemm_fp8_hopper as fp8
from tritium.kernels import gemm_pipelined_hopper as hopper
from tritium.kernels import gemm_splitk_hopper as splitk
from tritium.kernels import gemm_streamk_hopper as streamk
from tritium.kernels import gemm_ws_cooperative_hopper as coop
from tritium.kernels import gemm_ws_dualk_hopper as dualk
from tritium.kernels import gemm_ws_hopper as ws
from tritium.kernels import gemm_ws_pingpong_hopper as pingpong
from tritium.kernels.tiles import WSConfig

M, N, K = 192, 136, 200  # ragged: every mask (pipelined) and every TMA edge (persistent) is exercised
# Small tiles, so that on 2 programs the persistent loop runs several tiles, the 2-stage ring wraps
# (K has 4 steps) and barrier phases flip: ws 4 tiles, cooperative 6, ping-pong 9 (program 0: 5, so
# its consumers alternate and consumer 0 takes the odd last tile).
PERSISTENT = {"ws": (ws, WSConfig(BM=128, BN=128, NUM_STAGES=2, EPILOGUE_SUBTILES=2)),
              "coop": (coop, WSConfig(BM=128, BN=64, NUM_STAGES=2, EPILOGUE_SUBTILES=2)),
              "pingpong": (pingpong, WSConfig(BM=64, BN=64, NUM_STAGES=2, EPILOGUE_SUBTILES=2)),
              # 6 tiles x 2 K slices (4 steps)
              "splitk": (splitk, WSConfig(BM=128, BN=64, NUM_STAGES=2, EPILOGUE_SUBTILES=2, SPLIT_K=3)),
              # 9 tiles: the partial buffer is reused
              "dualk": (dualk, WSConfig(BM=64, BN=64, NUM_STAGES=4, EPILOGUE_SUBTILES=2)),
              # 6 tiles of 4 K steps on 4 programs (its default grid here): all stream-K, runs of 6 steps, so two
              # tiles are split between programs (partial sums through the workspace and the flags)
              "streamk": (streamk, WSConfig(BM=128, BN=64, NUM_STAGES=2, EPILOGUE_SUBTILES=2))}

a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
which = (sys.argv[1:] or ["pipelined"])[0]
design = which.removesuffix("-noregs")
programs = int(sys.argv[2]) if len(sys.argv) > 2 else (4 if design == "streamk" else 2)
if which in ("fp8", "fp8-rows"):  # e4m3 operands; the reference is the dequantised product
    a, b = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    rows = which == "fp8-rows"
    sa = torch.rand(M, 1, device="cuda") + 0.5 if rows else torch.tensor(0.5, device="cuda")
    sb = torch.rand(1, N, device="cuda") + 0.5 if rows else torch.tensor(2.0, device="cuda")
    cfg = WSConfig(BM=128, BN=64, BK=128, NUM_STAGES=2, EPILOGUE_SUBTILES=2)
    c = fp8.matmul(a, b, sa, sb, cfg, num_sms=programs)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float()) * sa * sb
    err = ((c.float() - ref).norm() / ref.norm()).item()
    print(f"sanitize_gemm {which} {M}x{N}x{K}: relative error {err:.2e}")
    sys.exit(0 if err < 2e-2 else 1)
if design in PERSISTENT:
    module, cfg = PERSISTENT[design]
    if which.endswith("-noregs"):
        cfg = replace(cfg, NUM_REGS=None)
    c = module.matmul(a, b, cfg, num_sms=programs)
elif which == "pipelined":
    c = hopper.matmul(a, b, hopper.SMALL)
elif which == "small":
    from tritium.ops.plans import SMALL_TILE
    c = hopper.matmul(a, b, SMALL_TILE)
else:
    sys.exit(f"sanitize_gemm: unknown kernel {which!r}; use pipelined, small, fp8, fp8-rows or one of "
             f"{sorted(PERSISTENT)} (optionally with -noregs)")
torch.cuda.synchronize()
ref = a.float() @ b.float()
err = ((c.float() - ref).norm() / ref.norm()).item()
print(f"sanitize_gemm {which} {M}x{N}x{K}: relative error {err:.2e}")
sys.exit(0 if err < 2e-3 else 1)
