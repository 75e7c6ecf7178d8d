"""Shared-memory buffers: allocation, views, and register <-> shared moves."""
from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import triton.language as tl

from . import alias, layouts
from .emit import emit, tensor_type, tlx_builtin
from .triton_compat import compile_options, kernel_state, type_builder, unwrap_if_constexpr
from .types import buffered_tensor, buffered_tensor_type


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    value = unwrap_if_constexpr(value)
    if isinstance(value, int):
        value = (value, )
    items = tuple(unwrap_if_constexpr(v) for v in value) if isinstance(value, (tuple, list, tl.tuple)) else None
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items):
        raise ValueError(f"{what} must be a tuple of positive compile-time ints, got {value!r}")
    return items


def _buffer(x: Any, op: str, _semantic: Any = None) -> buffered_tensor:
    if not isinstance(x, buffered_tensor) or x.type.barrier:
        raise TypeError(f"tlx.{op} expects a TLX buffer (from tlx.local_alloc), got {x}")
    return x if _semantic is None else _anchored(_semantic, x, op)


_MAKERS = "view_makers"  # in kernel_state: placeholder id -> the builder (function) that made the view


def _made_here(_semantic: Any, buf: buffered_tensor) -> buffered_tensor:
    kernel_state(_semantic).setdefault(_MAKERS, {})[buf.type.id] = _semantic.builder
    return buf


def _anchored(_semantic: Any, buf: Any, op: str) -> Any:
    """``buf`` as used in this function: re-anchored on its SSA value if another function made it.

    A ``@triton.jit`` helper's body is generated once and inlined at every call, so the views it makes
    carry one id in all copies, and a view passed in carries its maker's id. An ``anchor`` placeholder
    takes the buffer's dummy ``i32`` as its operand; after inlining that is the value of the right
    copy, and the lowering resolves the anchor through it (ids are the fallback, e.g. for loop-carried
    values). So two views returned by two calls of one helper stay two buffers.
    """
    b = _semantic.builder
    if kernel_state(_semantic).get(_MAKERS, {}).get(buf.type.id, b) is b:
        return buf
    # One anchor per use (it lowers to nothing): a cache could outlive the blocks Triton's codegen
    # builds and erases (a loop body is generated twice).
    pid, _ = emit(_semantic, "anchor", operands=[tl.tensor(buf.handle, tl.int32)], src=buf.type.id, use=op)
    t = buf.type
    ty = buffered_tensor_type(t.element_ty, t.shape, t.layout, t.alloc_shape, t.num, pid, t.memdesc, t.barrier)
    return _made_here(_semantic, buffered_tensor(buf.handle, ty))


def _memdesc_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: layouts.SharedLayout,
                  alloc_shape: Sequence[int]) -> str:
    g = type_builder(_semantic)
    return str(g.get_shared_mem_desc_ty(dtype.to_ir(g), list(shape), layout.to_ir(g), list(alloc_shape)))


def _view(_semantic: Any, op: str, dtype: tl.dtype, shape: Sequence[int], layout: Any, alloc_shape: Sequence[int],
          num: int = 0, operands: Sequence[Any] = (), barrier: bool = False, **attrs: Any) -> buffered_tensor:
    """Emit the placeholder of a view-making op and wrap its handle."""
    memdesc = _memdesc_type(_semantic, dtype, shape if not num else alloc_shape, layout, alloc_shape)
    pid, handle = emit(_semantic, op, operands=operands, type=memdesc, **attrs)
    ty = buffered_tensor_type(dtype, tuple(shape), layout, tuple(alloc_shape), num, pid, memdesc, barrier)
    return _made_here(_semantic, buffered_tensor(handle, ty))


