"""Hopper pipelined GEMM with TLX: cp.async into a ring of shared buffers, async wgmma.

NUM_STAGES shared buffers per operand; the prologue fills NUM_STAGES - 1 of them, and each main-loop
iteration waits for its tile, issues an async wgmma, retires the previous wgmma (which read the
buffer about to be refilled) and prefetches the tile NUM_STAGES - 1 iterations ahead. Triton's own
software pipeliner is off for the loop (``num_stages=0``). fp16 in, fp32 accumulate, fp16 out.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx
from .tiles import Config, grouped_tile, launch_gemm, sync_grid_dependency


#: The published configuration, and one for small problems (more CTAs).
LARGE = Config(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, NUM_STAGES=3, num_warps=8)
SMALL = Config(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, NUM_STAGES=4, num_warps=4)


@triton.jit
def matmul_kernel_pipelined_hopper(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                   stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                   BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                   NUM_STAGES: tl.constexpr, STRIDE_ALIGN: tl.constexpr = 8,
                                   PDL: tl.constexpr = False):
    sync_grid_dependency(PDL)
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)

    # Rows/columns past M/N wrap around: loads stay in bounds, the store mask drops them.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    # Row starts, N and K are multiples of STRIDE_ALIGN elements (the host checks), so cp.async
    # can copy min(16, 2 * STRIDE_ALIGN) bytes at a time; the hints below tell the compiler so.
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, STRIDE_ALIGN), STRIDE_ALIGN)
    a_rows = tl.multiple_of(offs_am[:, None] * stride_am, [STRIDE_ALIGN, STRIDE_ALIGN])
    b_rows = tl.multiple_of(offs_k[:, None] * stride_bk, [STRIDE_ALIGN, STRIDE_ALIGN])
    a_ptrs = a_ptr + (a_rows + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (b_rows + offs_bn[None, :] * stride_bn)

    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), tlx.dtype_of(a_ptr), NUM_STAGES)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), tlx.dtype_of(b_ptr), NUM_STAGES)

    # Prologue: tiles 0 .. NUM_STAGES - 2, one commit group each.
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        a = tlx.local_view(buffers_A, i)
        b = tlx.local_view(buffers_B, i)
        token_a = tlx.async_load(a_ptrs, a, mask=tl.max_constancy(offs_k[None, :] < K - i * BLOCK_SIZE_K,
                                                                    [1, STRIDE_ALIGN]))
        token_b = tlx.async_load(b_ptrs, b, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=0):
        buf = k % NUM_STAGES
        # Tile k has landed once at most NUM_STAGES - 2 newer groups are still in flight.
        tlx.async_load_wait_group(NUM_STAGES - 2)
        acc = tlx.async_dot(tlx.local_view(buffers_A, buf), tlx.local_view(buffers_B, buf), acc)
        # Retire the previous wgmma: it read the buffer the prefetch below overwrites.
        acc = tlx.async_dot_wait(1, acc)
        i = k + NUM_STAGES - 1
        nbuf = i % NUM_STAGES
        a_mask = tl.max_constancy(offs_k[None, :] < K - i * BLOCK_SIZE_K, [1, STRIDE_ALIGN])
        token_a = tlx.async_load(a_ptrs, tlx.local_view(buffers_A, nbuf), mask=a_mask)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(buffers_B, nbuf), mask=offs_k[:, None] < K - i * BLOCK_SIZE_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    acc = tlx.async_dot_wait(0, acc)
    # Drain the copies issued for tiles past the end (masked, they still zero-fill their buffers):
    # the epilogue's layout conversion reuses that shared memory. compute-sanitizer racecheck
    # reports the race without this wait.
    tlx.async_load_wait_group(0)

    c = acc.to(tlx.dtype_of(c_ptr))
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def pick_config(M: int, N: int) -> Config:
    """The published tile unless it leaves most SMs idle."""
    return LARGE if triton.cdiv(M, LARGE.BLOCK_SIZE_M) * triton.cdiv(N, LARGE.BLOCK_SIZE_N) >= 128 else SMALL


def _stride_align(*strides: int) -> int:
    """The largest of 8, 4, 2, 1 elements dividing every stride."""
    return next(n for n in (8, 4, 2, 1) if all(s % n == 0 for s in strides))


def _cp_async_ready(x):
    """``x`` with unit inner stride and a 16-byte aligned base, copying only if needed."""
    return x if x.stride(1) == 1 and x.data_ptr() % 16 == 0 else x.contiguous()


def matmul(a, b, config: Config | None = None):
    """``a @ b`` for fp16 CUDA tensors ``a`` [M, K] and ``b`` [K, N].

    cp.async moves at least 4 bytes, so fp16 rows and tile edges must fall on even elements: an
    odd K, N or row stride is padded with zeros (a copy); everything else runs in place.
    """
    import torch

    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
    M, K = a.shape
    N = b.shape[1]
    a, b = _cp_async_ready(a), _cp_async_ready(b)
    align = _stride_align(a.stride(0), b.stride(0), K, N)
    if align == 1:
        Kp, Np = K + K % 2, N + N % 2
        a = torch.nn.functional.pad(a, (0, Kp - K))
        b = torch.nn.functional.pad(b, (0, Np - N, 0, Kp - K))
        return matmul(a, b, config)[:, :N]
    return launch_gemm(matmul_kernel_pipelined_hopper, a, b, config or pick_config(M, N), STRIDE_ALIGN=align)
