"""Persistent ping-pong flash-attention forward for Hopper, written with TLX, with GQA and the logsumexp.

The grid is one program per SM (or fewer, when there is less work). Each program walks a static list of
work units, ``unit = pid, pid + num_programs, ...``:

- **Non-causal**, a unit is one BLOCK_M-row Q tile; units run head by head, so the programs that run at the
  same time read the same K and V through L2.
- **Causal**, a unit is a pair of Q tiles of one head, the j-th from the bottom (the heaviest, ``m =
  num_m - 1 - j``) and the j-th from the top (the lightest, ``m = j``): every pair holds ``num_m + 1`` K/V
  blocks, so a static assignment is balanced, heaviest tile first, and no program is left with a long tail.

Inside a unit the design is the pipelined ping-pong kernel's (``attention_ws_pipelined_hopper``): the
producer task streams Q halves and K/V blocks through shared memory; two consumer warpgroups each own half
of the Q tile, issue S_j = Q K_j^T before the softmax of block j-1's P V has been waited for, and take turns
to issue their wgmmas (two named barriers), so one's softmax runs under the other's MMAs. Fully masked
causal blocks are never loaded; the mask is applied only on the diagonal and the ragged last block.

What persistence adds: each consumer releases its Q buffer (``q_empty``) as soon as its last S = Q K^T has
been read, so the producer loads the next tile's Q (and first K/V blocks) while the consumers finish the
current tile; O leaves through a buffer of its own, and its TMA store is waited for only when that buffer
is needed again, one tile later.

GQA: K and V have ``H // GROUP`` heads; query head h reads K/V head ``h // GROUP`` (SDPA's
``enable_gqa=True``). With ``STORE_LSE`` each consumer also writes its rows' logsumexp in base 2,
``m + log2(l)`` in units of ``q.k * sm_scale * log2(e)``, which the backward reads.
"""
from __future__ import annotations

import dataclasses
import math

import triton
import triton.language as tl

import tritium.tlx as tlx

from .attention_ws_hopper import LOG2E, kv_bounds, load_kv, softmax_step, tma_ready
from .launch import DescriptorLaunch, LaunchCache, sm_count
from .partitions import wait_stage

#: Named barriers of the two consumers' turns (TURN_BAR: warpgroup 0's, TURN_BAR + 1: warpgroup 1's).
TURN_BAR = tl.constexpr(9)
TURN_THREADS = tl.constexpr(256)