@tlx_builtin
def local_alloc(shape, dtype, num, storage="smem", reuse=None, layout=None, _semantic=None) -> buffered_tensor:
    """Allocate ``num`` shared-memory buffers of ``shape``/``dtype``; index them with ``local_view``."""
    shape = _int_tuple(shape, "tlx.local_alloc: shape")
    dtype = unwrap_if_constexpr(dtype)
    num = unwrap_if_constexpr(num)
    storage = unwrap_if_constexpr(storage)
    layout = unwrap_if_constexpr(layout)
    if not isinstance(dtype, tl.dtype) or isinstance(dtype, tl.pointer_type):
        raise TypeError(f"tlx.local_alloc: dtype must be a scalar Triton dtype, got {dtype!r}")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"tlx.local_alloc: num must be a positive compile-time int, got {num!r}")
    storage = str(getattr(storage, "value", storage))
    if storage == "tmem":
        raise NotImplementedError("tlx.local_alloc: storage=tmem is Blackwell tensor memory; sm_90 and AMD CDNA "
                                  "have none, so stock Triton 3.6 cannot allocate it there")
    if storage != "smem":
        raise ValueError(f"tlx.local_alloc: storage must be tlx.storage_kind.smem here, got {storage!r}")
    layout = _shared_layout(_semantic, "local_alloc", layout, shape, dtype)
    reuse = unwrap_if_constexpr(reuse)
    if reuse is None:
        return _view(_semantic, "local_alloc", dtype, shape, layout, (num, *shape), num)
    if isinstance(reuse, alias.storage_alias_spec_value):
        buf = _view(_semantic, "alias_alloc", dtype, shape, layout, (num, *shape), num, spec=reuse.type.id)
        return alias.member_alloc(_semantic, reuse, buf)
    root = _buffer(reuse, "local_alloc(reuse=...)", _semantic)
    alias.check_not_member(_semantic, root, "local_alloc(reuse=...)")
    if not root.type.num or root.type.alloc_shape != (root.type.num, *root.shape):
        raise TypeError("tlx.local_alloc: reuse= must be a local_alloc result (the whole allocation), not a view")
    need, have = _nbytes((num, *shape), dtype), _nbytes(root.type.alloc_shape, root.dtype)
    if need > have:
        raise ValueError(f"tlx.local_alloc: reuse= allocation has {have} bytes, {need} needed for {num} x "
                         f"{list(shape)} {dtype}")
    # The same bytes seen through another type: a reinterpret of the reused allocation.
    return _view(_semantic, "memdesc_reinterpret", dtype, shape, layout, (num, *shape), num, src=root.type.id)


def _nbytes(shape: Sequence[int], dtype: tl.dtype) -> int:
    return math.prod(shape) * dtype.primitive_bitwidth // 8


def _shared_layout(_semantic: Any, op: str, layout: Any, shape: Sequence[int], dtype: tl.dtype) -> Any:
    """The shared layout of a new buffer: the planner's default, or the explicit ``layout=`` resolved."""
    layout = unwrap_if_constexpr(layout)
    if layout is None:
        return layouts.shared_layout(shape, dtype, compile_options(_semantic).arch)
    if isinstance(layout, (layouts.NVMMASharedLayout, layouts.SwizzledSharedLayout)):
        return layout
    if not isinstance(layout, layouts.shared_layout_encoding):
        raise TypeError(f"tlx.{op}: layout must be a TLX shared layout (e.g. tlx.swizzled_shared_layout_encoding, "
                        f"tlx.nv_mma_shared_layout_encoding, tlx.swizzled_layout), got {layout!r}")
    try:
        return layout.resolve(tuple(shape), dtype)
    except (ValueError, TypeError, NotImplementedError) as e:
        raise type(e)(f"tlx.{op}: layout= {e}") from None


@tlx_builtin
def storage_alias_spec(storage=layouts.storage_kind.smem, buffer_size_bytes=None, _semantic=None):
    """A shared region for several allocations (``local_alloc(..., reuse=spec)``), placed by
    ``spec.set_buffer_overlap(tlx.reuse_group(...))``; see tlx/alias.py."""
    return alias.new_spec(_semantic, storage, buffer_size_bytes)


@tlx_builtin
def local_view(local_allocated_buffers, buffer_idx, _semantic=None) -> buffered_tensor:
    """Buffer ``idx`` of a multi-buffer allocation (or barrier ``idx`` of ``alloc_barriers``)."""
    buf, idx = local_allocated_buffers, buffer_idx  # the fork's parameter names
    if not isinstance(buf, buffered_tensor):
        raise TypeError(f"tlx.local_view expects a TLX buffer or barrier array, got {type(buf).__name__}")
    buf = _anchored(_semantic, buf, "local_view")
    idx = unwrap_if_constexpr(idx)
    if isinstance(idx, bool) or not isinstance(idx, (int, tl.tensor)):
        raise TypeError(f"tlx.local_view: index must be an integer, got {type(idx).__name__}")
    count = buf.type.num or buf.shape[0]
    if isinstance(idx, int) and not 0 <= idx < count:
        raise IndexError(f"tlx.local_view: index {idx} out of range for {count} "
                         f"{'buffers' if buf.type.num else 'rows of the view'}")
    index = _semantic.to_tensor(idx)
    if index.type.is_block() or not index.dtype.is_int() or index.dtype.is_bool():
        raise TypeError(f"tlx.local_view: index must be an integer scalar, got {index.type}")
    if index.dtype != tl.int32:
        index = _semantic.cast(index, tl.int32)
    if not buf.type.num:
        return _row_view(_semantic, buf, index)
    return _view(_semantic, "memdesc_index", buf.dtype, buf.shape, buf.layout, buf.shape, operands=[index],
                 barrier=buf.type.barrier, src=buf.type.id)


