"""Host cost of one call through the torch dispatcher, per way of registering an op, on the CPU.

Registers one trivial implementation (it returns its first input) under a probe namespace twice: as a
``torch.library.custom_op`` with a fake implementation and autograd (how tritium's ops were registered),
and through :func:`tritium.ops.registration.define` (how they are now); then times a call of each, the
implementation called from Python, and ``torch.mm`` on 8x8 tensors (a C++ op, for scale). Microseconds
per call, best of 5 rounds of ``--calls`` calls. What it measures is the dispatch alone, not a GPU call.

    PYTHONPATH=src python scripts/dispatch_cost.py [--calls 20000]
"""
import argparse
import os
import time

os.environ["TRITON_INTERPRET"] = "1"  # CPU tensors count as tensors the kernels run on (registration.direct_ok)

import torch  # noqa: E402

from tritium.ops import registration  # noqa: E402


def implementation(a: torch.Tensor, b: torch.Tensor, out_dtype=None) -> torch.Tensor:
    return a


def fake(a, b, out_dtype=None):
    return a.new_empty(a.shape)


def backward(ctx, grad):
    return grad, None, None


def per_call_us(fn, calls: int) -> float:
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls

    @torch.library.custom_op("tritium_probe::custom", mutates_args=())
    def custom(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
        return a.clone()  # custom_op refuses an output aliasing an input

    custom.register_fake(fake)
    custom.register_autograd(backward)
    registration.define("tritium_probe::library", "(Tensor a, Tensor b, ScalarType? out_dtype=None) -> Tensor",
                        implementation, fake, 2, backward)
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    rows = {"Python call of the implementation": lambda: implementation(a, b),
            "torch.mm (8x8, C++ op, for scale)": lambda: torch.mm(a, b),
            "torch.library.custom_op": lambda: torch.ops.tritium_probe.custom(a, b),
            "tritium.ops.registration.define": lambda: torch.ops.tritium_probe.library(a, b),
            "tritium.ops.registration.define, .default overload": lambda: torch.ops.tritium_probe.library.default(a, b)}
    print(f"CPU dispatch cost per call (us, best of 5 x {calls} calls; torch {torch.__version__})")
    for name, fn in rows.items():
        print(f"  {name:52s} {per_call_us(fn, calls):6.2f}")


if __name__ == "__main__":
    main()
