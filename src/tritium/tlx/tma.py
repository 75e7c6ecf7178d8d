"""TMA: tensor descriptors (host-made, made in the kernel, or in descriptor slots) and bulk tensor copies.

A ``!tt.tensordesc`` cannot be a placeholder operand (the inline-asm verifier accepts only ints,
floats and pointers). So a Triton descriptor (``tl.tensor_descriptor_base``: a host
``TensorDescriptor`` argument, ``tl.make_tensor_descriptor`` or ``tlx.make_tensor_descriptor``, used in
the kernel or in any ``@triton.jit`` helper) reaches its placeholder through a *carrier*: a
``tt.descriptor_store`` of zeros to the descriptor, emitted right before the placeholder. It is
side-effecting, so no TTIR pass drops, merges or moves it, and helpers are inlined with it. The
lowering reads the descriptor's SSA name and type off the carrier and deletes the carrier.
Descriptors that live in descriptor slots (``allocate_tensor_descriptor``) are TLX values named by
placeholder id, like buffers.

Every TMA payload carries the descriptor type with the shared encoding of the buffer it fills
(``desc_type``). The lowering gives each descriptor that type at its definition (kernel signature,
``tt.make_tensor_descriptor``, slot writes and reinterprets): the tensor map is built from it, by the
launcher for a host descriptor (``metadata.tensordesc_meta``) or by ``tensormap_create`` on the device,
so it must be the buffer's. A descriptor used with two different buffer encodings is an error.
"""
from __future__ import annotations

import math
from typing import Any, List, Sequence, Tuple

import triton.language as tl
from triton.language.core import base_type, builtin

from . import args, barriers, layouts, mem, misc
from .args import ConstInt, Pred, Scalar
from .cluster_launch import cluster_ctas, ptx_link
from .core import check_target, memdesc_type, predicate
from .emit import emit, tlx_builtin
from .mem import _buffer
from .types import buffered_tensor, method_op, tensor_descriptor, tensor_descriptor_type, tlx_value
from .triton_compat import compile_options, ir, type_builder, unwrap_if_constexpr

#: Bytes of one CUtensorMap, and its required alignment (``allocate_tensor_descriptor``).
DESCRIPTOR_SIZE = 128
EVICTION_POLICIES = ("", "evict_first", "evict_last")
#: ``tlx_kind`` (tlx/args.py) of ``allocate_tensor_descriptor`` results.
DESCRIPTOR_SLOTS = "tensor descriptor slots"
#: ``store_reduce`` kinds, spelled as ``ttng.async_tma_reduce`` spells them.
STORE_REDUCE = ("add", "min", "max", "and", "or", "xor")


def _desc_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: Any) -> str:
    g = type_builder(_semantic)
    block = g.get_block_ty(dtype.to_ir(g), list(shape))
    return str(g.get_tensor_descriptor_layout_type(block, dtype.is_int_signed(), layout.to_ir(g)))


def _default_desc_type(_semantic: Any, dtype: tl.dtype, block_shape: Sequence[int]) -> str:
    """The descriptor type of a block nobody loads into a buffer: the planner's default encoding."""
    return _desc_type(_semantic, dtype, block_shape, layouts.shared_layout(block_shape, dtype,
                                                                          compile_options(_semantic).arch))


# --------------------------------------------------------------------------------------------
# Argument checks, shared with tlx/interpreter.py (see tlx/args.py)
# --------------------------------------------------------------------------------------------
def check_descriptor(desc: Any, op: str, arg: str = "desc") -> Any:
    desc = args.unwrap(desc)
    if args.kind_of(desc) != args.DESCRIPTOR:
        raise TypeError(f"tlx.{op}: {arg} must be a tensor descriptor, got {args.kind_of(desc)}")
    return desc


