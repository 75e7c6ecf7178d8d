"""Clusters of CTAs (``ctas_per_cga=(n, 1, 1)``) on the H200: correctness of the launch, the peer barrier arrive and
the TMA multicast, then the fork's ``hopper_gemm_ws`` tutorial (ported by its import) with NUM_CTAS = 1 and 2
(its B tile multicast to a pair of CTAs) against cuBLAS, each checked against torch before it is timed.

Usage: python scripts/gpu_cluster_check.py [--shapes 4096,8192] [--out DIR]   (prints JSON lines, writes DIR/clusters.json)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import triton
from triton.testing import do_bench
from triton.tools.tensor_descriptor import TensorDescriptor

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "tlx"))
import cluster_kernels as ck  # noqa: E402
import fork_conformance as fc  # noqa: E402


def report(row: dict, rows: list) -> None:
    rows.append(row)
    print(json.dumps(row), flush=True)


def check_basics(rows: list) -> None:
    for n in (2, 4):
        out = torch.full((16, 2), -1, dtype=torch.int32, device="cuda")
        ck.cluster_registers[(16,)](out, ctas_per_cga=(n, 1, 1))
        want = torch.tensor([[i % n, n] for i in range(16)], dtype=torch.int32, device="cuda")
        report({"check": f"registers n={n}", "ok": bool(torch.equal(out, want))}, rows)
    try:
        ck.cluster_registers[(5,)](torch.empty(10, dtype=torch.int32, device="cuda"), ctas_per_cga=(2, 1, 1))
        report({"check": "odd grid refused", "ok": False}, rows)
    except ValueError as e:
        report({"check": "odd grid refused", "ok": "not a multiple" in str(e), "error": str(e)}, rows)
    B, pairs = 64, 4
    x = torch.randn(pairs * 2 * B, B, device="cuda", dtype=torch.float16)
    out = torch.zeros(2 * pairs, 2 * B, B, device="cuda", dtype=torch.float16)
    ck.pair_exchange[(2 * pairs,)](TensorDescriptor.from_tensor(x, [B, B]), out, B, ctas_per_cga=(2, 1, 1))
    want = x.view(pairs, 2 * B, B).repeat_interleave(2, 0)
    report({"check": "multicast + peer arrive", "ok": bool(torch.equal(out, want))}, rows)


def gemm(rows: list, shapes: list[int]) -> None:
    tutorials, why = fc.find_tutorials()
    if tutorials is None:
        report({"check": "hopper_gemm_ws", "ok": False, "error": why}, rows)
        return
    fc._INPUT_DEVICE[0] = "cuda"
    with fc.tutorials_package(tutorials):
        mod = fc.load_tutorial(tutorials, "hopper_gemm_ws.py")
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        for size in shapes:
            a = torch.randn(size, size, device="cuda", dtype=torch.float16)
            b = torch.randn(size, size, device="cuda", dtype=torch.float16)
            ref = torch.matmul(a, b)
            flops = 2 * size ** 3
            t_cublas = do_bench(lambda: torch.matmul(a, b), warmup=50, rep=300)
            row = {"shape": size, "cublas_tflops": round(flops / t_cublas / 1e9, 1)}
            for ctas in (1, 2):
                for stages in (3, 4):
                    cfg = {"BM": 128, "BN": 256, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": stages, "NUM_MMA_WARPS": 8,
                           "NUM_MMA_GROUPS": 2, "EPILOGUE_SUBTILE": True, "NUM_CTAS": ctas, "USE_WARP_BARRIER": False,
                           "num_warps": 4, "num_stages": 1, "ctas_per_cga": (ctas, 1, 1)}
                    name = f"ctas{ctas}_s{stages}"
                    try:
                        c = mod.matmul(a, b, config=cfg)
                        err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
                        if err > 1e-2:
                            row[name] = f"wrong ({err:.2e})"
                            continue
                        t = do_bench(lambda: mod.matmul(a, b, config=cfg), warmup=50, rep=300)
                        row[name] = round(flops / t / 1e9, 1)
                        row[name + "_vs_cublas"] = round(t_cublas / t, 3)
                    except Exception as e:  # noqa: BLE001 - every variant is reported
                        row[name] = f"{type(e).__name__}: {str(e)[:200]}"
            report(row, rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096,8192")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    a = p.parse_args()
    rows: list = []
    check_basics(rows)
    gemm(rows, [int(s) for s in a.shapes.split(",")])
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "clusters.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
