"""Where the host time of a small call goes, on the GPU machine: median host time per call (from a synchronized
start until the call returns) and a cProfile of 500 calls, for TriMul at N=256 (B=2, C=128, the graph path
warmed), ``tritium.ops.attention`` at 16 x 16 x 1024 x 128 and ``torch.ops.tritium.matmul`` at 256^3, each
next to the torch call it stands for.

Usage: python scripts/gpu_host_profile.py [trimul|attention|matmul ...]   (default: all three)
"""
from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import torch


def host_us(fn, calls: int = 300) -> float:
    samples = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return sorted(samples)[len(samples) // 2] * 1e6


def profile(name: str, fn, calls: int = 500, top: int = 22) -> None:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    for order in ("tottime", "cumtime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(top)
        print(f"--- {name}: cProfile of {calls} calls, by {order}\n" + "\n".join(out.getvalue().splitlines()[4:]))


def trimul():
    from tritium.kernels.trimul_reference import RANKED_CASES, make_inputs, reference_model
    from tritium.ops import TriMul
    case = RANKED_CASES[0]
    ref = reference_model(case, 0, "cuda")
    mod = TriMul(case.dim).cuda()
    mod.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 0, "cuda")
    with torch.no_grad():
        fn = lambda: mod(x, mask)  # noqa: E731
        print(f"TriMul {case.label}: host {host_us(fn):.1f} us per call")
        profile("TriMul", fn)


def attention():
    from tritium.ops import attention as attn
    q, k, v = (torch.randn(16, 16, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)  # noqa: E731
    ours = lambda: attn(q, k, v)  # noqa: E731
    ours()
    print(f"attention 16x16x1024x128: host SDPA {host_us(sdpa):.1f} us, tritium.ops.attention {host_us(ours):.1f} us")
    profile("tritium.ops.attention", ours)


def matmul():
    import tritium.ops  # noqa: F401
    a, b = (torch.randn(256, 256, device="cuda", dtype=torch.float16) for _ in range(2))
    ours = lambda: torch.ops.tritium.matmul(a, b)  # noqa: E731
    ours()
    print(f"matmul 256^3: host torch.matmul {host_us(lambda: torch.matmul(a, b)):.1f} us, "
          f"torch.ops.tritium.matmul {host_us(ours):.1f} us")
    profile("torch.ops.tritium.matmul", ours)


if __name__ == "__main__":
    for what in sys.argv[1:] or ["trimul", "attention", "matmul"]:
        {"trimul": trimul, "attention": attention, "matmul": matmul}[what]()
