"""Kernels of the async-copy tests (test_conformance_async.py: compile + interpreter; tests/gpu/
test_tlx_async_copy_gpu.py: the H200).

``unaligned_gemm`` is a pipelined TLX GEMM with no alignment hints: on M=N=K=1000 fp16 the JIT cannot
prove its rows 16-byte aligned (1000 is not a multiple of 16), so its cp.async copies fall back to
synchronous ones.
"""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def _issue(a_ptrs, b_ptrs, buf_a, buf_b, k_left, offs_k):
    ta = tlx.async_load(a_ptrs, buf_a, mask=offs_k[None, :] < k_left)
    tb = tlx.async_load(b_ptrs, buf_b, mask=offs_k[:, None] < k_left)
    tlx.async_load_commit_group([ta, tb])


@triton.jit
def unaligned_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    buf_a = tlx.local_alloc((BM, BK), tlx.dtype_of(a_ptr), NUM_STAGES)
    buf_b = tlx.local_alloc((BK, BN), tlx.dtype_of(b_ptr), NUM_STAGES)
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        _issue(a_ptrs, b_ptrs, tlx.local_view(buf_a, i), tlx.local_view(buf_b, i), K - i * BK, offs_k)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=0):
        buf = k % NUM_STAGES
        tlx.async_load_wait_group(NUM_STAGES - 2)
        acc = tlx.async_dot(tlx.local_view(buf_a, buf), tlx.local_view(buf_b, buf), acc)
        acc = tlx.async_dot_wait(1, acc)
        i = k + NUM_STAGES - 1
        _issue(a_ptrs, b_ptrs, tlx.local_view(buf_a, i % NUM_STAGES), tlx.local_view(buf_b, i % NUM_STAGES),
               K - i * BK, offs_k)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    acc = tlx.async_dot_wait(0, acc)
    tlx.async_load_wait_group(0)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(tlx.dtype_of(c_ptr)),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


TILE = dict(BM=64, BN=128, BK=64, NUM_STAGES=3)
#: Fewer, larger programs: the interpreter's cost is per program and op, not per element.
INTERPRETER_TILE = dict(BM=128, BN=256, BK=128, NUM_STAGES=3)
NUM_WARPS = 4


def matmul(a, b, kernel=None, **tile):
    """``a @ b`` (fp16, row-major) with :func:`unaligned_gemm` (or ``kernel``, a copy of it), whatever the
    sizes (``tile``: TILE's keys)."""
    import torch
    tile = {**TILE, **tile}
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, tile["BM"]), triton.cdiv(N, tile["BN"]))
    (kernel or unaligned_gemm)[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                         c.stride(1), num_warps=NUM_WARPS, **tile)
    return c


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, stride, OTHER: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    buf = tlx.local_alloc((BM, BK), tlx.dtype_of(x_ptr), 1)
    tok = tlx.async_load(x_ptr + offs_m[:, None] * stride + offs_k[None, :], buf[0], mask=offs_k[None, :] < n,
                         other=OTHER)
    tlx.async_load_commit_group([tok])
    tlx.async_load_wait_group(0, [tok])
    tl.store(y_ptr + offs_m[:, None] * BK + offs_k[None, :], tlx.local_load(buf[0]))


@triton.jit
def prefetch_kernel(x_ptr, y_ptr, n, LEVEL: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, 128)
    if MASKED:
        tlx.prefetch(x_ptr + offs, level=LEVEL, mask=offs < n)
    else:
        tlx.prefetch(x_ptr + offs, level=LEVEL)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0.0), mask=offs < n)


@triton.jit
def bulk_kernel(x_ptr, y_ptr, SIZE: tl.constexpr, BULK_SIZE: tl.constexpr):
    buf = tlx.local_alloc((SIZE, ), tl.uint8, 1)
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, BULK_SIZE)
    tlx.async_load(x_ptr, buf[0], bulk=True, bulk_size=BULK_SIZE, barrier=bar)
    tlx.barrier_wait(bar, 0)
    offs = tl.arange(0, SIZE)
    tl.store(y_ptr + offs, tlx.local_load(buf[0]), mask=offs < BULK_SIZE)


