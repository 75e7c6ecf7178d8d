"""The TLX layout planner: which encoding each TLX value gets, decided when the op is built.

TLX ops are the only places with fixed layouts; everything else in the kernel stays layout-free
until ``convert_to_ttgpuir``, and conversions inserted with the placeholders' lowering
(:mod:`tritium.tlx.placeholders`) connect the two. The
planner therefore only has to pick encodings that are good *at the TLX op*:

* shared buffers: NVMMA swizzled encodings on Hopper (what wgmma and TMA read, and what cp.async
  writes at full 16-byte width), swizzled encodings with MFMA-sized vectors on AMD;
* async-copy sources and ``local_store`` values: a coalesced blocked layout with 16-byte vectors
  along the contiguous dimension (stock canonicalization folds the latter into the producer's layout);
* wgmma accumulators: the NVIDIA MMA v3 layout stock ``accelerate_matmul`` would choose.

Stock ``remove_layout_conversions`` then moves the conversions out of loops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import triton.language as tl
from triton._C.libtriton import gluon_ir, ir


# --------------------------------------------------------------------------------------------
# Layout values (hashable, comparable, turned into MLIR attributes on demand)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockedLayout:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def to_ir(self, g: gluon_ir.GluonOpBuilder) -> ir.attribute:
        return g.get_blocked_layout(list(self.size_per_thread), list(self.threads_per_warp),
                                    list(self.warps_per_cta), list(self.order), [])


@dataclass(frozen=True)
class NvidiaMmaLayout:
    version: tuple[int, int]
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]

    def to_ir(self, g: gluon_ir.GluonOpBuilder) -> ir.attribute:
        return g.get_mma_layout(list(self.version), list(self.warps_per_cta), [], list(self.instr_shape))


@dataclass(frozen=True)
class DotOperandLayout:
    operand_index: int
    parent: NvidiaMmaLayout
    k_width: int

    def to_ir(self, g: gluon_ir.GluonOpBuilder) -> ir.attribute:
        return g.get_dot_operand_layout(self.operand_index, self.parent.to_ir(g), self.k_width)


@dataclass(frozen=True)
class NVMMASharedLayout:
    swizzle_bytes: int
    element_bits: int
    rank: int
    transposed: bool = False

    def to_ir(self, g: gluon_ir.GluonOpBuilder) -> ir.attribute:
        return g.get_nvmma_shared_layout(self.swizzle_bytes, self.element_bits, self.transposed, False, [], self.rank)


@dataclass(frozen=True)
class SwizzledSharedLayout:
    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def to_ir(self, g: gluon_ir.GluonOpBuilder) -> ir.attribute:
        return g.get_swizzled_shared_layout(self.vec, self.per_phase, self.max_phase, list(self.order), [])


DistributedLayout = Union[BlockedLayout, NvidiaMmaLayout, DotOperandLayout]
SharedLayout = Union[NVMMASharedLayout, SwizzledSharedLayout]


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------
def cuda_capability(arch: str) -> Optional[int]:
    """``"sm90"``/``"sm_90a"`` -> 90; None for non-NVIDIA targets."""
    if not arch.startswith("sm"):
        return None
    return int("".join(ch for ch in arch[2:] if ch.isdigit()))


def is_hopper(arch: str) -> bool:
    return cuda_capability(arch) == 90


def is_amd(arch: str) -> bool:
    return arch.startswith("gfx")


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------
def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def shared_layout(shape: Sequence[int], dtype: tl.dtype, arch: str) -> SharedLayout:
    """The default encoding of a shared buffer of ``shape`` (one buffer, not the multi-buffer)."""
    bits = dtype.primitive_bitwidth
    rank = len(shape)
    if cuda_capability(arch) is not None and cuda_capability(arch) >= 90 and rank >= 2:
        row_bytes = shape[-1] * bits // 8
        outer = 1
        for s in shape[:-1]:
            outer *= s
        swizzle = next((w for w in (128, 64, 32) if row_bytes >= w and row_bytes % w == 0), 0)
        return NVMMASharedLayout(swizzle if outer >= 8 else 0, bits, rank)
    order = tuple(reversed(range(rank)))
    if is_amd(arch) and rank >= 2:
        # Stock Triton's swizzle for an MFMA operand (SwizzledSharedEncodingAttr::get): one operand
        # vector per swizzle unit (4 x 16-bit on CDNA3, 8 x 16-bit on CDNA4), rows grouped so that a
        # phase spans one row of LDS banks (32 banks on CDNA3, 64 on CDNA4), at most 16 phases.
        cdna4 = arch == "gfx950"
        vec = max(1, (16 if cdna4 else 8) * 8 // bits)
        inner = shape[-1]
        per_phase = max(1, (64 if cdna4 else 32) * 32 // bits // inner)
        return SwizzledSharedLayout(vec, per_phase, max(1, min(16 // per_phase, inner // vec)), order)
    return SwizzledSharedLayout(1, 1, 1, order)


def coalesced_layout(shape: Sequence[int], dtype: tl.dtype, num_warps: int, threads_per_warp: int) -> BlockedLayout:
    """Row-major blocked layout with 16-byte vectors along the last dimension, warps stacked on the first."""
    rank = len(shape)
    bits = max(dtype.primitive_bitwidth, 8)
    vec = min(_pow2_floor(128 // bits), shape[-1])
    spt = [1] * rank
    spt[-1] = vec
    tpw = [1] * rank
    left = threads_per_warp
    for d in reversed(range(rank)):
        cover = max(1, shape[d] // spt[d])
        tpw[d] = min(_pow2_floor(cover), left) if d else left
        left //= tpw[d]
    wpc = [1] * rank
    left = num_warps
    for d in range(rank):
        cover = max(1, shape[d] // (spt[d] * tpw[d]))
        wpc[d] = min(_pow2_floor(cover), left) if d < rank - 1 else left
        left //= wpc[d]
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(reversed(range(rank))))


def transposed(layout: SharedLayout, dims: Sequence[int]) -> SharedLayout:
    """The encoding ``ttg.memdesc_trans`` gives a view of ``layout`` permuted by ``dims``."""
    if isinstance(layout, NVMMASharedLayout):
        if list(dims) != [1, 0]:
            raise NotImplementedError(f"tlx.local_trans: NVMMA-swizzled buffers transpose as (1, 0) only, got {dims}")
        return NVMMASharedLayout(layout.swizzle_bytes, layout.element_bits, layout.rank, not layout.transposed)
    return SwizzledSharedLayout(layout.vec, layout.per_phase, layout.max_phase,
                                tuple(list(dims).index(o) for o in layout.order))


def reshaped(layout: SharedLayout, old_shape: Sequence[int], shape: Sequence[int]) -> SharedLayout:
    """The encoding of a reshaped view: unswizzled row-major buffers, or NVMMA buffers whose rows stay whole.

    NVMMA swizzles rows of the last dimension and flattens the outer ones, so regrouping outer
    dimensions (e.g. a [1, 1, 64, 64] TMA block seen as [64, 64]) keeps every byte in place.
    """
    if isinstance(layout, NVMMASharedLayout) and not layout.transposed and len(shape) >= 2 \
            and shape[-1] == old_shape[-1]:
        return NVMMASharedLayout(layout.swizzle_bytes, layout.element_bits, len(shape))
    plain = isinstance(layout, SwizzledSharedLayout) and layout.max_phase == 1 and layout.vec == 1
    if not plain or list(layout.order) != list(reversed(range(len(layout.order)))):
        raise NotImplementedError("tlx.local_reshape: the compile path reshapes unswizzled row-major buffers, or "
                                  "NVMMA buffers keeping their last dimension")
    return SwizzledSharedLayout(1, 1, 1, tuple(reversed(range(len(shape)))))


def wgmma_layout(M: int, N: int, num_warps: int, a_dtype: tl.dtype) -> NvidiaMmaLayout:
    """The MMA v3 accumulator layout for an ``M x N`` wgmma, as stock ``accelerate_matmul`` picks it."""
    warps = [4, 1]
    while warps[0] * warps[1] < num_warps:
        if M > 16 * warps[0]:
            warps[0] *= 2
        else:
            warps[1] *= 2
    n_per_warp = N // warps[1]
    instr_n = next(n for n in range(256, 7, -8) if n_per_warp % n == 0)
    instr_k = 256 // a_dtype.primitive_bitwidth
    return NvidiaMmaLayout((3, 0), tuple(warps), (16, instr_n, instr_k))


def wgmma_operand_layout(acc: NvidiaMmaLayout, a_dtype: tl.dtype) -> DotOperandLayout:
    """Register layout of a wgmma A operand held in registers."""
    return DotOperandLayout(0, acc, 32 // a_dtype.primitive_bitwidth)