def check_offsets(offsets: Any, rank: int, op: str) -> list[Any]:
    offsets = args.unwrap(offsets)
    if not isinstance(offsets, (list, tuple, tl.tuple)):
        raise TypeError(f"tlx.{op}: offsets must be a list of integer scalars, got {type(offsets).__name__}")
    offsets = list(offsets)
    if len(offsets) != rank:
        raise ValueError(f"tlx.{op}: {len(offsets)} offsets for a rank-{rank} block")
    return [args.integer_scalar(o, op, "offsets") for o in offsets]


def _check_tile(desc: Any, buf: Any, offsets: Any, op: str, arg: str) -> None:
    """``desc`` is a descriptor whose block is exactly the one buffer ``buf``, addressed by ``offsets``."""
    buf = args.buffer(buf, op, one=True)
    desc = check_descriptor(desc, op)
    shape = args.dims(desc.block_shape)
    if shape != list(buf.shape) or desc.dtype != buf.dtype:
        raise ValueError(f"tlx.{op}: descriptor block {desc.dtype}{shape} does not match {arg} buffer "
                         f"{buf.dtype}{list(buf.shape)}")
    check_offsets(offsets, len(shape), op)


def check_descriptor_load(desc: Any, result: Any, offsets: Any, barrier: Any, pred: Any, cache_modifier: Any,
                          eviction_policy: Any, multicast_targets: Any, two_ctas: Any, ctas: int = 1) -> str:
    """The arguments of ``async_descriptor_load`` in a kernel of clusters of ``ctas``; returns its eviction
    policy."""
    op = "async_descriptor_load"
    cache = args.choice(cache_modifier, ("", ".ca", ".cg", "ca", "cg"), op, "cache_modifier")
    if cache:
        raise NotImplementedError(f"tlx.{op}: cache_modifier={cache!r} has no PTX form on a TMA load "
                                  "(cp.async.bulk.tensor has no cache operator, only an L2 policy: use "
                                  "eviction_policy); stock Triton rejects it too ('cache modifiers not supported yet')")
    evict = args.choice(eviction_policy, EVICTION_POLICIES, op, "eviction_policy")
    targets = args.unwrap(multicast_targets)
    if targets is not None and len(targets):
        if ctas == 1:
            raise ValueError(f"tlx.{op}: multicast_targets names CTAs of a cluster, but {args.ONE_CTA}")
        for i, target in enumerate(targets):
            args.check_remote_rank(target, op, f"multicast_targets[{i}]", ctas)
    if args.unwrap(two_ctas):
        raise NotImplementedError(f"tlx.{op}: two_ctas=True is the Blackwell 2-CTA mode (.cta_group::2); "
                                  "it needs sm_100 clusters, which stock Triton TLX does not have")
    args.buffer(result, op, one=True)
    args.barrier(barrier, op)
    _check_tile(desc, result, offsets, op, "result")
    args.scalar_pred(pred, op)
    return evict


def check_descriptor_store(desc: Any, source: Any, offsets: Any, eviction_policy: Any,
                           store_reduce: Any) -> tuple[str, str]:
    """``(eviction policy, store_reduce)`` of ``async_descriptor_store``."""
    op = "async_descriptor_store"
    evict = args.choice(eviction_policy, EVICTION_POLICIES, op, "eviction_policy")
    reduce = args.choice(store_reduce, ("", *STORE_REDUCE), op, "store_reduce")
    _check_tile(desc, source, offsets, op, "source")
    return evict, reduce


def check_prefetch_tensor(desc: Any, offsets: Any, pred: Any, eviction_policy: Any) -> str:
    op = "async_descriptor_prefetch_tensor"
    evict = args.choice(eviction_policy, EVICTION_POLICIES, op, "eviction_policy")
    desc = check_descriptor(desc, op)
    check_offsets(offsets, len(desc.block_shape), op)
    args.scalar_pred(pred, op)
    return evict


