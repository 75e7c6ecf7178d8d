"""Smallest warp-specialized kernels, for telling compute-sanitizer reports on the TLX WS GEMM apart
from what stock Triton's ``ttg.warp_specialize`` lowering does by itself.

Usage: python scripts/sanitize_ws_minimal.py tlx|gluon|tlx_bar|gluon_bar
The plain kernels only store to distinct global addresses: no shared memory of their own. The
``_bar`` variants also initialise one mbarrier before the region, as the WS GEMM does.
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
    bars = tlx.alloc_barriers(1)
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


def main(which: str) -> int:
    out = torch.zeros(4, device="cuda", dtype=torch.int32)
    kernel = {"tlx": tlx_kernel, "tlx_bar": tlx_bar_kernel, "gluon": gluon_kernel, "gluon_bar": gluon_bar_kernel}[which]
    kernel[(1, )](out, num_warps=4)
    want = [1, 2, 2, 0] if which.startswith("tlx") else [1, 2, 0, 0]
    torch.cuda.synchronize()
    print(which, out.tolist())
    return 0 if out.tolist() == want else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
