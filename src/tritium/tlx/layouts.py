"""The TLX layout planner: which encoding each TLX value gets, decided when the op is built.

TLX ops are the only places with fixed layouts; everything else in the kernel stays layout-free
until ``convert_to_ttgpuir``, and conversions inserted with the placeholders' lowering
(:mod:`tritium.tlx.lowering`) connect the two. The
planner therefore only has to pick encodings that are good *at the TLX op*:

* shared buffers: NVMMA swizzled encodings on Hopper (what wgmma and TMA read, and what cp.async
  writes at full 16-byte width), swizzled encodings with MFMA-sized vectors on AMD;
* async-copy sources and ``local_store`` values: a coalesced blocked layout with 16-byte vectors
  along the contiguous dimension (stock canonicalization folds the latter into the producer's layout);
* wgmma accumulators: the NVIDIA MMA v3 layout stock ``accelerate_matmul`` would choose.

Stock ``remove_layout_conversions`` then moves the conversions out of loops.
"""
from __future__ import annotations

import enum
import functools
import math
import operator
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import triton.language as tl
from triton import constexpr_function

from .triton_compat import gluon_ir, ir, unwrap_if_constexpr


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
    if not isinstance(layout, SwizzledSharedLayout):
        raise NotImplementedError(f"tlx.local_trans: transposed views of {type(layout).__name__} buffers are not "
                                  "supported on the compile path; use a swizzled or NVMMA layout")
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


# --------------------------------------------------------------------------------------------
# The TLX fork's explicit layout API (``tlx.local_alloc(layout=...)``, ``local_load(layout=...)``,
# ``require_layout``, ``zeros(layout=...)``), mapped onto stock TritonGPU attributes
# through the Gluon builder. ``to_ir`` takes the GluonOpBuilder; register layouts also take the
# tensor's shape and element type, as in the fork.
# --------------------------------------------------------------------------------------------
class LayoutError(ValueError, AssertionError):
    """A malformed layout. The fork asserts its layout arguments, so this is an AssertionError too:
    code that ported from the fork and expects one keeps working."""


def _ints(values, what: str) -> list[int]:
    values = unwrap_if_constexpr(values)
    try:
        return [int(unwrap_if_constexpr(v)) for v in values]
    except (TypeError, ValueError):
        raise LayoutError(f"{what} must be a list of ints, got {values!r}") from None


def _single_cta(what: str, *fields) -> None:
    """Stock Triton 3.6 kernels run one CTA per program here: every CTA split/count must be 1."""
    for field in fields:
        if field is not None and any(v != 1 for v in _ints(field, what)):
            raise NotImplementedError(f"{what}: CTA splits other than 1 need CTA clusters, which tritium's TLX "
                                      f"does not launch (got {list(field)})")


class layout_encoding:
    """Base of every TLX layout; ``to_ir`` returns its TritonGPU attribute.

    Marked as a Triton aggregate (a value with nothing to hash), so that a kernel may read a layout held in
    a module global, as fork kernels do (``_C4 = tlx.layout(...)``; the fork's layouts pass Triton's global
    check by living in ``triton.language``). Like an aggregate's fields, a later change of the global does
    not recompile the kernel.
    """

    __triton_aggregate__ = True
    hash_attrs: tuple = ()

    def to_ir(self, g: gluon_ir.GluonOpBuilder, shape=None, element_type=None) -> ir.attribute:
        raise NotImplementedError(f"{type(self).__name__}.to_ir must be overridden")

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class shared_layout_encoding(layout_encoding):
    """Base of shared-memory layouts (what ``local_alloc(layout=...)`` takes)."""

    def resolve(self, shape: Sequence[int], dtype: tl.dtype):
        """The layout value a buffer of ``shape``/``dtype`` carries (see :data:`SharedLayout`)."""
        return self

    def make_permute(self, dims):
        raise NotImplementedError(f"{type(self).__name__}.make_permute is not supported")


