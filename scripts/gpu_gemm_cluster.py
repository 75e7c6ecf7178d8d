"""The cooperative WS GEMM with pairs of CTAs sharing B (WSConfig.CLUSTER=2, ctas_per_cga=(2, 1, 1)) against the same
kernel without clusters and cuBLAS, on the H200.

1. Numerics: ragged shapes (odd row-tile counts included) against an fp32 reference, both dtypes.
2. Timing: seed shapes and squares, do_bench medians, best of ROUNDS interleaved rounds; ratio = cuBLAS time / ours.
Usage: python scripts/gpu_gemm_cluster.py [--only WORD] [--rounds 3] [--out DIR]; writes DIR/gemm_cluster.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from pathlib import Path

import torch
from triton.testing import do_bench

from tritium.kernels import gemm_ws_cooperative_hopper as co
from tritium.ops.launch import call_for
from tritium.ops.plans import LARGE_PLAN, Plan

SHAPES = [(128, 13312, 16384), (16384, 8192, 8192), (8192, 16384, 8192), (8192, 53248, 8192), (8192, 28672, 4096),
          (8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048)]
BASE = LARGE_PLAN.config
VARIANTS = {
    "coop": BASE,
    "coop-c2": dataclasses.replace(BASE, CLUSTER=2),
    "coop-c2-g4": dataclasses.replace(BASE, CLUSTER=2, GROUP_SIZE_M=4),
    "coop-c2-s4e4": dataclasses.replace(BASE, CLUSTER=2, NUM_STAGES=4, EPILOGUE_SUBTILES=4),
}


def numerics() -> list[dict]:
    rows = []
    for (M, N, K) in [(1000, 768, 320), (1100, 700, 300), (384, 512, 4096), (1, 256, 64)]:
        for dtype in (torch.float16, torch.bfloat16):
            a, b = (torch.randn(s, device="cuda", dtype=dtype) for s in ((M, K), (K, N)))
            ref = a.float() @ b.float()
            for name in ("coop-c2",):
                c = co.matmul(a, b, VARIANTS[name])
                err = ((c.float() - ref).norm() / ref.norm()).item()
                rows.append({"shape": [M, N, K], "dtype": str(dtype)[6:], "variant": name, "rel_err": err,
                             "ok": err < 1e-2})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def max_active_clusters() -> list:
    """cuOccupancyMaxActiveClusters of every compiled cluster kernel (persistent grids must not exceed it)."""
    import triton
    out = []
    for cache in co.matmul_kernel_ws_cooperative.device_caches.values():
        for k in cache[0].values():
            if getattr(k.metadata, "ctas_per_cga", None):
                k._init_handles()
                n = triton.runtime.driver.active.utils.cuOccupancyMaxActiveClusters(k.function, k.metadata.shared, 2)
                out.append({"shared": k.metadata.shared, "max_active_clusters": n})
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--sms", default="", help="comma-separated grid sizes (CTAs) to try for coop-c2")
    p.add_argument("--op", action="store_true", help="time the variants through tritium.ops' launch (call_for)")
    args = p.parse_args()
    for n in filter(None, args.sms.split(",")):
        VARIANTS[f"coop-c2-sms{n}"] = (VARIANTS["coop-c2"], int(n))
    result = {"numerics": numerics(), "timing": []}
    for dtype in (torch.float16, torch.bfloat16):
        for (M, N, K) in SHAPES:
            label = f"{str(dtype)[6:]} {M}x{N}x{K}"
            if args.only and args.only not in label:
                continue
            a, b = torch.randn(M, K, device="cuda", dtype=dtype), torch.randn(K, N, device="cuda", dtype=dtype)
            ref = torch.matmul(a, b).float()
            fns = {"cublas": lambda: torch.matmul(a, b)}
            for name, cfg in VARIANTS.items():
                cfg, sms = cfg if isinstance(cfg, tuple) else (cfg, None)
                if args.op:
                    call = call_for(Plan("cooperative", cfg), a, b, dtype)
                    c = call(a, b)
                    err = ((c.float() - ref).norm() / ref.norm()).item()
                    if err <= 1e-2:
                        fns[name] = (lambda call=call: call(a, b))
                    continue
                c = co.matmul(a, b, cfg, sms)
                err = ((c.float() - ref).norm() / ref.norm()).item()
                if err > 1e-2:
                    print(f"{label} {name}: WRONG {err:.2e}", flush=True)
                    continue
                fns[name] = (lambda cfg=cfg, sms=sms: co.matmul(a, b, cfg, sms))
            best = {k: math.inf for k in fns}
            for _ in range(args.rounds):
                for k, fn in fns.items():
                    best[k] = min(best[k], do_bench(fn, warmup=25, rep=150))
            row = {"case": label, "cublas_tflops": round(2 * M * N * K / best["cublas"] / 1e9, 1),
                   **{k: round(best["cublas"] / v, 3) for k, v in best.items() if k != "cublas"}}
            result["timing"].append(row)
            print(json.dumps(row), flush=True)
    for dtype in ("float16", "bfloat16"):
        for k in VARIANTS:
            vals = [r[k] for r in result["timing"] if r["case"].startswith(dtype) and k in r]
            if vals:
                print(f"geomean {dtype} {k}: {math.exp(sum(map(math.log, vals)) / len(vals)):.3f} over {len(vals)}")
    result["max_active_clusters"] = max_active_clusters()
    print(json.dumps(result["max_active_clusters"]))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "gemm_cluster.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
