"""Kernels of the TLX sync, warp and cluster op tests: compiled by test_conformance_sync.py, run by
test_interpreter_sync.py under ``TRITON_INTERPRET=1`` and by tests/gpu/test_tlx_sync_gpu.py on the GPU."""
import triton
import triton.language as tl

import tritium.tlx as tlx


# ------------------------------------------------------------------------------------------------
# Named barriers
# ------------------------------------------------------------------------------------------------


@triton.jit
def named_pingpong(out_ptr, ROUNDS: tl.constexpr, COUNT: tl.constexpr):
    """The default task and a 4-warp task take turns through named barriers 9 and 10 (the fork's
    ping-pong pattern); each writes a timestamp in its turn."""
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for i in range(ROUNDS):
                tl.store(out_ptr + 2 * i, tlx.clock64())
                tlx.named_barrier_arrive(9, COUNT)
                tlx.named_barrier_wait(10, COUNT)
        with tlx.async_task(num_warps=4):
            for i in range(ROUNDS):
                tlx.named_barrier_wait(9, COUNT)
                tl.store(out_ptr + 2 * i + 1, tlx.clock64())
                tlx.named_barrier_arrive(10, COUNT)


@triton.jit
def named_runtime(out_ptr, bar, count):
    tlx.named_barrier_wait(bar, count)
    tlx.named_barrier_arrive(bar + 1, count)
    tl.store(out_ptr, 1)


@triton.jit
def named_misuse(out_ptr, BAR: tl.constexpr, COUNT: tl.constexpr, TASK_WARPS: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=TASK_WARPS):
            tlx.named_barrier_wait(BAR, COUNT)


# ------------------------------------------------------------------------------------------------
# Warp barriers (every thread arrives)
# ------------------------------------------------------------------------------------------------


@triton.jit
def warp_barrier_square(x_ptr, z_ptr, n, BLOCK: tl.constexpr, NUM_WARPS: tl.constexpr, ARRIVALS: tl.constexpr):
    """The fork's warp-barrier pattern: the default task stages x in shared memory, a 4-warp task squares it;
    each side arrives ARRIVALS times per phase with all its threads (in one call, or in ARRIVALS calls)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bars = tlx.alloc_warp_barrier(num_barriers=2, num_warps=NUM_WARPS, num_arrivals=ARRIVALS)
    buf = tlx.local_alloc((BLOCK, ), tl.float32, 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(bars[1], 1)
            tlx.local_store(buf[0], tl.load(x_ptr + offs, mask=offs < n))
            tlx.barrier_arrive(bars[0], arrive_count=ARRIVALS)  # every thread arrives ARRIVALS times at once
        with tlx.async_task(num_warps=4):
            tlx.barrier_wait(bars[0], 0)
            data = tlx.local_load(buf[0])
            tl.store(z_ptr + offs, data * data, mask=offs < n)
            for _ in tl.static_range(ARRIVALS):
                tlx.barrier_arrive(bars[1])


# ------------------------------------------------------------------------------------------------
# Cluster ops
# ------------------------------------------------------------------------------------------------


@triton.jit
def cluster_ops(out_ptr):
    bars = tlx.alloc_barriers(1)
    tlx.fence_mbarrier_init_cluster()
    rank = tlx.cluster_cta_rank()
    tlx.cluster_barrier()
    tlx.barrier_arrive(bars[0], remote_cta_rank=rank)  # the CTA's own barrier, named by its rank
    tlx.barrier_wait(bars[0], 0)
    tl.store(out_ptr, rank * 100 + tlx.cluster_size_1d())


@triton.jit
def cluster_amd(out_ptr):
    tlx.cluster_barrier()
    tl.store(out_ptr, tlx.cluster_cta_rank() * 100 + tlx.cluster_size_1d())


@triton.jit
def cluster_misuse(out_ptr, CASE: tl.constexpr):
    bars = tlx.alloc_barriers(2)
    if CASE == 0:
        tlx.barrier_arrive(bars[0], remote_cta_rank=1)
    elif CASE == 1:
        tlx.barrier_wait(tlx.remote_view(bars[0], 0), 0)
    elif CASE == 2:
        tlx.remote_view(bars[1], 3)
    elif CASE == 3:
        tlx.barrier_arrive(tlx.remote_view(bars[0], 0))
    tl.store(out_ptr, tlx.cluster_cta_rank())


@triton.jit
def cluster_barrier_tasks(out_ptr):
    """Each task stamps the time before and after a cluster barrier: all "before"s precede all "after"s."""
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr + 0, tlx.clock64())
            tlx.cluster_barrier()
            tl.store(out_ptr + 2, tlx.clock64())
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, tlx.clock64())
            tlx.cluster_barrier()
            tl.store(out_ptr + 3, tlx.clock64())


# ------------------------------------------------------------------------------------------------
# Warp vote and reduction
# ------------------------------------------------------------------------------------------------


@triton.jit
def ballot(out_ptr, x_ptr, MASK: tl.constexpr):
    tl.store(out_ptr, tlx.vote_ballot_sync(MASK, tl.load(x_ptr) != 0))


@triton.jit
def ballot_tensor(out_ptr, x_ptr):
    offs = tl.arange(0, 32)
    tl.store(out_ptr + offs, tlx.vote_ballot_sync(0xFFFFFFFF, tl.load(x_ptr + offs) > 0))


@triton.jit
def redux(out_ptr, x_ptr, OP: tl.constexpr):
    tl.store(out_ptr, tlx.warp_redux(tl.load(x_ptr), OP))


# ------------------------------------------------------------------------------------------------
# FP8 format names
# ------------------------------------------------------------------------------------------------


@triton.jit
def fp8_name(out_ptr, DTYPE: tl.constexpr, EXPECTED: tl.constexpr):
    name: tl.constexpr = tlx.get_fp8_format_name(DTYPE)
    tl.static_assert(name == EXPECTED)
    tl.store(out_ptr, 1)


@triton.jit
def cluster_barrier_outside_tasks(out_ptr):
    tlx.cluster_barrier()
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, 1)