class swizzled_shared_layout_encoding(shared_layout_encoding):
    """``#ttg.swizzled_shared<{vec, perPhase, maxPhase, order}>`` (Gluon ``SwizzledSharedLayout``)."""

    def __init__(self, vectorSize, perPhase, maxPhase, order, numCTAs=None, numCTAsPerCGA=None, numCTASplit=None,
                 numCTAOrder=None) -> None:
        what = "tlx.swizzled_shared_layout_encoding"
        _single_cta(what, numCTAs, numCTAsPerCGA, numCTASplit)
        self.vectorSize, self.perPhase, self.maxPhase = _ints((vectorSize, perPhase, maxPhase), what)
        self.order = _ints(order, f"{what}: order")

    @staticmethod
    @constexpr_function
    def make_default(rank: int) -> "swizzled_shared_layout_encoding":
        return swizzled_shared_layout_encoding(1, 1, 1, list(reversed(range(rank))))

    def make_permute(self, dims) -> "swizzled_shared_layout_encoding":
        return swizzled_shared_layout_encoding(self.vectorSize, self.perPhase, self.maxPhase,
                                               [self.order[d] for d in dims])

    def resolve(self, shape, dtype) -> SwizzledSharedLayout:
        if len(self.order) != len(shape):
            raise LayoutError(f"tlx.swizzled_shared_layout_encoding: order {self.order} does not fit shape {list(shape)}")
        return SwizzledSharedLayout(self.vectorSize, self.perPhase, self.maxPhase, tuple(self.order))

    def to_ir(self, g, shape=None, element_type=None):
        return g.get_swizzled_shared_layout(self.vectorSize, self.perPhase, self.maxPhase, self.order, [])


class swizzled_layout(shared_layout_encoding):
    """A CuTe ``Swizzle<bits, base, shift>``: ``vec = 2**base``, ``maxPhase = 2**bits`` and
    ``perPhase = 2**(shift + base) / shape[order[0]]``, resolved when the buffer shape is known."""

    def __init__(self, bits, base=0, shift=0, order=None) -> None:
        self.bits, self.base, self.shift = _ints((bits, base, shift), "tlx.swizzled_layout")
        self.order = None if order is None else _ints(order, "tlx.swizzled_layout: order")

    @staticmethod
    @constexpr_function
    def make_default(rank: int) -> "swizzled_layout":
        return swizzled_layout(0, 0, 0, list(reversed(range(rank))))

    @property
    def vectorSize(self) -> int:
        return 1 << self.base

    @property
    def maxPhase(self) -> int:
        return 1 << self.bits

    def resolve(self, shape, dtype) -> SwizzledSharedLayout:
        return self._to_encoding(shape).resolve(shape, dtype)

    def _to_encoding(self, shape=None) -> "swizzled_shared_layout_encoding":
        """The ``swizzled_shared_layout_encoding`` for a buffer of ``shape`` (the fork's name)."""
        if shape is None and (self.bits or self.order is None):
            raise LayoutError("tlx.swizzled_layout: a real swizzle (or one without order) needs the buffer shape")
        order = self.order if self.order is not None else list(reversed(range(len(shape))))
        per_phase = 1
        if self.bits:
            span, contig = 1 << (self.shift + self.base), shape[order[0]]
            if span % contig:
                raise LayoutError(f"tlx.swizzled_layout: Swizzle<{self.bits},{self.base},{self.shift}> gives perPhase "
                                 f"< 1 for a contiguous extent of {contig} (need shift + base >= log2({contig}))")
            per_phase = span // contig
        return swizzled_shared_layout_encoding(self.vectorSize, per_phase, self.maxPhase, order)


