"""An @aggregate class in the TLX fork's style (no __init__, @triton.jit methods: a constructor-like static
one and methods on self, as amd_fa_cluster's SoftmaxState), compiled in test_triton_compat and run under
the interpreter in test_interpreter_local; and a bf16 dot of buffers (the interpreter's dot)."""
import triton
import triton.language as tl

import tritium.tlx as tlx  # first, as in the fork's kernels: it lets _aggregate take fork-style classes
from triton.language.core import _aggregate as aggregate  # noqa: E402,I001


@aggregate
class RunningSum:
    total: tl.tensor
    scale: tl.tensor

    @triton.jit
    def create(N: tl.constexpr):
        return RunningSum(tl.zeros([N], dtype=tl.float32), tl.full([N], 1.0, dtype=tl.float32))

    @triton.jit
    def add(self, v):
        return RunningSum(self.total + v * self.scale, self.scale * 2.0), tl.sum(self.total)


@triton.jit
def running_sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """out = x + 2x + (sum of x) = 3x + sum(x)."""
    s = RunningSum.create(N)
    v = tl.load(x_ptr + tl.arange(0, N))
    s, _ = s.add(v)
    s, first = s.add(v)
    tl.store(out_ptr + tl.arange(0, N), s.total + first)


@triton.jit
def bf16_buffer_dot(x_ptr, z_ptr, N: tl.constexpr):
    """z = x @ x.T, both operands read from a bf16 buffer."""
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    buf = tlx.local_alloc((N, N), tl.bfloat16, 1)
    tlx.local_store(buf[0], tl.load(x_ptr + offs))
    tl.store(z_ptr + offs, tl.dot(tlx.local_load(buf[0]), tlx.local_load(tlx.local_trans(buf[0]))))
