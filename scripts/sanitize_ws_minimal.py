"""Smallest warp-specialized kernels, for telling compute-sanitizer reports on the TLX WS GEMM apart
from what stock Triton's ``ttg.warp_specialize`` lowering does by itself.

Usage: python scripts/sanitize_ws_minimal.py tlx|gluon
Both kernels only store to distinct global addresses: no shared memory of their own.
"""
import sys

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import tritium.tlx as tlx


@triton.jit
def tlx_kernel(out_ptr):
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


def main(which: str) -> int:
    out = torch.zeros(4, device="cuda", dtype=torch.int32)
    if which == "tlx":
        tlx_kernel[(1, )](out, num_warps=4)
        want = [1, 2, 2, 0]
    else:
        gluon_kernel[(1, )](out, num_warps=4)
        want = [1, 2, 0, 0]
    torch.cuda.synchronize()
    print(which, out.tolist())
    return 0 if out.tolist() == want else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
