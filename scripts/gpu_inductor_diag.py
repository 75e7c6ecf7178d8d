"""Where the time of ``tritium bench inductor``'s small block goes, switch off and on, on the GPU machine.

Usage: PYTHONPATH=src python3 scripts/gpu_inductor_diag.py [--mode default|reduce-overhead ...]

For each mode: the block compiled with ``use_kernels`` off, then on (``tritium.bench.inductor.compiled_run``'s
order: timed right after its own compilation); do_bench median ms; a torch.profiler table of 50 calls (CPU
and CUDA time per op and kernel); the lines of Inductor's output code that call tritium's ops. Then, for each
GEMM shape of the block, bare calls of ``torch.mm`` and ``torch.ops.tritium.matmul``: host time per call
(synchronized start to return) and GPU time per call in CUDA-graph replay.
"""
from __future__ import annotations

import argparse
import sys

import torch
from gpu_host_profile import host_us
from triton.testing import do_bench

from tritium.bench import inductor as bench
from tritium.ops import use_kernels


def profile_table(fn, calls: int = 50) -> str:
    from torch.profiler import ProfilerActivity, profile
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=60)


def block_run(block, x, kernels: bool, mode: str) -> None:
    torch._dynamo.reset()
    previous = use_kernels(mm=kernels, attention=kernels)
    try:
        from torch._inductor.utils import run_and_get_code
        fn = torch.compile(block, mode=None if mode == "default" else mode)
        with torch.no_grad():
            _, code = run_and_get_code(fn, x)
            ms = min(do_bench(lambda: fn(x), warmup=25, rep=200, return_mode="median") for _ in range(2))
            print(f"--- {mode}, switch {'on' if kernels else 'off'}: {ms:.4f} ms", flush=True)
            lines = [ln.strip() for ln in "\n".join(code).splitlines() if "tritium" in ln or "extern_kernels.mm" in ln]
            print("\n".join(lines[:12]))
            print(profile_table(lambda: fn(x)), flush=True)
    finally:
        use_kernels(mm=previous.mm, attention=previous.attention)
        torch._dynamo.reset()


def graph_us(fn, calls: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return do_bench(g.replay, return_mode="median") * 1e3 / calls


def gemms(size: bench.Size) -> None:
    import tritium.ops  # noqa: F401
    T, C = size.batch * size.seq, size.hidden
    for K, N in ((C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)):
        a = torch.randn(T, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ours = lambda: torch.ops.tritium.matmul.default(a, b)  # noqa: E731
        mm = lambda: torch.mm(a, b)  # noqa: E731
        ours()
        print(f"{T}x{K}x{N}: host mm {host_us(mm):.1f} us, tritium {host_us(ours):.1f} us | "
              f"graph mm {graph_us(mm):.2f} us, tritium {graph_us(ours):.2f} us", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", action="append", default=[])
    args = ap.parse_args(argv)
    size = bench.SIZES[0]
    block = bench.make_block(size)
    x = torch.randn(size.batch, size.seq, size.hidden, device="cuda", dtype=torch.bfloat16)
    for mode in args.mode or ["default", "reduce-overhead"]:
        for kernels in (False, True):
            block_run(block, x, kernels, mode)
    gemms(size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