@triton.jit
def unit_tile(unit, sub, BH, N_CTX, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """(batch*head index, Q tile index) of tile ``sub`` of work ``unit`` (the module docstring's schedule)."""
    num_m = tl.cdiv(N_CTX, BLOCK_M)
    if CAUSAL:
        pairs = (num_m + 1) // 2
        bh = unit // pairs
        j = unit % pairs
        start_m = num_m - 1 - j
        if sub == 1:
            start_m = j
    else:
        bh = unit // num_m
        start_m = unit % num_m
    return bh, start_m


@triton.jit
def unit_count(BH, N_CTX, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """The number of work units: Q tiles, or causal pairs of Q tiles."""
    num_m = tl.cdiv(N_CTX, BLOCK_M)
    if CAUSAL:
        return BH * ((num_m + 1) // 2)
    return BH * num_m


@triton.jit
def tiles_in_unit(unit, N_CTX, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """2 for a causal pair, 1 for a non-causal tile or a causal middle tile that pairs with itself."""
    if CAUSAL:
        num_m = tl.cdiv(N_CTX, BLOCK_M)
        j = unit % ((num_m + 1) // 2)
        return 1 + (num_m - 1 - j > j).to(tl.int32)
    return 1


@triton.jit
def wait_turn(r):
    """Wait for this consumer's turn to issue wgmmas."""
    if r == 0:
        tlx.named_barrier_wait(TURN_BAR, TURN_THREADS)
    else:
        tlx.named_barrier_wait(TURN_BAR + 1, TURN_THREADS)


@triton.jit
def pass_turn(r, more):
    """Hand the turn to the other consumer; warpgroup 1 keeps it after the tile's last block (``more`` false),
    and opens warpgroup 0's first turn of the next tile instead."""
    if r == 0:
        tlx.named_barrier_arrive(TURN_BAR + 1, TURN_THREADS)
    elif more:
        tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)


@triton.jit
def produce_tile(desc_q, desc_k, desc_v, q_bufs, k_bufs, v_bufs, q_full, q_empty, k_full, v_full, k_empty, v_empty,
                 off_b, off_h, off_hk, start_m, tc, it, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr, CONSUMERS: tl.constexpr):
    """Load one tile: each consumer's Q rows once it released the last tile's (tile count ``tc``), then the
    tile's K/V blocks through the ring from ring step ``it``; returns the next ring step."""
    ROWS: tl.constexpr = BLOCK_M // CONSUMERS
    dtype = tlx.dtype_of(desc_q)
    end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
    for r in tl.static_range(CONSUMERS):
        tlx.barrier_wait(q_empty[r], (tc & 1) ^ 1)
        tlx.barrier_expect_bytes(q_full[r], ROWS * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_q, q_bufs[r], [off_b, off_h, start_m * BLOCK_M + r * ROWS, 0], q_full[r])
    return load_kv(desc_k, desc_v, k_bufs, v_bufs, k_full, v_full, k_empty, v_empty, off_b, off_hk, end, it, HEAD_DIM,
                   BLOCK_N, NUM_STAGES)


@triton.jit
def consume_tile(q, k_bufs, v_bufs, q_full, q_empty, k_full, v_full, k_empty, v_empty, r, start_m, tc, it, qk_scale,
                 N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr, CONSUMERS: tl.constexpr, PINGPONG: tl.constexpr):
    """Consumer r's rows of a tile: returns ``(acc, m_i, l_i, it)``, the unnormalized O, the running max and
    sum of its rows, and the next ring step. Releases its Q buffer once the last S = Q K^T was read. With
    ``PINGPONG`` (two consumers) they take turns to issue their wgmmas; without, each issues when ready."""
    ROWS: tl.constexpr = BLOCK_M // CONSUMERS
    dtype = q.dtype
    end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
    if BLOCK_M % BLOCK_N != 0:
        mask_from = mask_from // BLOCK_N * BLOCK_N  # the block holding the diagonal's first row is masked too
    nblocks = tl.cdiv(end, BLOCK_N)
    offs_m = start_m * BLOCK_M + r * ROWS + tl.arange(0, ROWS)
    tlx.barrier_wait(q_full[r], tc & 1)

    # Block 0, masked (it may be the diagonal or the ragged block): its turn is opened by warpgroup 1.
    if PINGPONG:
        if r == 1:
            tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)
    s = wait_stage(k_full, it, NUM_STAGES)
    if PINGPONG:
        wait_turn(r)
    qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
    if PINGPONG:
        pass_turn(r, nblocks > 1)
    qk = tlx.async_dot_wait(0, qk)
    tlx.barrier_arrive(k_empty[s])
    m_i = tl.full([ROWS], float("-inf"), tl.float32)
    l_i = tl.zeros([ROWS], tl.float32)
    p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, 0, N_CTX, BLOCK_N, True, CAUSAL)
    p = p.to(dtype)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    prev = s
    prev_phase = (it // NUM_STAGES) & 1
    it += 1

    for masked in tl.static_range(2):  # blocks 1.. unmasked, then the masked ones
        lo = tl.maximum(mask_from, BLOCK_N) if masked else BLOCK_N
        hi = end if masked else mask_from
        for start_n in range(lo, hi, BLOCK_N):
            s = wait_stage(k_full, it, NUM_STAGES)
            tlx.barrier_wait(v_full[prev], prev_phase)  # tiles first: a turn never waits for data
            if PINGPONG:
                wait_turn(r)
            qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
            acc = tlx.async_dot(p, tlx.local_reshape(v_bufs[prev], (BLOCK_N, HEAD_DIM)), acc)
            if PINGPONG:
                pass_turn(r, start_n + BLOCK_N < end)
            qk = tlx.async_dot_wait(1, qk)  # S_j is ready; P_{j-1} V_{j-1} may still run
            tlx.barrier_arrive(k_empty[s])
            p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, start_n, N_CTX, BLOCK_N, masked,
                                              CAUSAL)
            p = p.to(dtype)
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(v_empty[prev])
            acc = acc * alpha[:, None]
            prev = s
            prev_phase = (it // NUM_STAGES) & 1
            it += 1

    tlx.barrier_arrive(q_empty[r])  # every S = Q K^T of this tile has been read
    tlx.barrier_wait(v_full[prev], prev_phase)
    acc = tlx.async_dot(p, tlx.local_reshape(v_bufs[prev], (BLOCK_N, HEAD_DIM)), acc)
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empty[prev])
    return acc, m_i, l_i, it


@triton.jit
def attn_fwd_persistent_hopper(desc_q, desc_k, desc_v, desc_o, lse, sm_scale, B, H, GROUP, N_CTX,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr, NUM_REGS: tl.constexpr,
                               CONSUMERS: tl.constexpr, PINGPONG: tl.constexpr, STORE_LSE: tl.constexpr):
    ROWS: tl.constexpr = BLOCK_M // CONSUMERS
    tl.static_assert(ROWS % 64 == 0 and BLOCK_M % ROWS == 0, "BLOCK_M: 64k rows per consumer warpgroup")
    tl.static_assert(CONSUMERS == 2 or not PINGPONG, "ping-pong takes two consumer warpgroups")
    dtype = tlx.dtype_of(desc_q)
    q_bufs = tlx.local_alloc((1, 1, ROWS, HEAD_DIM), dtype, CONSUMERS)
    o_bufs = tlx.local_alloc((1, 1, ROWS, HEAD_DIM), dtype, CONSUMERS)
    k_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    v_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    q_full = tlx.alloc_barriers(CONSUMERS, arrive_count=1)
    q_empty = tlx.alloc_barriers(CONSUMERS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    v_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    k_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=CONSUMERS)
    v_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=CONSUMERS)
    BH = B * H
    units = unit_count(BH, N_CTX, BLOCK_M, CAUSAL)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            tc = 0
            it = 0
            for unit in range(tl.program_id(0), units, tl.num_programs(0)):
                for sub in range(tiles_in_unit(unit, N_CTX, BLOCK_M, CAUSAL)):
                    bh, start_m = unit_tile(unit, sub, BH, N_CTX, BLOCK_M, CAUSAL)
                    off_b = bh // H
                    off_h = bh % H
                    it = produce_tile(desc_q, desc_k, desc_v, q_bufs, k_bufs, v_bufs, q_full, q_empty, k_full,
                                      v_full, k_empty, v_empty, off_b, off_h, off_h // GROUP, start_m, tc, it, N_CTX,
                                      HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, CAUSAL, CONSUMERS)
                    tc += 1
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=CONSUMERS):  # consumers, a warpgroup each
            r = tlx.async_task_replica_id()
            q = tlx.local_reshape(q_bufs[r], (ROWS, HEAD_DIM))
            o = tlx.local_reshape(o_bufs[r], (ROWS, HEAD_DIM))
            qk_scale = sm_scale * LOG2E
            tc = 0
            it = 0
            for unit in range(tl.program_id(0), units, tl.num_programs(0)):
                for sub in range(tiles_in_unit(unit, N_CTX, BLOCK_M, CAUSAL)):
                    bh, start_m = unit_tile(unit, sub, BH, N_CTX, BLOCK_M, CAUSAL)
                    acc, m_i, l_i, it = consume_tile(q, k_bufs, v_bufs, q_full, q_empty, k_full, v_full, k_empty,
                                                     v_empty, r, start_m, tc, it, qk_scale, N_CTX, HEAD_DIM, BLOCK_M,
                                                     BLOCK_N, NUM_STAGES, CAUSAL, CONSUMERS, PINGPONG)
                    row0 = start_m * BLOCK_M + r * ROWS
                    if STORE_LSE:
                        offs_m = row0 + tl.arange(0, ROWS)
                        tl.store(lse + bh.to(tl.int64) * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < N_CTX)
                    tlx.async_descriptor_store_wait(0)  # the last tile's O has left this buffer
                    tlx.local_store(o, (acc / l_i[:, None]).to(dtype))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(desc_o, o_bufs[r], [bh // H, bh % H, row0, 0])
                    tc += 1
            tlx.async_descriptor_store_wait(0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PersistentConfig:
    """Tiles, pipeline depth, registers and consumer warpgroups of one launch of the persistent kernel."""
    BLOCK_M: int = 128  # Q rows per tile, split evenly over the consumers (64 or 128 rows each)
    BLOCK_N: int = 128  # K/V rows per ring stage
    NUM_STAGES: int = 2  # K/V stages in shared memory
    NUM_REGS: int = 240  # registers per consumer thread (setmaxnreg)
    CONSUMERS: int = 2  # consumer warpgroups
    PINGPONG: bool = True  # two consumers take turns to issue their wgmmas


def pick_config(seq: int, head_dim: int, causal: bool) -> PersistentConfig:
    """The configuration the H200 sweeps chose for a shape (docs/benchmarks.md, 2026-12-02): 128 x 128 tiles
    in ping-pong, three K/V stages at head dim 64 (two fit at 128); 64-row K/V blocks for causal sequences up
    to 1024, where the diagonal blocks are a large share of the work and a 128-row block wastes half of one;
    at head dim 64, non-causal, from 4096 on, three free-running consumers of 64 rows (0.999-1.025x cuDNN
    against 0.93-1.005x), whose 160 registers each fit head dim 64 only."""
    if causal and seq <= 1024:
        return PersistentConfig(BLOCK_N=64, NUM_STAGES=3)
    if head_dim == 64 and not causal and seq >= 4096:
        return PersistentConfig(BLOCK_M=192, NUM_STAGES=3, NUM_REGS=160, CONSUMERS=3, PINGPONG=False)
    return PersistentConfig(NUM_STAGES=3 if head_dim == 64 else 2)


#: The forward's launches by layout (see :func:`forward`).
_launches = LaunchCache()


def forward(q, k, v, causal: bool, sm_scale: float | None, config: PersistentConfig | None = None,
            store_lse: bool = True):
    """Run the kernel on checked inputs: q [B, H, S, D], k and v [B, H // group, S, D]. Returns ``(o, lse)``,
    O as a new contiguous tensor of q's shape and dtype, lse float32 [B, H, S] in base 2 (None without
    ``store_lse``). A layout seen before (shapes, strides, dtype, device, mask, config) launches the compiled
    kernel directly, its descriptors cached by address (:class:`tritium.kernels.launch.DescriptorLaunch`)."""
    import torch

    B, H, S, D = q.shape
    cfg = config or pick_config(S, D, causal)
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32) if store_lse else None
    q, k, v = tma_ready(q), tma_ready(k), tma_ready(v)
    key = (q.shape, q.stride(), k.shape, k.stride(), v.stride(), q.dtype, q.device, bool(causal), store_lse, cfg)
    launch = _launches.get(key)
    if launch is None:
        rows, bn = cfg.BLOCK_M // cfg.CONSUMERS, cfg.BLOCK_N
        num_m = triton.cdiv(S, cfg.BLOCK_M)
        units = B * H * ((num_m + 1) // 2 if causal else num_m)
        consts = {"HEAD_DIM": D, "CAUSAL": bool(causal), "STORE_LSE": store_lse, "num_warps": 4,
                  **dataclasses.asdict(cfg)}
        launch = _launches.put(key, DescriptorLaunch(attn_fwd_persistent_hopper, (min(units, sm_count(q.device)), ),
                                                     [[1, 1, n, D] for n in (rows, bn, bn, rows)], consts))
    launch.launch(q.device.index or 0, (q, k, v, o), (o if lse is None else lse, sm_scale, B, H, H // k.shape[1], S))
    return o, lse
