"""TMA: tensor descriptors (host- or device-made) and bulk tensor copies completing on mbarriers.

A ``!tt.tensordesc`` cannot be a placeholder operand (the inline-asm verifier accepts only ints,
floats and pointers), so placeholders name descriptors instead: a host descriptor by its position
among the kernel's arguments, a device descriptor (``make_tensor_descriptor``, itself a placeholder)
by id. The payload also carries the descriptor type with the shared encoding of the buffer it
fills, which the lowering writes into the kernel signature: the launcher builds the host-side
tensor map from that encoding, so it must be the buffer's.
"""
from __future__ import annotations

from typing import Any, Sequence

import triton.language as tl
from triton.language.core import _unwrap_if_constexpr

from . import layouts
from . import barriers
from .barriers import check_target, predicate
from .emit import _code_generator, emit, tlx_builtin, types
from .mem import _buffer
from .types import buffered_tensor, tensor_descriptor, tensor_descriptor_type


def _desc_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: Any) -> str:
    g = types(_semantic)
    block = g.get_block_ty(dtype.to_ir(g), list(shape))
    return str(g.get_tensor_descriptor_layout_type(block, dtype.is_int_signed(), layout.to_ir(g)))


def _kernel_arg_index(_semantic: Any, handle: Any, op: str) -> int:
    gen = _code_generator(_semantic.builder)
    if gen.is_kernel:
        for i in range(gen.fn.get_num_args()):
            if gen.fn.args(i).id() == handle.id():
                return i
    raise ValueError(f"tlx.{op}: the descriptor must be a kernel argument (a host TensorDescriptor, used in the "
                     "kernel itself, not in a helper) or come from tlx.make_tensor_descriptor")


def _descriptor(_semantic: Any, desc: Any, buf: buffered_tensor, op: str) -> dict:
    """Payload naming ``desc``, after checking that its block is exactly ``buf``."""
    desc = _unwrap_if_constexpr(desc)
    if not isinstance(desc, (tensor_descriptor, tl.core.tensor_descriptor_base)):
        raise TypeError(f"tlx.{op}: desc must be a tensor descriptor, got {type(desc).__name__}")
    shape = [_unwrap_if_constexpr(s) for s in desc.block_shape]
    if tuple(shape) != tuple(buf.shape) or desc.dtype != buf.dtype:
        raise ValueError(f"tlx.{op}: descriptor block {desc.dtype}{shape} does not match buffer "
                         f"{buf.dtype}{list(buf.shape)}")
    want = _desc_type(_semantic, buf.dtype, buf.shape, buf.layout)
    if isinstance(desc, tensor_descriptor):
        if desc.type.desc != want:
            raise ValueError(f"tlx.{op}: the descriptor's shared layout differs from the buffer's ({buf.layout})")
        return {"desc_id": desc.type.id, "desc_type": want}
    return {"desc_arg": _kernel_arg_index(_semantic, desc.handle, op), "desc_type": want}


def _offsets(_semantic: Any, offsets: Any, rank: int, op: str) -> list[tl.tensor]:
    offsets = list(_unwrap_if_constexpr(offsets))
    if len(offsets) != rank:
        raise ValueError(f"tlx.{op}: {len(offsets)} offsets for a rank-{rank} block")
    out = []
    for o in offsets:
        o = _semantic.to_tensor(o)
        if o.type.is_block() or not o.dtype.is_int():
            raise TypeError(f"tlx.{op}: offsets must be integer scalars, got {o.type}")
        out.append(_semantic.cast(o, tl.int32) if o.dtype != tl.int32 else o)
    return out


def _no_option(value: Any, name: str, op: str) -> None:
    value = _unwrap_if_constexpr(value)
    if value not in ("", None, [], ()):
        raise NotImplementedError(f"tlx.{op}: {name}={value!r} is not supported by the compile path yet")


