"""The attention backward on the H200 in one go: numerics on a grid of cases, then backward timings against SDPA.

Usage: PYTHONPATH=src python3 scripts/gpu_attention_bwd_check.py [--quick] [--no-timing]

1. Numerics: fresh random data, tritium.ops.attention forward and backward against SDPA in fp32 on the same
   data (relative Frobenius error of O, dQ, dK, dV at most 1e-2): fp16 and bf16, head dim 64 and 128,
   causal and not, sequence lengths 1, 77, 1000 and 4097 (batch 1, 2 heads), and GQA 32/8 (bf16 and fp16,
   head dim 128 and 64, seq 1000 and 4097). Every case runs; failures are listed at the end.
2. Timing (unless --no-timing): ``tritium.bench.attention.run_case`` in the backward direction (the check
   again, then ``o.backward(dO)`` of the op and of every SDPA backend, TFLOPS at 2.5x the forward's FLOPs)
   over fp16/bf16 x head dim 64/128 x causal/not at seq 1024, 4096 and 16384 (batch x heads fill the GPU as
   in the bench), and the GQA 32/8 cases at 4096 and 8192; --quick: seq 4096 and GQA at 4096 only.

Prints a short table per part; writes $OUT/attention_bwd_check.json when OUT is set. Exit status 1 if a
numerics case failed.
"""
from __future__ import annotations

import json
import os
import sys

import torch
import triton

from tritium.bench import attention as bench
from tritium.bench.report import table
from tritium.ops import attention

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def numerics_cases() -> list[tuple]:
    """(dtype, head dim, causal, seq, q heads, kv heads)."""
    grid = [(dt, d, c, s, 2, 2) for dt in DTYPES for d in (64, 128) for c in (False, True) for s in (1, 77, 1000, 4097)]
    gqa = [(dt, d, c, s, 32, 8) for dt, d in (("bf16", 128), ("fp16", 64)) for c in (False, True) for s in (1000, 4097)]
    return grid + gqa


def check(dtype: str, d: int, causal: bool, seq: int, hq: int, hkv: int) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(seq * 31 + d + hq + causal)
    q, do = (torch.randn(1, hq, seq, d, device="cuda", dtype=DTYPES[dtype], generator=gen) for _ in range(2))
    k, v = (torch.randn(1, hkv, seq, d, device="cuda", dtype=DTYPES[dtype], generator=gen) for _ in range(2))
    case = bench.Case(dtype, d, causal, seq, hkv != hq)
    ref = bench.reference(case, q, k, v, do, True)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    o = attention(*leaves, causal=causal, enable_gqa=hkv != hq)
    o.backward(do)
    torch.cuda.synchronize()
    floor = [r.norm().clamp_min(1e-3) for r in ref]  # seq 1: dq and dk are 0
    errs = {n: ((x.float() - r).norm() / f).item()
            for n, x, r, f in zip(("o", "dq", "dk", "dv"), (o, *(t.grad for t in leaves)), ref, floor)}
    return {"dtype": dtype, "head_dim": d, "causal": causal, "seq": seq, "heads": f"{hq}/{hkv}", "errors": errs,
            "ok": all(e <= bench.TOLERANCE for e in errs.values())}


def timing_cases(quick: bool) -> list[bench.Case]:
    seqs, gqa_seqs = ((4096, ), (4096, )) if quick else ((1024, 4096, 16384), (4096, 8192))
    mha = [bench.Case(dt, d, c, s) for dt in DTYPES for d in (64, 128) for c in (False, True) for s in seqs]
    return mha + [bench.Case("bf16", 128, c, s, True) for c in (False, True) for s in gqa_seqs]


def main(argv: list[str]) -> int:
    quick, timing = "--quick" in argv, "--no-timing" not in argv
    results = {"env": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}}
    checks = []
    for c in numerics_cases():
        try:
            checks.append(check(*c))
        except Exception as e:  # a crash is a failed case too; the others still run
            checks.append({"case": list(c), "ok": False, "error": f"{type(e).__name__}: {e}"})
    results["numerics"] = checks
    print(f"## Numerics against fp32 SDPA on {results['env']['gpu']}")
    print(table(["case", "o", "dq", "dk", "dv", "ok"],
                [(f"{r['dtype']} d{r['head_dim']} {'causal' if r['causal'] else 'full'} s{r['seq']} h{r['heads']}",
                  *(f"{r['errors'][n]:.1e}" for n in ("o", "dq", "dk", "dv")), r["ok"]) if "errors" in r else
                 (str(r["case"]), "-", "-", "-", "-", r["error"]) for r in checks]))
    if timing:
        timed = []
        for case in timing_cases(quick):
            r = bench.run_case(case, ("bwd", ))
            timed.append(r)
            b = r["bwd"]
            print(f"{case.label}: tritium {b['tflops'][bench.OP]:.0f} TFLOPS, " + ", ".join(
                f"{n} {t:.0f}" for n, t in b["tflops"].items() if n != bench.OP) + f"; ratio {b['ratio']:.3f}",
                flush=True)
        results["timing"] = timed
        for d in (64, 128):
            ratios = [r["bwd"]["ratio"] for r in timed if r["head_dim"] == d and not r["gqa"]]
            print(f"bwd d{d} tritium / fastest SDPA geomean: {bench.geomean(ratios):.3f}")
        gqa = [r["bwd"]["ratio"] for r in timed if r["gqa"]]
        print(f"bwd gqa tritium / fastest SDPA geomean: {bench.geomean(gqa):.3f}")
    if os.environ.get("OUT"):
        path = os.path.join(os.environ["OUT"], "attention_bwd_check.json")
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
        print(f"json: {path}")
    failed = [r for r in checks if not r["ok"]]
    print(f"numerics: {len(checks) - len(failed)} of {len(checks)} cases within {bench.TOLERANCE}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
