"""A/B timing, on the GPU, of TriMul's two projection paths: the centring pass plus the TMA projection
(``separate``) against the projection reading fp32 x itself (``fused``, ``trimul_proj_x_kernel``), chosen by
``tritium.knobs.ops.trimul_fused_centering``. For each ranked case and path: the output checked against the
fp32 reference first (a case that fails is not timed), the mean time per call (CUDA events, fresh inputs, as
``tritium bench trimul`` times it) and the per-kernel means from the torch profiler. Each path runs in its own
process under a time limit, so that a hang of one costs only its limit. Usage::

    python scripts/gpu_trimul_fused.py --out results.json [--only 1-7] [--extra N:B:C ...] [--timeout 900]

(``--extra``: unmasked normal cases after the ranked ones, by shape; ``--only 0`` times none of the ranked.)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, torch
import tritium
from tritium.ops import TriMul
from tritium.kernels.trimul_reference import RANKED_CASES, Case, check_close, make_inputs, reference_model
from tritium.bench.trimul import time_calls
tritium.knobs.ops.trimul_fused_centering = sys.argv[1] == "fused"
for number in json.loads(sys.argv[2]):
    case = (RANKED_CASES[number - 1] if isinstance(number, int)
            else Case(*(int(v) for v in number.split(":")), True, "normal"))
    seed = case.seqlen * 31 + case.dim + case.bs
    ref = reference_model(case, seed, "cuda")
    module = TriMul(case.dim).cuda()
    module.load_state_dict(ref.state_dict())
    row = {"case": number, "label": case.label}
    with torch.no_grad():
        x, mask = make_inputs(case, seed, "cuda")
        row["check"] = check_close(module(x, mask), ref(x, mask))
        if row["check"] is None:
            times = time_calls(module, case, seed + 1000)
            row["ms"] = sum(times) / len(times)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    module(x, mask)
                torch.cuda.synchronize()
            row["kernels_ms"] = {ev.key: ev.device_time_total / ev.count / 1000 for ev in prof.key_averages()
                                 if ev.device_type == torch.autograd.DeviceType.CUDA and "trimul" in ev.key}
    del ref, module, x, mask
    torch.cuda.empty_cache()
    print("ROW" + json.dumps(row), flush=True)
"""

PATHS = ("separate", "fused")


def case_numbers(spec: str) -> list[int]:
    """``1-7``, ``5-7`` or ``3``: ranked cases by number (1-based); ``0``: none."""
    if spec == "0":
        return []
    lo, _, hi = spec.partition("-")
    numbers = list(range(int(lo), int(hi or lo) + 1))
    if not numbers or numbers[0] < 1 or numbers[-1] > 7:
        raise SystemExit(f"--only {spec!r}: ranked cases are numbered 1 to 7")
    return numbers


def run_path(path: str, numbers: list, timeout: float) -> dict:
    """One path's rows by case number, from a child process (its output echoed as it ends)."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(numbers)], capture_output=True,
                              text=True, env=env, timeout=timeout)
        out, err = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = f"timed out after {timeout} s\n"
    print(f"== {path}\n{err[-3000:]}", flush=True)
    rows = [json.loads(line[3:]) for line in out.splitlines() if line.startswith("ROW")]
    return {r["case"]: r for r in rows}


def split(row: dict) -> str:
    """The per-kernel means, short names: ``center 0.55 / proj 1.00 / ...``."""
    return " / ".join(f"{k.removeprefix('trimul_').removesuffix('_kernel')} {v:.3f}"
                      for k, v in row.get("kernels_ms", {}).items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="1-7", help="ranked cases by number: 1-7, 5-7, 3")
    parser.add_argument("--extra", nargs="*", default=[], help="N:B:C cases after the ranked ones")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for each path's process")
    args = parser.parse_args()
    numbers = case_numbers(args.only) + args.extra
    results = {path: run_path(path, numbers, args.timeout) for path in PATHS}
    print("| case | separate ms | fused ms | separate / fused | separate kernels ms | fused kernels ms |")
    print("|---|---|---|---|---|---|")
    for n in numbers:
        a, b = results["separate"].get(n, {}), results["fused"].get(n, {})
        label = a.get("label") or b.get("label") or f"case {n}"
        cells = [f"{r['ms']:.4f}" if "ms" in r else (f"FAILED: {r['check']}" if r.get("check") else "no result")
                 for r in (a, b)]
        ratio = f"{a['ms'] / b['ms']:.3f}" if "ms" in a and "ms" in b else "-"
        print(f"| {label} | {cells[0]} | {cells[1]} | {ratio} | {split(a)} | {split(b)} |")
    for path in PATHS:
        ms = [r["ms"] for r in results[path].values() if "ms" in r]
        if len(ms) == len(numbers):
            print(f"{path}: geomean {math.exp(sum(map(math.log, ms)) / len(ms)):.4f} ms over {len(ms)} cases")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