def check_async_store(dst_global_ptr: Any, src_smem: Any, size: Any) -> int:
    """The bytes of the buffer ``async_store`` copies from, after checking ``size`` against them."""
    op = "async_store"
    args.scalar_pointer(dst_global_ptr, op, "dst_global_ptr")
    src = args.buffer(src_smem, op, one=True)
    nbytes = math.prod(src.shape) * src.dtype.primitive_bitwidth // 8
    size = args.integer_scalar(size, op, "size")
    if args.is_int(size) and (size <= 0 or size % 16 or size > nbytes):
        raise ValueError(f"tlx.{op}: size={size} must be a positive multiple of 16 of at most the buffer's "
                         f"{nbytes} bytes")
    return nbytes


def check_slot_index(index: int, num: int) -> None:
    if not 0 <= index < num:
        raise IndexError(f"tlx.tensor_descriptor_ptr: slot {index} out of range for {num} descriptors")


def check_slots(desc_ptr: Any, op: str) -> Any:
    desc_ptr = args.unwrap(desc_ptr)
    if args.kind_of(desc_ptr) != DESCRIPTOR_SLOTS:
        raise TypeError(f"tlx.{op}: desc_ptr must come from tlx.allocate_tensor_descriptor, got "
                        f"{args.describe(desc_ptr)}")
    return desc_ptr


def check_make_tensor_descriptor(desc_ptr: Any, base: Any, shape: Any, strides: Any, block_shape: Any,
                                 padding_option: Any) -> tuple[list[int], str]:
    """``(block shape, padding)`` of ``make_tensor_descriptor``; into a slot (``desc_ptr``) the TMA rules
    ``tensormap_create`` has are checked too (``tt.make_tensor_descriptor`` checks its own)."""
    op = "make_tensor_descriptor"
    padding = args.unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise ValueError(f"tlx.{op}: padding_option must be 'zero' or 'nan', got {padding!r}")
    base = args.scalar_pointer(base, op, "base")
    block = _block_shape(block_shape, op)
    shape, strides = list(args.unwrap(shape)), list(args.unwrap(strides))
    if not len(shape) == len(strides) == len(block):
        raise ValueError(f"tlx.{op}: shape, strides and block_shape need the same rank, got {len(shape)}, "
                         f"{len(strides)} and {len(block)}")
    if args.unwrap(desc_ptr) is None:
        return block, padding
    check_slots(desc_ptr, op)
    dtype = base.dtype.element_ty
    if dtype.is_int() and padding == "nan":
        raise ValueError(f"tlx.{op}: padding_option='nan' needs a floating-point tensor, got {dtype}")
    if block[-1] * dtype.primitive_bitwidth // 8 < 16:
        raise ValueError(f"tlx.{op}: the last block dimension must span at least 16 bytes, got {block[-1]} x {dtype}")
    if args.unwrap(strides[-1]) != 1:
        raise ValueError(f"tlx.{op}: the last stride must be the constant 1, got {args.describe(strides[-1])}")
    if dtype.primitive_bitwidth not in (8, 16, 32, 64):
        raise TypeError(f"tlx.{op}: TMA cannot copy {dtype}")
    return block, padding


def check_reinterpret_tensor_descriptor(desc_ptr: Any, block_shape: Any, dtype: Any) -> tuple[list[int], tl.dtype]:
    op = "reinterpret_tensor_descriptor"
    check_slots(desc_ptr, op)
    block = _block_shape(block_shape, op)
    dtype = args.unwrap(dtype)
    if not isinstance(dtype, tl.dtype):
        raise TypeError(f"tlx.{op}: dtype must be a Triton dtype, got {dtype!r}")
    return block, dtype


def _descriptor(_semantic: Any, desc: Any, buf: buffered_tensor) -> dict:
    """Payload naming ``desc`` (checked: its block is exactly ``buf``); see the module docstring."""
    desc = unwrap_if_constexpr(desc)
    want = _desc_type(_semantic, buf.dtype, buf.shape, buf.layout)
    if isinstance(desc, tensor_descriptor):
        return {"desc_id": desc.type.id, "desc_type": want, "_desc": desc}
    return {"carried": True, "desc_type": want, "_desc": desc}


