"""Flash-attention forward on the H200: the persistent kernel's variants against the shipped kernels and every
SDPA backend, one process, fresh random data per case.

Usage: python scripts/gpu_attention_fwd_sweep.py [--only WORDS] [--variants NAME,...] [--check-only]

1. Numerics: O and the base-2 logsumexp of the persistent kernel against an fp32 reference on ragged and GQA
   shapes (seq 1, 77, 1000, 4097; 8 query heads over 2 KV heads), relative Frobenius error of O <= 1e-2.
2. Timing: the cases of ``tritium bench attention`` (``--only`` filters them as it does; GQA's 32/8 heads
   included), TFLOPS from do_bench medians, best of two
   interleaved rounds, each output checked against SDPA's first backend before it is timed.
Prints a table per case as it goes and the geometric means; writes $OUT/attn_fwd_sweep.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import torch
from triton.testing import do_bench

from tritium.bench.attention import CASES, sdpa_variants, select
from tritium.kernels import attention_persistent_hopper as ph
from tritium.kernels.attention_ws_hopper import attention_ws
from tritium.kernels.attention_ws_pipelined_hopper import attention_ws_pipelined


def persistent(**changes):
    """The persistent kernel with the shipped configuration, changed by ``changes`` (a callable value is
    called with the head dim)."""
    def run(q, k, v, causal):
        fields = {f: val(q.shape[3]) if callable(val) else val for f, val in changes.items()}
        cfg = dataclasses.replace(ph.pick_config(q.shape[2], q.shape[3], causal), **fields)
        return ph.forward(q, k, v, causal, None, cfg, store_lse=False)[0]
    return run


VARIANTS = {
    "ws": lambda q, k, v, causal: attention_ws(q, k, v, causal=causal),
    "pipelined": lambda q, k, v, causal: attention_ws_pipelined(q, k, v, causal=causal),
    "pers": persistent(),
    "pers-bn128": persistent(BLOCK_N=128, NUM_STAGES=lambda d: 3 if d == 64 else 2),
    "pers-free": persistent(PINGPONG=False),
    "pers-3wg": persistent(BLOCK_M=192, BLOCK_N=64, NUM_STAGES=3, CONSUMERS=3, PINGPONG=False, NUM_REGS=160),
    "pers-3wg-bn128": persistent(BLOCK_M=192, BLOCK_N=128, NUM_STAGES=3, CONSUMERS=3, PINGPONG=False, NUM_REGS=160),
}
#: Variants whose registers fit only head dim 64 (three consumer warpgroups at 160 registers).
D64_ONLY = {"pers-3wg", "pers-3wg-bn128"}


def check_numerics() -> list[dict]:
    rows = []
    for (B, H, HK, S, D), causal, dtype in [((1, 8, 2, 1, 128), True, torch.float16), ((2, 4, 4, 77, 64), True, torch.bfloat16),
                                            ((1, 8, 2, 1000, 128), False, torch.bfloat16), ((1, 4, 1, 4097, 64), True, torch.float16),
                                            ((1, 4, 4, 4097, 128), True, torch.bfloat16), ((2, 8, 2, 1000, 64), False, torch.float16)]:
        q = torch.randn(B, H, S, D, device="cuda", dtype=dtype)
        k, v = (torch.randn(B, HK, S, D, device="cuda", dtype=dtype) for _ in range(2))
        o, lse = ph.forward(q, k, v, causal, None)
        kr, vr = (x.float().repeat_interleave(H // HK, 1) for x in (k, v))
        s = q.float() @ kr.transpose(-1, -2) / math.sqrt(D)
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
        ref = torch.softmax(s, -1) @ vr
        err = ((o.float() - ref).norm() / ref.norm()).item()
        lse_err = (lse - torch.logsumexp(s, -1) / math.log(2)).abs().max().item()
        ok = err <= 1e-2 and lse_err <= 1e-3 and bool(torch.isfinite(o).all())
        rows.append({"shape": [B, H, HK, S, D], "causal": causal, "dtype": str(dtype), "o_err": err, "lse_err": lse_err,
                     "ok": ok})
        print(f"numerics {B}x{H}/{HK}x{S}x{D} {'causal' if causal else 'full'} {str(dtype)[6:]}: O {err:.2e} "
              f"lse {lse_err:.2e} {'ok' if ok else 'FAIL'}", flush=True)
    return rows


def time_case(case, variants: list[str], rounds: int = 2) -> dict:
    q, k, v = (x.detach() for x in case.inputs()[:3])
    impls = sdpa_variants(q, k, v, case.causal, case.gqa)
    ref = next(iter(impls.values()))().float()
    for name in variants:
        if (case.gqa and name in ("ws", "pipelined")) or (case.head_dim != 64 and name in D64_ONLY):
            continue
        fn = VARIANTS[name]
        err = ((fn(q, k, v, case.causal).float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            print(f"  {name}: relative error {err:.2e} against SDPA: not timed", flush=True)
            continue
        impls[name] = lambda fn=fn: fn(q, k, v, case.causal)
    tflops = dict.fromkeys(impls, 0.0)
    for _ in range(rounds):
        for name, fn in impls.items():
            ms = do_bench(fn, warmup=20, rep=60, return_mode="median")
            tflops[name] = max(tflops[name], case.flops() / ms * 1e-9)
    best = max((n for n in tflops if n.startswith("SDPA")), key=tflops.get)
    ratios = {n: tflops[n] / tflops[best] for n in tflops if not n.startswith("SDPA")}
    print(f"{case.label:34s} best {best} {tflops[best]:6.1f} | " +
          " ".join(f"{n} {ratios[n]:.3f}" for n in ratios), flush=True)
    return {"label": case.label, "head_dim": case.head_dim, "gqa": case.gqa, "tflops": tflops, "best_sdpa": best,
            "ratios": ratios}


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--check-only", action="store_true")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    t0 = time.time()
    numerics = check_numerics()
    results = []
    if not args.check_only:
        for case in select(args.only) if args.only else CASES:
            results.append(time_case(case, args.variants.split(",")))
    summary = {}
    for d in (64, 128):
        for name in args.variants.split(","):
            xs = [r["ratios"][name] for r in results if r["head_dim"] == d and not r["gqa"] and name in r["ratios"]]
            if xs:
                summary[f"d{d} {name}"] = {"geomean": geomean(xs), "min": min(xs), "n": len(xs)}
    for k_, s in summary.items():
        print(f"{k_:20s} geomean {s['geomean']:.3f} min {s['min']:.3f} over {s['n']}")
    out = os.environ.get("OUT", "results")
    os.makedirs(out, exist_ok=True)
    with open(f"{out}/attn_fwd_sweep.json", "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "numerics": numerics, "cases": results, "summary": summary}, f,
                  indent=1)
    print(f"done in {time.time() - t0:.0f}s")
    return 0 if all(r["ok"] for r in numerics) else 1


if __name__ == "__main__":
    sys.exit(main())
