"""Persistent warp-specialized Hopper GEMM, dual-K: two consumer warpgroups split the K loop of one tile.

For problems with few output tiles (1024^3 has 128 tiles of 64x128 for 132 SMs, 512^3 64 of 64x64),
a program owns about one tile. Ping-pong then leaves one consumer warpgroup idle, and the cooperative
kernel's 128-row tiles halve the number of programs; split-K across programs pays a zero-filled fp32
workspace, reduce stores and a conversion, several microseconds at these sizes. Here the split is
inside the program, with no workspace:

* grid = min(#SMs, #tiles); each program walks its tiles in GROUP_SIZE_M-grouped order.
* Producer: the default task (4 warps, registers given back by ``setmaxnreg``) fills a ring of
  NUM_STAGES (A, B) stages with every K step of the program's tiles in order (as in ping-pong);
  each stage is consumed by one consumer (``empty`` arrive count 1).
* Consumers: one 4-warp task replicated twice. Ring step ``it`` belongs to replica ``it % 2``, so
  the two take alternate K steps of every tile (an odd K-step count alternates who takes the extra
  one). Each keeps one wgmma group in flight and releases its previous step once it retired; a stage
  is therefore held until its owner's next MMA is issued, two ring steps later, which is why the ring
  needs at least 3 stages. It also needs an even number: with 3 stages (each stage then alternates
  between the replicas from one ring lap to the next) the kernel failed on the H200 with an
  unspecified launch failure at 4097x4095x513 (GPU run of 2026-12-01, docs/benchmarks.md), while 4
  and 6 stages passed. The cause is not understood yet, so odd depths are refused.
* Reduction: replica 1 writes its fp32 partial tile to shared memory in EPILOGUE_SUBTILES column
  slices and arrives on named barrier RED_FULL; replica 0 waits, adds the slices to its own and
  runs the epilogue alone (TMA stores through two staging buffers), and once every slice is read
  arrives on RED_FREE, which replica 1 waits on before it writes the next tile's partial. Replica 1
  meanwhile starts the next tile's MMAs, so the epilogue overlaps the tensor cores.

TMA zero-fills out-of-bounds loads and clips stores, so ragged M, N, K need no masks.
"""
from __future__ import annotations

from functools import partial

import triton
import triton.language as tl

import tritium.tlx as tlx

from .partitions import CONSUMER_PAIR_THREADS, store_slice, wait_stage, whole_tile_tasks, ws_prologue
from .tiles import WSConfig, column_subtiles, grouped_tile, ws_blocks, ws_constexprs, ws_matmul

#: 64x128 tiles (each consumer a 64x128 fp32 accumulator), 6 stages, 2 store slices: 6 x 24 KiB of
#: operands + 32 KiB of fp32 partial + 2 x 8 KiB of staging = 192 KiB of shared memory.
DEFAULT = WSConfig(BM=64, BN=128, NUM_STAGES=6, EPILOGUE_SUBTILES=2)

#: Named barriers (stock Triton uses 0-3; ping-pong's MMA turns are 8 and 9).
RED_FULL = tl.constexpr(10)
RED_FREE = tl.constexpr(11)


@triton.jit
def consume_halves(r: tl.constexpr, my_tiles, a_bufs, b_bufs, c_bufs, full, empty, partial, c_desc, num_pid_m,
                   num_pid_n, k_tiles, BM: tl.constexpr, BN: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                   NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr):
    """Consumer r of the dual-K kernel (the module docstring): every tile's ring steps with it % 2 == r, then
    the reduction through ``partial`` (the scratch of :func:`whole_tile_tasks`) and replica 0's epilogue."""
    EPI_N: tl.constexpr = BN // EPILOGUE_SUBTILES
    if r == 0:
        tlx.named_barrier_arrive(RED_FREE, CONSUMER_PAIR_THREADS)  # the partial buffer starts free
    stores = 0  # replica 0's TMA stores so far (the store ring's counter)
    for t in range(0, my_tiles):
        pid_m, pid_n = grouped_tile(tl.program_id(0) + t * tl.num_programs(0), num_pid_m, num_pid_n, GROUP_SIZE_M)
        base = t * k_tiles
        k0 = (r + base) % 2  # my first K step of this tile: ring steps it with it % 2 == r are mine
        mine = tl.cdiv(k_tiles - k0, 2)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for i in range(0, mine):
            it = base + k0 + 2 * i
            s = wait_stage(full, it, NUM_STAGES)
            acc = tlx.async_dot(a_bufs[s], b_bufs[s], acc)
            acc = tlx.async_dot_wait(1, acc)  # my previous step retired: its stage can be refilled
            tlx.barrier_arrive(empty[(it + NUM_STAGES - 2) % NUM_STAGES], pred=i > 0)
        acc = tlx.async_dot_wait(0, acc)
        last = tl.maximum(base + k0 + 2 * (mine - 1), 0)
        tlx.barrier_arrive(empty[last % NUM_STAGES], pred=mine > 0)
        parts = column_subtiles(acc, BM, BN, EPILOGUE_SUBTILES)
        if r == 1:
            tlx.named_barrier_wait(RED_FREE, CONSUMER_PAIR_THREADS)  # replica 0 has read my previous partial
            for j in tl.static_range(EPILOGUE_SUBTILES):
                tlx.local_store(partial[j], parts[j])
            tlx.named_barrier_arrive(RED_FULL, CONSUMER_PAIR_THREADS)
        else:
            tlx.named_barrier_wait(RED_FULL, CONSUMER_PAIR_THREADS)
            for j in tl.static_range(EPILOGUE_SUBTILES):
                out = (parts[j] + tlx.local_load(partial[j])).to(tlx.dtype_of(c_desc))
                stores = store_slice(c_desc, c_bufs, stores, 0, out, pid_m, BM, pid_n, BN, j * EPI_N)
            if t + 1 < my_tiles:  # every slice read: replica 1 waits on this once per tile after the first
                tlx.named_barrier_arrive(RED_FREE, CONSUMER_PAIR_THREADS)


@triton.jit
def matmul_kernel_ws_dualk(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                           GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr,
                           NUM_REGS: tl.constexpr, PDL: tl.constexpr = False):
    tl.static_assert(NUM_STAGES >= 4 and NUM_STAGES % 2 == 0,
                     "matmul_kernel_ws_dualk: NUM_STAGES must be even and at least 4 (see the module docstring)")
    EPI_N: tl.constexpr = BN // EPILOGUE_SUBTILES
    a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_tiles, k_tiles = ws_prologue(
        a_desc, c_desc, M, N, K, BM, BN, BK, NUM_STAGES, False, EPI_N, 2, PDL)
    partial = tlx.local_alloc((BM, EPI_N), tl.float32, EPILOGUE_SUBTILES)  # replica 1's tile, by column slice

    whole_tile_tasks(consume_halves, a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, full, empty, partial, num_pid_m,
                     num_pid_n, num_tiles, k_tiles, BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES, NUM_REGS)


#: Whole BM-row tiles, C in column slices.
descriptor_blocks = partial(ws_blocks, split_a=False)
constexprs = ws_constexprs


def matmul(a, b, config: WSConfig = DEFAULT, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return ws_matmul(matmul_kernel_ws_dualk, a, b, config, num_sms, DEFAULT, DEFAULT, split_a=False)