def _descriptor_only(_semantic: Any, desc: Any, op: str, arg: str = "desc") -> dict:
    """Payload naming ``desc`` for ops without a buffer (prefetches), which take any encoding."""
    desc = check_descriptor(desc, op, arg)
    if isinstance(desc, tensor_descriptor):
        return {"desc_id": desc.type.id, "_desc": desc}
    return {"carried": True, "_desc": desc}


def _emit_tma(_semantic: Any, op: str, ref: dict, operands: Sequence[tl.tensor], **attrs: Any) -> None:
    """Emit the placeholder of a TMA op, right after its descriptor's carrier when it needs one."""
    ref = dict(ref)
    desc = ref.pop("_desc")
    if ref.get("carried"):
        b = _semantic.builder
        block = desc.block_type.to_ir(b)
        zeros = b.create_splat(block, b.get_null_value(desc.dtype.to_ir(b)))
        b.create_descriptor_store(desc.handle, zeros, [b.get_int32(0)] * len(desc.block_shape))
    emit(_semantic, op, operands=operands, **ref, **attrs)


def _offsets(_semantic: Any, offsets: Any) -> list[tl.tensor]:
    """The (checked: :func:`check_offsets`) offsets as i32 scalars."""
    out = [_semantic.to_tensor(o) for o in unwrap_if_constexpr(offsets)]
    return [_semantic.cast(o, tl.int32) if o.dtype != tl.int32 else o for o in out]


def _l2_hint(evict: str) -> dict:
    """Payload of an L2 eviction priority. Stock Triton's TMA lowering rejects the hint ("eviction policy
    not supported yet"), so the op is marked and tlx/tma_llvm.py adds ``.L2::cache_hint`` to its PTX."""
    return {"evict": evict} if evict in ("evict_first", "evict_last") else {}


@tlx_builtin
def async_descriptor_load(desc: tensor_descriptor | tl.tensor_descriptor, result: buffered_tensor,
                          offsets: Sequence[Scalar], barrier: buffered_tensor, pred: Pred = None,
                          cache_modifier: str = "", eviction_policy: str = "", multicast_targets: Sequence[Any] = (),
                          two_ctas: bool = False, _semantic: Any = None) -> None:
    """TMA-load the tile of ``desc`` at ``offsets`` into ``result``; its bytes count on ``barrier``.

    Args:
        desc: a TMA descriptor (a kernel argument, or made on the device).
        result: the shared buffer of the tile's shape that receives it.
        offsets: the tile's coordinates, one per dimension, in elements.
        barrier: the mbarrier that completes when the bytes landed (arm it with ``barrier_expect_bytes``).
        pred: skip the load where false.
        cache_modifier: only "" (a TMA load has no cache operator; use eviction_policy).
        eviction_policy: an L2 eviction hint (``"evict_first"``, ``"evict_last"``, ...).
        multicast_targets: ranks of the cluster's CTAs (``ctas_per_cga``) that receive the tile, each at
            ``result``'s place in its shared memory, its bytes counted on its copy of ``barrier``.
        two_ctas: Blackwell's 2-CTA mode; refused.
    """
    op = "async_descriptor_load"
    check_target(_semantic, op, 90)
    ctas = cluster_ctas(_semantic)
    hint = _l2_hint(check_descriptor_load(desc, result, offsets, barrier, pred, cache_modifier, eviction_policy,
                                          multicast_targets, two_ctas, ctas))
    targets = unwrap_if_constexpr(multicast_targets)
    if targets is not None and len(targets):
        hint["multicast"] = ptx_link(_semantic, _cta_mask(_semantic, targets))
    dst, bar = _buffer(result, op), unwrap_if_constexpr(barrier)
    ref = _descriptor(_semantic, desc, dst)
    operands = _offsets(_semantic, offsets) + [predicate(_semantic, pred)]
    _emit_tma(_semantic, "tma_load", ref, operands, dst=dst.type.id, bar=bar.type.id, **hint)


