"""One small TLX GEMM launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_gemm.py [pipelined|ws|ws-noregs] [programs]   (default: pipelined)
``ws-noregs`` leaves register counts to the compiler (no setmaxnreg); ``programs`` caps the WS grid.
"""
import sys

import torch

from tritium.kernels import gemm_pipelined_hopper as hopper
from tritium.kernels import gemm_ws_hopper as ws

M, N, K = 192, 136, 200  # ragged: every mask (pipelined) and every TMA edge (ws) is exercised
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
which = (sys.argv[1:] or ["pipelined"])[0]
if which.startswith("ws"):
    # 4 tiles on 2 programs: the persistent loop, stage wrap-around and phase flips all run.
    regs = None if which == "ws-noregs" else 232
    programs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    c = ws.matmul(a, b, ws.Config(128, 128, 64, 8, 2, True, regs), num_sms=programs)
else:
    c = hopper.matmul(a, b, hopper.SMALL)
torch.cuda.synchronize()
ref = a.float() @ b.float()
err = ((c.float() - ref).norm() / ref.norm()).item()
print(f"sanitize_gemm {M}x{N}x{K}: relative error {err:.2e}")
sys.exit(0 if err < 2e-3 else 1)
