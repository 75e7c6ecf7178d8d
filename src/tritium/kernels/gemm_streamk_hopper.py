"""Persistent warp-specialized Hopper GEMM, data-parallel + stream-K: a candidate for problems whose tiles leave
SMs idle (1024^3, 2048^3), timed against the shipped plan by ``scripts/gpu_gemm19.py --stream-k``; no plan
picks it.

The cooperative design (gemm_ws_cooperative_hopper: a TMA producer, two consumer warpgroups each owning BM/2
rows of a tile), with its work split differently. Of the ``T`` tiles on ``G`` programs, all but the last
one or two waves are data-parallel: program p takes whole tiles p, p + G, ... The K steps of the remaining
tiles are laid end to end and cut into G equal runs, one per program, so every SM works to the end. A run
covers the tail of one tile, whole tiles and the head of another, and a program works through its run
backwards, tile by tile. A tile whose K steps span several runs is finished by the program holding its
last step (its "owner", for which that piece comes last), after the programs holding its earlier steps
(for which it comes first: a tile's head is the end of a run) have left their fp32 partial sums in a
workspace and raised a flag:

* a contributor consumer writes its [BM/2, BN] partial to its program's slot of ``ws_ptr`` and each of its
  128 threads adds 1 to the slot's flag with release semantics (so each thread's stores are visible
  before its count is);
* the owner consumer waits until each contributor's flag reaches 128 (an acquire), adds the partials
  (loads cached in L2 only) and stores the tile through the epilogue's store ring.

A contributor never waits, and an owner waits only at the end of its run, for lower-numbered programs that
reach their contributing piece before any wait of theirs: no deadlock, whether the programs are resident
at once (one per SM, the grid at most the SM count) or run one after another (the interpreter).
``flags_ptr`` must be zero at launch (2 int32 per program); ``ws_ptr`` holds G x BM x BN fp32.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx

from . import tiles
from .partitions import consume_units, load_steps, mma_steps, release_last, store_subtiles, ws_prologue
from .tiles import WSConfig, grouped_tile, launch_tma_gemm, ws_blocks, ws_constexprs

#: 128x128x64 tiles, 4 stages, 2 store slices: 4 x 32 KiB of operands + 4 x 8 KiB of staging, plus 32 KiB
#: per consumer for the fix-up's layout conversions (224 KiB in all). Not yet measured.
DEFAULT = WSConfig(BM=128, BN=128, NUM_STAGES=4, EPILOGUE_SUBTILES=2)
#: Threads of one consumer warpgroup: the count a contributor's flag reaches.
CONSUMER_THREADS = tl.constexpr(128)


@triton.jit
def _split(num_tiles, k_tiles):
    """``(dp_tiles, sk_lo, sk_hi)``: the data-parallel tiles (all but the last one or two waves; all of them
    when the tiles fill their waves) and this program's run of stream-K steps, numbered from the first
    stream-K tile's first step."""
    G = tl.num_programs(0)
    waves = num_tiles // G
    dp_tiles = tl.where(num_tiles % G == 0, num_tiles, tl.maximum(waves - 1, 0) * G)
    sk_steps = (num_tiles - dp_tiles) * k_tiles
    per = tl.cdiv(sk_steps, G)
    sk_lo = tl.minimum(tl.program_id(0) * per, sk_steps)
    return dp_tiles, sk_lo, tl.minimum(sk_lo + per, sk_steps), per


@triton.jit
def _contribute(acc, ws_ptr, flags_ptr, slot, HALF_M: tl.constexpr, BN: tl.constexpr):
    """Leave a partial sum in workspace slot ``slot`` and count this warpgroup's threads in its flag."""
    rows = tl.arange(0, HALF_M)
    cols = tl.arange(0, BN)
    tl.store(ws_ptr + (slot * HALF_M + rows[:, None]) * BN + cols[None, :], acc)
    tl.atomic_add(flags_ptr + slot + tl.zeros([CONSUMER_THREADS], tl.int32), 1, sem="release", scope="gpu")


@triton.jit
def _fix_up(acc, ws_ptr, flags_ptr, q_lo, q_hi, r, HALF_M: tl.constexpr, BN: tl.constexpr):
    """``acc`` plus the partial sums of consumer ``r`` of programs ``q_lo`` to ``q_hi`` (exclusive), each
    waited for."""
    rows = tl.arange(0, HALF_M)
    cols = tl.arange(0, BN)
    for q in range(q_lo, q_hi):
        slot = 2 * q + r
        while tl.atomic_add(flags_ptr + slot, 0, sem="acquire", scope="gpu") < CONSUMER_THREADS:
            pass
        acc += tl.load(ws_ptr + (slot * HALF_M + rows[:, None]) * BN + cols[None, :], cache_modifier=".cg")
    return acc


