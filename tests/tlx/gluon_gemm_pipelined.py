"""The TLX pipelined Hopper GEMM (``tritium.kernels.gemm_pipelined_hopper``) hand-written in Gluon.

Same tiles, same algorithm, same op order, and the layouts the TLX kernel ends up with in its final
TTGIR (read from ``triton.compile(...).asm["ttgir"]`` for the SMALL and LARGE configs):

* pointer tensors of the copies: ``#blocked<[1, 8], [32 / t, t], [num_warps, 1], [1, 0]>`` with
  ``t = min(32, cols / 8)`` threads along a row of 16-byte vectors (A: t = 8; B: t = 16 for N = 128,
  32 for N = 256);
* ring buffers: ``#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>``;
* accumulator: ``#ttg.nvidia_mma<{versionMajor = 3, warpsPerCTA = [num_warps, 1], instrShape = [16, BN, 16]}>``
  (both configs have ``num_warps // 4 * 64 <= BM``, so the instruction covers the whole N);
* epilogue: the C tile is converted from the MMA layout to B's copy layout and stored from it.

The kernel has the TLX kernel's name and signature (constexprs included), so ``gemm_source`` in
``test_codegen.py`` compiles either one, and the PTX entry names agree. One constexpr is extra:
``TLX_ORDER`` computes C's row offsets at the top of the kernel, where TLX's TTGIR has them, rather
than in the epilogue; with it the PTX is byte-identical to TLX's (see test_gluon_equivalence.py and
docs/tlx-design.md, "TLX vs Gluon").
"""
from __future__ import annotations

import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import async_copy, warpgroup_mma, warpgroup_mma_wait

from tritium.kernels.tiles import grouped_tile as _tl_grouped_tile

# The very same Python function as the TLX kernel's tile scheduler, compiled as Gluon (it is scalar
# code only, so no layout is involved), so that even its source locations agree.
grouped_tile = gluon.jit(_tl_grouped_tile.fn)