def _row_view(_semantic: Any, buf: buffered_tensor, index: tl.tensor) -> buffered_tensor:
    """``local_view`` of a single view, as in the fork: row ``index`` of its first dim (shape[1:]), or
    for a 1-D view the one element ``index`` (shape [1])."""
    if buf.type.barrier:
        raise TypeError("tlx.local_view: the barrier is a single barrier already; index the alloc_barriers result")
    if buf.type.alloc_shape != buf.shape:
        raise NotImplementedError("tlx.local_view: indexing a sliced view needs a memdesc_index of a subslice, "
                                  "which stock Triton 3.6 rejects; index the buffer before slicing it")
    if len(buf.shape) == 1:  # [N] -> [N, 1] (same bytes, unswizzled), then row index -> [1]
        buf = local_reshape(buf, (buf.shape[0], 1), _semantic=_semantic)
    plain = isinstance(buf.layout, layouts.SwizzledSharedLayout) and buf.layout.max_phase == 1
    if len(buf.shape) == 2 and not plain:  # swizzles permute within rows by row index: a row alone has none
        raise NotImplementedError("tlx.local_view: a row of a swizzled 2-D buffer has no 1-D shared layout on stock "
                                  "Triton; allocate the buffer with layout=tlx.swizzled_shared_layout_encoding."
                                  "make_default(2) to index its rows")
    if isinstance(buf.layout, layouts.NVMMASharedLayout):
        layout = layouts.NVMMASharedLayout(buf.layout.swizzle_bytes, buf.layout.element_bits, buf.layout.rank - 1,
                                           buf.layout.transposed)
    elif isinstance(buf.layout, layouts.SwizzledSharedLayout) and buf.layout.order[-1] == 0:
        layout = layouts.SwizzledSharedLayout(buf.layout.vec, buf.layout.per_phase, buf.layout.max_phase,
                                              tuple(o - 1 for o in buf.layout.order[:-1]))
    else:
        raise NotImplementedError(f"tlx.local_view: a view's first dim must be its outermost to index it, "
                                  f"layout {buf.layout}")
    # ttg.memdesc_index keeps its source's encoding (Triton 3.8+ verifies it), so first see the view as a
    # stack of rows in the row layout (the same bytes, as checked above), then index that stack.
    rows = _view(_semantic, "memdesc_reinterpret", buf.dtype, buf.shape, layout, buf.shape, src=buf.type.id)
    shape = buf.shape[1:]
    memdesc = _memdesc_type(_semantic, buf.dtype, shape, layout, shape)
    pid, handle = emit(_semantic, "memdesc_index", operands=[index], type=memdesc, src=rows.type.id)
    return _made_here(_semantic, buffered_tensor(handle, buffered_tensor_type(buf.dtype, shape, layout, shape, 0, pid,
                                                                               memdesc)))


@tlx_builtin
def local_slice(buffer, offset, shape, _semantic=None) -> buffered_tensor:
    """A same-rank sub-view starting at compile-time ``offset``."""
    buf = _buffer(buffer, "local_slice", _semantic)  # ``buffer``: the fork's parameter name
    offset = tuple(unwrap_if_constexpr(o) for o in unwrap_if_constexpr(offset))
    shape = _int_tuple(shape, "tlx.local_slice: shape")
    if len(offset) != len(buf.shape) or len(shape) != len(buf.shape):
        raise ValueError(f"tlx.local_slice: offset {offset} and shape {shape} must have rank {len(buf.shape)}")
    if any(o < 0 or o + s > d for o, s, d in zip(offset, shape, buf.shape)):
        raise ValueError(f"tlx.local_slice: slice {offset}+{shape} is outside the buffer {buf.shape}")
    return _view(_semantic, "memdesc_subslice", buf.dtype, shape, buf.layout, buf.type.alloc_shape,
                 src=buf.type.id, offsets=list(offset))