def _cta_mask(_semantic: Any, targets: Sequence[Any]) -> tl.tensor:
    """The i32 bit mask of the ranks ``targets`` (ints or i32 scalars), PTX's ``ctaMask`` of a multicast."""
    mask = _semantic.to_tensor(0)
    for target in targets:
        rank = _semantic.cast(_semantic.to_tensor(unwrap_if_constexpr(target)), tl.int32)
        mask = _semantic.or_(mask, _semantic.shl(_semantic.to_tensor(1), rank))
    return mask


@tlx_builtin
def async_descriptor_store(desc: tensor_descriptor | tl.tensor_descriptor, source: buffered_tensor,
                           offsets: Sequence[Scalar], eviction_policy: str = "", store_reduce: str = "",
                           _semantic: Any = None) -> None:
    """TMA-store buffer ``source`` to the tile of ``desc`` at ``offsets``, or reduce into it
    (``cp.reduce.async.bulk.tensor``); wait with ``async_descriptor_store_wait`` before reusing ``source``.

    Args:
        desc: a TMA descriptor.
        source: the shared buffer holding the tile (written, then ``fence_async_shared``).
        offsets: the tile's coordinates, one per dimension, in elements.
        eviction_policy: an L2 eviction hint.
        store_reduce: ``""`` stores; ``"add"``, ``"min"``, ``"max"``, ``"and"``, ``"or"``, ``"xor"`` reduce.
    """
    op = "async_descriptor_store"
    check_target(_semantic, op, 90)
    evict, reduce = check_descriptor_store(desc, source, offsets, eviction_policy, store_reduce)
    src = _buffer(source, op)
    ref = _descriptor(_semantic, desc, src)
    _emit_tma(_semantic, "tma_reduce" if reduce else "tma_store", ref, _offsets(_semantic, offsets), src=src.type.id,
              **({"kind": reduce} if reduce else {}), **_l2_hint(evict))


@tlx_builtin
def async_descriptor_prefetch_tensor(desc: tensor_descriptor | tl.tensor_descriptor, offsets: Sequence[Scalar],
                                     pred: Pred = None, eviction_policy: str = "", _semantic: Any = None) -> None:
    """Hint TMA to bring the tile of ``desc`` at ``offsets`` into L2 (``cp.async.bulk.prefetch.tensor``).

    Args:
        desc: a TMA descriptor.
        offsets: the tile's coordinates, in elements.
        pred: skip the prefetch where false.
        eviction_policy: an L2 eviction hint.
    """
    op = "async_descriptor_prefetch_tensor"
    check_target(_semantic, op, 90)
    hint = _l2_hint(check_prefetch_tensor(desc, offsets, pred, eviction_policy))
    ref = _descriptor_only(_semantic, desc, op)
    operands = _offsets(_semantic, offsets) + [predicate(_semantic, pred)]
    _emit_tma(_semantic, "tma_prefetch", ref, operands, **hint)


def prefetch_tensormap(desc: Any, _semantic: Any) -> None:
    """``prefetch.tensormap`` of ``desc``'s tensor map: ``tlx.prefetch(desc, tensormap=True)``."""
    check_target(_semantic, "prefetch", 90)
    ref = _descriptor_only(_semantic, desc, "prefetch", "pointer (with tensormap=True)")
    _emit_tma(_semantic, "tma_prefetch", ref, [predicate(_semantic, None)])


#: A bulk copy is one TMA box here: at most 256 x 256 bytes, rows of at least 16 bytes.
_MAX_BOX = 256


