"""Triton-free reproducer of the racecheck report on warp-specialized kernels: a hand-written PTX kernel.

Usage: python scripts/racecheck_bar0.py none|bar0|bar2|bar0_bar2|readers|balanced
256 threads. Warps 0-3 (the "default" warps) write one shared word each, then every thread meets at
``barrier.sync 1`` (all threads, as stock Triton's ``warp_specialize`` protocol does), then warps
4-7 read those words and store them to global memory. The write and the read are ordered by the
CTA-wide barrier, so there is no race. Before that, the writers may first synchronise among
themselves with ``bar.sync 0, 128`` (``bar0``: what stock Triton emits for a barrier of the default
partition) and/or ``bar.sync 2, 128`` (``bar2``), and the readers with ``bar.sync 3, 128``
(``readers``; ``balanced`` = ``bar0`` + ``readers``). See docs/tlx-design.md for what racecheck says.
"""
import ctypes
import sys

import torch

PTX = r"""
.version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b32 words[4];
.visible .entry k(.param .u64 out, .param .u32 mode)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<6>;
  .reg .pred %p<6>;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;                // warp id
  ld.param.u32 %r3, [mode];
  ld.param.u64 %rd1, [out];
  mov.u32 %r4, words;
  setp.lt.u32 %p1, %r1, 128;          // warps 0-3
  @!%p1 bra READERS;
  and.b32 %r10, %r3, 1;
  setp.ne.u32 %p2, %r10, 0;
  @!%p2 bra NOT0;
  bar.sync 0, 128;                    // mode bit 0: writers, barrier 0
NOT0:
  and.b32 %r10, %r3, 2;
  setp.ne.u32 %p3, %r10, 0;
  @!%p3 bra SYNCED;
  bar.sync 2, 128;                    // mode bit 1: writers, barrier 2
  bra.uni SYNCED;
READERS:
  and.b32 %r10, %r3, 4;
  setp.ne.u32 %p4, %r10, 0;
  @!%p4 bra SYNCED;
  bar.sync 3, 128;                    // mode bit 2: readers, barrier 3
SYNCED:
  @!%p1 bra READ;
  shl.b32 %r5, %r2, 2;
  add.u32 %r6, %r4, %r5;
  add.u32 %r7, %r2, 100;
  st.shared.u32 [%r6], %r7;          // warp w (0-3) writes words[w]
READ:
  barrier.sync 1;
  @%p1 bra DONE;
  sub.u32 %r8, %r2, 4;
  shl.b32 %r5, %r8, 2;
  add.u32 %r6, %r4, %r5;
  ld.shared.u32 %r9, [%r6];          // warp w (4-7) reads words[w - 4]
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r9;
DONE:
  ret;
}
"""


def main(which: str) -> int:
    mode = {"none": 0, "bar0": 1, "bar2": 2, "bar0_bar2": 3, "readers": 4, "balanced": 5}[which]
    out = torch.zeros(256, device="cuda", dtype=torch.int32)  # also makes torch's context current
    cu = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    assert cu.cuModuleLoadData(ctypes.byref(mod), PTX.encode()) == 0, "cuModuleLoadData"
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"k") == 0, "cuModuleGetFunction"
    a_out, a_mode = ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(mode)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(a_out), ctypes.addressof(a_mode))
    assert cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, None, params, None) == 0, "cuLaunchKernel"
    torch.cuda.synchronize()
    got = out[128:].view(4, 32)[:, 0].tolist()
    print(which, got)
    return 0 if got == [100, 101, 102, 103] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
