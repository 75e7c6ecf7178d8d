"""AMD (MI300/MI350) pipelined GEMM with TLX: registers -> LDS ring -> registers -> MFMA.

The prologue stages NUM_STAGES - 1 tiles in LDS buffers. Each main-loop iteration first issues the
global loads of the tile NUM_STAGES - 1 iterations ahead (into registers), then reads its own tile
from LDS, runs ``tl.dot`` (MFMA), and finally stores the prefetched tile into the slot it just read.
Triton's own pipeliner is off for the loop (``num_stages=0``). fp16 in, fp32 accumulate, fp16 out.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx
from .tiles import Config, grouped_tile, launch_gemm


DEFAULT = Config(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, NUM_STAGES=2, num_warps=4)


@triton.jit
def matmul_kernel_pipelined_amd(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                NUM_STAGES: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), tlx.dtype_of(a_ptr), NUM_STAGES - 1)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), tlx.dtype_of(b_ptr), NUM_STAGES - 1)

    # Prologue: tiles 0 .. NUM_STAGES - 2 through registers into LDS.
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        a_reg = tl.load(a_ptrs, mask=offs_k[None, :] < K - i * BLOCK_SIZE_K, other=0.0)
        b_reg = tl.load(b_ptrs, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K, other=0.0)
        tlx.local_store(tlx.local_view(buffers_A, i), a_reg)
        tlx.local_store(tlx.local_view(buffers_B, i), b_reg)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=0):
        buf = k % (NUM_STAGES - 1)
        # Global loads of tile k + NUM_STAGES - 1 are in flight while tile k is multiplied.
        i = k + NUM_STAGES - 1
        a_reg = tl.load(a_ptrs, mask=offs_k[None, :] < K - i * BLOCK_SIZE_K, other=0.0)
        b_reg = tl.load(b_ptrs, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K, other=0.0)
        a_prev = tlx.local_load(tlx.local_view(buffers_A, buf))
        b_prev = tlx.local_load(tlx.local_view(buffers_B, buf))
        acc = tl.dot(a_prev, b_prev, acc)
        # Slot `buf` is free once read (Triton's barrier analysis orders the reads before these writes).
        tlx.local_store(tlx.local_view(buffers_A, buf), a_reg)
        tlx.local_store(tlx.local_view(buffers_B, buf), b_reg)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    c = acc.to(tlx.dtype_of(c_ptr))
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a, b, config: Config = DEFAULT):
    """``a @ b`` for fp16 tensors ``a`` [M, K] and ``b`` [K, N] (row-major)."""
    return launch_gemm(matmul_kernel_pipelined_amd, a, b, config)