def bulk_box(_semantic: Any, nbytes: int, op: str) -> tuple[str, str]:
    """(descriptor type, int8 buffer view type) of the one TMA box a bulk copy of an ``nbytes`` buffer is
    emitted as (tlx/tma_llvm.py rewrites it into the bulk copy); raises if no box holds it."""
    cols = next((c for c in range(min(nbytes, _MAX_BOX), 15, -16) if nbytes % c == 0), None)
    if nbytes % 16 or cols is None or nbytes // cols > _MAX_BOX:
        raise ValueError(f"tlx.{op}: a buffer of {nbytes} bytes is not one TMA box (a multiple of 16 bytes, at most "
                         f"{_MAX_BOX * _MAX_BOX}); copy it in pieces with tlx.local_slice")
    box = (nbytes // cols, cols)
    flat = layouts.NVMMASharedLayout(0, 8, 2)
    return _desc_type(_semantic, tl.int8, box, flat), memdesc_type(_semantic, tl.int8, box, flat, box)


@tlx_builtin
def async_store(dst_global_ptr: tl.tensor, src_smem: buffered_tensor, size: ConstInt, _semantic: Any = None) -> None:
    """Copy ``size`` bytes of ``src_smem`` to ``dst_global_ptr`` (``cp.async.bulk.global.shared::cta``), in the
    bulk group that ``async_descriptor_store_wait`` waits on. ``size`` and both addresses: multiples of 16.

    Stock Triton has no such op. It is emitted as a TMA store of the buffer's bytes seen as one box,
    through a descriptor that is only the destination pointer, and tlx/tma_llvm.py rewrites that store's
    PTX into the bulk copy (so it is ordered like a TMA store: the same proxy fence and bulk group).

    Args:
        dst_global_ptr: the destination, 16-byte aligned.
        src_smem: the shared buffer copied from.
        size: bytes, a multiple of 16.
    """
    op = "async_store"
    check_target(_semantic, op, 90)
    nbytes = check_async_store(dst_global_ptr, src_smem, size)
    dst, src = unwrap_if_constexpr(dst_global_ptr), _buffer(src_smem, op)
    size = _semantic.to_tensor(unwrap_if_constexpr(size))
    size = _semantic.cast(size, tl.int32) if size.dtype != tl.int32 else size
    desc, view = bulk_box(_semantic, nbytes, op)
    emit(_semantic, "bulk_store", operands=[dst, size], src=src.type.id, desc=desc, view=view)


@tlx_builtin
def async_descriptor_store_wait(pendings: ConstInt, _semantic: Any = None) -> None:
    """Wait until at most ``pendings`` TMA stores still read their shared-memory source.

    Args:
        pendings: stores that may still be reading (0 waits for all).
    """
    check_target(_semantic, "async_descriptor_store_wait", 90)
    pendings = args.compile_time_int(pendings, "async_descriptor_store_wait", "pendings", 0)
    emit(_semantic, "tma_store_wait", pendings=pendings)


# --------------------------------------------------------------------------------------------
# Descriptor slots in global memory
# --------------------------------------------------------------------------------------------
class tensor_descriptor_ptr_type(base_type):
    """Pointer to ``num`` descriptor slots of ``size`` bytes (``allocate_tensor_descriptor``)."""

    def __init__(self, num: int, size: int = DESCRIPTOR_SIZE) -> None:
        self.num = num
        self.size = size

    def _unflatten_ir(self, handles: List[ir.value], cursor: int) -> Tuple["tensor_descriptor_ptr", int]:
        return tensor_descriptor_ptr(handles[cursor], self.num, self.size), cursor + 1

    def _flatten_ir_types(self, builder: ir.builder, out: List[ir.type]) -> None:
        out.append(tl.pointer_type(tl.int8).to_ir(builder))

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and (self.num, self.size) == (other.num, other.size)

    def __str__(self) -> str:
        return f"tensor_descriptor_ptr<{self.num} x {self.size}B>"

    def mangle(self) -> str:
        return f"TLXDP{self.num}_{self.size}P"


class tensor_descriptor_ptr(tlx_value):
    """A pointer into descriptor slots; ``ptr[i]`` points at slot ``i`` (``i * 128`` bytes further)."""
    tlx_kind = DESCRIPTOR_SLOTS

    def __init__(self, handle: ir.value, num: int, descriptor_size: int = DESCRIPTOR_SIZE) -> None:
        self.handle = handle
        self.type = tensor_descriptor_ptr_type(num, descriptor_size)

    @property
    def num(self) -> int:
        return self.type.num

    @property
    def descriptor_size(self) -> int:
        return self.type.size

    def _flatten_ir(self, handles: List[ir.value]) -> None:
        handles.append(self.handle)

    @builtin
    def __getitem__(self, index: Any, _semantic: Any = None) -> "tensor_descriptor_ptr":
        index = args.integer_scalar(index, "tensor_descriptor_ptr", "the slot index")
        if isinstance(index, int):
            check_slot_index(index, self.num)
        index = _semantic.to_tensor(index)
        index = _semantic.cast(index, tl.int32) if index.dtype != tl.int32 else index
        b = _semantic.builder
        offset = b.create_mul(index.handle, b.get_int32(self.descriptor_size))
        return tensor_descriptor_ptr(b.create_addptr(self.handle, offset), self.num, self.descriptor_size)


@tlx_builtin
def allocate_tensor_descriptor(num: ConstInt, _semantic: Any = None) -> tensor_descriptor_ptr:
    """Global scratch for ``num`` descriptors (128 bytes each, 128-byte aligned; needs ``triton.set_allocator``).

    Args:
        num: how many descriptor slots.
    """
    check_target(_semantic, "allocate_tensor_descriptor", 90)
    num = args.compile_time_int(num, "allocate_tensor_descriptor", "num")
    _, handle = emit(_semantic, "alloc_desc", scalar=tl.pointer_type(tl.int8), nbytes=num * DESCRIPTOR_SIZE,
                     alignment=DESCRIPTOR_SIZE)
    return tensor_descriptor_ptr(handle, num)


def _block_shape(block_shape: Any, op: str) -> list[int]:
    shape = [args.unwrap(b) for b in args.unwrap(block_shape)]
    if not 1 <= len(shape) <= 5 or any(not args.is_int(b) or b < 1 for b in shape):
        raise ValueError(f"tlx.{op}: block_shape must be 1 to 5 positive compile-time ints, got {shape}")
    return shape


@tlx_builtin
def make_tensor_descriptor(desc_ptr: tensor_descriptor_ptr | None, base: tl.tensor, shape: Sequence[Scalar],
                           strides: Sequence[Scalar], block_shape: Sequence[ConstInt], padding_option: str = "zero",
                           _semantic: Any = None) -> Any:
    """A TMA descriptor made on the device: in compiler-managed global scratch (``desc_ptr=None``, the
    stock ``tt.make_tensor_descriptor``), or written into the slot ``desc_ptr`` (``tensormap_create``),
    where ``reinterpret_tensor_descriptor`` reads it back. Both need ``triton.set_allocator``.

    Args:
        desc_ptr: the slot to write (``allocate_tensor_descriptor``), or None for compiler-managed scratch.
        base: the tensor's base pointer, 16-byte aligned.
        shape: the tensor's shape.
        strides: its strides, in elements (the last 1).
        block_shape: the tile a TMA op moves.
        padding_option: ``"zero"`` (or ``"nan"``) for out-of-bounds elements.
    """
    op = "make_tensor_descriptor"
    check_target(_semantic, op, 90)
    block, padding = check_make_tensor_descriptor(desc_ptr, base, shape, strides, block_shape, padding_option)
    base = unwrap_if_constexpr(base)
    shape, strides = list(unwrap_if_constexpr(shape)), list(unwrap_if_constexpr(strides))
    if unwrap_if_constexpr(desc_ptr) is None:
        return _semantic.make_tensor_descriptor(base, shape, strides, block, padding)
    slot, dtype = unwrap_if_constexpr(desc_ptr), base.dtype.element_ty
    operands = ([tl.tensor(slot.handle, tl.pointer_type(tl.int8)), base]
                + [_semantic.make_scalar(unwrap_if_constexpr(s), tl.int32) for s in shape]
                + [_semantic.make_scalar(unwrap_if_constexpr(s), tl.int64) for s in strides])
    pid, handle = emit(_semantic, "make_desc_slot", operands=operands, rank=len(block), fill=int(padding == "nan"),
                       default=_default_desc_type(_semantic, dtype, block))
    return tensor_descriptor(handle, tensor_descriptor_type(tl.block_type(dtype, block), pid, "slot"))


@tlx_builtin
def reinterpret_tensor_descriptor(desc_ptr: tensor_descriptor_ptr, block_shape: Sequence[ConstInt], dtype: tl.dtype,
                                  _semantic: Any = None) -> tensor_descriptor:
    """The descriptor in slot ``desc_ptr`` (written by ``make_tensor_descriptor(desc_ptr, ...)``) for
    TLX TMA ops, seen as a ``dtype`` tensor of ``block_shape`` blocks.

    Args:
        desc_ptr: the slot ``make_tensor_descriptor`` wrote.
        block_shape: the tile a TMA op moves.
        dtype: the element dtype.
    """
    op = "reinterpret_tensor_descriptor"
    check_target(_semantic, op, 90)
    block, dtype = check_reinterpret_tensor_descriptor(desc_ptr, block_shape, dtype)
    slot = unwrap_if_constexpr(desc_ptr)
    pid, handle = emit(_semantic, "reinterpret_desc", operands=[tl.tensor(slot.handle, tl.pointer_type(tl.int8))],
                       default=_default_desc_type(_semantic, dtype, block))
    return tensor_descriptor(handle, tensor_descriptor_type(tl.block_type(dtype, block), pid, "slot"))


def _staging_buffer(desc: tensor_descriptor, _semantic: Any) -> buffered_tensor:
    """A one-block shared buffer in the NVMMA layout TMA copies need (of any rank, 1-D ones too)."""
    shape = tuple(desc.block_shape)
    layout = layouts.nv_mma_shared_layout_encoding(shape, list(reversed(range(len(shape)))), desc.dtype)
    return mem.local_view(mem.local_alloc(shape, desc.dtype, 1, layout=layout, _semantic=_semantic), 0,
                          _semantic=_semantic)


@method_op
def descriptor_load(desc: tensor_descriptor, offsets: Any, _semantic: Any = None) -> tl.tensor:
    """``desc.load(offsets)``: one block into registers, by a TMA load into a shared buffer of its own,
    completed on an mbarrier of its own and waited for."""
    buf = _staging_buffer(desc, _semantic)
    bar = mem.local_view(barriers.alloc_barriers(1, 1, _semantic=_semantic), 0, _semantic=_semantic)
    nbytes = desc.dtype.primitive_bitwidth // 8
    for dim in desc.block_shape:
        nbytes *= dim
    barriers.barrier_expect_bytes(bar, nbytes, _semantic=_semantic)
    async_descriptor_load(desc, buf, offsets, bar, _semantic=_semantic)
    barriers.barrier_wait(bar, 0, _semantic=_semantic)
    return mem.local_load(buf, _semantic=_semantic)


@method_op
def descriptor_store(desc: tensor_descriptor, offsets: Any, value: Any, _semantic: Any = None) -> None:
    """``desc.store(offsets, value)``: ``value`` (cast and broadcast to the block) through a shared buffer of
    its own, stored by TMA and waited for."""
    value = _semantic.cast(_semantic.to_tensor(value), desc.dtype)
    value = _semantic.broadcast_impl_shape(value, list(desc.block_shape))
    buf = _staging_buffer(desc, _semantic)
    mem.local_store(buf, value, _semantic=_semantic)
    misc.fence_async_shared(_semantic=_semantic)
    async_descriptor_store(desc, buf, offsets, _semantic=_semantic)
    async_descriptor_store_wait(0, _semantic=_semantic)