@tlx_builtin
def local_trans(input, dims=(1, 0), _semantic=None) -> buffered_tensor:
    """The buffer seen with its dimensions permuted (no data movement)."""
    buf = input  # the fork's parameter names
    buf = _buffer(buf, "local_trans", _semantic)
    dims = tuple(unwrap_if_constexpr(d) for d in unwrap_if_constexpr(dims))
    if sorted(dims) != list(range(len(buf.shape))):
        raise ValueError(f"tlx.local_trans: dims {dims} is not a permutation of the buffer's {len(buf.shape)} dims")
    shape = tuple(buf.shape[d] for d in dims)
    return _view(_semantic, "memdesc_trans", buf.dtype, shape, layouts.transposed(buf.layout, dims), shape,
                 src=buf.type.id, order=list(dims))


@tlx_builtin
def local_reshape(src, shape, _semantic=None) -> buffered_tensor:
    """The buffer seen with another shape of the same size (no data movement)."""
    buf = _buffer(src, "local_reshape", _semantic)  # ``src``: the fork's parameter name
    shape = _int_tuple(shape, "tlx.local_reshape: shape")
    if math.prod(shape) != math.prod(buf.shape):
        raise ValueError(f"tlx.local_reshape: cannot reshape {buf.shape} into {shape}")
    layout = layouts.reshaped(buf.layout, buf.shape, shape)
    return _view(_semantic, "memdesc_reshape", buf.dtype, shape, layout, shape, src=buf.type.id)


@tlx_builtin
def local_reinterpret(src, dtype, shape=None, layout=None, _semantic=None) -> buffered_tensor:
    """The same bytes seen as another dtype, shape (same byte size) and layout; no data movement.

    ``buf`` may be a whole multi-buffer allocation: the result is then one view over all its buffers.
    Without ``layout`` the result keeps ``buf``'s layout when dtype width and shape allow it, else it
    gets the planner's default. The bytes map to elements in row-major order as the interpreter
    models them only when both layouts are unswizzled; pass ``layout=`` to choose.
    """
    buf = src  # the fork's parameter names
    buf = _buffer(buf, "local_reinterpret", _semantic)
    alias.check_not_member(_semantic, buf, "local_reinterpret")
    dtype = unwrap_if_constexpr(dtype)
    if not isinstance(dtype, tl.dtype) or isinstance(dtype, tl.pointer_type):
        raise TypeError(f"tlx.local_reinterpret: dtype must be a scalar Triton dtype, got {dtype!r}")
    whole = buf.type.alloc_shape if buf.type.num else buf.shape
    shape = whole if unwrap_if_constexpr(shape) is None else _int_tuple(shape, "tlx.local_reinterpret: shape")
    if buf.type.alloc_shape != whole:
        raise NotImplementedError("tlx.local_reinterpret: stock Triton 3.6 reinterprets whole buffers only, not "
                                  "slices; reinterpret the buffer, then slice")
    if _nbytes(shape, dtype) != _nbytes(whole, buf.dtype):
        raise ValueError(f"tlx.local_reinterpret: {list(whole)} {buf.dtype} ({_nbytes(whole, buf.dtype)} bytes) and "
                         f"{list(shape)} {dtype} ({_nbytes(shape, dtype)} bytes) differ in size")
    same = tuple(shape) == tuple(buf.shape) and dtype.primitive_bitwidth == buf.dtype.primitive_bitwidth
    if unwrap_if_constexpr(layout) is None and same and not buf.type.num:
        layout = buf.layout
    layout = _shared_layout(_semantic, "local_reinterpret", layout, shape, dtype)
    return _view(_semantic, "memdesc_reinterpret", dtype, shape, layout, shape, src=buf.type.id)


def _register_layout(_semantic: Any, shape: Sequence[int], dtype: tl.dtype) -> layouts.BlockedLayout:
    opts = compile_options(_semantic)
    return layouts.coalesced_layout(shape, dtype, opts.num_warps, opts.warp_size)


