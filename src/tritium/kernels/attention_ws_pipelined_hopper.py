"""Pipelined ping-pong warp-specialized flash-attention forward for Hopper, written with TLX.

Same tasks as the plain kernel (``attention_ws_hopper.fwd_tasks``: producer, buffers, barriers) and
the same host side; the consumers (``consume_pingpong``) differ in two ways:

- **Software pipelining inside a warpgroup.** Iteration j issues S_j = Q K_j^T and then
  O += P_{j-1} V_{j-1}, both asynchronous, and waits only for S_j (``async_dot_wait(1)``): the
  softmax of block j runs while the tensor cores still do P_{j-1} V_{j-1}. O is rescaled by
  block j's correction after that wgmma retired; the last P V runs after the loop.
- **Ping-pong between the two warpgroups.** Each warpgroup issues its wgmmas only in its turn,
  handed over with two named barriers (``TURN_BAR + r`` is warpgroup r's turn; the other one
  arrives on it when it is done issuing). So the tensor cores run one warpgroup's MMAs while the
  other does its softmax, instead of both competing for them at the same time and then both
  idling in the exponentials. Warpgroup 1 opens warpgroup 0's first turn; every turn passes to
  the other warpgroup, except warpgroup 1's last, so arrivals and waits balance exactly (both
  warpgroups see the same number of K/V blocks, as they share the ring).

Block 0 runs before the loops with the mask applied (it may be a diagonal or ragged block); the
loops then cover the unmasked and the masked blocks as in the plain kernel.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx

from .attention_ws_hopper import LOG2E, Config, check_inputs, fwd_tasks, launch, softmax_step, store_o
from .partitions import wait_stage

#: Named barriers TURN_BAR (warpgroup 0's turn) and TURN_BAR + 1; stock Triton's warp specialization
#: uses the low ids (0, 1, and one per partition from 2).
TURN_BAR = tl.constexpr(9)
#: Threads that meet at a turn barrier: both consumer warpgroups.
TURN_THREADS = tl.constexpr(256)


@triton.jit
def consume_pingpong(r, q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty, desc_o, sm_scale, off_b,
                     off_h, start_m, end, mask_from, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr):
    """Consumer r of the pipelined kernel (the module docstring): block 0 alone, then the software-pipelined
    loop in turns with the other warpgroup, the last P V and the epilogue (:func:`store_o`)."""
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = tlx.dtype_of(desc_o)
    last = tl.cdiv(end, BLOCK_N) - 1  # index of the last K/V block
    offs_m = start_m * BLOCK_M + r * HALF_M + tl.arange(0, HALF_M)
    qk_scale = sm_scale * LOG2E
    q = tlx.local_reshape(q_bufs[r], (HALF_M, HEAD_DIM))
    tlx.barrier_wait(q_full[r], 0)

    # Block 0: its own turn (opened by warpgroup 1 for warpgroup 0), masked.
    if r == 1:
        tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)
    tlx.barrier_wait(k_full[0], 0)
    if r == 0:
        tlx.named_barrier_wait(TURN_BAR, TURN_THREADS)
    else:
        tlx.named_barrier_wait(TURN_BAR + 1, TURN_THREADS)
    qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[0], (BLOCK_N, HEAD_DIM))))
    if r == 0:
        tlx.named_barrier_arrive(TURN_BAR + 1, TURN_THREADS)
    elif last > 0:
        tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)
    qk = tlx.async_dot_wait(0, qk)
    tlx.barrier_arrive(k_empty[0])
    m_i = tl.full([HALF_M], float("-inf"), tl.float32)
    l_i = tl.zeros([HALF_M], tl.float32)
    p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, 0, N_CTX, BLOCK_N, True, CAUSAL)
    p = p.to(dtype)  # cast now, not in the next turn
    acc = tl.zeros([HALF_M, HEAD_DIM], tl.float32)

    it = 1
    for masked in tl.static_range(2):  # blocks 1.. unmasked, then the masked ones
        lo = tl.maximum(mask_from, BLOCK_N) if masked else BLOCK_N
        hi = end if masked else mask_from
        for start_n in range(lo, hi, BLOCK_N):
            s = it % NUM_STAGES
            prev = (it - 1) % NUM_STAGES
            tlx.barrier_wait(k_full[s], (it // NUM_STAGES) & 1)
            tlx.barrier_wait(v_full[prev], ((it - 1) // NUM_STAGES) & 1)  # tiles first: turns never wait for data
            if r == 0:
                tlx.named_barrier_wait(TURN_BAR, TURN_THREADS)
            else:
                tlx.named_barrier_wait(TURN_BAR + 1, TURN_THREADS)
            qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
            acc = tlx.async_dot(p, tlx.local_reshape(v_bufs[prev], (BLOCK_N, HEAD_DIM)), acc)
            if r == 0:
                tlx.named_barrier_arrive(TURN_BAR + 1, TURN_THREADS)
            elif it < last:
                tlx.named_barrier_arrive(TURN_BAR, TURN_THREADS)
            qk = tlx.async_dot_wait(1, qk)  # S_j is ready; P_{j-1} V_{j-1} may still run
            tlx.barrier_arrive(k_empty[s])
            p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, start_n, N_CTX, BLOCK_N, masked, CAUSAL)
            p = p.to(dtype)
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(v_empty[prev])
            acc = acc * alpha[:, None]
            it += 1

    s = wait_stage(v_full, last, NUM_STAGES)
    acc = tlx.async_dot(p, tlx.local_reshape(v_bufs[s], (BLOCK_N, HEAD_DIM)), acc)
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empty[s])
    store_o(acc, l_i, q, q_bufs, r, desc_o, off_b, off_h, start_m, BLOCK_M)


@triton.jit
def attn_fwd_ws_pipelined_hopper(desc_q, desc_k, desc_v, desc_o, sm_scale, H, N_CTX, HEAD_DIM: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                                 CAUSAL: tl.constexpr, NUM_REGS: tl.constexpr):
    """The plain kernel's tasks (:func:`fwd_tasks`) with the pipelined ping-pong consumers,
    :func:`consume_pingpong`; its arguments are the plain kernel's, so :func:`launch` runs either."""
    fwd_tasks(consume_pingpong, desc_q, desc_k, desc_v, desc_o, sm_scale, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N,
              NUM_STAGES, CAUSAL, NUM_REGS)


def attention_ws_pipelined(q, k, v, causal: bool = False, sm_scale: float | None = None,
                           config: Config | None = None):
    """softmax(q k^T * sm_scale) v with the pipelined ping-pong kernel (sm_scale defaults to 1/sqrt(D))."""
    check_inputs(q, k, v, "attention_ws_pipelined")
    return launch(attn_fwd_ws_pipelined_hopper, q, k, v, causal, sm_scale, config)
