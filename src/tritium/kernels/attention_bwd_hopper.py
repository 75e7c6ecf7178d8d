"""Warp-specialized flash-attention backward for Hopper, written with TLX: dQ, dK and dV.

Inputs are the forward's q, k, v, o, its logsumexp ``lse`` (float32 [B, Hq, S], base 2: lse[i] =
log2(sum_j exp2(s_ij)) with s_ij = q_i . k_j * sm_scale * log2(e) over the unmasked j) and dO.

Two kernels:

- :func:`attn_bwd_delta`: delta = rowsum(O * dO) in fp32, [B, Hq, S].
- :func:`attn_bwd_ws_hopper`: one program per (K/V block of BLOCK_N rows, batch, KV head). The default
  task (4 warps) is the producer: it TMA-loads the K and V block once (two BLOCK_N/2-row halves each),
  then streams the Q and dO blocks (BLOCK_M rows) of every query head of the KV head's group through a
  ring of NUM_STAGES stages (``full`` barriers per operand, one ``empty`` barrier per stage released by
  both consumers). Two replicated 4-warp consumer warpgroups each own half of the K/V rows and, per Q
  block, compute in the transposed form (K/V rows as the wgmma's M):

      S^T = K Q^T,  P^T = exp2(S^T * scale * log2(e) - lse),  dV += P^T dO,
      dP^T = V dO^T,  dS^T = P^T (dP^T - delta) * scale,  dK += dS^T Q,  dQ_part = dS K

  with S^T and dP^T issued together, dV's wgmma left in flight under the dS arithmetic, and dS^T staged
  in shared memory (wgmma reads it transposed as dQ's A operand). Each consumer adds a dQ part into an
  fp32 dQ buffer with a TMA reduce-add store (``store_reduce="add"``) through its own staging buffer; the
  host casts that buffer to the input dtype. At head dim 64 a consumer's part is dS K over its own keys;
  at 128 (``SPLIT_DQ``, where a [BLOCK_M, 128] fp32 part next to the dK and dV accumulators does not fit
  in registers) the consumers meet on a named barrier once both dS^T halves are stored, and consumer r
  adds the r-th half of dQ's columns over all BLOCK_N keys (dS^T is double-buffered, so that one meeting
  per block suffices; a last meeting keeps dK from overwriting a K half the other consumer still reads).
  dK and dV leave through the (then free) K and V buffers with TMA stores. With GQA (Hkv < Hq) the
  program loops over the group's query heads, so dK and dV of a KV head are summed in registers, and K
  and V are read once per program, never copied per query head.

Why a TMA reduce-add for dQ rather than a second pass over K/V per Q block: the second pass recomputes
S and dP (two more of the five GEMMs per tile), while the reduce-add moves BLOCK_M x HEAD_DIM fp32 per
Q block and consumer through the TMA unit, off the warpgroups' critical path (FlashAttention-3 makes the
same choice); the price is a nondeterministic summation order of dQ.

Masking: under ``CAUSAL`` the Q blocks fully above the diagonal are skipped, and only the Q blocks that
overlap the K/V block's rows are masked. A K/V block past the sequence end (ragged S) masks its padded
keys in every Q block (they would otherwise add exp2(-lse) terms to dQ). Padded query rows (zero-filled
by TMA) read lse = +inf and delta = 0, so their P and dS are exactly zero, and the stores clip them.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import triton
import triton.language as tl

import tritium.tlx as tlx

from .attention_ws_hopper import LOG2E, check_inputs, tma_ready
from .partitions import wait_stage


class Config(NamedTuple):
    """Tiles, pipeline depth and registers of one backward launch."""
    BLOCK_M: int  # rows of Q / dO per ring stage (the wgmmas' N for S^T and dP^T)
    BLOCK_N: int  # rows of K / V per program (two consumer warpgroups of BLOCK_N // 2 rows)
    NUM_STAGES: int  # Q / dO stages in shared memory
    NUM_REGS: int | None  # registers per consumer thread (setmaxnreg), None leaves them to the compiler
    SPLIT_DQ: bool  # each consumer computes half of dQ's columns over all BLOCK_N keys (else all of them over its own)


def dq_cols(config: Config, head_dim: int) -> int:
    """Columns of the dQ block one consumer adds per Q block (the fp32 dQ descriptor's block width)."""
    return head_dim // 2 if config.SPLIT_DQ else head_dim


def descriptor_blocks(config: Config, head_dim: int) -> tuple[list[int], ...]:
    """Block shapes of the main kernel's descriptors, in its argument order: q, k, v, do, dq (fp32), dk, dv."""
    q, kv = [1, 1, config.BLOCK_M, head_dim], [1, 1, config.BLOCK_N // 2, head_dim]
    return q, kv, kv, q, [1, 1, config.BLOCK_M, dq_cols(config, head_dim)], kv, kv


#: Per head dim. Head dim 128 splits dQ's columns between the consumers: with a [BLOCK_M, 128] fp32 dQ block per
#: consumer next to the dK and dV accumulators, ptxas (3.6) spilled 580 bytes at 240 registers per thread; split,
#: it still spills 464-520 (about 35 local loads and stores per Q block; head dim 64 spills none). Shared memory
#: (head dim 128): K, V 64 KB, three Q/dO stages 96 KB, dS^T 32 KB, dQ staging 32 KB (224 of 227 KB). Three stages
#: at head dim 128 ran 6-7% faster than two non-causal and level causal; at head dim 64 two and four stages were
#: level with three or slower (H200, scripts/gpu_attention_bwd_sweep.py, docs/benchmarks.md, ninth session).
CONFIGS = {64: Config(64, 128, 3, 240, False), 128: Config(64, 128, 3, 240, True)}
#: Rows of O and dO per program of the delta kernel.
DELTA_ROWS = 64
#: Named barrier where the two consumers meet once both dS^T halves are in shared memory (split dQ only);
#: stock Triton's warp specialization uses the low ids (0, 1, and one per partition from 2).
DS_BAR = tl.constexpr(9)
DS_THREADS = tl.constexpr(256)


@triton.jit
def attn_bwd_delta(o_ptr, do_ptr, delta_ptr, stride_ob, stride_oh, stride_os, stride_db, stride_dh, stride_ds,
                   H, N_CTX, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr):
    """delta[b, h, i] = sum_d O[b, h, i, d] * dO[b, h, i, d] in fp32 (unit stride along the head dim)."""
    off_b = (tl.program_id(1) // H).to(tl.int64)  # offsets past 2**31 elements stay exact
    off_h = (tl.program_id(1) % H).to(tl.int64)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, HEAD_DIM)
    keep = rows[:, None] < N_CTX
    o = tl.load(o_ptr + off_b * stride_ob + off_h * stride_oh + rows[:, None] * stride_os + cols[None, :], mask=keep)
    do = tl.load(do_ptr + off_b * stride_db + off_h * stride_dh + rows[:, None] * stride_ds + cols[None, :],
                 mask=keep)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    tl.store(delta_ptr + (off_b * H + off_h) * N_CTX + rows, delta, mask=rows < N_CTX)


@triton.jit
def q_bounds(start_n, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """(lo, mask_to): the K/V block at ``start_n`` sees the Q blocks from ``lo`` on; those before ``mask_to``
    need a mask (the diagonal ones under ``CAUSAL``; all of them when the K/V block is ragged)."""
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M
        mask_to = tl.cdiv(start_n + BLOCK_N, BLOCK_M) * BLOCK_M
    else:
        lo = 0
        mask_to = 0
    if start_n + BLOCK_N > N_CTX:
        mask_to = N_CTX
    return lo, tl.minimum(mask_to, N_CTX)


@triton.jit
def bwd_coords(H_KV):
    """(batch, KV head, K/V block) of this program; block 0 has the most Q blocks under a causal mask."""
    return tl.program_id(1) // H_KV, tl.program_id(1) % H_KV, tl.program_id(0)


@triton.jit
def bwd_step(q_bufs, do_bufs, q_full, do_full, empty, ds_bufs, dq_buf, desc_dq, k_bufs, k, v, dk, dv, lse_ptr,
             delta_ptr, it, r: tl.constexpr, off_b, h, start_m, offs_n, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,
             BLOCK_M: tl.constexpr, NUM_STAGES: tl.constexpr, SPLIT_DQ: tl.constexpr, MASK: tl.constexpr,
             CAUSAL: tl.constexpr):
    """One Q block of consumer ``r`` (the module docstring's five GEMMs); returns (dk, dv)."""
    HALF_N: tl.constexpr = k.shape[0]
    dtype = tlx.dtype_of(k)
    s = wait_stage(q_full, it, NUM_STAGES)
    q = tlx.local_reshape(q_bufs[s], (BLOCK_M, HEAD_DIM))
    do = tlx.local_reshape(do_bufs[s], (BLOCK_M, HEAD_DIM))
    st = tlx.async_dot(k, tlx.local_trans(q))
    wait_stage(do_full, it, NUM_STAGES)
    dpt = tlx.async_dot(v, tlx.local_trans(do))
    offs_m = start_m + tl.arange(0, BLOCK_M)
    in_seq = offs_m < N_CTX
    lse = tl.load(lse_ptr + offs_m, mask=in_seq, other=float("inf"))  # delta is loaded once lse is dead
    st = tlx.async_dot_wait(1, st)
    qk_scale = sm_scale * LOG2E
    if MASK:
        keep = offs_n[:, None] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[None, :] >= offs_n[:, None])
        pt = tl.math.exp2(tl.where(keep, st * qk_scale, float("-inf")) - lse[None, :])
    else:
        pt = tl.math.exp2(st * qk_scale - lse[None, :])
    delta = tl.load(delta_ptr + offs_m, mask=in_seq, other=0.0)
    dv = tlx.async_dot(pt.to(dtype), do, dv)
    dpt = tlx.async_dot_wait(1, dpt)
    dst = (pt * (dpt - delta[None, :]) * sm_scale).to(dtype)
    dk = tlx.async_dot(dst, q, dk)
    ds = (it % 2) * 2  # dS^T is double-buffered: the other consumer may still read last block's
    tlx.local_store(ds_bufs[ds + r], dst)
    tlx.fence_async_shared()
    if SPLIT_DQ:
        # Consumer r: dQ[:, r-th half of the head dim] over all BLOCK_N keys, from both dS^T halves.
        tlx.named_barrier_wait(DS_BAR, DS_THREADS)
        DQ_COLS: tl.constexpr = HEAD_DIM // 2
        k0 = tlx.local_slice(tlx.local_reshape(k_bufs[0], (HALF_N, HEAD_DIM)), (0, r * DQ_COLS), (HALF_N, DQ_COLS))
        k1 = tlx.local_slice(tlx.local_reshape(k_bufs[1], (HALF_N, HEAD_DIM)), (0, r * DQ_COLS), (HALF_N, DQ_COLS))
        dq = tlx.async_dot(tlx.local_trans(ds_bufs[ds]), k0)
        dq = tlx.async_dot(tlx.local_trans(ds_bufs[ds + 1]), k1, dq)
        col = r * DQ_COLS
    else:
        # Consumer r: all of dQ over its own HALF_N keys.
        dq = tlx.async_dot(tlx.local_trans(ds_bufs[ds + r]), k)
        col = 0
    dq = tlx.async_dot_wait(0, dq)
    tlx.barrier_arrive(empty[s])
    tlx.async_descriptor_store_wait(0)  # the previous block's reduce-add has read dq_buf
    tlx.local_store(tlx.local_reshape(dq_buf, dq.shape), dq)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(desc_dq, dq_buf, [off_b, h, start_m, col], store_reduce="add")
    return dk, dv


@triton.jit
def attn_bwd_ws_hopper(desc_q, desc_k, desc_v, desc_do, desc_dq, desc_dk, desc_dv, lse_ptr, delta_ptr, sm_scale,
                       H_Q, H_KV, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr, NUM_REGS: tl.constexpr,
                       SPLIT_DQ: tl.constexpr):
    tl.static_assert(BLOCK_N == 128 and BLOCK_M % 64 == 0, "BLOCK_N: 2 x 64 K/V rows; BLOCK_M: a multiple of 64")
    HALF_N: tl.constexpr = BLOCK_N // 2
    dtype = tlx.dtype_of(desc_q)
    k_bufs = tlx.local_alloc((1, 1, HALF_N, HEAD_DIM), dtype, 2)  # also stage dK for its TMA store
    v_bufs = tlx.local_alloc((1, 1, HALF_N, HEAD_DIM), dtype, 2)  # also stage dV
    q_bufs = tlx.local_alloc((1, 1, BLOCK_M, HEAD_DIM), dtype, NUM_STAGES)
    do_bufs = tlx.local_alloc((1, 1, BLOCK_M, HEAD_DIM), dtype, NUM_STAGES)
    ds_bufs = tlx.local_alloc((HALF_N, BLOCK_M), dtype, 4)  # [2 * parity + consumer]
    if SPLIT_DQ:
        dq_bufs = tlx.local_alloc((1, 1, BLOCK_M, HEAD_DIM // 2), tl.float32, 2)
    else:
        dq_bufs = tlx.local_alloc((1, 1, BLOCK_M, HEAD_DIM), tl.float32, 2)
    kv_full = tlx.alloc_barriers(1, arrive_count=1)
    q_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    do_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    GROUP = H_Q // H_KV

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            off_b, off_kvh, pid_n = bwd_coords(H_KV)
            start_n = pid_n * BLOCK_N
            lo, mask_to = q_bounds(start_n, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
            tlx.barrier_expect_bytes(kv_full[0], 2 * BLOCK_N * HEAD_DIM * tlx.size_of(dtype))
            for r in tl.static_range(2):
                tlx.async_descriptor_load(desc_k, k_bufs[r], [off_b, off_kvh, start_n + r * HALF_N, 0], kv_full[0])
                tlx.async_descriptor_load(desc_v, v_bufs[r], [off_b, off_kvh, start_n + r * HALF_N, 0], kv_full[0])
            it = 0
            for g in range(GROUP):
                h = off_kvh * GROUP + g
                for start_m in range(lo, N_CTX, BLOCK_M):
                    s = wait_stage(empty, it, NUM_STAGES, 1)
                    tlx.barrier_expect_bytes(q_full[s], BLOCK_M * HEAD_DIM * tlx.size_of(dtype))
                    tlx.async_descriptor_load(desc_q, q_bufs[s], [off_b, h, start_m, 0], q_full[s])
                    tlx.barrier_expect_bytes(do_full[s], BLOCK_M * HEAD_DIM * tlx.size_of(dtype))
                    tlx.async_descriptor_load(desc_do, do_bufs[s], [off_b, h, start_m, 0], do_full[s])
                    it += 1
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers, one warpgroup each
            r: tl.constexpr = tlx.async_task_replica_id()
            off_b, off_kvh, pid_n = bwd_coords(H_KV)
            start_n = pid_n * BLOCK_N
            lo, mask_to = q_bounds(start_n, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
            offs_n = start_n + r * HALF_N + tl.arange(0, HALF_N)
            k = tlx.local_reshape(k_bufs[r], (HALF_N, HEAD_DIM))
            v = tlx.local_reshape(v_bufs[r], (HALF_N, HEAD_DIM))
            dk = tl.zeros([HALF_N, HEAD_DIM], tl.float32)
            dv = tl.zeros([HALF_N, HEAD_DIM], tl.float32)
            tlx.barrier_wait(kv_full[0], 0)
            it = 0
            for g in range(GROUP):
                h = off_kvh * GROUP + g
                row = (off_b * H_Q + h).to(tl.int64) * N_CTX
                for plain in tl.static_range(2):  # the masked Q blocks come first in the ring, then the rest
                    m_lo = mask_to if plain else lo
                    m_hi = N_CTX if plain else mask_to
                    for start_m in range(m_lo, m_hi, BLOCK_M):
                        dk, dv = bwd_step(q_bufs, do_bufs, q_full, do_full, empty, ds_bufs, dq_bufs[r], desc_dq,
                                          k_bufs, k, v, dk, dv, lse_ptr + row, delta_ptr + row, it, r, off_b, h,
                                          start_m,
                                          offs_n, sm_scale, N_CTX, HEAD_DIM, BLOCK_M, NUM_STAGES, SPLIT_DQ, plain == 0,
                                          CAUSAL)
                        it += 1
            dk = tlx.async_dot_wait(0, dk)
            dv = tlx.async_dot_wait(0, dv)
            tlx.local_store(v, dv.to(dtype))
            if SPLIT_DQ:  # the other consumer's last dQ wgmma read this K half: wait for it before dK overwrites it
                tlx.named_barrier_wait(DS_BAR, DS_THREADS)
            tlx.local_store(k, dk.to(dtype))
            tlx.fence_async_shared()
            tlx.async_descriptor_store(desc_dk, k_bufs[r], [off_b, off_kvh, start_n + r * HALF_N, 0])
            tlx.async_descriptor_store(desc_dv, v_bufs[r], [off_b, off_kvh, start_n + r * HALF_N, 0])
            tlx.async_descriptor_store_wait(0)


def check_backward(q, o, lse, do, op: str = "attention_bwd") -> None:
    """Raise a ValueError naming the argument at fault unless ``o``, ``lse`` and ``do`` match the checked
    ``q``: the forward's output and logsumexp and the gradient of the output (device-free checks: a fake
    implementation runs them too)."""
    import torch

    for name, x in (("o", o), ("grad_out", do)):
        if not isinstance(x, torch.Tensor) or x.shape != q.shape or x.dtype != q.dtype or x.device != q.device:
            raise ValueError(f"{op}: {name} must be a {q.dtype} tensor of q's shape {tuple(q.shape)} on {q.device}, "
                             f"got {_describe(x)}")
    B, H, S, _ = q.shape
    if not isinstance(lse, torch.Tensor) or lse.shape != (B, H, S) or lse.dtype != torch.float32 \
            or lse.device != q.device:
        raise ValueError(f"{op}: lse must be a float32 tensor of shape {(B, H, S)} on {q.device}, got {_describe(lse)}")


def _describe(x) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{x.dtype} {tuple(x.shape)} on {x.device}"
    return type(x).__name__


def launch_backward(q, k, v, o, lse, do, causal: bool, sm_scale: float | None, config: Config | None = None):
    """Run the delta and main kernels on valid inputs (:func:`check_backward`); returns (dq, dk, dv) in q's,
    k's and v's shapes and q's dtype."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, H, S, D = q.shape
    H_KV = k.shape[1]
    cfg = config or CONFIGS[D]
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    q, k, v, do = (tma_ready(x) for x in (q, k, v, do))
    o = o if o.stride(3) == 1 else o.contiguous()
    lse = lse.contiguous()
    delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    attn_bwd_delta[(triton.cdiv(S, DELTA_ROWS), B * H)](o, do, delta, *o.stride()[:3], *do.stride()[:3], H, S,
                                                       HEAD_DIM=D, ROWS=DELTA_ROWS)
    dq = torch.zeros((B, H, S, D), device=q.device, dtype=torch.float32)
    dk = torch.empty(k.shape, device=q.device, dtype=q.dtype)
    dv = torch.empty(k.shape, device=q.device, dtype=q.dtype)
    descs = [TensorDescriptor.from_tensor(x, block) for x, block in zip((q, k, v, do, dq, dk, dv),
                                                                         descriptor_blocks(cfg, D))]
    grid = (triton.cdiv(S, cfg.BLOCK_N), B * H_KV)
    attn_bwd_ws_hopper[grid](*descs, lse, delta, sm_scale, H, H_KV, S, HEAD_DIM=D, BLOCK_M=cfg.BLOCK_M,
                             BLOCK_N=cfg.BLOCK_N, NUM_STAGES=cfg.NUM_STAGES, CAUSAL=bool(causal),
                             NUM_REGS=cfg.NUM_REGS, SPLIT_DQ=cfg.SPLIT_DQ, num_warps=4)
    return dq.to(q.dtype), dk, dv


def attention_bwd(q, k, v, o, lse, grad_out, causal: bool = False, sm_scale: float | None = None,
                  config: Config | None = None):
    """(dq, dk, dv) of softmax(q k^T * sm_scale [+ causal mask]) v for the forward's output ``o`` and base-2
    logsumexp ``lse`` and the gradient ``grad_out`` of ``o``; k and v may have fewer heads than q (GQA)."""
    check_inputs(q, k, v, "attention_bwd", enable_gqa=True)
    check_backward(q, o, lse, grad_out, "attention_bwd")
    return launch_backward(q, k, v, o, lse, grad_out, causal, sm_scale, config)