def _tensor_type_in(_semantic: Any, op: str, layout: Any, shape: Sequence[int], dtype: tl.dtype) -> str:
    """Printed type of a ``shape`` tensor in an explicit register ``layout`` (a TLX or planner layout)."""
    layout = unwrap_if_constexpr(layout)
    if isinstance(layout, layouts.shared_layout_encoding) or not hasattr(layout, "to_ir"):
        raise TypeError(f"tlx.{op}: layout must be a TLX register layout (tlx.layout, tlx.amd_mfma_layout, "
                        f"tlx.dot_operand_layout), got {layout!r}")
    g = type_builder(_semantic)
    opts = compile_options(_semantic)
    extra = {"warp_size": opts.warp_size} if isinstance(layout, layouts.layout) else {}
    try:
        if isinstance(layout, layouts.layout_encoding):
            layouts.check_threads(layout, opts.num_warps, opts.warp_size)
        attr = layout.to_ir(g, list(shape), dtype, **extra) if isinstance(layout, layouts.layout_encoding) \
            else layout.to_ir(g)
        return str(g.get_distributed_ty(dtype.to_ir(g), list(shape), attr))
    except (ValueError, TypeError, RuntimeError) as e:
        raise ValueError(f"tlx.{op}: layout {layout!r} does not fit a {list(shape)} {dtype} tensor: {e}") from None


@tlx_builtin
def local_load(src, token=None, layout=None, relaxed=False, rematerialize_coordinates=False,
               rematerialize_coordinates_group=None, _semantic=None) -> tl.tensor:
    """Shared memory -> registers, in the register ``layout`` when given (else a coalesced one).

    ``relaxed`` and ``rematerialize_coordinates(_group)`` are the fork's AMD scheduling hints; stock
    Triton has no counterpart, so they are checked and have no effect.
    """
    src = _buffer(src, "local_load", _semantic)
    if src.type.num:
        raise TypeError("tlx.local_load: pick one buffer with tlx.local_view first")
    for name, value in (("relaxed", relaxed), ("rematerialize_coordinates", rematerialize_coordinates)):
        if not isinstance(unwrap_if_constexpr(value), bool):
            raise TypeError(f"tlx.local_load: {name} must be a compile-time bool, got {value!r}")
    group = unwrap_if_constexpr(rematerialize_coordinates_group)
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or group < 0):
        raise TypeError(f"tlx.local_load: rematerialize_coordinates_group must be None or an int >= 0, got {group!r}")
    if unwrap_if_constexpr(layout) is None:
        want = tensor_type(_semantic, src.dtype, src.shape, _register_layout(_semantic, src.shape, src.dtype))
    else:
        want = _tensor_type_in(_semantic, "local_load", layout, src.shape, src.dtype)
    _, value = emit(_semantic, "local_load", result=src.dtype, shape=src.shape, src=src.type.id, want=want)
    return tl.tensor(value, tl.block_type(src.dtype, list(src.shape)))


@tlx_builtin
def local_store(dst, src, _semantic=None) -> None:
    """Registers -> shared memory."""
    dst = _buffer(dst, "local_store", _semantic)
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


def _gather_args(op: str, buf: buffered_tensor, indices: Any, axis: Any, _semantic: Any) -> tuple[tl.tensor, int]:
    indices = unwrap_if_constexpr(indices)
    if not isinstance(indices, tl.tensor) or not indices.type.is_block() or not indices.dtype.is_int() \
            or indices.dtype.is_bool():
        raise TypeError(f"tlx.{op}: indices must be an integer tensor, got {indices!r}")
    axis = unwrap_if_constexpr(axis)
    rank = len(buf.shape)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise ValueError(f"tlx.{op}: axis must be a compile-time int in [{-rank}, {rank}), got {axis!r}")
    axis %= rank
    if len(indices.shape) != rank or any(indices.shape[d] != buf.shape[d] for d in range(rank) if d != axis):
        raise ValueError(f"tlx.{op}: indices {list(indices.shape)} must have the buffer's rank and its dims "
                         f"{list(buf.shape)} except along axis {axis}")
    return indices, axis


@tlx_builtin
def local_gather(src, indices, axis, token=None, _semantic=None) -> tl.tensor:
    """``out[..., i, ...] = src[..., indices[..., i, ...], ...]`` along ``axis`` (``torch.gather``).

    Stock Triton 3.6 has no shared-memory gather op: this is a ``local_load`` of ``src`` and a
    stock ``tt.gather``, whose lowering goes through shared memory again.
    """
    src = _buffer(src, "local_gather", _semantic)
    if src.type.num:
        raise TypeError("tlx.local_gather: pick one buffer with tlx.local_view first")
    indices, axis = _gather_args("local_gather", src, indices, axis, _semantic)
    return _semantic.gather(local_load(src, token, _semantic=_semantic), indices, axis)


