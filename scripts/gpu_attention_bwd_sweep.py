"""Backward configs of the attention kernel on the H200, and where the backward's time goes, in one go.

Usage: PYTHONPATH=src python3 scripts/gpu_attention_bwd_sweep.py [--only WORDS] [--variants a,b]

For each case of ``tritium bench attention`` the words select (default ``s4096`` without GQA: both dtypes,
head dims and masks), on fresh data: the forward once (``attention_forward``: o and the logsumexp), then for
each variant of ``VARIANTS`` that runs the head dim the backward (``launch_backward`` with its Config),
checked against SDPA in fp32 (O, dQ, dK, dV within 1e-2) before it is timed; SDPA's backends' backwards
are timed in the same rounds (``tritium.bench.attention``'s helpers). The breakdown times the parts outside
the main kernel at the case's shape: the delta kernel, dQ's fp32 zero-fill and its cast to the input dtype.
Prints one line per case; writes $OUT/attention_bwd_sweep.json when OUT is set.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton
from triton.testing import do_bench

from tritium.bench import attention as bench
from tritium.kernels import attention_bwd_hopper as bwd
from tritium.kernels.attention import attention_forward

Config = bwd.Config
#: name -> {head dim: Config}; "default" is what the op runs.
VARIANTS = {
    "default": dict(bwd.CONFIGS),
    "stages2": {64: Config(64, 128, 2, 240, False), 128: Config(64, 128, 2, 240, True)},
    "stages4": {64: Config(64, 128, 4, 240, False)},
    "no-split": {128: Config(64, 128, 2, 240, False)},  # more registers (spills), twice dQ's reduce traffic
    "regs232": {64: Config(64, 128, 3, 232, False), 128: Config(64, 128, 3, 232, True)},
}


def breakdown(q, o, do) -> dict:
    """Milliseconds of the backward's parts outside the main kernel, at q's shape."""
    B, H, S, D = q.shape
    delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(S, bwd.DELTA_ROWS), B * H)

    def run_delta():
        bwd.attn_bwd_delta[grid](o, do, delta, *o.stride()[:3], *do.stride()[:3], H, S, HEAD_DIM=D,
                                 ROWS=bwd.DELTA_ROWS)
    dq = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
    return {"delta": do_bench(run_delta, return_mode="median"),
            "dq zeros": do_bench(lambda: torch.zeros(q.shape, device=q.device, dtype=torch.float32),
                                 return_mode="median"),
            "dq cast": do_bench(lambda: dq.to(q.dtype), return_mode="median")}


def run(case: bench.Case, variants: list[str]) -> dict:
    q, k, v, do = case.inputs()
    ref = bench.reference(case, q, k, v, do, True)
    o, lse = attention_forward(q, k, v, case.causal, None, case.gqa)
    impls, errors = {}, {}
    for name in variants:
        cfg = VARIANTS[name].get(case.head_dim)
        if cfg is None:
            continue
        try:
            grads = bwd.launch_backward(q, k, v, o, lse, do, case.causal, None, cfg)
            errors[name] = bench.checked(case, name, (o, *grads), ref)
        except Exception as e:  # a variant that fails (compile, shared memory, numerics) is reported, not timed
            errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            continue
        impls[name] = lambda cfg=cfg: bwd.launch_backward(q, k, v, o, lse, do, case.causal, None, cfg)
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    for name, fn in bench.sdpa_variants(*leaves, case.causal, case.gqa).items():
        out = fn()
        impls[name] = lambda out=out: out.backward(do, retain_graph=True)
    tflops = bench.timed(impls, case.flops("bwd"), 2, 100, grad_to_none=leaves)
    best = max((n for n in tflops if n.startswith("SDPA")), key=tflops.get)
    ratios = {n: t / tflops[best] for n, t in tflops.items() if not n.startswith("SDPA")}
    parts = breakdown(q, o, do)
    ms = {n: case.flops("bwd") * 1e-9 / t for n, t in tflops.items() if t}
    print(f"{case.label}: {best} {tflops[best]:.0f} TFLOPS | " + " ".join(f"{n} {r:.3f}" for n, r in ratios.items())
          + f" | default {ms.get('default', float('nan')):.3f} ms of which delta {parts['delta']:.3f}, "
            f"zeros {parts['dq zeros']:.3f}, cast {parts['dq cast']:.3f}", flush=True)
    return {"label": case.label, "tflops": tflops, "best_sdpa": best, "ratios": ratios, "errors": errors,
            "breakdown_ms": parts}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="s4096")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)
    cases = [c for c in bench.select(args.only) if "gqa" in args.only or not c.gqa]
    results = [run(c, args.variants.split(",")) for c in cases]
    for name in args.variants.split(","):
        xs = [r["ratios"][name] for r in results if name in r["ratios"]]
        if xs:
            print(f"{name:10s} backward / fastest SDPA geomean {bench.geomean(xs):.3f} over {len(xs)} cases")
    if os.environ.get("OUT"):
        path = os.path.join(os.environ["OUT"], "attention_bwd_sweep.json")
        with open(path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "cases": results}, f, indent=1)
        print(f"json: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
