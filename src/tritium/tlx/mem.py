"""Shared-memory buffers: allocation, views, and register <-> shared moves."""
from __future__ import annotations

import math
from typing import Any, Sequence

import triton.language as tl
from triton.language.core import _unwrap_if_constexpr

from . import layouts
from .emit import emit, tensor_type, tlx_builtin, types
from .types import buffered_tensor, buffered_tensor_type


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    value = _unwrap_if_constexpr(value)
    if isinstance(value, int):
        value = (value, )
    items = tuple(_unwrap_if_constexpr(v) for v in value) if isinstance(value, (tuple, list, tl.tuple)) else None
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items):
        raise ValueError(f"{what} must be a tuple of positive compile-time ints, got {value!r}")
    return items


def _buffer(x: Any, op: str) -> buffered_tensor:
    if not isinstance(x, buffered_tensor) or x.type.barrier:
        raise TypeError(f"tlx.{op} expects a TLX buffer (from tlx.local_alloc), got {x}")
    return x


def _memdesc_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: layouts.SharedLayout,
                  alloc_shape: Sequence[int]) -> str:
    g = types(_semantic)
    return str(g.get_shared_mem_desc_ty(dtype.to_ir(g), list(shape), layout.to_ir(g), list(alloc_shape)))


def _view(_semantic: Any, op: str, dtype: tl.dtype, shape: Sequence[int], layout: Any, alloc_shape: Sequence[int],
          num: int = 0, operands: Sequence[Any] = (), barrier: bool = False, **attrs: Any) -> buffered_tensor:
    """Emit the placeholder of a view-making op and wrap its handle."""
    memdesc = _memdesc_type(_semantic, dtype, shape if not num else alloc_shape, layout, alloc_shape)
    pid, handle = emit(_semantic, op, operands=operands, type=memdesc, **attrs)
    ty = buffered_tensor_type(dtype, tuple(shape), layout, tuple(alloc_shape), num, pid, memdesc, barrier)
    return buffered_tensor(handle, ty)


@tlx_builtin
def local_alloc(shape, dtype, num, storage="smem", reuse=None, layout=None, _semantic=None) -> buffered_tensor:
    """Allocate ``num`` shared-memory buffers of ``shape``/``dtype``; index them with ``local_view``."""
    shape = _int_tuple(shape, "tlx.local_alloc: shape")
    dtype = _unwrap_if_constexpr(dtype)
    num = _unwrap_if_constexpr(num)
    storage = _unwrap_if_constexpr(storage)
    layout = _unwrap_if_constexpr(layout)
    if not isinstance(dtype, tl.dtype) or isinstance(dtype, tl.pointer_type):
        raise TypeError(f"tlx.local_alloc: dtype must be a scalar Triton dtype, got {dtype!r}")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"tlx.local_alloc: num must be a positive compile-time int, got {num!r}")
    if str(getattr(storage, "value", storage)) != "smem":
        raise NotImplementedError(f"tlx.local_alloc: storage {storage!r} is not supported (only shared memory)")
    if _unwrap_if_constexpr(reuse) is not None:
        raise NotImplementedError("tlx.local_alloc: reuse= is not supported yet")
    if layout is None:
        layout = layouts.shared_layout(shape, dtype, _semantic.builder.options.arch)
    elif not isinstance(layout, (layouts.NVMMASharedLayout, layouts.SwizzledSharedLayout)):
        raise TypeError(f"tlx.local_alloc: layout must be a TLX shared layout, got {layout!r}")
    return _view(_semantic, "local_alloc", dtype, shape, layout, (num, *shape), num)


@tlx_builtin
def local_view(buf, idx, _semantic=None) -> buffered_tensor:
    """Buffer ``idx`` of a multi-buffer allocation (or barrier ``idx`` of ``alloc_barriers``)."""
    if not isinstance(buf, buffered_tensor):
        raise TypeError(f"tlx.local_view expects a TLX buffer or barrier array, got {type(buf).__name__}")
    if not buf.type.num:
        raise TypeError("tlx.local_view: the buffer is a single view already; index the local_alloc result")
    idx = _unwrap_if_constexpr(idx)
    if isinstance(idx, bool) or not isinstance(idx, (int, tl.tensor)):
        raise TypeError(f"tlx.local_view: index must be an integer, got {type(idx).__name__}")
    if isinstance(idx, int) and not 0 <= idx < buf.type.num:
        raise IndexError(f"tlx.local_view: index {idx} out of range for {buf.type.num} buffers")
    index = _semantic.to_tensor(idx)
    if index.type.is_block() or not index.dtype.is_int() or index.dtype.is_bool():
        raise TypeError(f"tlx.local_view: index must be an integer scalar, got {index.type}")
    if index.dtype != tl.int32:
        index = _semantic.cast(index, tl.int32)
    return _view(_semantic, "memdesc_index", buf.dtype, buf.shape, buf.layout, buf.shape, operands=[index],
                 barrier=buf.type.barrier, src=buf.type.id)