#: Largest compare tensor (indices x destination rows) local_scatter builds.
SCATTER_LIMIT = 1 << 16


@tlx_builtin
def local_scatter(dst, src, indices, axis, token=None, _semantic=None) -> None:
    """``dst[..., indices[..., i, ...], ...] = src[..., i, ...]`` along ``axis``; the last duplicate wins.

    Stock Triton 3.6 has no scatter op. This loads ``dst``, finds for each destination row the last
    ``i`` that writes it (a compare of every index against every row, at most
    :data:`SCATTER_LIMIT` elements), gathers those values with ``tt.gather`` and stores ``dst`` back.
    """
    dst = _buffer(dst, "local_scatter", _semantic)
    if dst.type.num:
        raise TypeError("tlx.local_scatter: pick one buffer with tlx.local_view first")
    indices, axis = _gather_args("local_scatter", dst, indices, axis, _semantic)
    src = _semantic.to_tensor(src)
    if list(src.shape) != list(indices.shape) or src.dtype != dst.dtype:
        raise ValueError(f"tlx.local_scatter: src must be a {list(indices.shape)} {dst.dtype} tensor like indices, "
                         f"got {list(src.shape)} {src.dtype}")
    rows, count = dst.shape[axis], unwrap_if_constexpr(indices.shape[axis])
    if math.prod(indices.shape) * rows > SCATTER_LIMIT:
        raise NotImplementedError(f"tlx.local_scatter: stock Triton has no scatter op, so it is a compare of every "
                                  f"index with each of the {rows} rows ({math.prod(indices.shape) * rows} elements, "
                                  f"limit {SCATTER_LIMIT}); scatter smaller tiles")
    sem, rank = _semantic, len(dst.shape)
    idx = sem.cast(indices, tl.int32)

    def along(t: tl.tensor, dim: int) -> tl.tensor:  # a 1-D tensor placed on ``dim`` of a rank+1 shape
        for d in range(rank + 1):
            if d != dim:
                t = sem.expand_dims(t, d)
        return t

    big = [*indices.shape[:axis + 1], rows, *indices.shape[axis + 1:]]
    hit = sem.equal(sem.broadcast_impl_shape(sem.expand_dims(idx, axis + 1), big),
                    sem.broadcast_impl_shape(along(sem.arange(0, rows), axis + 1), big))
    which = sem.where(hit, sem.broadcast_impl_shape(along(sem.arange(0, count), axis), big),
                      sem.full(big, -1, tl.int32))
    writer = _max_along(sem, which, axis)  # [.., rows, ..]: the last i writing each row, or -1
    value = sem.gather(src, sem.maximum(writer, sem.full(writer.shape, 0, tl.int32), tl.PropagateNan.NONE), axis)
    old = local_load(dst, token, _semantic=sem)
    local_store(dst, sem.where(sem.greater_equal(writer, sem.full(writer.shape, 0, tl.int32)), value, old),
                _semantic=sem)


def _max_along(sem: Any, x: tl.tensor, axis: int) -> tl.tensor:
    """``max`` of an int32 tensor along ``axis``, built as a ``tt.reduce`` with a ``maxsi`` region."""
    b = sem.builder

    def region(reduce_op: Any) -> None:
        ip = b.get_insertion_point()
        i32 = tl.int32.to_ir(b)
        block = b.create_block_with_parent(reduce_op.get_region(0), [i32, i32])
        b.create_reduce_ret(b.create_maxsi(block.arg(0), block.arg(1)))
        b.restore_insertion_point(ip)

    return sem.reduction((x, ), axis, region)[0]


@tlx_builtin
def zeros(shape, dtype, layout=None, _semantic=None) -> tl.tensor:
    """A zero tensor, made directly in the register ``layout`` when given (as Gluon MFMA accumulators are)."""
    shape = list(_int_tuple(shape, "tlx.zeros: shape"))
    dtype = unwrap_if_constexpr(dtype)
    if not isinstance(dtype, tl.dtype) or isinstance(dtype, tl.pointer_type):
        raise TypeError(f"tlx.zeros: dtype must be a scalar Triton dtype, got {dtype!r}")
    if unwrap_if_constexpr(layout) is None:
        return _semantic.full(shape, 0, dtype)
    want = _tensor_type_in(_semantic, "zeros", layout, shape, dtype)
    _, value = emit(_semantic, "zeros", result=dtype, shape=shape, want=want, float=dtype.is_floating())
    return tl.tensor(value, tl.block_type(dtype, shape))


