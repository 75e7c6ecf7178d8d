"""Warp-specialized flash-attention forward for Hopper, written with TLX (the plain "hopper_fa_ws" design).

One program computes a BLOCK_M-row tile of the output of one (batch, head). The default task (the
kernel's 4 warps) is the producer: it TMA-loads the two BLOCK_M/2-row halves of the Q tile once,
then streams K and V tiles of BLOCK_N rows through a ring of NUM_STAGES shared-memory buffers, each
guarded by a ``full`` barrier (TMA bytes landed) and an ``empty`` barrier (both consumers done).
K and V have barriers of their own, so S = Q K^T can start before V has arrived.

Two replicated 4-warp consumer tasks (one warpgroup each) own one half of the Q tile: S = Q K^T as
a wgmma from shared memory, an online softmax in fp32 registers (exp2, with sm_scale * log2(e)
folded into one multiply), P cast to the input dtype and O += P V as a wgmma with P in registers.
After the last block each consumer normalizes O, writes it into its (now free) Q buffer and
TMA-stores it.

The descriptors are 4D over the [B, H, S, D] tensors, so TMA zero-fills rows past the sequence
end and clips the store there: any sequence length works, and no tile ever reads or writes another
head. Blocks that need a mask (the diagonal under ``CAUSAL``, the ragged last block) run in a
second copy of the loop, so the main loop carries no mask arithmetic.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import triton
import triton.language as tl

import tritium.tlx as tlx

from .launch import interpreting
from .partitions import wait_stage

#: Softmax runs in base 2: exp(x) = exp2(x * LOG2E).
LOG2E = tl.constexpr(1.4426950408889634)


class Config(NamedTuple):
    """Tiles, pipeline depth and registers of one attention launch."""
    BLOCK_M: int  # rows of Q per program (two consumer warpgroups of BLOCK_M // 2 rows)
    BLOCK_N: int  # rows of K and V per pipeline stage
    NUM_STAGES: int  # K/V stages in shared memory
    NUM_REGS: int | None  # registers per consumer thread (setmaxnreg), None leaves them to the compiler


@triton.jit
def kv_bounds(start_m, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """(end, mask_from): the Q tile sees key columns [0, end); blocks from ``mask_from`` on need a mask.

    ``mask_from`` is a multiple of BLOCK_N: the diagonal blocks under ``CAUSAL`` and the ragged last block.
    """
    full_end = (N_CTX // BLOCK_N) * BLOCK_N
    if CAUSAL:
        end = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
        mask_from = tl.minimum(start_m * BLOCK_M, full_end)
    else:
        end = N_CTX
        mask_from = full_end
    return end, mask_from


@triton.jit
def softmax_step(qk, m_i, l_i, qk_scale, offs_m, start_n, N_CTX, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
                 CAUSAL: tl.constexpr):
    """One online-softmax update in base 2: (p, alpha, m_new, l_new) for the scores ``qk`` of one block.

    ``p`` = exp2(qk * scale - m_new) unnormalized, ``alpha`` rescales what was accumulated so far.
    """
    if MASK:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keep = offs_n[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(keep, qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_new = l_i * alpha + tl.sum(p, 1)
    return p, alpha, m_new, l_new


@triton.jit
def tile_coords(H, N_CTX, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """(batch, head, Q tile index) of this program; causal tiles go longest first, for a shorter tail."""
    start_m = tl.program_id(0)
    if CAUSAL:
        start_m = tl.cdiv(N_CTX, BLOCK_M) - 1 - start_m
    off_hz = tl.program_id(1)
    return off_hz // H, off_hz % H, start_m


@triton.jit
def produce(desc_q, desc_k, desc_v, q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty, H, N_CTX,
            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
            CAUSAL: tl.constexpr):
    """The producer task of both kernels: the two Q halves once, then K and V blocks through the ring."""
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = tlx.dtype_of(desc_q)
    off_b, off_h, start_m = tile_coords(H, N_CTX, BLOCK_M, CAUSAL)
    end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
    for r in tl.static_range(2):
        tlx.barrier_expect_bytes(q_full[r], HALF_M * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_q, q_bufs[r], [off_b, off_h, start_m * BLOCK_M + r * HALF_M, 0], q_full[r])
    # ring step 0 as a tensor: the loop carries it (a literal 0 would reach load_kv as a constexpr)
    load_kv(desc_k, desc_v, k_bufs, v_bufs, k_full, v_full, k_empty, v_empty, off_b, off_h, end, tl.full((), 0, tl.int32),
            HEAD_DIM, BLOCK_N, NUM_STAGES)


@triton.jit
def load_kv(desc_k, desc_v, k_bufs, v_bufs, k_full, v_full, k_empty, v_empty, off_b, off_h, end, it,
            HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    """The producer's K and V blocks [0, end) of head ``off_h`` through the ring, from ring step ``it``; returns
    the next ring step."""
    dtype = tlx.dtype_of(desc_k)
    for start_n in range(0, end, BLOCK_N):
        s = wait_stage(k_empty, it, NUM_STAGES, 1)
        tlx.barrier_expect_bytes(k_full[s], BLOCK_N * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_k, k_bufs[s], [off_b, off_h, start_n, 0], k_full[s])
        wait_stage(v_empty, it, NUM_STAGES, 1)
        tlx.barrier_expect_bytes(v_full[s], BLOCK_N * HEAD_DIM * tlx.size_of(dtype))
        tlx.async_descriptor_load(desc_v, v_bufs[s], [off_b, off_h, start_n, 0], v_full[s])
        it += 1
    return it


@triton.jit
def fwd_buffers(desc_q, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                NUM_STAGES: tl.constexpr):
    """The shared memory of both kernels: ``(q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty,
    v_empty)``, the two Q halves (each also stages its consumer's O for the TMA store) and the K/V ring, whose
    stages both consumers release."""
    tl.static_assert(BLOCK_M % 128 == 0 and BLOCK_M % BLOCK_N == 0, "BLOCK_M: 2 x 64k rows, a multiple of BLOCK_N")
    dtype = tlx.dtype_of(desc_q)
    q_bufs = tlx.local_alloc((1, 1, BLOCK_M // 2, HEAD_DIM), dtype, 2)
    k_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    v_bufs = tlx.local_alloc((1, 1, BLOCK_N, HEAD_DIM), dtype, NUM_STAGES)
    q_full = tlx.alloc_barriers(2, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    v_full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    k_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    v_empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    return q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty


@triton.jit
def store_o(acc, l_i, q, q_bufs, r, desc_o, off_b, off_h, start_m, BLOCK_M: tl.constexpr):
    """Consumer r's epilogue: O = acc / l_i through its Q buffer (``q`` is its 2-D view) with a TMA store."""
    tlx.local_store(q, (acc / l_i[:, None]).to(tlx.dtype_of(desc_o)))
    tlx.fence_async_shared()
    tlx.async_descriptor_store(desc_o, q_bufs[r], [off_b, off_h, start_m * BLOCK_M + r * (BLOCK_M // 2), 0])
    tlx.async_descriptor_store_wait(0)


@triton.jit
def fwd_tasks(consume: tl.constexpr, desc_q, desc_k, desc_v, desc_o, sm_scale, H, N_CTX, HEAD_DIM: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr,
              NUM_REGS: tl.constexpr):
    """The body of both forward kernels, which differ only in their consumers: the buffers, the producer
    (:func:`produce`) and two replicated 4-warp consumer tasks, each finding its tile and K/V range and then
    running ``consume``, a @triton.jit function with the signature of :func:`consume_blocks`."""
    q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty = fwd_buffers(desc_q, HEAD_DIM, BLOCK_M, BLOCK_N,
                                                                                   NUM_STAGES)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            produce(desc_q, desc_k, desc_v, q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty, H, N_CTX,
                    HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, CAUSAL)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers, one warpgroup each
            r = tlx.async_task_replica_id()
            off_b, off_h, start_m = tile_coords(H, N_CTX, BLOCK_M, CAUSAL)
            end, mask_from = kv_bounds(start_m, N_CTX, BLOCK_M, BLOCK_N, CAUSAL)
            consume(r, q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty, desc_o, sm_scale, off_b, off_h,
                    start_m, end, mask_from, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, CAUSAL)


@triton.jit
def attn_fwd_ws_hopper(desc_q, desc_k, desc_v, desc_o, sm_scale, H, N_CTX, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                       CAUSAL: tl.constexpr, NUM_REGS: tl.constexpr):
    """The plain kernel (the module docstring): :func:`fwd_tasks` with :func:`consume_blocks`."""
    fwd_tasks(consume_blocks, desc_q, desc_k, desc_v, desc_o, sm_scale, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N,
              NUM_STAGES, CAUSAL, NUM_REGS)


@triton.jit
def consume_blocks(r, q_bufs, k_bufs, v_bufs, q_full, k_full, v_full, k_empty, v_empty, desc_o, sm_scale, off_b, off_h,
                   start_m, end, mask_from, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, CAUSAL: tl.constexpr):
    """Consumer r of the plain kernel: S = Q K^T, the softmax and O += P V one K/V block after the other, then
    the epilogue (:func:`store_o`)."""
    HALF_M: tl.constexpr = BLOCK_M // 2
    dtype = tlx.dtype_of(desc_o)
    offs_m = start_m * BLOCK_M + r * HALF_M + tl.arange(0, HALF_M)
    qk_scale = sm_scale * LOG2E
    m_i = tl.full([HALF_M], float("-inf"), tl.float32)
    l_i = tl.zeros([HALF_M], tl.float32)
    acc = tl.zeros([HALF_M, HEAD_DIM], tl.float32)
    q = tlx.local_reshape(q_bufs[r], (HALF_M, HEAD_DIM))
    tlx.barrier_wait(q_full[r], 0)
    it = 0
    for masked in tl.static_range(2):  # the unmasked blocks, then the masked ones (same body)
        lo = mask_from if masked else 0
        hi = end if masked else mask_from
        for start_n in range(lo, hi, BLOCK_N):
            s = it % NUM_STAGES
            phase = (it // NUM_STAGES) & 1
            tlx.barrier_wait(k_full[s], phase)
            qk = tlx.async_dot(q, tlx.local_trans(tlx.local_reshape(k_bufs[s], (BLOCK_N, HEAD_DIM))))
            qk = tlx.async_dot_wait(0, qk)
            tlx.barrier_arrive(k_empty[s])
            p, alpha, m_i, l_i = softmax_step(qk, m_i, l_i, qk_scale, offs_m, start_n, N_CTX, BLOCK_N, masked, CAUSAL)
            acc = acc * alpha[:, None]
            tlx.barrier_wait(v_full[s], phase)
            acc = tlx.async_dot(p.to(dtype), tlx.local_reshape(v_bufs[s], (BLOCK_N, HEAD_DIM)), acc)
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(v_empty[s])
            it += 1
    store_o(acc, l_i, q, q_bufs, r, desc_o, off_b, off_h, start_m, BLOCK_M)


#: Tiles per head dim: 128-row Q tiles, 128-row K/V tiles, as many K/V stages as shared memory holds.
CONFIGS = {64: Config(128, 128, 3, 232), 128: Config(128, 128, 2, 232)}
HEAD_DIMS = tuple(CONFIGS)


@functools.lru_cache(maxsize=None)
def _capability(device) -> tuple[int, int]:
    """``device``'s compute capability (asked once: each query costs microseconds of a call's host time)."""
    import torch
    return torch.cuda.get_device_capability(device)


def check_inputs(q, k, v, op: str = "attention", enable_gqa: bool = False) -> None:
    """Raise a ValueError/TypeError naming the argument at fault unless q, k, v are valid [B, H, S, D] inputs
    (k and v with a divisor of q's heads under ``enable_gqa``)."""
    check_shapes(q, k, v, op, enable_gqa)
    if q.is_cuda:
        cap = _capability(q.device)
        if cap != (9, 0):
            raise ValueError(f"{op}: the kernels are written for Hopper (sm_90); {q.device} is sm_{cap[0]}{cap[1]}")
    elif not triton.knobs.runtime.interpret:  # as set now: ops/ explains a setting made after import
        raise ValueError(f"{op}: q, k and v must be CUDA tensors (or CPU tensors under TRITON_INTERPRET=1), "
                         f"got {q.device}")


def check_shapes(q, k, v, op: str = "attention", enable_gqa: bool = False) -> None:
    """The checks of :func:`check_inputs` that need no device: types, shapes, dtypes, one device (a torch
    op's fake implementation runs these on meta/fake tensors). With ``enable_gqa`` (SDPA's keyword) k and v
    may have fewer heads than q, a divisor of q's. Under the interpreter float64 is accepted too
    (``torch.autograd.gradcheck`` through the kernels, which accumulate in fp32)."""
    import torch

    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 4:
            raise ValueError(f"{op}: {name} must be 4-D [batch, heads, seq, head_dim], got shape {tuple(x.shape)}")
        if x.dtype not in (torch.float16, torch.bfloat16) and not (x.dtype == torch.float64 and interpreting()):
            raise TypeError(f"{op}: {name} must be float16 or bfloat16"
                            f"{' (float64 under the interpreter)' if interpreting() else ''}, got {x.dtype}")
    heads_only = k.shape == v.shape and q.shape[::2] == k.shape[::2] and q.shape[3] == k.shape[3]
    if enable_gqa and heads_only:
        if q.shape[1] % k.shape[1]:
            raise ValueError(f"{op}: with enable_gqa, q's heads must be a multiple of k's and v's, got "
                             f"{q.shape[1]} query heads over {k.shape[1]} key/value heads")
    elif k.shape == v.shape and q.shape[:2] == k.shape[:2] and q.shape[3] == k.shape[3] and q.shape[2] != k.shape[2]:
        raise ValueError(f"{op}: q has sequence length {q.shape[2]} and k and v have {k.shape[2]}; tritium's attention "
                         "needs equal query and key lengths")
    elif not q.shape == k.shape == v.shape:
        hint = " (fewer key/value heads than query heads need enable_gqa=True)" if heads_only else ""
        raise ValueError(f"{op}: q, k and v must have the same shape [batch, heads, seq, head_dim], got "
                         f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}{hint}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"{op}: q, k and v must have the same dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if not q.device == k.device == v.device:
        raise ValueError(f"{op}: q, k and v must be on the same device, got {q.device}, {k.device} and {v.device}")
    B, H, S, D = q.shape
    if D not in HEAD_DIMS:
        raise ValueError(f"{op}: head_dim must be one of {HEAD_DIMS}, got {D}")
    if min(B, H, S) < 1:
        raise ValueError(f"{op}: batch, heads and seq must be >= 1, got shape {tuple(q.shape)}")
    if B * H > 65535:
        raise ValueError(f"{op}: batch * heads = {B * H} exceeds the grid limit of 65535")


def tma_ready(x):
    """``x`` itself if TMA can read it in place (unit last stride, 16-byte aligned base and strides), else a copy."""
    import torch

    elem = x.element_size()
    aligned = x.stride(3) == 1 and x.data_ptr() % 16 == 0 and all(s > 0 and s * elem % 16 == 0 for s in x.stride()[:3])
    return x if aligned else x.clone(memory_format=torch.contiguous_format)  # contiguous() keeps a misaligned base


def launch(kernel, q, k, v, causal: bool, sm_scale: float | None, config: Config | None):
    """Run ``kernel`` (either attention variant; same signature) on valid inputs; returns O [B, H, S, D]."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, H, S, D = q.shape
    cfg = config or CONFIGS[D]
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    q, k, v = tma_ready(q), tma_ready(k), tma_ready(v)
    half, bn = cfg.BLOCK_M // 2, cfg.BLOCK_N
    descs = [TensorDescriptor.from_tensor(x, [1, 1, rows, D]) for x, rows in ((q, half), (k, bn), (v, bn), (o, half))]
    grid = (triton.cdiv(S, cfg.BLOCK_M), B * H)
    kernel[grid](*descs, sm_scale, H, S, HEAD_DIM=D, BLOCK_M=cfg.BLOCK_M, BLOCK_N=cfg.BLOCK_N,
                 NUM_STAGES=cfg.NUM_STAGES, CAUSAL=bool(causal), NUM_REGS=cfg.NUM_REGS, num_warps=4)
    return o


def attention_ws(q, k, v, causal: bool = False, sm_scale: float | None = None, config: Config | None = None):
    """softmax(q k^T * sm_scale) v with the plain warp-specialized kernel (sm_scale defaults to 1/sqrt(D))."""
    check_inputs(q, k, v, "attention_ws")
    return launch(attn_fwd_ws_hopper, q, k, v, causal, sm_scale, config)
