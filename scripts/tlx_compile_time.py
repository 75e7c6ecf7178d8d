"""Compile time, on the CPU, of the shipped TLX kernels for sm_90 (the sm_90 cases of tests/codegen_hashes.py),
under one or more source trees: to see what a change of the TLX lowering costs. Usage::

    PYTHONPATH=src:scripts:tests python scripts/tlx_compile_time.py [--runs N] [--only TEXT] TREE [TREE ...]

A TREE is a directory holding ``src/tritium`` (this checkout, or ``git archive REV src`` unpacked). Each tree
is measured in a fresh process: per kernel one compile to warm up the process, then N compiles with Triton's
cache off (``always_compile``); the table gives, per tree, the median seconds of each kernel's whole compile
and of the ``tlx.lower_placeholders`` pass in it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(runs: int, only: str) -> dict[str, list[tuple[float, float]]]:
    """(whole compile, lowering pass) seconds of each case, in this process (with the ``tritium`` it imports)."""
    import triton
    from triton.backends.compiler import GPUTarget

    import tritium.tlx  # noqa: F401  (the TLX plugin compiles the kernels)
    from codegen_hashes import CASES, case_name
    from codegen_parity.dump import load_module, source
    from tritium.tlx import pipeline

    lowering = pipeline.lower_placeholders
    spent = [0.0]

    def timed(mod, ctx):
        start = time.perf_counter()
        try:
            return pass_fn(mod, ctx)
        finally:
            spent[0] += time.perf_counter() - start

    pass_fn = lowering.fn
    object.__setattr__(lowering, "fn", timed)  # the pipelines hold this pass object
    triton.knobs.compilation.always_compile = True
    times: dict[str, list[tuple[float, float]]] = {}
    for spec, target in CASES:
        name = case_name(spec, target)
        if target[0] != "cuda" or only not in name:
            continue
        gpu = GPUTarget(*target)
        src = source(spec, load_module(spec, None, gpu))
        triton.compile(src, target=gpu, options=dict(spec.options))
        times[name] = []
        for _ in range(runs):
            spent[0], start = 0.0, time.perf_counter()
            triton.compile(src, target=gpu, options=dict(spec.options))
            times[name].append((time.perf_counter() - start, spent[0]))
    return times


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", type=Path, default=[ROOT])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="", help="measure only the cases whose name contains this")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.runs, args.only)))
        return 0
    medians = []
    for tree in args.trees:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree.resolve() / "src"), str(ROOT / "scripts"),
                                                            str(ROOT / "tests")])}
        out = subprocess.run([sys.executable, __file__, "--measure", "--runs", str(args.runs), "--only", args.only],
                             env=env, check=True, capture_output=True, text=True).stdout
        medians.append({name: tuple(statistics.median(run[i] for run in t) for i in (0, 1))
                        for name, t in json.loads(out.splitlines()[-1]).items()})
    names = list(medians[0])
    width = max(len(n) for n in names)
    print(f"{'kernel (compile s / lowering s)':<{width}}  " + "  ".join(f"{str(t)[-20:]:>20}" for t in args.trees))
    for name in names:
        print(f"{name:<{width}}  " + "  ".join(f"{m[name][0]:>10.3f} /{m[name][1]:>8.4f}" for m in medians))
    print(f"{'total':<{width}}  " + "  ".join(
        f"{sum(v[0] for v in m.values()):>10.3f} /{sum(v[1] for v in m.values()):>8.4f}" for m in medians))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
