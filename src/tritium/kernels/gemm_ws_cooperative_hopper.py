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

from . import tiles
from .tiles import WSConfig as Config
from .tiles import column_subtiles, grouped_tile, launch_tma_gemm, load_tiles, pick_tile, sync_grid_dependency

#: 128x256 tiles (each consumer a 64x256 wgmma accumulator), 4 stages, 64-column store slices:
#: 4 x 48 KiB of operands + 4 x 8 KiB of staging = 224 KiB of shared memory.
LARGE = Config(128, 256, 64, 8, 4, 4, 232)
#: For problems with fewer 128x256 tiles than SMs.
SMALL = Config(128, 128, 64, 8, 5, 2, 232)


@triton.jit
def matmul_kernel_ws_cooperative(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                                 EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, PDL: tl.constexpr = False):
    sync_grid_dependency(PDL)
    HALF_M: tl.constexpr = BM // 2
    EPI_N: tl.constexpr = BN // EPILOGUE_SUBTILES
    dtype = tlx.dtype_of(a_desc)
    out_dtype = tlx.dtype_of(c_desc)
    a_bufs = tlx.local_alloc((HALF_M, BK), dtype, 2 * NUM_STAGES)  # stage s: rows of consumer r at 2 * s + r
    b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
    c_bufs = tlx.local_alloc((HALF_M, EPI_N), out_dtype, 4)  # consumer r stages its slices in 2 * r + (0 or 1)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BK)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_tiles, num_pid_m, num_pid_n, k_tiles,
                       BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, True)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            it = 0
            stores = 0  # TMA stores issued so far: the next slice goes to staging buffer 2 * r + stores % 2
            for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
                pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
                acc = tl.zeros((HALF_M, BN), dtype=tl.float32)
                for k in range(0, k_tiles):
                    s = it % NUM_STAGES
                    tlx.barrier_wait(full[s], (it // NUM_STAGES) & 1)
                    acc = tlx.async_dot(a_bufs[2 * s + r], b_bufs[s], acc)
                    acc = tlx.async_dot_wait(1, acc)  # step k - 1 retired: its stage can be refilled
                    tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES], pred=k > 0)
                    it += 1
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                off_m = pid_m * BM + r * HALF_M
                parts = column_subtiles(acc, HALF_M, BN, EPILOGUE_SUBTILES)
                for j in tl.static_range(EPILOGUE_SUBTILES):
                    c_buf = c_bufs[2 * r + stores % 2]
                    tlx.async_descriptor_store_wait(1)  # the store that last read c_buf is done
                    tlx.local_store(c_buf, parts[j].to(out_dtype))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_buf, [off_m, pid_n * BN + j * EPI_N])
                    stores += 1
            tlx.async_descriptor_store_wait(0)


def descriptor_blocks(cfg: Config) -> tuple[list[int], list[int], list[int]]:
    """Block shapes of the A, B and C descriptors: each consumer loads and stores its BM/2 rows."""
    return [cfg.BM // 2, cfg.BK], [cfg.BK, cfg.BN], [cfg.BM // 2, cfg.BN // cfg.EPILOGUE_SUBTILES]


def pick_config(M: int, N: int, num_sms: int) -> Config:
    """LARGE unless its tiles would leave SMs idle."""
    return pick_tile(LARGE, SMALL, M, N, num_sms)


def matmul(a, b, config: Config | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    cfg = config or pick_config(a.shape[0], b.shape[-1], num_sms or tiles.num_sms(a.device))
    return launch_tma_gemm(matmul_kernel_ws_cooperative, a, b, cfg.BM, cfg.BN, descriptor_blocks(cfg), num_sms,
                           BK=cfg.BK, GROUP_SIZE_M=cfg.GROUP_SIZE_M, NUM_STAGES=cfg.NUM_STAGES,
                           EPILOGUE_SUBTILES=cfg.EPILOGUE_SUBTILES, NUM_REGS=cfg.NUM_REGS)