@tlx_builtin
def local_slice(buf, offset, shape, _semantic=None) -> buffered_tensor:
    """A same-rank sub-view starting at compile-time ``offset``."""
    buf = _buffer(buf, "local_slice")
    offset = tuple(_unwrap_if_constexpr(o) for o in _unwrap_if_constexpr(offset))
    shape = _int_tuple(shape, "tlx.local_slice: shape")
    if len(offset) != len(buf.shape) or len(shape) != len(buf.shape):
        raise ValueError(f"tlx.local_slice: offset {offset} and shape {shape} must have rank {len(buf.shape)}")
    if any(o < 0 or o + s > d for o, s, d in zip(offset, shape, buf.shape)):
        raise ValueError(f"tlx.local_slice: slice {offset}+{shape} is outside the buffer {buf.shape}")
    return _view(_semantic, "memdesc_subslice", buf.dtype, shape, buf.layout, buf.type.alloc_shape,
                 src=buf.type.id, offsets=list(offset))


@tlx_builtin
def local_trans(buf, dims=(1, 0), _semantic=None) -> buffered_tensor:
    """The buffer seen with its dimensions permuted (no data movement)."""
    buf = _buffer(buf, "local_trans")
    dims = tuple(_unwrap_if_constexpr(d) for d in _unwrap_if_constexpr(dims))
    if sorted(dims) != list(range(len(buf.shape))):
        raise ValueError(f"tlx.local_trans: dims {dims} is not a permutation of the buffer's {len(buf.shape)} dims")
    shape = tuple(buf.shape[d] for d in dims)
    return _view(_semantic, "memdesc_trans", buf.dtype, shape, layouts.transposed(buf.layout, dims), shape,
                 src=buf.type.id, order=list(dims))


@tlx_builtin
def local_reshape(buf, shape, _semantic=None) -> buffered_tensor:
    """The buffer seen with another shape of the same size (no data movement)."""
    buf = _buffer(buf, "local_reshape")
    shape = _int_tuple(shape, "tlx.local_reshape: shape")
    if math.prod(shape) != math.prod(buf.shape):
        raise ValueError(f"tlx.local_reshape: cannot reshape {buf.shape} into {shape}")
    layout = layouts.reshaped(buf.layout, buf.shape, shape)
    return _view(_semantic, "memdesc_reshape", buf.dtype, shape, layout, shape, src=buf.type.id)


@tlx_builtin
def local_reinterpret(buf, dtype, shape=None, layout=None, _semantic=None) -> buffered_tensor:
    """The same bytes seen as another dtype/shape/layout."""
    buf = _buffer(buf, "local_reinterpret")
    dtype = _unwrap_if_constexpr(dtype)
    if not isinstance(dtype, tl.dtype):
        raise TypeError(f"tlx.local_reinterpret: dtype must be a Triton dtype, got {dtype!r}")
    shape = buf.shape if _unwrap_if_constexpr(shape) is None else _int_tuple(shape, "tlx.local_reinterpret: shape")
    layout = _unwrap_if_constexpr(layout)
    if layout is None:
        layout = layouts.shared_layout(shape, dtype, _semantic.builder.options.arch)
    if math.prod(shape) * dtype.primitive_bitwidth != math.prod(buf.shape) * buf.dtype.primitive_bitwidth:
        raise ValueError(f"tlx.local_reinterpret: {buf.shape} {buf.dtype} and {shape} {dtype} differ in size")
    return _view(_semantic, "memdesc_reinterpret", dtype, shape, layout, shape, src=buf.type.id)


def _register_layout(_semantic: Any, shape: Sequence[int], dtype: tl.dtype) -> layouts.BlockedLayout:
    opts = _semantic.builder.options
    return layouts.coalesced_layout(shape, dtype, opts.num_warps, opts.warp_size)


@tlx_builtin
def local_load(src, token=None, _semantic=None) -> tl.tensor:
    """Shared memory -> registers."""
    src = _buffer(src, "local_load")
    if src.type.num:
        raise TypeError("tlx.local_load: pick one buffer with tlx.local_view first")
    want = tensor_type(_semantic, src.dtype, src.shape, _register_layout(_semantic, src.shape, src.dtype))
    _, value = emit(_semantic, "local_load", result=src.dtype, shape=src.shape, src=src.type.id, want=want)
    return tl.tensor(value, tl.block_type(src.dtype, list(src.shape)))


@tlx_builtin
def local_store(dst, src, _semantic=None) -> None:
    """Registers -> shared memory."""
    dst = _buffer(dst, "local_store")
    if dst.type.num:
        raise TypeError("tlx.local_store: pick one buffer with tlx.local_view first")
    src = _semantic.to_tensor(src)
    if not src.type.is_block() or tuple(src.shape) != tuple(dst.shape):
        raise ValueError(f"tlx.local_store: value of shape {list(getattr(src, 'shape', []))} does not match "
                         f"buffer shape {list(dst.shape)}")
    if src.dtype != dst.dtype:
        raise TypeError(f"tlx.local_store: value dtype {src.dtype} does not match buffer dtype {dst.dtype}")
    want = tensor_type(_semantic, dst.dtype, dst.shape, _register_layout(_semantic, dst.shape, dst.dtype))
    emit(_semantic, "local_store", operands=[src], dst=dst.type.id, want=want)