class nv_mma_shared_layout_encoding(shared_layout_encoding):
    """``#ttg.nvmma_shared`` (Gluon ``NVMMASharedLayout``) with the swizzle stock Triton picks for ``shape``."""

    def __init__(self, shape, order, elemType, numCTAsPerCGA=None, numCTASplit=None, numCTAOrder=None,
                 fp4Padded=False, swizzled=True) -> None:
        what = "tlx.nv_mma_shared_layout_encoding"
        _single_cta(what, numCTAsPerCGA, numCTASplit)
        if unwrap_if_constexpr(fp4Padded):
            raise NotImplementedError(f"{what}: fp4Padded is for Blackwell fp4 operands, not on sm_90/AMD")
        self.shape = _ints(shape, f"{what}: shape")
        self.order = _ints(order, f"{what}: order")
        self.elemType = unwrap_if_constexpr(elemType)
        self.swizzled = bool(unwrap_if_constexpr(swizzled))
        if sorted(self.order) != list(range(len(self.shape))):
            raise LayoutError(f"{what}: order {self.order} is not a permutation of the shape's dims")
        if len(self.shape) >= 2 and self.order[0] not in (len(self.shape) - 1, len(self.shape) - 2):
            raise LayoutError(f"{what}: the contiguous dim (order[0]) must be one of the last two, got {self.order}")

    @staticmethod
    @constexpr_function
    def make_default(shape, elemType, fp4Padded=False) -> "nv_mma_shared_layout_encoding":
        return nv_mma_shared_layout_encoding(shape, list(reversed(range(len(shape)))), elemType, fp4Padded=fp4Padded)

    def make_permute(self, dims) -> "nv_mma_shared_layout_encoding":
        return nv_mma_shared_layout_encoding(self.shape, [self.order[d] for d in dims], self.elemType,
                                             swizzled=self.swizzled)

    def resolve(self, shape, dtype) -> NVMMASharedLayout:
        rank = len(shape)
        transposed = rank >= 2 and self.order[0] != rank - 1
        bits = self.elemType.primitive_bitwidth
        if not self.swizzled or rank < 2:
            return NVMMASharedLayout(0, bits, rank, transposed)
        contig = shape[-2] if transposed else shape[-1]
        plain = shared_layout(tuple(shape[:-2]) + (shape[-1] if transposed else shape[-2], contig), self.elemType,
                              "sm90")
        return NVMMASharedLayout(plain.swizzle_bytes, bits, rank, transposed)

    def to_ir(self, g, shape=None, element_type=None):
        return self.resolve(self.shape, self.elemType).to_ir(g)


class padded_shared_layout_encoding(shared_layout_encoding):
    """``#ttg.padded_shared`` (Gluon ``PaddedSharedLayout``): ``paddings[i]`` elements after every ``intervals[i]``."""

    def __init__(self, intervals, paddings, order, shape, numCTAsPerCGA=None, numCTASplit=None, numCTAOrder=None,
                 offset_bases=None, block_bases=None) -> None:
        what = "tlx.padded_shared_layout_encoding"
        _single_cta(what, numCTAsPerCGA, numCTASplit)
        self.intervals, self.paddings = _ints(intervals, what), _ints(paddings, what)
        self.order, self.shape = _ints(order, f"{what}: order"), _ints(shape, f"{what}: shape")
        pow2 = lambda n: n > 0 and n & (n - 1) == 0  # noqa: E731
        if len(self.intervals) != len(self.paddings) or not self.intervals:
            raise LayoutError(f"{what}: intervals and paddings must be non-empty and of one length")
        if not all(map(pow2, self.intervals + self.paddings)) or len(set(self.intervals)) != len(self.intervals):
            raise LayoutError(f"{what}: intervals and paddings must be distinct powers of two")
        if offset_bases is None:  # the identity mapping for shape/order
            if not all(map(pow2, self.shape)):
                raise LayoutError(f"{what}: an identity mapping needs power-of-two dims, got {self.shape}")
            rank = len(self.shape)
            offset_bases = [[1 << b if i == d else 0 for i in range(rank)] for d in self.order
                            for b in range(self.shape[d].bit_length() - 1)]
        self.offset_bases = [_ints(b, f"{what}: offset_bases") for b in offset_bases]
        self.block_bases = [_ints(b, f"{what}: block_bases") for b in (block_bases or [])]

    @staticmethod
    @constexpr_function
    def with_identity_for(interval_padding_pairs, shape, order=None) -> "padded_shared_layout_encoding":
        order = list(reversed(range(len(shape)))) if order is None else order
        return padded_shared_layout_encoding([p[0] for p in interval_padding_pairs],
                                             [p[1] for p in interval_padding_pairs], order, shape)

    @staticmethod
    @constexpr_function
    def with_bases(interval_padding_pairs, offset_bases, shape, block_bases=None) -> "padded_shared_layout_encoding":
        return padded_shared_layout_encoding([p[0] for p in interval_padding_pairs],
                                             [p[1] for p in interval_padding_pairs], list(reversed(range(len(shape)))),
                                             shape, offset_bases=offset_bases, block_bases=block_bases)

    def resolve(self, shape, dtype):
        if list(shape) != self.shape:
            raise LayoutError(f"tlx.padded_shared_layout_encoding: made for shape {self.shape}, used for {list(shape)}")
        return self

    def to_ir(self, g, shape=None, element_type=None):
        return g.get_padded_shared_layout(self.intervals, self.paddings, self.offset_bases, self.block_bases,
                                          self.shape)


