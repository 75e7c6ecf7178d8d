"""Persistent warp-specialized Hopper GEMM for FP8 (e4m3) operands with dequantising scales.

``C = (A @ B) * scale_a * scale_b`` for ``A`` [M, K] and ``B`` [K, N] in float8_e4m3fn, fp32 accumulation,
C in bf16 or fp16, with per-tensor scales or per-row (A) / per-column (B) scale vectors, as
``torch._scaled_mm`` computes it. The design is the cooperative one (gemm_ws_cooperative_hopper), built
from the same partitions: a TMA producer, two consumer warpgroups each owning BM/2 rows of every tile
with one wgmma group in flight, and the epilogue's store ring; here the epilogue first multiplies the
accumulator by the scales (:func:`tritium.kernels.partitions.scale_tile`).

wgmma reads 8-bit operands from shared memory only K-major, so B is read from its transpose: ``b_desc``
describes the N x K row-major matrix B^T (a column-major B as it is), its tiles are (BN, BK) and the
MMA takes them transposed (``B_K_MAJOR`` of the partitions). A K step is 128 bytes of K (BK = 128), one
128-byte swizzled row per tile row, as the 16-bit kernels' BK = 64.
"""
from __future__ import annotations

from functools import partial

import triton
import triton.language as tl

from .partitions import cooperative_gemm
from .tiles import WSConfig, ws_blocks, ws_constexprs, ws_matmul

#: 128x256x128 tiles, 4 stages (4 x 48 KiB of operands + 4 x 8 KiB of staging = 224 KiB), and
#: 128x128x128 for problems with fewer 128x256 tiles than SMs (6 x 32 KiB + 4 x 8 KiB). Not yet measured.
LARGE = WSConfig(BM=128, BN=256, BK=128, NUM_STAGES=4, EPILOGUE_SUBTILES=4)
SMALL = WSConfig(BM=128, BN=128, BK=128, NUM_STAGES=6, EPILOGUE_SUBTILES=2)


@triton.jit
def matmul_kernel_fp8(a_desc, b_desc, c_desc, M, N, K, scale_a_ptr, scale_b_ptr, BM: tl.constexpr,
                      BN: tl.constexpr, BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                      EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, ROW_SCALES: tl.constexpr,
                      COL_SCALES: tl.constexpr, PDL: tl.constexpr = False):
    cooperative_gemm(a_desc, b_desc, c_desc, M, N, K, BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES,
                     NUM_REGS, PDL, 1, True, scale_a_ptr, scale_b_ptr, ROW_SCALES, COL_SCALES)


#: Each consumer loads and stores its BM/2 rows; B^T's tiles are (BN, BK). The scale kinds (ROW_SCALES,
#: COL_SCALES) are constexprs of each call, not of the config.
descriptor_blocks = partial(ws_blocks, b_k_major=True)
constexprs = ws_constexprs


def matmul(a, b, scale_a, scale_b, config: WSConfig | None = None, num_sms: int | None = None, out_dtype=None):
    """``(a @ b) * scale_a * scale_b`` for float8_e4m3fn ``a`` [M, K] and ``b`` [K, N] with fp32 scales, one
    element each or ``scale_a`` [M, 1] / ``scale_b`` [1, N] (CUDA, or CPU under TRITON_INTERPRET=1); C in
    ``out_dtype`` (default bfloat16). ``tritium.ops.scaled_matmul`` is the checked op."""
    import torch
    scales = (scale_a.reshape(-1).contiguous(), scale_b.reshape(-1).contiguous())
    return ws_matmul(matmul_kernel_fp8, a, b, config, num_sms, LARGE, SMALL, out=out_dtype or torch.bfloat16,
                     b_k_major=True, extra=scales, ROW_SCALES=scales[0].numel() > 1, COL_SCALES=scales[1].numel() > 1)
