"""Persistent warp-specialized Hopper GEMM, ping-pong: two consumer warpgroups on alternating tiles.

Design (the "ping-pong" persistent WS GEMM):

* grid = min(#SMs, #tiles); program p takes tiles p, p + P, p + 2P, ... (P programs) in
  GROUP_SIZE_M-grouped order, and numbers them t = 0, 1, 2, ... locally.
* Producer: the default task (4 warps, registers given back to the consumers by ``setmaxnreg``)
  fills a ring of NUM_STAGES (A, B) stages for all of the program's tiles in order, guarded by
  ``full``/``empty`` mbarriers; each stage is consumed by exactly one consumer (arrive count 1).
* Consumers: one 4-warp task replicated twice. Replica r computes the whole BMxBN tiles t with
  t % 2 == r; its K steps are ring steps t * k_tiles ... (t + 1) * k_tiles - 1. The two take turns
  on the tensor cores: named barrier MMA_TURN + r ("r may issue its MMAs") is waited on by r and
  arrived on by the other replica once it has issued the last MMA of its tile. So while one
  warpgroup waits for its last wgmma and runs its epilogue, the other's MMAs run. Replica 1 opens
  the first turn; a replica hands the turn on only if the other has a next tile, so every arrive
  is matched by a wait and no barrier is left half-arrived when the kernel exits.
* wgmma keeps one group in flight (step k - 1's stage is released once step k is issued and k - 1
  retired). The turn order also makes the parity waits on ``full`` safe: a replica starts waiting
  on its tile's stages only after all earlier steps were consumed.
* Epilogue: EPILOGUE_SUBTILES column slices through two staging buffers per consumer with TMA
  stores, a buffer reused once the store that read it is done.

TMA zero-fills out-of-bounds loads and clips stores, so ragged M, N, K need no masks.
"""
from __future__ import annotations

from functools import partial

import triton
import triton.language as tl

import tritium.tlx as tlx

from .partitions import CONSUMER_PAIR_THREADS, mma_steps, release_last, store_subtiles, whole_tile_tasks, ws_prologue
from .tiles import WSConfig, grouped_tile, ws_blocks, ws_constexprs, ws_matmul

#: 128x128 tiles per consumer (a 128x128 fp32 accumulator: 128 registers per thread), 6 stages,
#: 32-column store slices: 6 x 32 KiB of operands + 4 x 8 KiB of staging = 224 KiB of shared memory.
LARGE = WSConfig(BM=128, BN=128, NUM_STAGES=6, EPILOGUE_SUBTILES=4)
#: For problems with fewer 128x128 tiles than SMs: 64-row tiles, twice as many.
SMALL = WSConfig(BM=64, BN=128, NUM_STAGES=6, EPILOGUE_SUBTILES=2)

#: Named barriers MMA_TURN and MMA_TURN + 1 (stock Triton uses 0-3 for its own warp-group syncs).
MMA_TURN = tl.constexpr(8)


@triton.jit
def consume_turns(r: tl.constexpr, my_tiles, a_bufs, b_bufs, c_bufs, full, empty, scratch, c_desc, num_pid_m,
                  num_pid_n, k_tiles, BM: tl.constexpr, BN: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr):
    """Consumer r of the ping-pong kernel (the module docstring): tiles t with t % 2 == r, each one's MMAs in
    its turn, then its epilogue (stores 2r and 2r + 1 of the staging ring). It has no ``scratch``."""
    if r == 1:
        tlx.named_barrier_arrive(MMA_TURN, CONSUMER_PAIR_THREADS)  # replica 0 goes first
    stores = 0  # TMA stores issued so far (the store ring's counter)
    for t in range(r, my_tiles, 2):
        pid_m, pid_n = grouped_tile(tl.program_id(0) + t * tl.num_programs(0), num_pid_m, num_pid_n, GROUP_SIZE_M)
        tlx.named_barrier_wait(MMA_TURN + r, CONSUMER_PAIR_THREADS)  # my turn on the tensor cores
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        it, acc = mma_steps(a_bufs, b_bufs, full, empty, t * k_tiles, acc, 0, k_tiles, r, NUM_STAGES, False, 1)
        if t + 1 < my_tiles:  # all MMAs of this tile issued: the other replica's turn
            tlx.named_barrier_arrive(MMA_TURN + 1 - r, CONSUMER_PAIR_THREADS)
        acc = release_last(acc, empty, it, NUM_STAGES)
        stores = store_subtiles(c_desc, c_bufs, stores, 2 * r, acc, pid_m, BM, pid_n, BM, BN, EPILOGUE_SUBTILES)


@triton.jit
def matmul_kernel_ws_pingpong(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                              EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, PDL: tl.constexpr = False):
    a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_tiles, k_tiles = ws_prologue(
        a_desc, c_desc, M, N, K, BM, BN, BK, NUM_STAGES, False, BN // EPILOGUE_SUBTILES, 4, PDL)
    whole_tile_tasks(consume_turns, a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, full, empty, None, num_pid_m,
                     num_pid_n, num_tiles, k_tiles, BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES, NUM_REGS)


#: Each consumer loads and stores whole BM-row tiles.
descriptor_blocks = partial(ws_blocks, split_a=False)
constexprs = ws_constexprs


def matmul(a, b, config: WSConfig | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return ws_matmul(matmul_kernel_ws_pingpong, a, b, config, num_sms, LARGE, SMALL, split_a=False)
