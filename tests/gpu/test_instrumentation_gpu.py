"""src/tritium/examples/instrumentation.py on a GPU: the probes' readout is positive and grows with work."""
import pytest
import torch
import triton
import triton.language as tl

import tritium.plugins as tp
from test_example_plugins import module_of

pytestmark = pytest.mark.gpu


@triton.jit
def spin_kernel(x_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for _ in range(n_iter):
        x = x * 0.999 + 0.001
    tl.store(x_ptr + offs, x)


def test_readout_is_positive_and_grows_with_work():
    instrumentation = module_of(tp.get_plugin("instrumentation"))
    kernel = tp.bind("instrumentation:timing", triton.jit(spin_kernel.fn))
    grid, block = 264, 256
    x = torch.zeros(grid * block, device="cuda")

    def timed(n_iter):
        compiled = kernel[(grid,)](x, n_iter, BLOCK=block)
        instrumentation.reset(compiled)
        kernel[(grid,)](x, n_iter, BLOCK=block)
        return compiled, instrumentation.read(compiled)

    compiled, small = timed(10)
    _, large = timed(200000)
    print(f"\n10 iterations: {small}, mean {small.mean_ns:.0f} ns/CTA; "
          f"200000 iterations: {large}, mean {large.mean_ns:.0f} ns/CTA")
    assert small.count == large.count == grid  # thread 0 of every CTA recorded once
    assert small.ns > 0
    assert large.mean_ns > 10 * small.mean_ns
    kernel[(grid,)](x, 10, BLOCK=block)  # no reset: the globals accumulate
    again = instrumentation.read(compiled)
    assert again.count == 2 * grid and again.ns > small.ns

    bare = triton.jit(spin_kernel.fn)[(grid,)](x, 10, BLOCK=block)
    with pytest.raises(RuntimeError, match="instrumentation:timing"):
        instrumentation.read(bare)
