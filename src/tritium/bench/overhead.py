"""What the plugin machinery costs: compile time with a no-op pipeline, and host time per launch.

Compile time runs anywhere (compile-only, sm_90 and gfx950: ``--only compile``).  Launch time needs a GPU: an already
compiled tiny kernel is launched in many short interleaved rounds, bare and with a pipeline bound
and TLX loaded.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import triton
import triton.language as tl

from .. import plugins
from ..plugins.inspection import compile_kernel
from .report import bar_plot, table


@triton.jit
def _tiny(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.jit
def _softmax(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * n + offs, e / tl.sum(e, 0), mask=offs < n)


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


CORPUS = [
    (_tiny, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024}),
    (_softmax, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024}),
    (_matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}, {"BM": 128, "BN": 128, "BK": 64}),
]


def _compile_once(fn: Any, sig: dict, const: dict, target: str, pipeline: Any) -> float:
    t0 = time.perf_counter()
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        compile_kernel(fn, sig, target, constexprs=const, pipeline=pipeline)
    return time.perf_counter() - t0


def compile_overhead(repeats: int = 9) -> list[tuple[str, str, float, float, float]]:
    """Median compile seconds, bare Triton (tritium's hook removed) and a no-op pipeline, interleaved."""
    rows = []
    noop = plugins.Pipeline("noop")
    for target in ("sm90", "gfx950"):
        for fn, sig, const in CORPUS:
            _compile_once(fn, sig, const, target, None)  # warm imports and caches
            bare, with_noop = [], []
            for _ in range(repeats):
                plugins.disable()
                try:
                    bare.append(_compile_once(fn, sig, const, target, None))
                finally:
                    plugins.enable()
                with_noop.append(_compile_once(fn, sig, const, target, noop))
            b, n = statistics.median(bare), statistics.median(with_noop)
            rows.append((fn.__name__.strip("_"), target, b * 1e3, n * 1e3, n / b))
    return rows


def launch_overhead(launches: int = 2000, rounds: int = 40) -> list[tuple[str, float, float]]:
    """Host microseconds per launch: bare Triton, then a bound pipeline with TLX loaded.

    The two run interleaved in many short rounds (alternating which goes first), and the ratio is
    the median of the per-round ratios: clock boosts and background load drift over seconds, so
    one long run per configuration measured the drift as much as the plugin system.
    """
    import torch
    from .. import tlx  # noqa: F401  (loading TLX is part of what is measured)

    x = torch.zeros(1024, device="cuda")
    bare = triton.jit(_tiny.fn)
    bound = plugins.bind(plugins.Pipeline("noop-bound"), triton.jit(_tiny.fn))

    def per_launch_us(kernel: Any, tritium: bool) -> float:
        if not tritium:
            plugins.disable()  # bare Triton: not even tritium's hook is installed
        try:
            kernel[(1,)](x, 1024, BLOCK=1024)  # compiled (first round) and warm before timing
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(launches):
                kernel[(1,)](x, 1024, BLOCK=1024)
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / launches * 1e6
        finally:
            plugins.enable()

    bare_us, tritium_us = [], []
    for r in range(rounds):
        if r % 2:
            tritium_us.append(per_launch_us(bound, True))
            bare_us.append(per_launch_us(bare, False))
        else:
            bare_us.append(per_launch_us(bare, False))
            tritium_us.append(per_launch_us(bound, True))
    ratio = statistics.median(t / b for t, b in zip(tritium_us, bare_us))
    return [("bare Triton", statistics.median(bare_us), 1.0),
            ("tritium (bound pipeline, TLX loaded)", statistics.median(tritium_us), ratio)]


def main(out: str, only: str = "") -> int:
    labels: list[str] = []
    series: dict[str, list[float]] = {"ratio to bare Triton": []}
    if only != "launch":
        rows = compile_overhead()
        print("## Compile time, no-op pipeline vs bare Triton (median ms)")
        print(table(["kernel", "target", "bare ms", "tritium no-op ms", "ratio"], rows))
        series["ratio to bare Triton"] += [r[4] for r in rows]
        labels += [f"compile {r[0]}/{r[1]}" for r in rows]
    if only != "compile":  # `tritium bench` checked that a GPU is there
        launch = launch_overhead()
        print("\n## Host time per launch of a compiled tiny kernel (median us; ratio: median of per-round ratios)")
        print(table(["configuration", "us/launch", "ratio"], launch))
        labels.append("launch")
        series["ratio to bare Triton"].append(launch[1][2])
    print(f"\nplot: {bar_plot(f'{out}/overhead.png', 'tritium overhead (1.0 = bare Triton)', labels, series, 'ratio')}")
    return 0
