"""Shared-memory buffers: allocation, views, and register <-> shared moves."""
from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import triton.language as tl

from . import alias, args, layouts
from .args import BUFFER, BUFFERS, MBARRIER, MBARRIERS, ConstInt, Scalar
from .core import memdesc_type
from .emit import emit, tensor_type, tlx_builtin
from .triton_compat import compile_options, kernel_state, statement_location, type_builder, unwrap_if_constexpr
from .types import buffered_tensor, buffered_tensor_type, if_result_view, method_op


def _buffer(x: Any, op: str, _semantic: Any = None, one: bool = False) -> buffered_tensor:
    x = args.buffer(x, op, one)
    return x if _semantic is None else _anchored(_semantic, x, op)


# --------------------------------------------------------------------------------------------
# Argument checks: each op's builtin below and its function in tlx/interpreter.py call the same one
# (see tlx/args.py). A buffer argument is the path's own value; its ``shape`` is one buffer's.
# --------------------------------------------------------------------------------------------
def check_local_alloc(shape: Any, dtype: Any, num: Any, storage: Any) -> tuple[tuple[int, ...], tl.dtype, int]:
    """``(shape, dtype, num)`` of a ``local_alloc`` of ``storage`` (shared memory is the only kind here)."""
    shape = args.int_tuple(shape, "local_alloc", "shape")
    dtype = args.scalar_dtype(dtype, "local_alloc")
    num = args.compile_time_int(num, "local_alloc", "num")
    storage = args.unwrap(storage)
    storage = str(getattr(storage, "value", storage))
    if storage == "tmem":
        raise NotImplementedError("tlx.local_alloc: storage=tmem is Blackwell tensor memory; sm_90 and AMD CDNA "
                                  "have none, so stock Triton 3.6 cannot allocate it there")
    if storage != "smem":
        raise ValueError(f"tlx.local_alloc: storage must be tlx.storage_kind.smem here, got {storage!r}")
    return shape, dtype, num


def check_reuse(reuse: Any, whole: bool, have: int, num: int, shape: Sequence[int], dtype: tl.dtype) -> None:
    """``local_alloc(reuse=buffer)``: ``reuse`` is a whole allocation (``whole``) of ``have`` bytes, enough."""
    args.buffer(reuse, "local_alloc(reuse=...)")
    if not whole:
        raise TypeError("tlx.local_alloc: reuse= must be a local_alloc result (the whole allocation), not a view")
    need = _nbytes((num, *shape), dtype)
    if need > have:
        raise ValueError(f"tlx.local_alloc: reuse= allocation has {have} bytes, {need} needed for {num} x "
                         f"{list(shape)} {dtype}")


def check_shared_layout(op: str, layout: Any, shape: Sequence[int], dtype: tl.dtype) -> Any:
    """An explicit shared ``layout=`` resolved for the buffer, or None (the planner's default)."""
    layout = args.unwrap(layout)
    if layout is None or isinstance(layout, (layouts.NVMMASharedLayout, layouts.SwizzledSharedLayout)):
        return layout
    if not isinstance(layout, layouts.shared_layout_encoding):
        raise TypeError(f"tlx.{op}: layout must be a TLX shared layout (e.g. tlx.swizzled_shared_layout_encoding, "
                        f"tlx.nv_mma_shared_layout_encoding, tlx.swizzled_layout), got {layout!r}")
    try:
        return layout.resolve(tuple(shape), dtype)
    except (ValueError, TypeError, NotImplementedError) as e:
        raise type(e)(f"tlx.{op}: layout= {e}") from None


def check_local_view(buf: Any, idx: Any) -> Any:
    """The index of ``local_view(buf, idx)``: an int (check its range with :func:`check_view_index`) or an
    integer scalar tensor."""
    kind = args.kind_of(buf)
    if kind not in (BUFFER, BUFFERS, MBARRIERS, MBARRIER):
        raise TypeError(f"tlx.local_view expects a TLX buffer or barrier array, got {kind}")
    if kind == MBARRIER:
        raise TypeError("tlx.local_view: the barrier is a single barrier already; index the alloc_barriers result")
    idx = args.unwrap(idx)
    if isinstance(idx, bool) or not isinstance(idx, (int, tl.tensor)):
        raise TypeError(f"tlx.local_view: index must be an integer, got {type(idx).__name__}")
    return args.integer_scalar(idx, "local_view", "index")


