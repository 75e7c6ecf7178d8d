"""One small TLX GEMM launch, for compute-sanitizer (memcheck, racecheck) on the GPU machine."""
import sys

import torch

from tritium.kernels import gemm_pipelined_hopper as hopper

M, N, K = 192, 136, 200  # ragged: every mask and the wrap-around indexing are exercised
cfg = hopper.SMALL
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
c = hopper.matmul(a, b, cfg)
torch.cuda.synchronize()
ref = a.float() @ b.float()
err = ((c.float() - ref).norm() / ref.norm()).item()
print(f"sanitize_gemm {M}x{N}x{K}: relative error {err:.2e}")
sys.exit(0 if err < 2e-3 else 1)
