"""Smallest warp-specialized kernels, for telling compute-sanitizer reports on the TLX WS GEMM apart
from what stock Triton's ``ttg.warp_specialize`` lowering does by itself.

Usage: python scripts/sanitize_ws_minimal.py KERNEL   (KERNEL: a key of ``KERNELS`` below)
The plain kernels only store to distinct global addresses: no shared memory of their own. The
``_bar`` variants also initialise one mbarrier before the region, as the WS GEMM does. The others
add one ingredient of the WS GEMM each: ``_arrive`` an mbarrier arrive in the default partition
(stock lowering: ``bar.sync 0, 128`` of the default warps, as the GEMM's producer has),
``_smem_worker`` a shared-memory store and load in the workers (``bar.sync 2|3, 128``), ``tlx_bar4``
four mbarriers (the stock membar pass puts ``bar.sync 0, 128`` between their inits, before the region).
"""
import sys

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

import tritium.tlx as tlx


@triton.jit
def tlx_kernel(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            tl.store(out_ptr + 1 + tlx.async_task_replica_id(), 2)


@triton.jit
def tlx_bar_kernel(out_ptr):
    tlx.alloc_barriers(1)  # initialised only: what this variant adds
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            tl.store(out_ptr + 1 + tlx.async_task_replica_id(), 2)


@triton.jit
def tlx_arrive_kernel(out_ptr):
    bars = tlx.alloc_barriers(1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_arrive(bars[0])
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            tl.store(out_ptr + 1 + tlx.async_task_replica_id(), 2)


@triton.jit
def tlx_smem_worker_kernel(out_ptr):
    bufs = tlx.local_alloc((128, ), tl.int32, 2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            r = tlx.async_task_replica_id()
            tlx.local_store(bufs[r], tl.full((128, ), 2, tl.int32))
            x = tlx.local_load(bufs[r])
            tl.store(out_ptr + 1 + r, tl.max(x, 0))


@triton.jit
def tlx_bar4_kernel(out_ptr):
    tlx.alloc_barriers(4)  # initialised only: what this variant adds
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            tl.store(out_ptr + 1 + tlx.async_task_replica_id(), 2)


@gluon.jit
def _default(out_ptr):
    gl.store(out_ptr, 1)


@gluon.jit
def _worker(out_ptr):
    gl.store(out_ptr + 1, 2)


@gluon.jit
def gluon_kernel(out_ptr):
    gl.warp_specialize([(_default, (out_ptr, )), (_worker, (out_ptr, ))], [4], [24])


@gluon.jit
def gluon_bar_kernel(out_ptr):
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_default, (out_ptr, )), (_worker, (out_ptr, ))], [4], [24])


@gluon.jit
def _default_arrive(out_ptr, bar, smem):
    mbarrier.arrive(bar)
    gl.store(out_ptr, 1)


@gluon.jit
def _worker_plain(out_ptr, bar, smem):
    gl.store(out_ptr + 1, 2)


@gluon.jit
def _default_plain(out_ptr, bar, smem):
    gl.store(out_ptr, 1)


@gluon.jit
def _worker_smem(out_ptr, bar, smem):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    smem.store(gl.full([128], 2, gl.int32, layout))
    gl.store(out_ptr + 1, gl.max(smem.load(layout), 0))


@gluon.jit
def gluon_arrive_kernel(out_ptr):
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    smem = gl.allocate_shared_memory(gl.int32, [128], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_default_arrive, (out_ptr, bar, smem)), (_worker_plain, (out_ptr, bar, smem))], [4], [24])


@gluon.jit
def gluon_smem_worker_kernel(out_ptr):
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    smem = gl.allocate_shared_memory(gl.int32, [128], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_default_plain, (out_ptr, bar, smem)), (_worker_smem, (out_ptr, bar, smem))], [4], [24])


KERNELS = {"tlx": tlx_kernel, "tlx_bar": tlx_bar_kernel, "gluon": gluon_kernel, "gluon_bar": gluon_bar_kernel,
           "tlx_arrive": tlx_arrive_kernel, "tlx_smem_worker": tlx_smem_worker_kernel, "tlx_bar4": tlx_bar4_kernel,
           "gluon_arrive": gluon_arrive_kernel, "gluon_smem_worker": gluon_smem_worker_kernel}


def main(which: str) -> int:
    out = torch.zeros(4, device="cuda", dtype=torch.int32)
    kernel = KERNELS[which]
    kernel[(1, )](out, num_warps=4)
    want = [1, 2, 2, 0] if which.startswith("tlx") else [1, 2, 0, 0]
    torch.cuda.synchronize()
    print(which, out.tolist())
    return 0 if out.tolist() == want else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