@triton.jit
def two_groups_kernel(x_ptr, y_ptr, BM: tl.constexpr, BK: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
    bufs = tlx.local_alloc((BM, BK), tlx.dtype_of(x_ptr), 2)
    t0 = tlx.async_load(x_ptr + offs, bufs[0])
    tlx.async_load_commit_group([t0])
    t1 = tlx.async_load(x_ptr + BM * BK + offs, bufs[1], is_volatile=True)
    tlx.async_load_commit_group([t1])
    tlx.async_load_wait_group(1)  # the first group has landed, the second may still be in flight
    tl.store(y_ptr + offs, tlx.local_load(bufs[0]))
    tlx.async_load_wait_group(0)
    tl.store(y_ptr + BM * BK + offs, tlx.local_load(bufs[1]))


@triton.jit
def bad_prefetch_level(x_ptr):
    tlx.prefetch(x_ptr + tl.arange(0, 16), level="L3")


@triton.jit
def prefetch_tensormap(x_ptr):
    tlx.prefetch(x_ptr, tensormap=True)


@triton.jit
def prefetch_tensormap_desc(desc, y_ptr):
    tlx.prefetch(desc, tensormap=True)
    tl.store(y_ptr + tl.arange(0, 16), desc.load([0, 0]).reshape(16))


@triton.jit
def bulk_no_barrier(x_ptr):
    buf = tlx.local_alloc((256, ), tl.uint8, 1)
    tlx.async_load(x_ptr, buf[0], bulk=True)


@triton.jit
def barrier_without_bulk(x_ptr):
    buf = tlx.local_alloc((256, ), tl.uint8, 1)
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_load(x_ptr + tl.arange(0, 256), buf[0], barrier=bar)


@triton.jit
def other_without_mask(x_ptr):
    buf = tlx.local_alloc((256, ), tl.uint8, 1)
    tlx.async_load(x_ptr + tl.arange(0, 256), buf[0], other=1)


@triton.jit
def int_mask(x_ptr):
    buf = tlx.local_alloc((256, ), tl.uint8, 1)
    tlx.async_load(x_ptr + tl.arange(0, 256), buf[0], mask=tl.arange(0, 256))


@triton.jit
def bad_tokens(x_ptr):
    tlx.async_load_commit_group([1])


@triton.jit
def bad_pendings(x_ptr):
    tlx.async_load_wait_group(-1)


@triton.jit
def buffer_ops_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tlx.buffer_load(x_ptr, offs, mask=offs < n, other=0.0, cache=".cg", contiguity=4)
    tlx.buffer_store(v * 2, y_ptr, offs, mask=offs < n, cache=".wb")
    tlx.buffer_atomic_add(z_ptr, offs, v, mask=offs < n)
    buf = tlx.local_alloc((BLOCK, ), tl.float32, 1)
    tok = tlx.buffer_load_to_local(buf[0], x_ptr, offs, mask=offs < n, other=0.0, cache_modifier=".cg")
    tlx.async_load_commit_group([tok])
    tlx.async_load_wait_group(0)
    tlx.buffer_store(tlx.local_load(buf[0]), y_ptr, offs + BLOCK)


@triton.jit
def bad_eviction(x_ptr):
    buf = tlx.local_alloc((256, ), tl.uint8, 1)
    tlx.async_load(x_ptr + tl.arange(0, 256), buf[0], eviction_policy="evict_sometimes")


@triton.jit
def _slot_of(bufs, i):
    return tlx.local_view(bufs, i)


@triton.jit
def helper_views_copy_kernel(x_ptr, y_ptr, BM: tl.constexpr, BK: tl.constexpr):
    # two views made by two calls of one inlined helper: the two copies must land in two slots
    offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
    bufs = tlx.local_alloc((BM, BK), tlx.dtype_of(x_ptr), 2)
    first = _slot_of(bufs, tl.program_id(0))
    second = _slot_of(bufs, tl.program_id(0) + 1)
    t0 = tlx.async_load(x_ptr + offs, first)
    t1 = tlx.async_load(x_ptr + BM * BK + offs, second)
    tlx.async_load_commit_group([t0, t1])
    tlx.async_load_wait_group(0, [t0, t1])
    tl.store(y_ptr + offs, tlx.local_load(first) * 2 + tlx.local_load(second))


@triton.jit
def token_from_either_branch(x_ptr, y_ptr, out_ptr, cond):
    """A token assigned in both branches of a run-time ``if`` (the fork's test_async_token_error)."""
    buffers = tlx.local_alloc((128, ), tl.float32, 1)
    offsets = tl.arange(0, 128)
    if cond:
        token = tlx.async_load(x_ptr + offsets, buffers[0])
    else:
        token = tlx.async_load(y_ptr + offsets, buffers[0])
    tlx.async_load_commit_group([token])
    tlx.async_load_wait_group(0)
    tl.store(out_ptr + offsets, tlx.local_load(buffers[0]))