@triton.jit
def matmul_kernel_streamk(a_desc, b_desc, c_desc, M, N, K, ws_ptr, flags_ptr, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                          EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, PDL: tl.constexpr = False):
    HALF_M: tl.constexpr = BM // 2
    a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_tiles, k_tiles = ws_prologue(
        a_desc, c_desc, M, N, K, BM, BN, BK, NUM_STAGES, True, BN // EPILOGUE_SUBTILES, 4, PDL)
    dp_tiles, sk_lo, sk_hi, per = _split(num_tiles, k_tiles)
    pid = tl.program_id(0)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: the data-parallel tiles, then the stream-K run
            it = 0
            for tile in range(pid, dp_tiles, tl.num_programs(0)):
                pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
                it = load_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n, 0, k_tiles, BM, BN, BK,
                                NUM_STAGES, True)
            s_first = sk_lo // k_tiles
            s_last = tl.cdiv(sk_hi, k_tiles) - 1
            for back in range(0, s_last - s_first + 1):  # the run backwards, tile by tile
                s = s_last - back
                pid_m, pid_n = grouped_tile(dp_tiles + s, num_pid_m, num_pid_n, GROUP_SIZE_M)
                it = load_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n,
                                tl.maximum(sk_lo - s * k_tiles, 0), tl.minimum(sk_hi - s * k_tiles, k_tiles), BM, BN,
                                BK, NUM_STAGES, True)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            it, stores = consume_units(a_bufs, b_bufs, c_bufs, full, empty, c_desc, pid, dp_tiles, num_pid_m,
                                       num_pid_n, k_tiles, k_tiles, r, BM, BN, GROUP_SIZE_M, NUM_STAGES,
                                       EPILOGUE_SUBTILES)
            s_first = sk_lo // k_tiles
            s_last = tl.cdiv(sk_hi, k_tiles) - 1
            for back in range(0, s_last - s_first + 1):
                s = s_last - back
                pid_m, pid_n = grouped_tile(dp_tiles + s, num_pid_m, num_pid_n, GROUP_SIZE_M)
                k_lo = tl.maximum(sk_lo - s * k_tiles, 0)
                k_hi = tl.minimum(sk_hi - s * k_tiles, k_tiles)
                acc = tl.zeros((HALF_M, BN), dtype=tl.float32)
                it, acc = mma_steps(a_bufs, b_bufs, full, empty, it, acc, k_lo, k_hi, r, NUM_STAGES, True, 1)
                acc = release_last(acc, empty, it, NUM_STAGES)
                if k_hi < k_tiles:  # an earlier piece of the tile: its owner adds it
                    _contribute(acc, ws_ptr, flags_ptr, 2 * pid + r, HALF_M, BN)
                else:
                    if k_lo > 0:  # the tile's earlier pieces: runs from the one holding its first step to pid
                        acc = _fix_up(acc, ws_ptr, flags_ptr, (s * k_tiles) // per, pid, r, HALF_M, BN)
                    stores = store_subtiles(c_desc, c_bufs, stores, 2 * r, acc, pid_m * BM + r * HALF_M, 1, pid_n,
                                            HALF_M, BN, EPILOGUE_SUBTILES)
            tlx.async_descriptor_store_wait(0)


#: Each consumer loads and stores its BM/2 rows.
descriptor_blocks = ws_blocks
constexprs = ws_constexprs


def programs(M: int, N: int, K: int, cfg: WSConfig, sms: int) -> int:
    """The grid: every SM, unless there are fewer K steps in all than SMs."""
    return max(1, min(sms, triton.cdiv(M, cfg.BM) * triton.cdiv(N, cfg.BN) * triton.cdiv(K, cfg.BK)))


def workspace(G: int, cfg: WSConfig, device) -> tuple:
    """The kernel's ``(ws, flags)`` for ``G`` programs: uninitialised partials, zeroed flags."""
    import torch
    return (torch.empty(G * cfg.BM * cfg.BN, dtype=torch.float32, device=device),
            torch.zeros(2 * G, dtype=torch.int32, device=device))


def matmul(a, b, config: WSConfig | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    cfg = config or DEFAULT
    M, K = a.shape
    G = programs(M, b.shape[1], K, cfg, num_sms or tiles.num_sms(a.device))
    return launch_tma_gemm(matmul_kernel_streamk, a, b, descriptor_blocks(cfg), None, programs=G,
                           extra=workspace(G, cfg, a.device), **constexprs(cfg))
