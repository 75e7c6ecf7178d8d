"""GEMM throughput: the TLX Hopper GEMMs against cuBLAS and a plain ``tl.dot`` Triton kernel.

The plain kernel uses the pipelined TLX kernel's tiles, warps and stage count, with Triton's own
software pipeliner doing what the TLX kernel does by hand, so that ratio isolates the hand
pipelining. The warp-specialized TLX kernels (TMA + mbarriers, persistent: the "hopper_gemm_ws"
design, the cooperative and the ping-pong one) run their own configs. All run in the same process
on the same fresh random data; TFLOPS from the median of ``do_bench``, best of two interleaved
rounds, after every result was checked against torch.

``--only`` takes words: ``ws`` times cuBLAS against the three warp-specialized kernels only, in
fp16 and bf16; ``fp16``/``bf16`` pick the dtype; ``quick`` keeps three shapes (4096^3, 8192^3 and
the skinny 128x13312x16384).
"""
from __future__ import annotations

import triton
import triton.language as tl

from ..kernels import gemm_pipelined_hopper as hopper
from ..kernels import gemm_ws_cooperative_hopper as coop
from ..kernels import gemm_ws_hopper as ws
from ..kernels import gemm_ws_pingpong_hopper as pingpong
from ..kernels.tiles import grouped_tile
from .report import bar_plot, table

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192), (8192, 16384, 8192),
          (8192, 28672, 4096), (8192, 53248, 8192), (128, 13312, 16384)]
QUICK_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (128, 13312, 16384)]


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
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + offs_cn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def plain_matmul(a, b, cfg: hopper.Config):
    import torch
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), )
    plain_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_SIZE_M=cfg.BLOCK_SIZE_M,
                              BLOCK_SIZE_N=cfg.BLOCK_SIZE_N, BLOCK_SIZE_K=cfg.BLOCK_SIZE_K,
                              GROUP_SIZE_M=cfg.GROUP_SIZE_M, NUM_STAGES=cfg.NUM_STAGES, num_warps=cfg.num_warps)
    return c


def implementations(a, b, which: str, cfg: hopper.Config = hopper.LARGE) -> dict:
    """name -> ``a @ b`` callable: cuBLAS first (the ratios' denominator), then ours."""
    import torch
    impls = {"cuBLAS": lambda: torch.matmul(a, b)}
    if which == "all":
        impls["Triton tl.dot"] = lambda: plain_matmul(a, b, cfg)
        if a.dtype == torch.float16:  # the pipelined TLX kernel writes fp16
            impls["TLX pipelined"] = lambda: hopper.matmul(a, b, cfg)
    impls.update({"TLX WS": lambda: ws.matmul(a, b), "TLX cooperative": lambda: coop.matmul(a, b),
                  "TLX ping-pong": lambda: pingpong.matmul(a, b)})
    return impls


def run(shapes=SHAPES, which: str = "all", dtype: str = "fp16", rounds: int = 2, rep_ms: int = 150) -> list[dict]:
    """TFLOPS of every implementation per shape: ``[{"shape": "MxNxK", name: TFLOPS, ...}, ...]``."""
    import torch
    from triton.testing import do_bench
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dtype]))
        b = torch.randn(K, N, device="cuda", dtype=a.dtype)
        ref = a.float() @ b.float()
        impls = implementations(a, b, which)
        tflops = {}
        for name, fn in impls.items():
            out = fn()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                raise AssertionError(f"{name} {dtype} {M}x{N}x{K}: relative error {err:.2e}")
            tflops[name] = 0.0
        for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
            for name, fn in impls.items():
                ms = do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
                tflops[name] = max(tflops[name], 2 * M * N * K / ms * 1e-9)
        rows.append({"shape": f"{M}x{N}x{K}", **tflops})
        print(f"{dtype} {M}x{N}x{K}: " + ", ".join(f"{k} {v:.1f}" for k, v in tflops.items()), flush=True)
    return rows


def main(out: str, only: str = "") -> int:
    words = set(only.replace(",", " ").split())
    unknown = words - {"ws", "fp16", "bf16", "quick"}
    if unknown:
        raise SystemExit(f"tritium bench gemm: unknown --only words {sorted(unknown)}; use ws, fp16, bf16, quick")
    which = "ws" if "ws" in words else "all"
    dtypes = [d for d in ("fp16", "bf16") if d in words] or (["fp16", "bf16"] if which == "ws" else ["fp16"])
    shapes = QUICK_SHAPES if "quick" in words else SHAPES
    cfg = hopper.LARGE
    for dtype in dtypes:
        rows = run(shapes, which, dtype)
        names = [k for k in rows[0] if k != "shape"]
        ours = names[1:]
        print(f"\n## {dtype} GEMM TFLOPS, ratios against cuBLAS in the same run")
        if which == "all":
            print(f"Triton tl.dot and TLX pipelined: tiles {cfg.BLOCK_SIZE_M}x{cfg.BLOCK_SIZE_N}x{cfg.BLOCK_SIZE_K}, "
                  f"{cfg.NUM_STAGES} stages, {cfg.num_warps} warps.")
        print(f"TLX WS: {ws.LARGE} (or {ws.SMALL} when it has fewer tiles than SMs); TLX cooperative: "
              f"{coop.LARGE} (or {coop.SMALL}); TLX ping-pong: {pingpong.LARGE} (or {pingpong.SMALL})")
        ratios = {f"{n}/cuBLAS": (n, "cuBLAS") for n in ours}
        if "TLX pipelined" in names:  # what hand pipelining gains over Triton's own pipeliner
            ratios["pipelined/tl.dot"] = ("TLX pipelined", "Triton tl.dot")
        print(table(["shape", *names, *ratios],
                    [(r["shape"], *(r[n] for n in names), *(r[x] / r[y] for x, y in ratios.values())) for r in rows]))
        series = {n: [r[n] for r in rows] for n in names}
        plot = bar_plot(f"{out}/gemm{'_ws' if which == 'ws' else ''}_{dtype}.png", f"{dtype} GEMM on one GPU",
                        [r["shape"] for r in rows], series, "TFLOPS")
        print(f"\nplot: {plot}")
    return 0