class shared_linear_layout_encoding(shared_layout_encoding):
    """``#ttg.shared_linear`` (Gluon ``SharedLinearLayout``): one tensor coordinate per shared-offset bit."""

    def __init__(self, offset_bases, block_bases=None, alignment=16) -> None:
        what = "tlx.shared_linear_layout_encoding"
        self.offset_bases = [_ints(b, f"{what}: offset_bases") for b in offset_bases]
        self.block_bases = [_ints(b, f"{what}: block_bases") for b in (block_bases or [])]
        (self.alignment, ) = _ints([alignment], f"{what}: alignment")
        if not self.offset_bases or len({len(b) for b in self.offset_bases + self.block_bases}) != 1:
            raise LayoutError(f"{what}: offset_bases must be non-empty vectors of one rank")
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise LayoutError(f"{what}: alignment must be a positive power of two, got {self.alignment}")

    def make_permute(self, dims) -> "shared_linear_layout_encoding":
        return self  # a physical image: the view's memdesc_trans describes the permutation

    def resolve(self, shape, dtype):
        # a linear layout XORs its bases (swizzles set bits that lower bases set too): a dimension spans the
        # power of two above every bit some basis sets
        covered = [1 << functools.reduce(operator.or_, (b[d] for b in self.offset_bases), 0).bit_length()
                   for d in range(len(self.offset_bases[0]))]
        if covered != list(shape):
            raise LayoutError(f"tlx.shared_linear_layout_encoding: its bases span {covered}, the buffer is {list(shape)}")
        return self

    def to_ir(self, g, shape=None, element_type=None):
        return g.get_shared_linear_layout(self.offset_bases, self.block_bases, self.alignment)


class amd_mfma_layout(layout_encoding):
    """``#ttg.amd_mfma`` register layout (Gluon ``AMDMFMALayout``); versions 3 = gfx942, 4 = gfx950."""

    def __init__(self, version, instr_shape, transposed, warps_per_cta, element_bitwidth=32, tiles_per_warp=None,
                 cga_layout=None) -> None:
        what = "tlx.amd_mfma_layout"
        (self.version, ) = _ints([version], what)
        self.instr_shape = _ints(instr_shape, f"{what}: instr_shape")
        self.transposed = bool(unwrap_if_constexpr(transposed))
        self.warps_per_cta = _ints(warps_per_cta, f"{what}: warps_per_cta")
        (self.element_bitwidth, ) = _ints([element_bitwidth], what)
        self.tiles_per_warp = _ints(tiles_per_warp or [1] * len(self.warps_per_cta), f"{what}: tiles_per_warp")
        self.cga_layout = [_ints(b, f"{what}: cga_layout") for b in (cga_layout or [])]
        if not 1 <= self.version <= 4 or len(self.instr_shape) != 3 or self.element_bitwidth not in (32, 64) \
                or len(self.tiles_per_warp) != len(self.warps_per_cta):
            raise LayoutError(f"{what}: version 1-4, instr_shape (M, N, K), element_bitwidth 32/64 and one "
                             f"tiles_per_warp per warp dim, got {self!r}")

    def to_ir(self, g, shape=None, element_type=None):
        return g.get_amd_mfma_layout(self.version, self.warps_per_cta, self.instr_shape, self.transposed,
                                     self.cga_layout, self.tiles_per_warp, self.element_bitwidth)


