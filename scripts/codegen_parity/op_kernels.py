"""Op-level TLX kernels for the parity check: each exercises one op family, nothing else.

Written against the TLX API both implementations share; ``dump`` binds ``tritium.tlx`` to the TLX
under test.
"""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def local_roundtrip(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    buf = tlx.local_alloc((BM, BN), tl.float16, 2)
    tlx.local_store(tlx.local_view(buf, 1), tl.load(x_ptr + offs))
    tl.store(y_ptr + offs, tlx.local_load(tlx.local_view(buf, 1)) * 2)


@triton.jit
def local_views(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)
    view = tlx.local_view(buf, 0)
    tlx.local_store(view, tl.load(x_ptr + offs))
    top = tlx.local_load(tlx.local_slice(view, [0, 0], [BM // 2, BN]))
    t_offs = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
    tl.store(y_ptr + t_offs, tlx.local_load(tlx.local_trans(view)))
    top_offs = tl.arange(0, BM // 2)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + BM * BN + top_offs, top)


@triton.jit
def async_copy(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    bufs = tlx.local_alloc((BM, BN), tl.float16, STAGES)
    for s in tl.static_range(STAGES):
        token = tlx.async_load(x_ptr + s * BM * BN + offs, tlx.local_view(bufs, s))
        tlx.async_load_commit_group([token])
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for s in tl.static_range(STAGES):
        tlx.async_load_wait_group(STAGES - 1 - s)
        acc += tlx.local_load(tlx.local_view(bufs, s))
    tl.store(y_ptr + offs, acc)


@triton.jit
def wgmma(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
    b_offs = tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :]
    a = tlx.local_alloc((BM, BK), tl.float16, 1)
    b = tlx.local_alloc((BK, BN), tl.float16, 1)
    tlx.local_store(tlx.local_view(a, 0), tl.load(a_ptr + a_offs))
    tlx.local_store(tlx.local_view(b, 0), tl.load(b_ptr + b_offs))
    tlx.fence_async_shared()
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    acc = tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0), acc)
    acc = tlx.async_dot_wait(0, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@triton.jit
def tma_barrier(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)
    bar = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_expect_bytes(tlx.local_view(bar, 0), BM * BN * 2)
    tlx.async_descriptor_load(in_desc, tlx.local_view(buf, 0), [tl.program_id(0) * BM, 0], tlx.local_view(bar, 0))
    tlx.barrier_wait(tlx.local_view(bar, 0), 0)
    tlx.async_descriptor_store(out_desc, tlx.local_view(buf, 0), [tl.program_id(0) * BM, 0])
    tlx.async_descriptor_store_wait(0)


@triton.jit
def warp_specialized(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
        with tlx.async_task(num_warps=4):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + n + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