@tlx_builtin
def async_descriptor_load(desc, result, offsets, barrier, pred=None, cache_modifier="", eviction_policy="",
                          multicast_targets=[], _semantic=None) -> None:
    """TMA-load the tile of ``desc`` at ``offsets`` into ``result``; its bytes count on ``barrier``."""
    check_target(_semantic, "async_descriptor_load", 90)
    for value, name in ((cache_modifier, "cache_modifier"), (eviction_policy, "eviction_policy"),
                        (multicast_targets, "multicast_targets")):
        _no_option(value, name, "async_descriptor_load")
    dst = _buffer(result, "async_descriptor_load")
    if dst.type.num:
        raise TypeError("tlx.async_descriptor_load: pick one buffer with tlx.local_view first")
    bar = barriers.barrier(barrier, "async_descriptor_load")
    ref = _descriptor(_semantic, desc, dst, "async_descriptor_load")
    operands = _offsets(_semantic, offsets, len(dst.shape), "async_descriptor_load") + [predicate(_semantic, pred)]
    emit(_semantic, "tma_load", operands=operands, dst=dst.type.id, bar=bar.type.id, **ref)


@tlx_builtin
def async_descriptor_store(desc, source, offsets, eviction_policy="", store_reduce="", _semantic=None) -> None:
    """TMA-store buffer ``source`` to the tile of ``desc`` at ``offsets`` (wait with ``async_descriptor_store_wait``)."""
    check_target(_semantic, "async_descriptor_store", 90)
    _no_option(eviction_policy, "eviction_policy", "async_descriptor_store")
    _no_option(store_reduce, "store_reduce", "async_descriptor_store")
    src = _buffer(source, "async_descriptor_store")
    if src.type.num:
        raise TypeError("tlx.async_descriptor_store: pick one buffer with tlx.local_view first")
    ref = _descriptor(_semantic, desc, src, "async_descriptor_store")
    emit(_semantic, "tma_store", operands=_offsets(_semantic, offsets, len(src.shape), "async_descriptor_store"),
         src=src.type.id, **ref)


@tlx_builtin
def async_descriptor_store_wait(pendings, _semantic=None) -> None:
    """Wait until at most ``pendings`` TMA stores still read their shared-memory source."""
    check_target(_semantic, "async_descriptor_store_wait", 90)
    pendings = _unwrap_if_constexpr(pendings)
    if isinstance(pendings, bool) or not isinstance(pendings, int) or pendings < 0:
        raise ValueError(f"tlx.async_descriptor_store_wait: pendings must be a non-negative compile-time int, "
                         f"got {pendings!r}")
    emit(_semantic, "tma_store_wait", pendings=pendings)


@tlx_builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero",
                           _semantic=None) -> tensor_descriptor:
    """A TMA descriptor made on the device (needs ``triton.set_allocator`` for its global scratch)."""
    check_target(_semantic, "make_tensor_descriptor", 90)
    if _unwrap_if_constexpr(padding_option) != "zero":
        raise NotImplementedError("tlx.make_tensor_descriptor: only padding_option='zero' is supported")
    base = _unwrap_if_constexpr(base)
    if not isinstance(base, tl.tensor) or base.type.is_block() or not base.dtype.is_ptr():
        raise TypeError(f"tlx.make_tensor_descriptor: base must be a scalar pointer, got {getattr(base, 'type', base)}")
    dtype = base.dtype.element_ty
    block_shape = [_unwrap_if_constexpr(b) for b in _unwrap_if_constexpr(block_shape)]
    shape, strides = list(_unwrap_if_constexpr(shape)), list(_unwrap_if_constexpr(strides))
    if not len(shape) == len(strides) == len(block_shape) or not 1 <= len(shape) <= 5:
        raise ValueError("tlx.make_tensor_descriptor: shape, strides and block_shape need the same rank (1 to 5)")
    if _unwrap_if_constexpr(strides[-1]) != 1:
        raise ValueError("tlx.make_tensor_descriptor: the last stride must be the constant 1")
    layout = layouts.shared_layout(block_shape, dtype, _semantic.builder.options.arch)
    desc = _desc_type(_semantic, dtype, block_shape, layout)
    operands = ([base] + [_semantic.make_scalar(_unwrap_if_constexpr(s), tl.int32) for s in shape]
                + [_semantic.make_scalar(_unwrap_if_constexpr(s), tl.int64) for s in strides])
    pid, handle = emit(_semantic, "make_desc", operands=operands, rank=len(shape), desc=desc)
    return tensor_descriptor(handle, tensor_descriptor_type(tl.block_type(dtype, block_shape), pid, desc))
