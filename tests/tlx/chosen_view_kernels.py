"""Kernels that choose a shared-memory view by a run-time condition (an ``if`` whose branches pick different
views of one type): compiled by test_chosen_views.py, interpreted by test_interpreter_chosen_views.py."""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def chosen_views_kernel(x_ptr, y_ptr, z_ptr, w_ptr, v_ptr, c, N: tl.constexpr):
    """``y``: buffer 1 (c > 0) or 0 of a pair, x * 2 or x; ``z``: a second allocation (x + 1) when c > 0, else
    buffer 0 of the pair; ``w``: the upper (c > 0) or lower half of buffer 1; ``v``: x - 1 stored through a
    chosen view into buffer 1 (c > 0) or 0 of another pair, then both buffers read back (the other one holds 0)."""
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    bufs = tlx.local_alloc((N, ), tl.float32, 2)
    tlx.local_store(bufs[0], x)
    tlx.local_store(bufs[1], x * 2)
    if c > 0:  # local_view with different indices
        v = tlx.local_view(bufs, 1)
    else:
        v = tlx.local_view(bufs, 0)
    tl.store(y_ptr + r, tlx.local_load(v))
    other = tlx.local_alloc((N, ), tl.float32, 1)
    tlx.local_store(other[0], x + 1)
    u = bufs[0]
    if c > 0:  # two allocations; the variable rebound in one branch only
        u = other[0]
    tl.store(z_ptr + r, tlx.local_load(u))
    if c > 0:  # local_slice with different static offsets
        s = tlx.local_slice(bufs[1], [N // 2], [N // 2])
    else:
        s = tlx.local_slice(bufs[1], [0], [N // 2])
    tl.store(w_ptr + tl.arange(0, N // 2), tlx.local_load(s))
    out = tlx.local_alloc((N, ), tl.float32, 2)
    tlx.local_store(out[0], tl.zeros((N, ), tl.float32))
    tlx.local_store(out[1], tl.zeros((N, ), tl.float32))
    if c > 0:
        d = out[1]
    else:
        d = out[0]
    tlx.local_store(d, x - 1)
    tl.store(v_ptr + r, tlx.local_load(out[0]))
    tl.store(v_ptr + N + r, tlx.local_load(out[1]))


@triton.jit
def chosen_tma_kernel(x_desc, y_ptr, c, N: tl.constexpr):
    """A TMA load (an op the lowering writes as text) into the half of a buffer's rows that a run-time condition
    chooses, the other half zero: ``y`` is ``[x; 0]`` (c > 0: ``[0; x]``) for an ``N // 2`` x ``N`` tile ``x``."""
    buf = tlx.local_alloc((N, N), tl.float16, 1)[0]
    tlx.local_store(buf, tl.zeros((N, N), tl.float16))
    tlx.fence_async_shared()
    bar = tlx.alloc_barriers(1, arrive_count=1)[0]
    if c > 0:
        half = tlx.local_slice(buf, [N // 2, 0], [N // 2, N])
    else:
        half = tlx.local_slice(buf, [0, 0], [N // 2, N])
    tlx.barrier_expect_bytes(bar, (N // 2) * N * 2)
    tlx.async_descriptor_load(x_desc, half, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    r, k = tl.arange(0, N), tl.arange(0, N)
    tl.store(y_ptr + r[:, None] * N + k[None, :], tlx.local_load(buf))
