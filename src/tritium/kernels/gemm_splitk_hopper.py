"""Persistent warp-specialized Hopper GEMM with split-K: for problems with too few output tiles.

A problem such as 128x13312x16384 has 52 tiles of 128x256 (104 of 128x128) for 132 SMs, each with
a long K loop. Here the unit of work is a (tile, K slice) pair: SPLIT_K slices of about equal
numbers of BK steps (the host picks SPLIT_K so that every slice has at least one step), so a grid
of min(#SMs, #units) persistent programs stays busy.

The structure is the cooperative design's (gemm_ws_cooperative_hopper): a TMA producer task fills
a ring of NUM_STAGES (A halves, B) stages; two consumer warpgroups each own BM/2 rows of the tile,
keep one wgmma group in flight and release a stage once the MMA after it was issued and it retired.
The epilogue differs: each slice's fp32 partial is *added* into C with TMA reduce stores
(``cp.reduce.async.bulk.tensor.add``, ``store_reduce="add"``), in EPILOGUE_SUBTILES column slices
through two staging buffers per consumer. C must be zero-filled before the launch and is usually an
fp32 workspace converted afterwards (see :func:`matmul`). The order of the additions varies between
runs, so results are not bitwise reproducible (each sum is still fp32).

TMA zero-fills out-of-bounds loads and clips stores, so ragged M, N, K need no masks.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import triton
import triton.language as tl

from . import tiles
from .partitions import cooperative_gemm
from .tiles import WSConfig, ws_blocks, ws_constexprs

#: 128x128 tiles, 4 stages (4 x 32 KiB of operands), fp32 staging in 32-column slices (4 x 8 KiB).
DEFAULT = WSConfig(BM=128, BN=128, NUM_STAGES=4, EPILOGUE_SUBTILES=4, SPLIT_K=4)


@triton.jit
def matmul_kernel_splitk(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr,
                         NUM_REGS: tl.constexpr, SPLIT_K: tl.constexpr, PDL: tl.constexpr = False):
    cooperative_gemm(a_desc, b_desc, c_desc, M, N, K, BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES,
                     NUM_REGS, PDL, SPLIT_K)


#: Each consumer loads and reduces its BM/2 rows; the constexprs include the K slices.
descriptor_blocks = ws_blocks
constexprs = partial(ws_constexprs, split_k=True)


def effective_split(K: int, BK: int, split_k: int) -> int:
    """The number of non-empty K slices when ``split_k`` slices of cdiv(k_tiles, split_k) steps are asked for."""
    k_tiles = max(1, triton.cdiv(K, BK))
    return triton.cdiv(k_tiles, triton.cdiv(k_tiles, max(1, split_k)))


def grid_size(M: int, N: int, cfg: WSConfig, sms: int) -> int:
    """Persistent programs: one per (tile, K slice) unit, at most one per SM."""
    return min(sms, triton.cdiv(M, cfg.BM) * triton.cdiv(N, cfg.BN) * cfg.SPLIT_K)


def matmul(a, b, config: WSConfig = DEFAULT, num_sms: int | None = None, out_dtype=None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1).

    The K slices are summed into a zeroed fp32 buffer, converted to ``out_dtype`` (default: the
    inputs' dtype) afterwards; with ``out_dtype=torch.float32`` that buffer is the result.
    """
    import torch

    cfg = replace(config, SPLIT_K=effective_split(a.shape[1], config.BK, config.SPLIT_K))
    out_dtype = out_dtype or a.dtype
    c = tiles.launch_tma_gemm(matmul_kernel_splitk, a, b, descriptor_blocks(cfg), num_sms,
                              out=torch.float32, units=cfg.SPLIT_K, **constexprs(cfg))
    return c if out_dtype == torch.float32 else c.to(out_dtype)