class dot_operand_layout(layout_encoding):
    """``#ttg.dot_op<{opIdx, parent, kWidth}>`` register layout (Gluon ``DotOperandLayout``)."""

    def __init__(self, operand_index, parent, k_width=8) -> None:
        (self.operand_index, self.k_width) = _ints((operand_index, k_width), "tlx.dot_operand_layout")
        self.parent = unwrap_if_constexpr(parent)
        if self.operand_index not in (0, 1) or self.k_width <= 0:
            raise LayoutError(f"tlx.dot_operand_layout: operand_index must be 0 or 1 and k_width > 0, got {self!r}")
        if not hasattr(self.parent, "to_ir"):
            raise LayoutError(f"tlx.dot_operand_layout: parent must be a TLX register layout, got {self.parent!r}")

    def to_ir(self, g, shape=None, element_type=None):
        return g.get_dot_operand_layout(self.operand_index, self.parent.to_ir(g), self.k_width)


def _flat_bases(modes, strides) -> list[int]:
    """Per-bit flat offsets of CuTe modes: a mode (2**k, s) gives s, 2s, ..., 2**(k-1) s."""
    out = []
    for extent, stride in zip(_ints(modes, "tlx.layout: shape"), _ints(strides, "tlx.layout: stride")):
        if extent <= 0 or extent & (extent - 1):
            raise LayoutError(f"tlx.layout: mode extent {extent} must be a power of two")
        out.extend(stride << b for b in range(extent.bit_length() - 1))
    return out


class layout(layout_encoding):
    """A CuTe thread-value register layout: ``shape=(thread_shape, value_shape)`` and
    ``stride=(thread_stride, value_stride)`` as flat row-major offsets into the tile; lowered to
    ``#ttg.linear``. ``tlx.layout(tlx.swizzled_layout(...))`` is that shared layout instead."""

    def __new__(cls, spec=None, *, shape=None, stride=None):
        if isinstance(spec, swizzled_layout):  # a shared layout; the unswizzled one needs no shape
            return spec if spec.bits else spec._to_encoding()
        return super().__new__(cls)

    def __init__(self, spec=None, *, shape=None, stride=None) -> None:
        if shape is None or stride is None or len(shape) != 2 or len(stride) != 2:
            raise LayoutError("tlx.layout takes a swizzled_layout(...), or shape=(thread, value) and "
                            "stride=(thread, value)")
        self.thread_shape, self.value_shape = (_ints(s, "tlx.layout: shape") for s in shape)
        self.thread_stride, self.value_stride = (_ints(s, "tlx.layout: stride") for s in stride)

    def to_ir(self, g, shape=None, element_type=None, warp_size: int = 32):
        if shape is None:
            raise LayoutError("tlx.layout needs the tensor shape it lays out")
        shape = _ints(shape, "tlx.layout: tensor shape")

        def coord(flat: int) -> list[int]:
            out = []
            for d in range(len(shape)):
                inner = math.prod(shape[d + 1:])
                out.append(flat // inner % shape[d])
            return out

        threads = _flat_bases(self.thread_shape, self.thread_stride)
        lane_bits = warp_size.bit_length() - 1
        regs = [coord(f) for f in _flat_bases(self.value_shape, self.value_stride)]
        return g.get_distributed_linear_layout(regs, [coord(f) for f in threads[:lane_bits]],
                                               [coord(f) for f in threads[lane_bits:]], [], shape)


def check_threads(lay: layout_encoding, num_warps: int, warp_size: int) -> None:
    """A register layout must place its tensor on exactly the kernel's warps (and lanes)."""
    if isinstance(lay, dot_operand_layout):
        lay = lay.parent
    if isinstance(lay, amd_mfma_layout) and warp_size != 64:
        raise LayoutError(f"an MFMA layout is for AMD CDNA wavefronts of 64 lanes; this target has {warp_size}")
    if isinstance(lay, amd_mfma_layout) and math.prod(lay.warps_per_cta) != num_warps:
        raise LayoutError(f"the layout has {math.prod(lay.warps_per_cta)} warps per CTA ({lay.warps_per_cta}), "
                          f"the kernel has num_warps={num_warps}")
    if isinstance(lay, layout) and math.prod(lay.thread_shape) != num_warps * warp_size:
        raise LayoutError(f"the layout's thread mode has {math.prod(lay.thread_shape)} threads, the kernel has "
                          f"{num_warps} warps of {warp_size}")


class storage_kind(enum.Enum):
    smem = "smem"
    tmem = "tmem"
    smemCluster = "smemCluster"
