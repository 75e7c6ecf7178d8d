"""GEMM throughput: the TLX Hopper GEMMs against cuBLAS and a plain ``tl.dot`` Triton kernel.

The plain kernel uses the pipelined TLX kernel's tiles, warps and stage count, with Triton's own
software pipeliner doing what the TLX kernel does by hand, so that ratio isolates the hand
pipelining. The warp-specialized TLX kernel (TMA + mbarriers, persistent) runs its own configs.
All run in the same process on the same fresh random fp16 data; TFLOPS from the median of
``do_bench``, best of two interleaved rounds.
"""
from __future__ import annotations

import triton
import triton.language as tl

from ..kernels import gemm_pipelined_hopper as hopper
from ..kernels import gemm_ws_hopper as ws
from ..kernels.tiles import grouped_tile
from .report import bar_plot, table

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192), (8192, 16384, 8192),
          (8192, 28672, 4096), (8192, 53248, 8192), (128, 13312, 16384)]


@triton.jit
def plain_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                        GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :]
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=NUM_STAGES):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def plain_matmul(a, b, cfg: hopper.Config):
    import torch
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), )
    plain_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_SIZE_M=cfg.BLOCK_SIZE_M,
                              BLOCK_SIZE_N=cfg.BLOCK_SIZE_N, BLOCK_SIZE_K=cfg.BLOCK_SIZE_K,
                              GROUP_SIZE_M=cfg.GROUP_SIZE_M, NUM_STAGES=cfg.NUM_STAGES, num_warps=cfg.num_warps)
    return c


def run(shapes=SHAPES, cfg: hopper.Config = hopper.LARGE, rounds: int = 2, rep_ms: int = 150) -> list[tuple]:
    import torch
    from triton.testing import do_bench
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        impls = {"cuBLAS": lambda: torch.matmul(a, b), "Triton tl.dot": lambda: plain_matmul(a, b, cfg),
                 "TLX pipelined": lambda: hopper.matmul(a, b, cfg), "TLX WS": lambda: ws.matmul(a, b)}
        tflops = {}
        for name, fn in impls.items():
            out = fn()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                raise AssertionError(f"{name} {M}x{N}x{K}: relative error {err:.2e}")
            tflops[name] = 0.0
        for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
            for name, fn in impls.items():
                ms = do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
                tflops[name] = max(tflops[name], 2 * M * N * K / ms * 1e-9)
        t = tflops
        rows.append((f"{M}x{N}x{K}", t["cuBLAS"], t["Triton tl.dot"], t["TLX pipelined"], t["TLX WS"],
                     t["TLX pipelined"] / t["cuBLAS"], t["TLX pipelined"] / t["Triton tl.dot"],
                     t["TLX WS"] / t["cuBLAS"]))
    return rows


def main(out: str, only: str = "") -> int:
    cfg = hopper.LARGE
    rows = run(cfg=cfg)
    print(f"## fp16 GEMM TFLOPS (tiles {cfg.BLOCK_SIZE_M}x{cfg.BLOCK_SIZE_N}x{cfg.BLOCK_SIZE_K}, "
          f"{cfg.NUM_STAGES} stages, {cfg.num_warps} warps for both Triton kernels)")
    print(f"TLX WS: warp-specialized persistent kernel, config {ws.LARGE} (or {ws.SMALL} when it has "
          "fewer tiles than SMs)")
    print(table(["shape", "cuBLAS", "Triton tl.dot", "TLX pipelined", "TLX WS", "TLX/cuBLAS", "TLX/tl.dot",
                 "WS/cuBLAS"], rows))
    series = {"cuBLAS": [r[1] for r in rows], "Triton tl.dot": [r[2] for r in rows],
              "TLX pipelined": [r[3] for r in rows], "TLX WS": [r[4] for r in rows]}
    print(f"\nplot: {bar_plot(f'{out}/gemm.png', 'fp16 GEMM on one GPU', [r[0] for r in rows], series, 'TFLOPS')}")
    return 0
