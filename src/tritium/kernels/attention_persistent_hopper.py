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

import math

import triton
import triton.language as tl

import tritium.tlx as tlx

from .attention_ws_hopper import LOG2E, Config, kv_bounds, softmax_step, tma_ready
from .launch import sm_count

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
                 BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr):
    """Load one tile: its two Q halves once their consumers released the last tile's (tile count ``tc``),
    then its K/V blocks through the ring from ring step ``it``; returns the next ring step."""
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = tlx.dtype_of(desc_q)
    end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
    for r in tl.static_range(2):
        tlx.barrier_wait(q_empty[r], (tc & 1) ^ 1)
        tlx.barrier_expect_bytes(q_full[r], HALF_M * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_q, q_bufs[r], [off_b, off_h, start_m * BLOCK_M + r * HALF_M, 0], q_full[r])
    for start_n in range(0, end, BLOCK_N):
        s = it % NUM_STAGES
        phase = (it // NUM_STAGES) & 1
        tlx.barrier_wait(k_empty[s], phase ^ 1)
        tlx.barrier_expect_bytes(k_full[s], BLOCK_N * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_k, k_bufs[s], [off_b, off_hk, start_n, 0], k_full[s])
        tlx.barrier_wait(v_empty[s], phase ^ 1)
        tlx.barrier_expect_bytes(v_full[s], BLOCK_N * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_v, v_bufs[s], [off_b, off_hk, start_n, 0], v_full[s])
        it += 1
    return it


@triton.jit
def consume_tile(q, k_bufs, v_bufs, q_full, q_empty, k_full, v_full, k_empty, v_empty, r, start_m, tc, it, qk_scale,
                 N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr):
    """One consumer's half of a tile: returns ``(acc, m_i, l_i, it)``, the unnormalized O, the running max and
    sum of its rows, and the next ring step. Releases its Q buffer once the last S = Q K^T was read."""
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = q.dtype
    end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
    nblocks = tl.cdiv(end, BLOCK_N)
    offs_m = start_m * BLOCK_M + r * HALF_M + tl.arange(0, HALF_M)
    tlx.barrier_wait(q_full[r], tc & 1)

    # Block 0, masked (it may be the diagonal or the ragged block): its turn is opened by warpgroup 1.
    if r == 1:
        tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)
    s = it % NUM_STAGES
    tlx.barrier_wait(k_full[s], (it // NUM_STAGES) & 1)
    wait_turn(r)
    qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
    pass_turn(r, nblocks > 1)
    qk = tlx.async_dot_wait(0, qk)
    tlx.barrier_arrive(k_empty[s])
    m_i = tl.full([HALF_M], float("-inf"), tl.float32)
    l_i = tl.zeros([HALF_M], tl.float32)
    p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, 0, N_CTX, BLOCK_N, True, CAUSAL)
    p = p.to(dtype)
    acc = tl.zeros([HALF_M, HEAD_DIM], tl.float32)
    prev = s
    prev_phase = (it // NUM_STAGES) & 1
    it += 1

    for masked in tl.static_range(2):  # blocks 1.. unmasked, then the masked ones
        lo = tl.maximum(mask_from, BLOCK_N) if masked else BLOCK_N
        hi = end if masked else mask_from
        for start_n in range(lo, hi, BLOCK_N):
            s = it % NUM_STAGES
            tlx.barrier_wait(k_full[s], (it // NUM_STAGES) & 1)
            tlx.barrier_wait(v_full[prev], prev_phase)  # tiles first: a turn never waits for data
            wait_turn(r)
            qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
            acc = tlx.async_dot(p, tlx.local_reshape(v_bufs[prev], (BLOCK_N, HEAD_DIM)), acc)
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
                               STORE_LSE: tl.constexpr):
    tl.static_assert(BLOCK_M % 128 == 0 and BLOCK_M % BLOCK_N == 0, "BLOCK_M: 2 x 64k rows, a multiple of BLOCK_N")
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = tlx.dtype_of(desc_q)
    q_bufs = tlx.local_alloc((1, 1, HALF_M, HEAD_DIM), dtype, 2)
    o_bufs = tlx.local_alloc((1, 1, HALF_M, HEAD_DIM), dtype, 2)
    k_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    v_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    q_full = tlx.alloc_barriers(2, arrive_count=1)
    q_empty = tlx.alloc_barriers(2, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    v_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    k_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    v_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
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
                                      HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, CAUSAL)
                    tc += 1
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers, one warpgroup each
            r = tlx.async_task_replica_id()
            q = tlx.local_reshape(q_bufs[r], (HALF_M, HEAD_DIM))
            o = tlx.local_reshape(o_bufs[r], (HALF_M, HEAD_DIM))
            qk_scale = sm_scale * LOG2E
            tc = 0
            it = 0
            for unit in range(tl.program_id(0), units, tl.num_programs(0)):
                for sub in range(tiles_in_unit(unit, N_CTX, BLOCK_M, CAUSAL)):
                    bh, start_m = unit_tile(unit, sub, BH, N_CTX, BLOCK_M, CAUSAL)
                    acc, m_i, l_i, it = consume_tile(q, k_bufs, v_bufs, q_full, q_empty, k_full, v_full, k_empty,
                                                     v_empty, r, start_m, tc, it, qk_scale, N_CTX, HEAD_DIM, BLOCK_M,
                                                     BLOCK_N, NUM_STAGES, CAUSAL)
                    row0 = start_m * BLOCK_M + r * HALF_M
                    if STORE_LSE:
                        offs_m = row0 + tl.arange(0, HALF_M)
                        tl.store(lse + bh.to(tl.int64) * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < N_CTX)
                    tlx.async_descriptor_store_wait(0)  # the last tile's O has left this buffer
                    tlx.local_store(o, (acc / l_i[:, None]).to(dtype))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(desc_o, o_bufs[r], [bh // H, bh % H, row0, 0])
                    tc += 1
            tlx.async_descriptor_store_wait(0)


#: Tiles per head dim (Config's fields; NUM_REGS is each consumer thread's register budget under setmaxnreg).
CONFIGS = {64: Config(128, 128, 3, 240), 128: Config(128, 128, 2, 240)}


def forward(q, k, v, causal: bool, sm_scale: float | None, config: Config | None = None, store_lse: bool = True):
    """Run the kernel on checked inputs: q [B, H, S, D], k and v [B, H // group, S, D]. Returns ``(o, lse)``,
    O as a new contiguous tensor of q's shape and dtype, lse float32 [B, H, S] in base 2 (None without
    ``store_lse``)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, H, S, D = q.shape
    cfg = config or CONFIGS[D]
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32) if store_lse else None
    q, k, v = tma_ready(q), tma_ready(k), tma_ready(v)
    half, bn = cfg.BLOCK_M // 2, cfg.BLOCK_N
    descs = [TensorDescriptor.from_tensor(x, [1, 1, rows, D]) for x, rows in ((q, half), (k, bn), (v, bn), (o, half))]
    num_m = triton.cdiv(S, cfg.BLOCK_M)
    units = B * H * ((num_m + 1) // 2 if causal else num_m)
    grid = (min(units, sm_count(q.device)),)
    attn_fwd_persistent_hopper[grid](*descs, o if lse is None else lse, sm_scale, B, H, H // k.shape[1], S,
                                     HEAD_DIM=D, BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N,
                                     NUM_STAGES=cfg.NUM_STAGES, CAUSAL=bool(causal), NUM_REGS=cfg.NUM_REGS,
                                     STORE_LSE=store_lse, num_warps=4)
    return o, lse