@gluon.constexpr_function
def copy_layout(cols, num_warps):
    """The coalesced layout stock ``coalesce`` gives a fp16 tile ``cols`` wide: 16-byte vectors, rows per warp."""
    threads_per_row = min(32, cols // 8)
    return gl.BlockedLayout([1, 8], [32 // threads_per_row, threads_per_row], [num_warps, 1], [1, 0])


@gluon.constexpr_function
def mma_layout(BM, BN, num_warps):
    """Stock ``accelerate_matmul``'s MMA v3 layout for an fp16 BM x BN tile (warps along M)."""
    instr_n = BN if num_warps // 4 * 64 <= BM else BN // 2
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, instr_n, 16])


@gluon.jit
def matmul_kernel_pipelined_hopper(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                   stride_cm, stride_cn, BLOCK_SIZE_M: gl.constexpr, BLOCK_SIZE_N: gl.constexpr,
                                   BLOCK_SIZE_K: gl.constexpr, GROUP_SIZE_M: gl.constexpr,
                                   NUM_STAGES: gl.constexpr, STRIDE_ALIGN: gl.constexpr = 8,
                                   TLX_ORDER: gl.constexpr = False):
    NUM_WARPS: gl.constexpr = gl.num_warps()
    A_LAYOUT: gl.constexpr = copy_layout(BLOCK_SIZE_K, NUM_WARPS)
    B_LAYOUT: gl.constexpr = copy_layout(BLOCK_SIZE_N, NUM_WARPS)
    C_LAYOUT: gl.constexpr = B_LAYOUT
    MMA_LAYOUT: gl.constexpr = mma_layout(BLOCK_SIZE_M, BLOCK_SIZE_N, NUM_WARPS)
    SHARED: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)

    pid_m, pid_n = grouped_tile(gl.program_id(axis=0), gl.cdiv(M, BLOCK_SIZE_M), gl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)

    if TLX_ORDER:
        # The order of TLX's final TTGIR. There, TTIR CSE has merged offs_cm's `pid_m * BLOCK_SIZE_M +
        # arange` into offs_am's, and remove_layout_conversions has cloned each of its ops in C's layout
        # right after the original (the splats are spelled out to keep that order; they cost nothing).
        first_row = pid_m * BLOCK_SIZE_M
        rows_a = gl.arange(0, BLOCK_SIZE_M, layout=gl.SliceLayout(1, A_LAYOUT))
        rows_c = gl.arange(0, BLOCK_SIZE_M, layout=gl.SliceLayout(1, C_LAYOUT))
        first_row_a = gl.full([BLOCK_SIZE_M], first_row, gl.int32, layout=gl.SliceLayout(1, A_LAYOUT))
        first_row_c = gl.full([BLOCK_SIZE_M], first_row, gl.int32, layout=gl.SliceLayout(1, C_LAYOUT))
        offs_am = first_row_a + rows_a
        offs_cm = first_row_c + rows_c
        offs_am = offs_am % M
    else:
        offs_am = (pid_m * BLOCK_SIZE_M + gl.arange(0, BLOCK_SIZE_M, layout=gl.SliceLayout(1, A_LAYOUT))) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + gl.arange(0, BLOCK_SIZE_N, layout=gl.SliceLayout(0, B_LAYOUT))) % N
    offs_bn = gl.max_contiguous(gl.multiple_of(offs_bn, STRIDE_ALIGN), STRIDE_ALIGN)
    a_rows = gl.multiple_of(gl.expand_dims(offs_am, 1) * stride_am, [STRIDE_ALIGN, STRIDE_ALIGN])
    offs_bk = gl.arange(0, BLOCK_SIZE_K, layout=gl.SliceLayout(1, B_LAYOUT))
    b_rows = gl.multiple_of(gl.expand_dims(offs_bk, 1) * stride_bk, [STRIDE_ALIGN, STRIDE_ALIGN])
    offs_ak = gl.arange(0, BLOCK_SIZE_K, layout=gl.SliceLayout(0, A_LAYOUT))
    a_ptrs = a_ptr + (a_rows + gl.expand_dims(offs_ak, 0) * stride_ak)
    b_ptrs = b_ptr + (b_rows + gl.expand_dims(offs_bn, 0) * stride_bn)

    buffers_A = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [NUM_STAGES, BLOCK_SIZE_M, BLOCK_SIZE_K], SHARED)
    buffers_B = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [NUM_STAGES, BLOCK_SIZE_K, BLOCK_SIZE_N], SHARED)

    # Prologue: tiles 0 .. NUM_STAGES - 2, one commit group each (TLX unrolls its loop the same way).
    # `s`, not TLX's `i`: a static_range variable outlives its loop, and `i` is a tensor below.
    for s in gl.static_range(NUM_STAGES - 1):
        a = buffers_A.index(s)
        b = buffers_B.index(s)
        async_copy.async_copy_global_to_shared(
            a, a_ptrs, mask=gl.max_constancy(gl.expand_dims(offs_ak, 0) < K - s * BLOCK_SIZE_K, [1, STRIDE_ALIGN]))
        async_copy.async_copy_global_to_shared(b, b_ptrs, mask=gl.expand_dims(offs_bk, 1) < K - s * BLOCK_SIZE_K)
        async_copy.commit_group()
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = gl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=gl.float32, layout=MMA_LAYOUT)
    for k in tl.range(0, gl.cdiv(K, BLOCK_SIZE_K), num_stages=0):
        buf = k % NUM_STAGES
        async_copy.wait_group(NUM_STAGES - 2)
        acc = warpgroup_mma(buffers_A.index(buf), buffers_B.index(buf), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=[acc])
        i = k + NUM_STAGES - 1
        nbuf = i % NUM_STAGES
        a_mask = gl.max_constancy(gl.expand_dims(offs_ak, 0) < K - i * BLOCK_SIZE_K, [1, STRIDE_ALIGN])
        async_copy.async_copy_global_to_shared(buffers_A.index(nbuf), a_ptrs, mask=a_mask)
        async_copy.async_copy_global_to_shared(buffers_B.index(nbuf), b_ptrs,
                                               mask=gl.expand_dims(offs_bk, 1) < K - i * BLOCK_SIZE_K)
        async_copy.commit_group()
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    acc = warpgroup_mma_wait(0, deps=[acc])
    async_copy.wait_group(0)

    c = acc.to(c_ptr.dtype.element_ty)
    if not TLX_ORDER:
        offs_cm = pid_m * BLOCK_SIZE_M + gl.arange(0, BLOCK_SIZE_M, layout=gl.SliceLayout(1, C_LAYOUT))
    offs_cn = pid_n * BLOCK_SIZE_N + gl.arange(0, BLOCK_SIZE_N, layout=gl.SliceLayout(0, C_LAYOUT))
    c_ptrs = c_ptr + stride_cm * gl.expand_dims(offs_cm, 1) + stride_cn * gl.expand_dims(offs_cn, 0)
    c_mask = (gl.expand_dims(offs_cm, 1) < M) & (gl.expand_dims(offs_cn, 0) < N)
    gl.store(c_ptrs, gl.convert_layout(c, C_LAYOUT), mask=c_mask)
