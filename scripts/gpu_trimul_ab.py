"""A/B timing of the TriMul module between source trees, on the GPU: for each tree given (a directory
holding ``src/tritium``), each ranked case's mean time per call (CUDA events, fresh inputs, as
``tritium bench trimul`` times it) and per-kernel means from the torch profiler, checked against the
fp32 reference first, and the median host time of a call (from a synchronized start until it returns). Each
tree runs in its own process. Usage:
``python scripts/gpu_trimul_ab.py --out results.json [--extra N:B:C ...] TREE [TREE ...]`` (``--extra``: unmasked
normal cases after the ranked ones, left out of the geometric mean)."""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

CHILD = r"""
import json, sys, time, torch
sys.path.insert(0, sys.argv[1] + "/src")
try:
    from tritium.ops import TriMul
except ImportError:  # trees before TriMul moved to the ops floor
    from tritium.kernels import TriMul
from tritium.kernels.trimul_reference import RANKED_CASES, Case, check_close, make_inputs, reference_model
from tritium.bench.trimul import time_calls
out = []
extra = [Case(*(int(v) for v in spec.split(":")), True, "normal") for spec in sys.argv[2:]]
for case in (*RANKED_CASES, *extra):
    seed = case.seqlen * 31 + case.dim + case.bs
    ref = reference_model(case, seed, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    with torch.no_grad():
        x, mask = make_inputs(case, seed, "cuda")
        check = check_close(fused(x, mask), ref(x, mask))
        times = time_calls(fused, case, seed + 1000)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                fused(x, mask)
            torch.cuda.synchronize()
    kernels = {}
    for ev in prof.key_averages():
        if ev.device_type == torch.autograd.DeviceType.CUDA and "trimul" in ev.key:
            kernels[ev.key] = ev.device_time_total / ev.count / 1000
    host = []
    with torch.no_grad():
        for _ in range(200):  # host time of a call: from a synchronized start until the call returns
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fused(x, mask)
            host.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    out.append({"label": case.label, "ranked": case in RANKED_CASES, "ms": sum(times) / len(times), "check": check,
                "kernels_ms": kernels, "host_us": sorted(host)[len(host) // 2] * 1e6})
    print(case.label, round(out[-1]["ms"], 4), "host us", round(out[-1]["host_us"], 1), check, {k: round(v, 4) for k, v in kernels.items()}, flush=True)
print("JSON" + json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--extra", nargs="*", default=[], help="N:B:C cases to time after the ranked ones")
    args = parser.parse_args()
    results = {}
    for tree in args.trees:
        proc = subprocess.run([sys.executable, "-c", CHILD, tree, *args.extra], capture_output=True, text=True)
        print(f"== {tree}\n{proc.stdout}{proc.stderr[-3000:]}", flush=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("JSON")]
        if lines:
            results[tree] = json.loads(lines[-1][4:])
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    for tree, rows in results.items():
        ranked = [r for r in rows if r.get("ranked", True)]
        print(f"{tree}: geomean {math.exp(sum(math.log(r['ms']) for r in ranked) / len(ranked)):.4f} ms (ranked)")


if __name__ == "__main__":
    main()