@tlx_builtin
def require_layout(x, layout, pin=True, late_address_compute=False, _semantic=None) -> tl.tensor:
    """``x`` converted to the register ``layout``; TLX ops that take it use that layout directly.

    Stock Triton cannot pin a layout against its own passes: ``remove_layout_conversions`` may still
    move the conversion, as for any ``ttg.convert_layout``. ``pin`` and ``late_address_compute`` are
    checked and otherwise have no effect.
    """
    x = unwrap_if_constexpr(x)
    if not isinstance(x, tl.tensor) or not x.type.is_block():
        raise TypeError(f"tlx.require_layout: x must be a register tensor, got {x!r}")
    for name, value in (("pin", pin), ("late_address_compute", late_address_compute)):
        if not isinstance(unwrap_if_constexpr(value), bool):
            raise TypeError(f"tlx.require_layout: {name} must be a compile-time bool, got {value!r}")
    want = _tensor_type_in(_semantic, "require_layout", layout, x.shape, x.dtype)
    _, value = emit(_semantic, "require_layout", operands=[x], result=x.dtype, shape=list(x.shape), want=want)
    return tl.tensor(value, x.type)


@tlx_builtin
def release_layout(x, _semantic=None) -> tl.tensor:
    """``x`` free to take any layout again: every tensor is, once TLX's lowering is done, so this is ``x``."""
    x = unwrap_if_constexpr(x)
    if not isinstance(x, tl.tensor) or not x.type.is_block():
        raise TypeError(f"tlx.release_layout: x must be a register tensor, got {x!r}")
    return x


@tlx_builtin
def subslice(local_allocated_buffer, offset, size, _semantic=None) -> buffered_tensor:
    """The fork's tensor-memory column slice: tensor memory is Blackwell-only."""
    raise NotImplementedError("tlx.subslice slices Blackwell tensor memory, which sm_90 and AMD CDNA do not have; "
                              "slice shared memory with tlx.local_slice")


def _layout_of(_semantic: Any, x: Any, op: str) -> Any:
    x = unwrap_if_constexpr(x)
    if isinstance(x, buffered_tensor):
        return x.layout
    if isinstance(x, tl.tensor):
        raise NotImplementedError(f"tlx.{op}: register layouts are chosen by stock passes after TLX's lowering, so "
                                  "they are not known when the kernel is built; pin one with tlx.require_layout")
    raise TypeError(f"tlx.{op}: expected a TLX buffer, got {x!r}")


@tlx_builtin
def assert_same_layout(lhs, rhs, _semantic=None) -> None:
    """Compile-time check that two buffers (or a buffer and a shared layout) have one layout."""
    have = _layout_of(_semantic, lhs, "assert_same_layout")
    rhs = unwrap_if_constexpr(rhs)
    lhs = unwrap_if_constexpr(lhs)
    want = _layout_of(_semantic, rhs, "assert_same_layout") if isinstance(rhs, (tl.tensor, buffered_tensor)) \
        else _shared_layout(_semantic, "assert_same_layout", rhs, lhs.shape, lhs.dtype)
    have, want = (_memdesc_type(_semantic, lhs.dtype, lhs.shape, x, lhs.shape) for x in (have, want))
    if have != want:  # printed as memdesc types: attributes have no printer of their own in the bindings
        raise AssertionError(f"tlx.assert_same_layout: {have} is not {want}")


@tlx_builtin
def dump_layout(x, _semantic=None) -> None:
    """Print a value's layout while the kernel compiles: a buffer's shared memory type now, a register
    tensor's TritonGPU type when TLX lowers (the layout ``convert_to_ttgpuir`` chose; stock passes
    may still change it, and stock Triton has no hook after them)."""
    x = unwrap_if_constexpr(x)
    if isinstance(x, tl.tensor) and x.type.is_block():
        emit(_semantic, "dump_layout", operands=[x])
        return
    _layout_of(_semantic, x, "dump_layout")
    print(f"tlx.dump_layout: {x.type.memdesc}", file=sys.stderr)