def check_view_index(idx: int, count: int, buffers: bool) -> None:
    """Index ``idx`` of ``count`` buffers (or rows of a single view)."""
    if not 0 <= idx < count:
        raise IndexError(f"tlx.local_view: index {idx} out of range for {count} "
                         f"{'buffers' if buffers else 'rows of the view'}")


def check_local_slice(buf: Any, offset: Any, shape: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    buf = args.buffer(buf, "local_slice", one=True)
    offset = tuple(args.constant(o) for o in args.unwrap(offset))
    shape = args.int_tuple(shape, "local_slice", "shape")
    have = tuple(buf.shape)
    if len(offset) != len(have) or len(shape) != len(have):
        raise ValueError(f"tlx.local_slice: offset {offset} and shape {shape} must have rank {len(have)}")
    if not all(args.is_int(o) for o in offset):
        raise NotImplementedError("tlx.local_slice: offset must be compile-time ints; a runtime offset needs the "
                                  "fork's ttg.memdesc_dynamic_subslice, which stock Triton 3.6 does not have")
    if any(o < 0 or o + s > d for o, s, d in zip(offset, shape, have)):
        raise ValueError(f"tlx.local_slice: slice {offset}+{shape} is outside the buffer {have}")
    return offset, shape


def check_local_trans(buf: Any, dims: Any) -> tuple[int, ...]:
    buf = args.buffer(buf, "local_trans", one=True)
    dims = tuple(args.constant(d) for d in args.unwrap(dims))
    if sorted(dims) != list(range(len(buf.shape))):
        raise ValueError(f"tlx.local_trans: dims {dims} is not a permutation of the buffer's {len(buf.shape)} dims")
    return dims


def check_local_reshape(buf: Any, shape: Any) -> tuple[int, ...]:
    buf = args.buffer(buf, "local_reshape", one=True)
    shape = args.int_tuple(shape, "local_reshape", "shape")
    if math.prod(shape) != math.prod(buf.shape):
        raise ValueError(f"tlx.local_reshape: cannot reshape {tuple(buf.shape)} into {shape}")
    return shape


def check_local_reinterpret(buf: Any, whole: Sequence[int], sliced: bool, dtype: Any,
                            shape: Any) -> tuple[tl.dtype, tuple[int, ...]]:
    """``(dtype, shape)`` of ``local_reinterpret(buf, ...)``; ``whole`` is the shape of all of ``buf`` (every
    buffer of an allocation), ``sliced`` whether ``buf`` is a ``local_slice``."""
    buf = args.buffer(buf, "local_reinterpret")
    dtype = args.scalar_dtype(dtype, "local_reinterpret")
    whole = tuple(whole)
    shape = whole if args.unwrap(shape) is None else args.int_tuple(shape, "local_reinterpret", "shape")
    if sliced:
        raise NotImplementedError("tlx.local_reinterpret: stock Triton 3.6 reinterprets whole buffers only, not "
                                  "slices; reinterpret the buffer, then slice")
    if _nbytes(shape, dtype) != _nbytes(whole, buf.dtype):
        raise ValueError(f"tlx.local_reinterpret: {list(whole)} {buf.dtype} ({_nbytes(whole, buf.dtype)} bytes) and "
                         f"{list(shape)} {dtype} ({_nbytes(shape, dtype)} bytes) differ in size")
    return dtype, shape


def check_local_load(src: Any, layout: Any, relaxed: Any, rematerialize_coordinates: Any,
                     rematerialize_coordinates_group: Any) -> None:
    args.buffer(src, "local_load", one=True)
    check_register_layout("local_load", layout)
    args.compile_time_bool(relaxed, "local_load", "relaxed")
    args.compile_time_bool(rematerialize_coordinates, "local_load", "rematerialize_coordinates")
    group = args.unwrap(rematerialize_coordinates_group)
    if group is not None and (not args.is_int(group) or group < 0):
        raise TypeError(f"tlx.local_load: rematerialize_coordinates_group must be None or an int >= 0, got {group!r}")


def check_local_store(dst: Any, value: Any) -> None:
    dst = args.buffer(dst, "local_store", one=True)
    value = args.unwrap(value)
    shape = args.dims(value.shape) if isinstance(value, tl.tensor) and value.type.is_block() else []
    if shape != list(dst.shape):
        raise ValueError(f"tlx.local_store: value of shape {shape} does not match buffer shape {list(dst.shape)}")
    if value.dtype != dst.dtype:
        raise TypeError(f"tlx.local_store: value dtype {value.dtype} does not match buffer dtype {dst.dtype}")


def check_gather(op: str, buf: Any, indices: Any, axis: Any) -> int:
    """The axis (in ``[0, rank)``) of ``local_gather``/``local_scatter`` on ``buf`` with ``indices``."""
    buf = args.buffer(buf, op, one=True)
    indices = args.unwrap(indices)
    if not isinstance(indices, tl.tensor) or not indices.type.is_block() or not indices.dtype.is_int() \
            or indices.dtype.is_bool():
        raise TypeError(f"tlx.{op}: indices must be an integer tensor, got {args.describe(indices)}")
    axis = args.constant(axis)
    rank, have, shape = len(buf.shape), list(buf.shape), args.dims(indices.shape)
    if not args.is_int(axis) or not -rank <= axis < rank:
        raise ValueError(f"tlx.{op}: axis must be a compile-time int in [{-rank}, {rank}), got {axis!r}")
    axis %= rank
    if len(shape) != rank or any(shape[d] != have[d] for d in range(rank) if d != axis):
        raise ValueError(f"tlx.{op}: indices {shape} must have the buffer's rank and its dims {have} except "
                         f"along axis {axis}")
    return axis


def check_local_scatter(dst: Any, src: Any, indices: Any, axis: Any) -> int:
    axis = check_gather("local_scatter", dst, indices, axis)
    src, want = args.unwrap(src), args.dims(args.unwrap(indices).shape)
    shape = args.dims(src.shape) if isinstance(src, tl.tensor) and src.type.is_block() else []
    if shape != want or src.dtype != dst.dtype:
        raise ValueError(f"tlx.local_scatter: src must be a {want} {dst.dtype} tensor like indices, got "
                         f"{args.describe(src)}")
    return axis


def check_zeros(shape: Any, dtype: Any, layout: Any) -> tuple[tuple[int, ...], tl.dtype]:
    shape = args.int_tuple(shape, "zeros", "shape")
    dtype = args.scalar_dtype(dtype, "zeros")
    check_register_layout("zeros", layout)
    return shape, dtype


def check_register_layout(op: str, layout: Any) -> None:
    """An explicit register ``layout=`` (None: the default) is a TLX register layout."""
    layout = args.unwrap(layout)
    if layout is not None and (isinstance(layout, layouts.shared_layout_encoding) or not hasattr(layout, "to_ir")):
        raise TypeError(f"tlx.{op}: layout must be a TLX register layout (tlx.layout, tlx.amd_mfma_layout, "
                        f"tlx.dot_operand_layout), got {layout!r}")


def check_register_tensor(op: str, x: Any) -> tl.tensor:
    x = args.unwrap(x)
    if args.kind_of(x) != "tensor":
        raise TypeError(f"tlx.{op}: x must be a register tensor, got {args.describe(x)}")
    return x


def check_require_layout(x: Any, layout: Any, pin: Any, late_address_compute: Any) -> tl.tensor:
    x = check_register_tensor("require_layout", x)
    args.compile_time_bool(pin, "require_layout", "pin")
    args.compile_time_bool(late_address_compute, "require_layout", "late_address_compute")
    if args.unwrap(layout) is None:
        raise TypeError("tlx.require_layout: layout must be a TLX register layout (tlx.layout, tlx.amd_mfma_layout, "
                        "tlx.dot_operand_layout), got None")
    check_register_layout("require_layout", layout)
    return x


def check_layout_operand(op: str, x: Any, tensor_ok: bool = False) -> None:
    """An operand whose layout ``op`` reads: a TLX buffer (or barrier), or a register tensor if ``tensor_ok``."""
    kind = args.kind_of(x)
    if kind == "tensor" and tensor_ok:
        return
    if kind == "tensor":
        raise NotImplementedError(f"tlx.{op}: register layouts are chosen by stock passes after TLX's lowering, so "
                                  "they are not known when the kernel is built; pin one with tlx.require_layout")
    if kind not in (BUFFER, BUFFERS, MBARRIER, MBARRIERS):
        raise TypeError(f"tlx.{op}: expected a TLX buffer, got {args.describe(x)}")


def check_subslice() -> None:
    raise NotImplementedError("tlx.subslice slices Blackwell tensor memory, which sm_90 and AMD CDNA do not have; "
                              "slice shared memory with tlx.local_slice")


_MAKERS = "view_makers"  # in kernel_state: placeholder id -> the builder (function) that made the view


def _made_here(_semantic: Any, buf: buffered_tensor) -> buffered_tensor:
    kernel_state(_semantic).setdefault(_MAKERS, {})[buf.type.id] = _semantic.builder
    buf.type.origin = buf.type.origin or statement_location(_semantic)
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
    ty.origin = t.origin
    return _made_here(_semantic, buffered_tensor(buf.handle, ty))


@if_result_view
def _chosen(_semantic: Any, where: str, handle: Any, t: buffered_tensor_type) -> buffered_tensor:
    """The view an ``if`` yields, its buffer chosen by the branch taken: a new view, an ``anchor`` on the ``if``'s
    result made where the variable gets it, which the lowering resolves to the ``scf.if`` it retypes to yield the
    branches' memdescs (lowering.py, ``_Build.merge``). Every op then names it by id, as any view."""
    pid, _ = emit(_semantic, "anchor", operands=[tl.tensor(handle, tl.int32)], src=0, use="if", chosen=where)
    ty = buffered_tensor_type(t.element_ty, t.shape, t.layout, t.alloc_shape, t.num, pid, t.memdesc, t.barrier)
    ty.origin = f"{where} (chosen by a run-time if)"
    return _made_here(_semantic, buffered_tensor(handle, ty))


def _view(_semantic: Any, op: str, dtype: tl.dtype, shape: Sequence[int], layout: Any, alloc_shape: Sequence[int],
          num: int = 0, operands: Sequence[Any] = (), barrier: bool = False, **attrs: Any) -> buffered_tensor:
    """Emit the placeholder of a view-making op and wrap its handle."""
    memdesc = memdesc_type(_semantic, dtype, shape if not num else alloc_shape, layout, alloc_shape)
    pid, handle = emit(_semantic, op, operands=operands, type=memdesc, **attrs)
    ty = buffered_tensor_type(dtype, tuple(shape), layout, tuple(alloc_shape), num, pid, memdesc, barrier)
    return _made_here(_semantic, buffered_tensor(handle, ty))


@tlx_builtin
def local_alloc(shape: Sequence[ConstInt], dtype: tl.dtype, num: ConstInt, storage: str = "smem",
                reuse: Any = None, layout: Any = None, _semantic: Any = None) -> buffered_tensor:
    """Allocate ``num`` shared-memory buffers of ``shape``/``dtype``; index them with ``local_view``.

    Args:
        shape: one buffer's shape.
        dtype: the element dtype.
        num: how many buffers (a ring's stages).
        storage: ``"smem"`` (tensor memory is Blackwell-only).
        reuse: another allocation whose bytes these buffers reuse, or a ``storage_alias_spec``.
        layout: a shared layout (``tlx.swizzled_shared_layout_encoding``, ...); the planner's without it.
    """
    shape, dtype, num = check_local_alloc(shape, dtype, num, storage)
    planned = unwrap_if_constexpr(layout) is None and layouts.is_amd(compile_options(_semantic).arch)
    layout = _shared_layout(_semantic, "local_alloc", layout, shape, dtype)
    reuse = unwrap_if_constexpr(reuse)
    if reuse is None:
        # planned: an AMD buffer in the planner's layout, which the dot-operand pass may refine (tlx/dot_operands.py)
        return _view(_semantic, "local_alloc", dtype, shape, layout, (num, *shape), num,
                     **({"planned": True} if planned else {}))
    if isinstance(reuse, alias.storage_alias_spec_value):
        buf = _view(_semantic, "alias_alloc", dtype, shape, layout, (num, *shape), num, spec=reuse.type.id)
        return alias.member_alloc(_semantic, reuse, buf)
    root = _buffer(reuse, "local_alloc(reuse=...)", _semantic)
    alias.check_not_member(_semantic, root, "local_alloc(reuse=...)")
    check_reuse(root, root.type.num and root.type.alloc_shape == (root.type.num, *root.shape),
                _nbytes(root.type.alloc_shape, root.dtype), num, shape, dtype)
    # The same bytes seen through another type: a reinterpret of the reused allocation.
    return _view(_semantic, "memdesc_reinterpret", dtype, shape, layout, (num, *shape), num, src=root.type.id)


def _nbytes(shape: Sequence[int], dtype: tl.dtype) -> int:
    return math.prod(shape) * dtype.primitive_bitwidth // 8


def _shared_layout(_semantic: Any, op: str, layout: Any, shape: Sequence[int], dtype: tl.dtype) -> Any:
    """The shared layout of a new buffer: the planner's default, or the explicit ``layout=`` resolved."""
    layout = check_shared_layout(op, layout, shape, dtype)
    return layouts.shared_layout(shape, dtype, compile_options(_semantic).arch) if layout is None else layout


@tlx_builtin
def storage_alias_spec(storage: Any = layouts.storage_kind.smem, buffer_size_bytes: ConstInt | None = None,
                       _semantic: Any = None) -> Any:
    """A shared region for several allocations (``local_alloc(..., reuse=spec)``), placed by
    ``spec.set_buffer_overlap(tlx.reuse_group(...))``; see tlx/alias.py.

    Args:
        storage: ``tlx.storage_kind.smem`` (shared memory).
        buffer_size_bytes: the region's size in bytes, which the placement must fit (what it needs without it).
    """
    return alias.new_spec(_semantic, storage, buffer_size_bytes)


@method_op
@tlx_builtin
def local_view(local_allocated_buffers: buffered_tensor, buffer_idx: Scalar, _semantic: Any = None) -> buffered_tensor:
    """One buffer of a multi-buffer allocation, or one barrier of ``alloc_barriers`` (``bufs[i]`` too).

    Args:
        local_allocated_buffers: the allocation.
        buffer_idx: the buffer's index, known when compiling or at run time.
    """
    buf, idx = local_allocated_buffers, buffer_idx  # the fork's parameter names
    idx = check_local_view(buf, idx)
    buf = _anchored(_semantic, buf, "local_view")
    if isinstance(idx, int):
        check_view_index(idx, buf.type.num or buf.shape[0], bool(buf.type.num))
    index = _semantic.to_tensor(idx)
    if index.dtype != tl.int32:
        index = _semantic.cast(index, tl.int32)
    if not buf.type.num:
        return _row_view(_semantic, buf, index)
    return _view(_semantic, "memdesc_index", buf.dtype, buf.shape, buf.layout, buf.shape, operands=[index],
                 barrier=buf.type.barrier, src=buf.type.id)


def _row_view(_semantic: Any, buf: buffered_tensor, index: tl.tensor) -> buffered_tensor:
    """``local_view`` of a single view, as in the fork: row ``index`` of its first dim (shape[1:]), or
    for a 1-D view the one element ``index`` (shape [1])."""
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
    memdesc = memdesc_type(_semantic, buf.dtype, shape, layout, shape)
    pid, handle = emit(_semantic, "memdesc_index", operands=[index], type=memdesc, src=rows.type.id)
    return _made_here(_semantic, buffered_tensor(handle, buffered_tensor_type(buf.dtype, shape, layout, shape, 0, pid,
                                                                               memdesc)))


@tlx_builtin
def local_slice(buffer: buffered_tensor, offset: Sequence[ConstInt], shape: Sequence[ConstInt],
                _semantic: Any = None) -> buffered_tensor:
    """A same-rank sub-view of a buffer (no data movement).

    Args:
        buffer: one buffer.
        offset: where the view starts, per dimension.
        shape: the view's shape.
    """
    offset, shape = check_local_slice(buffer, offset, shape)  # ``buffer``: the fork's parameter name
    buf = _buffer(buffer, "local_slice", _semantic)
    return _view(_semantic, "memdesc_subslice", buf.dtype, shape, buf.layout, buf.type.alloc_shape,
                 src=buf.type.id, offsets=list(offset))


@tlx_builtin
def local_trans(input: buffered_tensor, dims: Sequence[ConstInt] = (1, 0), _semantic: Any = None) -> buffered_tensor:
    """The buffer seen with its dimensions permuted (no data movement).

    Args:
        input: one buffer.
        dims: the permutation.
    """
    dims = check_local_trans(input, dims)  # ``input``: the fork's parameter name
    buf = _buffer(input, "local_trans", _semantic)
    shape = tuple(buf.shape[d] for d in dims)
    return _view(_semantic, "memdesc_trans", buf.dtype, shape, layouts.transposed(buf.layout, dims), shape,
                 src=buf.type.id, order=list(dims))


@tlx_builtin
def local_reshape(src: buffered_tensor, shape: Sequence[ConstInt], _semantic: Any = None) -> buffered_tensor:
    """The buffer seen with another shape of the same size (no data movement).

    Args:
        src: one buffer.
        shape: the new shape.
    """
    shape = check_local_reshape(src, shape)  # ``src``: the fork's parameter name
    buf = _buffer(src, "local_reshape", _semantic)
    layout = layouts.reshaped(buf.layout, buf.shape, shape)
    return _view(_semantic, "memdesc_reshape", buf.dtype, shape, layout, shape, src=buf.type.id)


@tlx_builtin
def local_reinterpret(src: buffered_tensor, dtype: tl.dtype, shape: Sequence[ConstInt] | None = None,
                      layout: Any = None, _semantic: Any = None) -> buffered_tensor:
    """The same bytes seen as another dtype, shape (same byte size) and layout; no data movement.

    ``buf`` may be a whole multi-buffer allocation: the result is then one view over all its buffers.
    Without ``layout`` the result keeps ``buf``'s layout when dtype width and shape allow it, else it
    gets the planner's default. The bytes map to elements in row-major order as the interpreter
    models them only when both layouts are unswizzled; pass ``layout=`` to choose.

    Args:
        src: a buffer or a whole allocation.
        dtype: the new element dtype.
        shape: the new shape (the same byte size; ``src``'s shape without it).
        layout: the new shared layout.
    """
    buf = _buffer(src, "local_reinterpret", _semantic)  # ``src``: the fork's parameter name
    alias.check_not_member(_semantic, buf, "local_reinterpret")
    whole = buf.type.alloc_shape if buf.type.num else buf.shape
    dtype, shape = check_local_reinterpret(buf, whole, buf.type.alloc_shape != whole, dtype, shape)
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
    check_register_layout(op, layout)
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
def local_load(src: buffered_tensor, token: Any = None, layout: Any = None, relaxed: bool = False,
               rematerialize_coordinates: bool = False, rematerialize_coordinates_group: Any = None,
               _semantic: Any = None) -> tl.tensor:
    """Shared memory -> registers, in the register ``layout`` when given (else a coalesced one).

    ``relaxed`` and ``rematerialize_coordinates(_group)`` are the fork's AMD scheduling hints; stock
    Triton has no counterpart, so they are checked and have no effect.

    Args:
        src: one buffer.
        token: the fork's ``async_load`` token, accepted (the data is ready once ``async_load_wait_group``
            returned).
        layout: the register layout of the result.
        relaxed, rematerialize_coordinates, rematerialize_coordinates_group: AMD scheduling hints.
    """
    check_local_load(src, layout, relaxed, rematerialize_coordinates, rematerialize_coordinates_group)
    src = _buffer(src, "local_load", _semantic)
    if unwrap_if_constexpr(layout) is None:
        want = tensor_type(_semantic, src.dtype, src.shape, _register_layout(_semantic, src.shape, src.dtype))
    else:
        want = _tensor_type_in(_semantic, "local_load", layout, src.shape, src.dtype)
    _, value = emit(_semantic, "local_load", result=src.dtype, shape=src.shape, src=src.type.id, want=want)
    return tl.tensor(value, tl.block_type(src.dtype, list(src.shape)))


@tlx_builtin
def local_store(dst: buffered_tensor, src: tl.tensor, _semantic: Any = None) -> None:
    """Registers -> shared memory.

    Args:
        dst: one buffer.
        src: a tensor of ``dst``'s shape and dtype.
    """
    check_local_store(dst, src)
    dst = _buffer(dst, "local_store", _semantic)
    want = tensor_type(_semantic, dst.dtype, dst.shape, _register_layout(_semantic, dst.shape, dst.dtype))
    emit(_semantic, "local_store", operands=[src], dst=dst.type.id, want=want)


@tlx_builtin
def local_gather(src: buffered_tensor, indices: tl.tensor, axis: ConstInt, token: Any = None,
                 _semantic: Any = None) -> tl.tensor:
    """``out[..., i, ...] = src[..., indices[..., i, ...], ...]`` along ``axis`` (``torch.gather``).

    Stock Triton 3.6 has no shared-memory gather op: this is a ``local_load`` of ``src`` and a
    stock ``tt.gather``, whose lowering goes through shared memory again.

    Args:
        src: one buffer.
        indices: an integer tensor of the result's shape.
        axis: the dimension indexed.
        token: accepted, as ``local_load``'s.
    """
    axis = check_gather("local_gather", src, indices, axis)
    src, indices = _buffer(src, "local_gather", _semantic), unwrap_if_constexpr(indices)
    return _semantic.gather(local_load(src, token, _semantic=_semantic), indices, axis)


#: Largest compare tensor (indices x destination rows) local_scatter builds.
SCATTER_LIMIT = 1 << 16


@tlx_builtin
def local_scatter(dst: buffered_tensor, src: tl.tensor, indices: tl.tensor, axis: ConstInt, token: Any = None,
                  _semantic: Any = None) -> None:
    """``dst[..., indices[..., i, ...], ...] = src[..., i, ...]`` along ``axis``; the last duplicate wins.

    Stock Triton 3.6 has no scatter op. This loads ``dst``, finds for each destination row the last
    ``i`` that writes it (a compare of every index against every row, at most
    :data:`SCATTER_LIMIT` elements), gathers those values with ``tt.gather`` and stores ``dst`` back.

    Args:
        dst: one buffer.
        src: the values, of ``indices``'s shape.
        indices: an integer tensor.
        axis: the dimension indexed.
        token: accepted, as ``local_load``'s.
    """
    axis = check_local_scatter(dst, src, indices, axis)
    dst, src, indices = _buffer(dst, "local_scatter", _semantic), unwrap_if_constexpr(src), unwrap_if_constexpr(indices)
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
def zeros(shape: Sequence[ConstInt], dtype: tl.dtype, layout: Any = None, _semantic: Any = None) -> tl.tensor:
    """A zero tensor, made directly in the register ``layout`` when given (as Gluon MFMA accumulators are).

    Args:
        shape: the tensor's shape.
        dtype: its dtype.
        layout: a register layout.
    """
    shape, dtype = check_zeros(shape, dtype, layout)
    shape = list(shape)
    if unwrap_if_constexpr(layout) is None:
        return _semantic.full(shape, 0, dtype)
    want = _tensor_type_in(_semantic, "zeros", layout, shape, dtype)
    _, value = emit(_semantic, "zeros", result=dtype, shape=shape, want=want, float=dtype.is_floating())
    return tl.tensor(value, tl.block_type(dtype, shape))


@tlx_builtin
def require_layout(x: tl.tensor, layout: Any, pin: bool = True, late_address_compute: bool = False,
                   _semantic: Any = None) -> tl.tensor:
    """``x`` converted to the register ``layout``; TLX ops that take it use that layout directly.

    Stock Triton cannot pin a layout against its own passes: ``remove_layout_conversions`` may still
    move the conversion, as for any ``ttg.convert_layout``. ``pin`` and ``late_address_compute`` are
    checked and otherwise have no effect.

    Args:
        x: a register tensor.
        layout: the register layout.
        pin, late_address_compute: the fork's hints, checked.
    """
    x = check_require_layout(x, layout, pin, late_address_compute)
    want = _tensor_type_in(_semantic, "require_layout", layout, x.shape, x.dtype)
    _, value = emit(_semantic, "require_layout", operands=[x], result=x.dtype, shape=list(x.shape), want=want)
    return tl.tensor(value, x.type)


@tlx_builtin
def release_layout(x: tl.tensor, _semantic: Any = None) -> tl.tensor:
    """``x`` free to take any layout again: every tensor is, once TLX's lowering is done, so this is ``x``.

    Args:
        x: a register tensor.
    """
    return check_register_tensor("release_layout", x)


@tlx_builtin
def subslice(local_allocated_buffer: Any, offset: ConstInt, size: ConstInt, _semantic: Any = None) -> buffered_tensor:
    """The fork's tensor-memory column slice: tensor memory is Blackwell-only.

    Args:
        local_allocated_buffer, offset, size: the fork's; refused (tensor memory).
    """
    check_subslice()


def _layout_of(_semantic: Any, x: Any, op: str) -> Any:
    check_layout_operand(op, x)
    return unwrap_if_constexpr(x).layout


@tlx_builtin
def assert_same_layout(lhs: buffered_tensor, rhs: Any, _semantic: Any = None) -> None:
    """Compile-time check that two buffers (or a buffer and a shared layout) have one layout.

    Args:
        lhs: a buffer.
        rhs: another buffer, or a shared layout.
    """
    have = _layout_of(_semantic, lhs, "assert_same_layout")
    rhs = unwrap_if_constexpr(rhs)
    lhs = unwrap_if_constexpr(lhs)
    want = _layout_of(_semantic, rhs, "assert_same_layout") if isinstance(rhs, (tl.tensor, buffered_tensor)) \
        else _shared_layout(_semantic, "assert_same_layout", rhs, lhs.shape, lhs.dtype)
    have, want = (memdesc_type(_semantic, lhs.dtype, lhs.shape, x, lhs.shape) for x in (have, want))
    if have != want:  # printed as memdesc types: attributes have no printer of their own in the bindings
        raise AssertionError(f"tlx.assert_same_layout: {have} is not {want}")


@tlx_builtin
def dump_layout(x: Any, _semantic: Any = None) -> None:
    """Print a value's layout while the kernel compiles: a buffer's shared memory type now, a register
    tensor's TritonGPU type when TLX lowers (the layout ``convert_to_ttgpuir`` chose; stock passes
    may still change it, and stock Triton has no hook after them).

    Args:
        x: a buffer or a register tensor.
    """
    x = unwrap_if_constexpr(x)
    check_layout_operand("dump_layout", x, tensor_ok=True)
    if isinstance(x, tl.tensor):
        emit(_semantic, "dump_layout", operands=[x])
        return
    print(f"tlx.dump_layout: {x.type.memdesc}", file=sys.stderr)
