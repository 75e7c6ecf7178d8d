"""Persistent warp-specialized Hopper GEMM, cooperative: two consumer warpgroups share every tile.

Design (the "cooperative" persistent WS GEMM):

* grid = min(#SMs, #tiles); each program walks its tiles in GROUP_SIZE_M-grouped order.
* Producer: the default task (4 warps, registers given back to the consumers by ``setmaxnreg``).
  For every K step it waits until both consumers released the stage (``empty``, arrive count 2;
  phase ^ 1 so the first pass through the ring does not block), arms the stage's ``full`` barrier
  with the bytes of both A halves and the B tile, and issues three TMA loads.
* Consumers: one 4-warp task replicated twice; replica r owns rows [r * BM/2, (r + 1) * BM/2) of
  every BMxBN tile and so consumes every stage (its own A half, the shared B tile). wgmma runs
  asynchronously with one group in flight: after issuing step k it waits until step k - 1 retired
  and only then releases that stage, so the tensor cores always have the next MMA queued.
* Epilogue: the fp32 accumulator is converted and written through shared memory with TMA stores in
  EPILOGUE_SUBTILES column slices, alternating between two staging buffers per consumer: slice j+1
  is converted while slice j's store drains, and the last stores of a tile drain under the next
  tile's main loop (``async_descriptor_store_wait(1)`` before a buffer is reused).

TMA zero-fills out-of-bounds loads and clips stores, so ragged M, N, K need no masks.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx

from .partitions import load_tiles, mma_steps, release_last, ring_barriers, ring_buffers, store_subtiles, tile_counts
from .tiles import WSConfig, grouped_tile, sync_grid_dependency, ws_blocks, ws_constexprs, ws_matmul

#: 128x256 tiles (each consumer a 64x256 wgmma accumulator), 4 stages, 64-column store slices:
#: 4 x 48 KiB of operands + 4 x 8 KiB of staging = 224 KiB of shared memory.
LARGE = WSConfig(BM=128, BN=256, NUM_STAGES=4, EPILOGUE_SUBTILES=4)
#: For problems with fewer 128x256 tiles than SMs.
SMALL = WSConfig(BM=128, BN=128, NUM_STAGES=5, EPILOGUE_SUBTILES=2)


@triton.jit
def matmul_kernel_ws_cooperative(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                                 EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, PDL: tl.constexpr = False):
    sync_grid_dependency(PDL)
    HALF_M: tl.constexpr = BM // 2
    a_bufs, b_bufs = ring_buffers(a_desc, BM, BN, BK, NUM_STAGES, True)
    c_bufs = tlx.local_alloc((HALF_M, BN // EPILOGUE_SUBTILES), tlx.dtype_of(c_desc), 4)  # consumer r: 2 * r + (0, 1)
    full, empty = ring_barriers(NUM_STAGES, 2)
    num_pid_m, num_pid_n, num_tiles, k_tiles = tile_counts(M, N, K, BM, BN, BK)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_tiles, num_pid_m, num_pid_n, k_tiles,
                       BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, True)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            it = 0
            stores = 0  # TMA stores issued so far (the store ring's counter)
            for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
                pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
                acc = tl.zeros((HALF_M, BN), dtype=tl.float32)
                it, acc = mma_steps(a_bufs, b_bufs, full, empty, it, acc, 0, k_tiles, r, NUM_STAGES, True, 1)
                acc = release_last(acc, empty, it, NUM_STAGES)
                stores = store_subtiles(c_desc, c_bufs, stores, 2 * r, acc, pid_m * BM + r * HALF_M, 1, pid_n, HALF_M,
                                        BN, EPILOGUE_SUBTILES)
            tlx.async_descriptor_store_wait(0)


#: Each consumer loads and stores its BM/2 rows.
descriptor_blocks = ws_blocks
constexprs = ws_constexprs


def matmul(a, b, config: WSConfig | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return ws_matmul(matmul_kernel_ws_cooperative, a, b, config, num_sms, LARGE, SMALL)
