"""CPU semantics of every TLX op for ``TRITON_INTERPRET=1``.

The public op functions in ``tritium.tlx`` call ``interpreter.<op>(...)`` with the TLX signature
(minus ``_semantic``) whenever they run under Triton's interpreter. Values are the interpreter's own:
``tl.tensor`` wrapping a numpy ``TensorHandle``, ``tl.constexpr`` or plain Python values. Shared
memory is a numpy byte array per allocation, so views, reuse and reinterpretation alias real storage.

Asynchronous hardware is modelled so that missing synchronisation gives wrong numbers instead of
silently working: cp.async and TMA copies gather from global memory when issued but only land in
shared memory at the matching ``async_load_wait_group`` / ``barrier_wait``. Fresh allocations are
filled with 0xFF bytes (NaN for floats), so reading a buffer that was never written is visible too.
See docs/tlx-interpreter.md.
"""
from __future__ import annotations

import ctypes
import math
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np
import triton.language as tl

from tritium import compat

from . import alias
from .interp_tasks import AsyncTask, AsyncTasks, TLXDeadlockError, current_context, wait_until
from .triton_compat import TensorHandle, interpreter_builder, interpreter_semantic, np_dtype, unwrap_if_constexpr

__all__ = [
    "SharedBuffer", "MBarrier", "BarrierArray", "AsyncToken", "TLXDeadlockError", "check_async_dot_shape",
    "local_alloc", "local_view", "local_slice", "local_trans", "local_reshape", "local_reinterpret", "local_load",
    "local_store", "async_load", "async_load_commit_group", "async_load_wait_group", "async_dot", "async_dot_wait",
    "alloc_barriers", "barrier_expect_bytes", "barrier_wait", "barrier_arrive", "fence", "fence_async_shared",
    "async_descriptor_load", "async_descriptor_store", "async_descriptor_store_wait", "make_tensor_descriptor",
    "async_tasks", "async_task", "async_task_replica_id", "thread_id", "clock64", "dtype_of", "size_of",
    "local_gather", "local_scatter", "zeros", "require_layout", "release_layout", "subslice", "assert_same_layout",
    "dump_layout", "storage_alias_spec"
]
__all__ += ["ThreadBarrier", "RemoteBarrier", "named_barrier_wait", "named_barrier_arrive", "alloc_warp_barrier",
            "cluster_cta_rank", "cluster_size_1d", "cluster_barrier", "fence_mbarrier_init_cluster", "remote_view",
            "vote_ballot_sync", "warp_redux", "get_fp8_format_name"]
__all__ += ["DescriptorPtr", "allocate_tensor_descriptor", "reinterpret_tensor_descriptor",
            "async_descriptor_prefetch_tensor", "async_store"]
__all__ += ["prefetch", "buffer_load", "buffer_store", "buffer_atomic_add", "buffer_load_to_local"]

_STORAGE_KINDS = ("smem", "tmem", "smemCluster")
_FENCE_SCOPES = ("gpu", "sys", "async_shared")
_POISON = 0xFF
_WARP_SIZE = 32
_NUM_NAMED_BARRIERS = 16


def _semantic() -> Any:
    return interpreter_semantic()


def _value(x: Any) -> Any:
    return unwrap_if_constexpr(x)


def _as_int(x: Any) -> int:
    x = _value(x)
    if isinstance(x, tl.tensor):
        if x.type.is_block():
            raise TypeError(f"expected a scalar, got a tensor of shape {x.shape}")
        return int(x.handle.data.item())
    return int(x)


def _as_bool(x: Any, default: bool) -> bool:
    x = _value(x)
    if x is None:
        return default
    if isinstance(x, tl.tensor):
        return bool(x.handle.data.item())
    return bool(x)


def _as_shape(shape: Any) -> tuple[int, ...]:
    shape = _value(shape)
    if isinstance(shape, tl.tensor) or not hasattr(shape, "__iter__"):
        return (_as_int(shape), )
    return tuple(_as_int(s) for s in shape)


def _np_dtype(dtype: tl.dtype) -> np.dtype:
    return np_dtype(dtype)


def _scalar(value: int, dtype: tl.dtype) -> tl.tensor:
    return tl.tensor(TensorHandle(np.array([value], dtype=_np_dtype(dtype)), dtype), dtype)


def _to_register(data: np.ndarray, dtype: tl.dtype) -> tl.tensor:
    handle = TensorHandle(np.array(data, order="C"), dtype)
    return tl.tensor(handle, tl.block_type(dtype, list(data.shape)))


# ----------------------------------------------------------------------------------------------
# Local (shared / tensor memory) buffers
# ----------------------------------------------------------------------------------------------


class SharedBuffer:
    """A view into one allocation: ``data`` is a numpy view of the allocation's byte ``storage``."""

    def __init__(self, data: np.ndarray, dtype: tl.dtype, storage: np.ndarray) -> None:
        self.data = data
        self.dtype = dtype
        self.storage = storage

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    def __getitem__(self, idx: Any) -> "SharedBuffer":
        return local_view(self, idx)

    def view(self, data: np.ndarray, dtype: Optional[tl.dtype] = None) -> "SharedBuffer":
        return SharedBuffer(data, dtype or self.dtype, self.storage)

    def byte_offset(self) -> int:
        return self.data.__array_interface__["data"][0] - self.storage.__array_interface__["data"][0]

    def __repr__(self) -> str:
        return f"SharedBuffer({self.dtype}, shape={self.shape})"


def _buffer(x: Any, op: str) -> SharedBuffer:
    x = _value(x)
    if not isinstance(x, SharedBuffer):
        raise TypeError(f"{op}: expected a local buffer (from local_alloc), got {type(x).__name__}")
    return x


def local_alloc(shape: Any, dtype: Any, num: Any, storage: Any = "smem", reuse: Any = None,
                layout: Any = None) -> SharedBuffer:
    """Allocate ``num`` buffers of ``shape``; the layout only matters to the compile path."""
    shape, dtype, num = _as_shape(shape), _value(dtype), _as_int(num)
    kind = getattr(_value(storage), "value", _value(storage))
    if kind not in _STORAGE_KINDS:
        raise ValueError(f"local_alloc: storage must be one of {_STORAGE_KINDS}, got {storage!r}")
    if num < 1:
        raise ValueError(f"local_alloc: num must be >= 1, got {num}")
    np_dtype = _np_dtype(dtype)
    nbytes = num * math.prod(shape) * np_dtype.itemsize
    if isinstance(_value(reuse), AliasSpec):
        return _value(reuse).add(AliasMember(num, shape, dtype))
    if reuse is None:
        raw = np.full(nbytes, _POISON, dtype=np.uint8)
    else:
        raw = _buffer(reuse, "local_alloc(reuse=...)").storage
        if raw.nbytes < nbytes:
            raise ValueError(f"local_alloc: reused allocation has {raw.nbytes} bytes, {nbytes} needed")
    return SharedBuffer(raw[:nbytes].view(np_dtype).reshape((num, ) + shape), dtype, raw)


def local_view(local_allocated_buffers: Any, buffer_idx: Any) -> Any:
    """Select buffer ``idx`` of a multi-buffer allocation or barrier array."""
    buf, idx = local_allocated_buffers, buffer_idx  # the fork's parameter names
    buf, idx = _value(buf), _as_int(idx)
    if isinstance(buf, BarrierArray):
        return buf[idx]
    if isinstance(buf, AliasMember):
        return buf.at(idx)
    buf = _buffer(buf, "local_view")
    if not 0 <= idx < buf.shape[0]:
        raise IndexError(f"local_view: index {idx} out of range for {buf.shape[0]} buffers")
    # A 1-D view indexes to its one element ``idx``, shape [1], as in the fork.
    return buf.view(buf.data[idx:idx + 1] if buf.data.ndim == 1 else buf.data[idx])


def local_slice(buffer: Any, offset: Any, shape: Any) -> SharedBuffer:
    buf = buffer  # the fork's parameter names
    buf, offset, shape = _buffer(buf, "local_slice"), _as_shape(offset), _as_shape(shape)
    if not len(offset) == len(shape) == buf.data.ndim:
        raise ValueError(f"local_slice: offset {offset} and shape {shape} must have rank {buf.data.ndim}")
    if any(o < 0 or o + s > d for o, s, d in zip(offset, shape, buf.shape)):
        raise IndexError(f"local_slice: offset {offset} + shape {shape} exceeds buffer shape {buf.shape}")
    return buf.view(buf.data[tuple(slice(o, o + s) for o, s in zip(offset, shape))])


def local_trans(input: Any, dims: Any = (1, 0)) -> SharedBuffer:
    buf = input  # the fork's parameter names
    buf = _buffer(buf, "local_trans")
    return buf.view(buf.data.transpose(_as_shape(dims)))


def local_reshape(src: Any, shape: Any) -> SharedBuffer:
    buf = src  # the fork's parameter names
    buf, shape = _buffer(buf, "local_reshape"), _as_shape(shape)
    data = buf.data.view()
    try:
        data.shape = shape  # raises instead of copying, so the result keeps aliasing the buffer
    except (AttributeError, ValueError) as exc:
        raise ValueError(f"local_reshape: cannot view buffer of shape {buf.shape} as {shape}") from exc
    return buf.view(data)


def local_reinterpret(src: Any, dtype: Any, shape: Any = None, layout: Any = None) -> SharedBuffer:
    """Reinterpret the bytes at the start of a contiguous view as ``dtype``/``shape``."""
    buf = src  # the fork's parameter names
    buf, dtype = _buffer(buf, "local_reinterpret"), _value(dtype)
    shape = buf.shape if _value(shape) is None else _as_shape(shape)
    if not buf.data.flags.c_contiguous:
        raise ValueError("local_reinterpret: the view must be contiguous (not a transposed or sliced view)")
    np_dtype = _np_dtype(dtype)
    start, nbytes = buf.byte_offset(), math.prod(shape) * np_dtype.itemsize
    if nbytes != buf.data.nbytes:  # as the compile path: a reinterpret keeps the size
        raise ValueError(f"local_reinterpret: {dtype}{list(shape)} is {nbytes} bytes, the buffer {buf.data.nbytes}")
    return buf.view(buf.storage[start:start + nbytes].view(np_dtype).reshape(shape), dtype)


def local_load(src: Any, token: Any = None, layout: Any = None, relaxed: Any = False,
               rematerialize_coordinates: Any = False, rematerialize_coordinates_group: Any = None) -> tl.tensor:
    """The register layout and the fork's AMD scheduling hints only matter to the compile path."""
    src = _buffer(src, "local_load")
    return _to_register(src.data, src.dtype)


def local_store(dst: Any, src: Any) -> None:
    dst = _buffer(dst, "local_store")
    if not isinstance(src, tl.tensor) or _as_shape(src.shape) != dst.shape:
        raise ValueError(f"local_store: value must be a tensor of shape {dst.shape}, got "
                         f"{getattr(src, 'shape', type(src).__name__)}")
    if src.dtype != dst.dtype:
        raise TypeError(f"local_store: value dtype {src.dtype} does not match buffer dtype {dst.dtype}")
    dst.data[...] = src.handle.data


def _gather_axis(op: str, buf: SharedBuffer, indices: Any, axis: Any) -> tuple[np.ndarray, int]:
    indices, axis = _value(indices), _as_int(axis)
    if not isinstance(indices, tl.tensor) or not indices.dtype.is_int():
        raise TypeError(f"{op}: indices must be an integer tensor, got {indices!r}")
    idx, rank = indices.handle.data.astype(np.int64), buf.data.ndim
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} out of range for rank {rank}")
    axis %= rank
    if idx.ndim != rank or any(idx.shape[d] != buf.shape[d] for d in range(rank) if d != axis):
        raise ValueError(f"{op}: indices {list(idx.shape)} must match the buffer {list(buf.shape)} except on axis {axis}")
    if idx.size and (idx.min() < 0 or idx.max() >= buf.shape[axis]):
        raise IndexError(f"{op}: an index is outside [0, {buf.shape[axis]}) on axis {axis}")
    return idx, axis


def local_gather(src: Any, indices: Any, axis: Any, token: Any = None) -> tl.tensor:
    """``out[.., i, ..] = src[.., indices[.., i, ..], ..]`` along ``axis`` (``torch.gather``)."""
    buf = _buffer(src, "local_gather")
    idx, axis = _gather_axis("local_gather", buf, indices, axis)
    return _to_register(np.take_along_axis(buf.data, idx, axis), buf.dtype)


def local_scatter(dst: Any, src: Any, indices: Any, axis: Any, token: Any = None) -> None:
    """``dst[.., indices[.., i, ..], ..] = src[.., i, ..]`` along ``axis``; the last duplicate wins."""
    buf = _buffer(dst, "local_scatter")
    idx, axis = _gather_axis("local_scatter", buf, indices, axis)
    if not isinstance(src, tl.tensor) or src.handle.data.shape != idx.shape or src.dtype != buf.dtype:
        raise ValueError(f"local_scatter: src must be a {list(idx.shape)} {buf.dtype} tensor like indices")
    np.put_along_axis(buf.data, idx, src.handle.data, axis)  # numpy keeps the last of duplicate indices


def _register_tensor(x: Any, op: str) -> tl.tensor:
    x = _value(x)
    if not isinstance(x, tl.tensor) or not x.type.is_block():
        raise TypeError(f"{op}: x must be a register tensor, got {x!r}")
    return x


def zeros(shape: Any, dtype: Any, layout: Any = None) -> tl.tensor:
    """Register layouts only matter to the compile path."""
    dtype = _value(dtype)
    return _to_register(np.zeros(_as_shape(shape), _np_dtype(dtype)), dtype)


def require_layout(x: Any, layout: Any, pin: Any = True, late_address_compute: Any = False) -> tl.tensor:
    return _register_tensor(x, "require_layout")


def release_layout(x: Any) -> tl.tensor:
    return _register_tensor(x, "release_layout")


def subslice(local_allocated_buffer: Any, offset: Any, size: Any) -> None:
    raise NotImplementedError("subslice slices Blackwell tensor memory; slice shared memory with local_slice")


def assert_same_layout(lhs: Any, rhs: Any) -> None:
    """Layouts do not exist in the interpreter; only the operands are checked."""
    _buffer(lhs, "assert_same_layout")


def dump_layout(x: Any) -> None:
    x = _value(x)
    what = x if isinstance(x, tl.tensor) else _buffer(x, "dump_layout")
    print(f"dump_layout: {what!r} (the interpreter has no layouts: values are row-major arrays)", file=sys.stderr)


class AliasMember(SharedBuffer):
    """An allocation made with ``reuse=<storage_alias_spec>``: its buffers live where the spec's plan puts them."""

    def __init__(self, num: int, shape: tuple[int, ...], dtype: tl.dtype) -> None:
        self.num, self.item_shape, self.group = num, shape, 1
        self.nbytes = math.prod(shape) * _np_dtype(dtype).itemsize
        raw = np.full(num * self.nbytes, _POISON, dtype=np.uint8)
        super().__init__(raw.view(_np_dtype(dtype)).reshape((num, ) + shape), dtype, raw)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.num, ) + self.item_shape

    def place(self, raw: np.ndarray, stride: int, offset: int, group: int) -> None:
        """Buffer ``i`` at byte ``(i // group) * stride + offset + (i % group) * nbytes`` of ``raw``."""
        item = _np_dtype(self.dtype).itemsize
        inner = tuple(item * math.prod(self.item_shape[d + 1:]) for d in range(len(self.item_shape)))
        base = raw[offset:offset + (raw.nbytes - offset) // item * item].view(_np_dtype(self.dtype))
        self.data = np.lib.stride_tricks.as_strided(base, (self.num // group, group) + self.item_shape,
                                                    (stride, self.nbytes) + inner)
        self.storage, self.group = raw, group

    def at(self, idx: int) -> SharedBuffer:
        if not 0 <= idx < self.num:
            raise IndexError(f"local_view: index {idx} out of range for {self.num} buffers")
        data = self.data[idx // self.group, idx % self.group] if self.data.ndim > len(self.item_shape) + 1 \
            else self.data[idx]
        return SharedBuffer(data, self.dtype, self.storage)


class AliasSpec:
    """``storage_alias_spec``: one region for its members, placed as ``tritium.tlx.alias.place`` says."""

    def __init__(self, size: Optional[int]) -> None:
        self.size, self.members, self.explicit = size, [], False
        self.buffer_size_bytes = size

    def add(self, member: AliasMember) -> AliasMember:
        if self.explicit:
            raise ValueError("local_alloc: reuse=<storage_alias_spec> after its set_buffer_overlap")
        self.members.append(member)
        if len({m.num for m in self.members}) == 1:  # until set_buffer_overlap: all at one offset
            self._apply(alias.reuse_group(*self.members))
        return member

    def set_buffer_overlap(self, overlap_def: Any) -> None:
        overlap_def = _value(overlap_def)
        if not isinstance(overlap_def, alias.reuse_group):
            raise TypeError(f"set_buffer_overlap: overlap_def must be a reuse_group, got {overlap_def!r}")
        self.explicit = True
        self._apply(overlap_def)

    def _apply(self, tree: Any) -> None:
        members = {id(m): alias.Member(id(m), m.num, m.nbytes) for m in self.members}
        plan = alias.place(tree, members, id, "set_buffer_overlap")
        total = plan.stride * plan.slots
        if self.size is not None and total > self.size:
            raise ValueError(f"set_buffer_overlap: the allocations need {total} bytes, more than "
                             f"buffer_size_bytes={self.size}")
        raw = np.full(self.size or total, _POISON, dtype=np.uint8)
        for m in self.members:
            if id(m) not in plan.where:
                raise ValueError("set_buffer_overlap: every allocation made with reuse=<this spec> must be in the tree")
            m.place(raw, plan.stride, *plan.where[id(m)])


def storage_alias_spec(storage: Any = "smem", buffer_size_bytes: Any = None) -> AliasSpec:
    kind = getattr(_value(storage), "value", _value(storage))
    if kind != "smem":
        raise NotImplementedError(f"storage_alias_spec: storage={kind} is not shared memory")
    size = _value(buffer_size_bytes)
    return AliasSpec(None if size is None else _as_int(size))


# ----------------------------------------------------------------------------------------------
# cp.async copies
# ----------------------------------------------------------------------------------------------


class AsyncToken:
    """Result of an async op; it only orders ops in the compile path."""


def async_load(src: Any, result: Any, mask: Any = None, other: Any = None, cache_modifier: str = "",
               eviction_policy: str = "", is_volatile: bool = False, bulk: Any = False, bulk_size: Any = None,
               barrier: Any = None) -> AsyncToken:
    """Gather now (like the hardware reading pointers at issue) but land at the matching wait; masked
    elements get ``other`` (zero when omitted). ``bulk=True`` copies ``bulk_size`` bytes (default: the
    whole 1-D buffer) from the scalar pointer ``src``; they land when ``barrier`` completes its phase
    and count toward its expected bytes, as ``cp.async.bulk ... mbarrier::complete_tx`` does."""
    from .async_copy import check_bulk_args
    dst = _buffer(result, "async_load")
    sem = _semantic()
    mask, other, bulk_size, barrier = _value(mask), _value(other), _value(bulk_size), _value(barrier)
    if _as_bool(bulk, False):
        nbytes = dst.data.nbytes if bulk_size is None else _as_int(bulk_size)
        check_bulk_args(dst.shape, dst.data.itemsize * 8, nbytes, barrier, mask, other,
                        isinstance(barrier, MBarrier))
        ptr = _value(src)
        if not isinstance(ptr, tl.tensor) or ptr.type.is_block() or not ptr.dtype.is_ptr():
            raise TypeError(f"async_load(bulk=True): src must be a scalar pointer, got {getattr(ptr, 'type', ptr)}")
        address = int(ptr.handle.data.item())
        if address % 16 or nbytes % 16:
            raise ValueError(f"async_load(bulk=True): cp.async.bulk needs a 16-byte aligned source and a multiple of "
                             f"16 bytes; got address {address:#x} and bulk_size={nbytes}")
        byte_ptrs = TensorHandle(np.uint64(address) + np.arange(nbytes, dtype=np.uint64),
                                         tl.pointer_type(tl.uint8))
        every = TensorHandle(np.ones(nbytes, dtype=bool), tl.int1)
        values = compat.interpreter_masked_load(interpreter_builder(), byte_ptrs, every)
        raw = dst.storage[dst.byte_offset():dst.byte_offset() + nbytes]
        barrier.inflight.append((raw, values.data.view(np.uint8)))
        return AsyncToken()
    if bulk_size is not None or barrier is not None:
        raise ValueError(f"async_load: {'bulk_size' if bulk_size is not None else 'barrier'} requires bulk=True")
    mask = None if mask is None else sem.to_tensor(mask)
    other = None if other is None else sem.to_tensor(other)
    values = compat.semantic_load(sem, _value(src), mask, other, _value(cache_modifier), _value(eviction_policy),
                                  _as_bool(is_volatile, False))
    if _as_shape(values.shape) != dst.shape or values.dtype != dst.dtype:
        raise ValueError(f"async_load: pointers to {values.dtype}{list(values.shape)} do not match buffer "
                         f"{dst.dtype}{list(dst.shape)}")
    current_context().open_copies.append((dst.data, values.handle.data))
    return AsyncToken()


def _check_tokens(tokens: Any, op: str) -> None:
    tokens = _value(tokens)
    items = getattr(tokens, "values", tokens)
    if not isinstance(items, (list, tuple)) or not all(isinstance(_value(t), AsyncToken) for t in items):
        raise TypeError(f"{op}: tokens must be a list of async tokens, got {tokens!r}")


def async_load_commit_group(tokens: Sequence[Any] = []) -> AsyncToken:
    """Close the group of every copy issued since the last commit (``tokens`` only document them)."""
    _check_tokens(tokens, "async_load_commit_group")
    ctx = current_context()
    ctx.groups.append(ctx.open_copies)
    ctx.open_copies = []
    return AsyncToken()


def async_load_wait_group(pendings: Any, tokens: Sequence[Any] = []) -> AsyncToken:
    """Land every committed group except the newest ``pendings`` ones."""
    pendings = _as_int(pendings)
    if pendings < 0:
        raise ValueError(f"async_load_wait_group: pendings must be >= 0, got {pendings}")
    _check_tokens(tokens, "async_load_wait_group")
    ctx = current_context()
    while len(ctx.groups) > pendings:
        for dst, values in ctx.groups.pop(0):
            dst[...] = values
    return AsyncToken()


def prefetch(pointer: Any, level: Any = "L2", mask: Any = None, tensormap: Any = False) -> None:
    """A cache hint: nothing to do on the CPU once the arguments are checked."""
    from .async_copy import check_prefetch_args
    pointer, level, mask, tensormap = _value(pointer), _value(level), _value(mask), _value(tensormap)
    check_prefetch_args(level, tensormap)
    if tensormap:
        return
    if not isinstance(pointer, tl.tensor) or not pointer.dtype.is_ptr():
        raise TypeError(f"prefetch: pointer must be a pointer or a tensor of pointers, got "
                        f"{getattr(pointer, 'type', pointer)}")
    if mask is not None:
        mask = _semantic().to_tensor(mask)
        if mask.dtype != tl.int1:
            raise TypeError(f"prefetch: mask must be boolean, got {mask.dtype}")
        if mask.type.is_block():
            if not pointer.type.is_block():
                raise ValueError(f"prefetch: mask of shape {list(mask.shape)} for a scalar pointer")
            _semantic().broadcast_impl_shape(mask, list(pointer.shape))  # raises unless it broadcasts


def _buffer_op(name: str) -> Any:
    """The AMD buffer op ``name`` (tlx/buffer_ops.py): the same code, on the interpreter's semantic."""

    def op(*args: Any, **kwargs: Any) -> Any:
        from . import buffer_ops
        return getattr(buffer_ops, name).__wrapped__(*args, _semantic=_semantic(), **kwargs)

    op.__name__ = op.__qualname__ = name
    return op


buffer_load = _buffer_op("buffer_load")
buffer_store = _buffer_op("buffer_store")
buffer_atomic_add = _buffer_op("buffer_atomic_add")
buffer_load_to_local = _buffer_op("buffer_load_to_local")


# ----------------------------------------------------------------------------------------------
# Tensor-core MMA
# ----------------------------------------------------------------------------------------------


def check_async_dot_shape(M: int, N: int, K: int, dtype: Optional[tl.dtype] = None) -> None:
    """Reject shapes Hopper wgmma cannot execute; shared by the compile path and the interpreter.

    K must be a multiple of the instruction K (32 bytes of operand: 16 for fp16, 8 for tf32), or of
    the smallest one (8) when the operand ``dtype`` is not given.
    """
    if M <= 0 or M % 64:
        raise ValueError(f"async_dot: M={M} must be a positive multiple of 64 (Hopper wgmma)")
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"async_dot: N={N} must be a multiple of 8 in [8, 256] (Hopper wgmma)")
    instr_k = 8 if dtype is None else 256 // dtype.primitive_bitwidth
    if K <= 0 or K % instr_k:
        raise ValueError(f"async_dot: K={K} must be a positive multiple of {instr_k} (Hopper wgmma"
                         f"{'' if dtype is None else f' with {dtype} operands'})")


def async_dot(A: Any, B: Any, acc: Any = None, use_acc: Any = None, pred: Any = None, mBarriers: Sequence[Any] = [],
              two_ctas: bool = False, force_async: bool = False, input_precision: Any = None,
              out_dtype: Any = tl.float32) -> tl.tensor:
    """``acc + A @ B`` computed eagerly like ``tl.dot``; completion is immediate, so ``mBarriers`` arrive now."""
    a = _value(A)
    a = local_load(a) if isinstance(a, SharedBuffer) else a
    b = local_load(_buffer(B, "async_dot (operand B)"))
    if not isinstance(a, tl.tensor) or len(a.shape) != 2 or len(b.shape) != 2:
        raise TypeError("async_dot: A must be a 2D buffer or tensor and B a 2D buffer")
    (M, K), (KB, N) = _as_shape(a.shape), _as_shape(b.shape)
    if K != KB:
        raise ValueError(f"async_dot: A is {M}x{K} but B is {KB}x{N}")
    check_async_dot_shape(M, N, K, a.dtype)
    acc, out_dtype = _value(acc), _value(out_dtype)
    if not _as_bool(pred, True):  # not issued: the accumulator is left as it was
        return acc if acc is not None else _to_register(np.zeros((M, N), _np_dtype(out_dtype)), out_dtype)
    use_acc = acc is not None and _as_bool(use_acc, True)
    if a.dtype == tl.bfloat16:  # Triton 3.6's interpreted tl.dot multiplies bf16 bit patterns as integers
        a, b = _semantic().cast(a, tl.float32), _semantic().cast(b, tl.float32)  # exact: bf16 fits in fp32
        input_precision = "ieee"
    result = _semantic().dot(a, b, acc if use_acc else None, _value(input_precision), None, out_dtype)
    for bar in mBarriers:
        _barrier(bar, "async_dot(mBarriers=...)").arrive(1)
    return result


def async_dot_wait(pendings: Any, inp: Any) -> Any:
    if _as_int(pendings) < 0:
        raise ValueError(f"async_dot_wait: pendings must be >= 0, got {_as_int(pendings)}")
    return inp


# ----------------------------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------------------------


class MBarrier:
    """An mbarrier: a phase completes when all arrivals happened and all expected bytes landed."""

    def __init__(self, arrive_count: int, per_thread: bool = False) -> None:
        self.arrive_count = arrive_count
        self.per_thread = per_thread  # alloc_warp_barrier: each thread of an arriving task counts
        self.pending = arrive_count
        self.tx = 0
        self.phase = 0  # parity of the phase in progress
        self.inflight: list = []  # TMA copies signalling this barrier: (dst view, values)

    def arrive(self, count: int) -> None:
        if count > self.pending:
            raise RuntimeError(f"barrier_arrive: {count} arrival(s) but only {self.pending} of "
                               f"{self.arrive_count} pending in the current phase")
        self.pending -= count
        self._maybe_complete()

    def expect(self, nbytes: int) -> None:
        self.tx += nbytes

    def land(self) -> None:
        """Complete in-flight TMA loads: the data appears and their bytes count down."""
        for dst, values in self.inflight:
            dst[...] = values
            self.tx -= values.nbytes
        self.inflight.clear()
        self._maybe_complete()

    def phase_completed(self, phase: int) -> bool:
        self.land()
        return self.phase != phase

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase ^= 1
            self.pending = self.arrive_count

    def __repr__(self) -> str:
        return (f"MBarrier(phase={self.phase}, pending arrivals={self.pending}/{self.arrive_count}, "
                f"pending bytes={self.tx})")


class BarrierArray:
    """``alloc_barriers`` result; index it (``local_view`` or ``[]``) to get one barrier."""

    def __init__(self, barriers: list[MBarrier]) -> None:
        self.barriers = barriers

    def __getitem__(self, idx: Any) -> MBarrier:
        idx = _as_int(idx)
        if not 0 <= idx < len(self.barriers):
            raise IndexError(f"local_view: barrier index {idx} out of range for {len(self.barriers)} barriers")
        return self.barriers[idx]


def _barrier(bar: Any, op: str) -> MBarrier:
    bar = _value(bar)
    if isinstance(bar, RemoteBarrier):
        raise TypeError(f"{op} does not take a remote_view of an mbarrier: pass the local mbarrier")
    if not isinstance(bar, MBarrier):
        raise TypeError(f"{op}: expected one mbarrier (index the alloc_barriers result), got {type(bar).__name__}")
    return bar


def alloc_barriers(num_barriers: Any, arrive_count: Any = 1) -> BarrierArray:
    num, count = _as_int(num_barriers), _as_int(arrive_count)
    if num < 1 or count < 1:
        raise ValueError(f"alloc_barriers: num_barriers ({num}) and arrive_count ({count}) must be >= 1")
    return BarrierArray([MBarrier(count) for _ in range(num)])


def barrier_expect_bytes(bar: Any, size: Any, pred: Any = None) -> None:
    """``mbarrier.arrive.expect_tx``: expect ``size`` bytes and arrive once."""
    bar = _barrier(bar, "barrier_expect_bytes")
    if _as_bool(pred, True):
        bar.expect(_as_int(size))
        bar.arrive(1)


def barrier_wait(bar: Any, phase: Any, pred: Any = None) -> None:
    """Wait until the phase with parity ``phase`` completed (returns at once for the other parity)."""
    bar = _barrier(bar, "barrier_wait")
    if _as_bool(pred, True):
        phase = _as_int(phase) & 1
        wait_until(lambda: bar.phase_completed(phase),
                   lambda: f"barrier_wait(phase={phase}) can never complete on {bar!r}")


def alloc_warp_barrier(num_barriers: Any, num_warps: Any = 1, num_arrivals: Any = 1) -> BarrierArray:
    """Barriers every thread arrives on: ``num_warps * 32 * num_arrivals`` arrivals per phase."""
    num, warps, arrivals = _as_int(num_barriers), _as_int(num_warps), _as_int(num_arrivals)
    if min(num, warps, arrivals) < 1:
        raise ValueError(f"alloc_warp_barrier: num_barriers ({num}), num_warps ({warps}) and num_arrivals "
                         f"({arrivals}) must be >= 1")
    return BarrierArray([MBarrier(warps * _WARP_SIZE * arrivals, per_thread=True) for _ in range(num)])


def barrier_arrive(bar: Any, arrive_count: Any = 1, remote_cta_rank: Any = None, pred: Any = None) -> None:
    """One arrival per call, or one per thread of the calling task on an ``alloc_warp_barrier`` barrier."""
    bar = _barrier(bar, "barrier_arrive")
    if _value(remote_cta_rank) is not None:
        _own_cta(remote_cta_rank, "barrier_arrive", "remote_cta_rank")
    if _as_bool(pred, True):
        count = _as_int(arrive_count)
        bar.arrive(count * _task_threads() if bar.per_thread else count)


def _task_threads() -> int:
    """Threads of the calling task (or of the whole program outside warp-specialized regions)."""
    return (current_context().num_warps or compat.interpreter_num_warps()) * _WARP_SIZE


class ThreadBarrier:
    """A barrier counting threads (named barriers, the cluster barrier): a phase completes when
    ``expected`` threads arrived, the caller's included."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.expected: Optional[int] = None
        self.arrived = 0
        self.generation = 0

    def arrive(self, threads: int, expected: int, op: str) -> int:
        """Count ``threads`` arrivals; returns the generation they belong to."""
        if self.expected is not None and expected != self.expected:
            raise RuntimeError(f"{op}: {self.name} is in use with {self.expected} threads; this call gives {expected}")
        if self.arrived + threads > expected:
            raise RuntimeError(f"{op}: {self.arrived + threads} threads arrived on {self.name}, which expects "
                               f"{expected}")
        generation = self.generation
        self.expected, self.arrived = expected, self.arrived + threads
        if self.arrived == expected:
            self.expected, self.arrived, self.generation = None, 0, generation + 1
        return generation

    def __repr__(self) -> str:
        return f"{self.name} ({self.arrived} of {self.expected or '?'} threads arrived)"


class _ProgramBarriers:
    """The thread barriers of the program being interpreted (programs run one after another)."""

    def __init__(self) -> None:
        self.program: object = None
        self.named: list[ThreadBarrier] = []
        self.cluster = ThreadBarrier("the cluster barrier")

    def get(self) -> "_ProgramBarriers":
        program = current_context().program
        if program is not self.program:
            self.program = program
            self.named = [ThreadBarrier(f"named barrier {i}") for i in range(_NUM_NAMED_BARRIERS)]
            self.cluster = ThreadBarrier("the cluster barrier")
        return self


_PROGRAM_BARRIERS = _ProgramBarriers()


def _thread_barrier(bar: ThreadBarrier, expected: int, wait: bool, op: str) -> None:
    generation = bar.arrive(_task_threads(), expected, op)
    if wait:
        wait_until(lambda: bar.generation != generation, lambda: f"{op} can never complete: {bar!r}")


def _named_barrier(bar: Any, arrive_count: Any, wait: bool, op: str) -> None:
    bar, count = _as_int(bar), _as_int(arrive_count)
    if not 0 <= bar < _NUM_NAMED_BARRIERS:
        raise ValueError(f"{op}: bar must be in [0, {_NUM_NAMED_BARRIERS - 1}], got {bar}")
    if count <= 0 or count % _WARP_SIZE:
        raise ValueError(f"{op}: arrive_count must be a positive multiple of {_WARP_SIZE} threads, got {count}")
    _thread_barrier(_PROGRAM_BARRIERS.get().named[bar], count, wait, op)


def named_barrier_wait(bar: Any, arrive_count: Any) -> None:
    """``bar.sync``: arrive with every thread of the calling task, then wait for ``arrive_count`` threads."""
    _named_barrier(bar, arrive_count, True, "named_barrier_wait")


def named_barrier_arrive(bar: Any, arrive_count: Any) -> None:
    """``bar.arrive``: arrive with every thread of the calling task and go on."""
    _named_barrier(bar, arrive_count, False, "named_barrier_arrive")


# ----------------------------------------------------------------------------------------------
# Clusters: the interpreter runs each program as a cluster of one CTA, as tritium compiles TLX kernels
# ----------------------------------------------------------------------------------------------


class RemoteBarrier:
    """``remote_view`` of an mbarrier: no barrier op takes one (as in the fork)."""

    def __init__(self, bar: MBarrier) -> None:
        self.bar = bar


def _own_cta(rank: Any, op: str, arg: str) -> None:
    if _as_int(rank) != 0:
        raise ValueError(f"{op}: {arg}={_as_int(rank)} names another CTA, but the cluster has one CTA")


def cluster_cta_rank() -> tl.tensor:
    return _scalar(0, tl.int32)


def cluster_size_1d() -> tl.tensor:
    return _scalar(1, tl.int32)


def cluster_barrier() -> None:
    """Every thread of the CTA arrives and waits: all tasks of a warp-specialized region must call it."""
    worker = current_context().worker
    if worker is not None:  # outside a region the program is one thread of control
        _thread_barrier(_PROGRAM_BARRIERS.get().cluster, worker.scheduler.total_warps() * _WARP_SIZE, True,
                        "cluster_barrier")


def fence_mbarrier_init_cluster() -> None:
    """Barrier inits are visible at once: one CTA, one task running at a time."""


def remote_view(local_allocated_buffer: Any, remote_cta_rank: Any) -> RemoteBarrier:
    bar = _barrier(local_allocated_buffer, "remote_view")
    _own_cta(remote_cta_rank, "remote_view", "remote_cta_rank")
    return RemoteBarrier(bar)


# ----------------------------------------------------------------------------------------------
# Warp ops: the interpreter's program is one thread of control, so its 32 lanes are identical (as
# thread_id is 0 for all); a scalar is then the same in every lane, a tensor's lane layout unknown
# ----------------------------------------------------------------------------------------------


def _lane_uniform(x: Any, op: str, arg: str) -> tl.tensor:
    x = _semantic().to_tensor(_value(x))
    if x.type.is_block():
        raise NotImplementedError(f"{op}: a tensor {arg} needs the lanes of the compiled register layout, which "
                                  "the interpreter does not model; pass a scalar")
    return x


def vote_ballot_sync(mask: Any, pred: Any) -> tl.tensor:
    """Every lane votes the same scalar ``pred``: the ballot is ``mask`` or 0."""
    from .warp import ballot_mask
    mask = ballot_mask(mask)
    vote = _as_bool(_lane_uniform(pred, "vote_ballot_sync", "pred"), False)
    return _scalar(np.array(mask if vote else 0, dtype=np.uint32).view(np.int32).item(), tl.int32)


def warp_redux(x: Any, op: Any) -> tl.tensor:
    """Over 32 identical lanes the reduction of a scalar is the scalar (its magnitude for abs_*)."""
    from .warp import redux_op
    _, absolute = redux_op(op)
    x = _lane_uniform(x, "warp_redux", "x")
    if x.dtype != tl.float32:
        raise TypeError(f"warp_redux: x must be float32, got {x.dtype}")
    value = float(x.handle.data.item())
    return _scalar(abs(value) if absolute else value, tl.float32)


def get_fp8_format_name(dtype: Any) -> tl.constexpr:
    from .misc import fp8_format_name
    return tl.constexpr(fp8_format_name(dtype))


def fence(scope: Any) -> None:
    """Memory fences order nothing in a sequential interpreter; only the scope is checked."""
    scope = _value(scope)
    if scope not in _FENCE_SCOPES:
        raise ValueError(f"fence: scope must be one of {_FENCE_SCOPES}, got {scope!r}")


def fence_async_shared() -> None:
    fence("async_shared")


# ----------------------------------------------------------------------------------------------
# TMA
# ----------------------------------------------------------------------------------------------


def _check_tile(desc: Any, buf: SharedBuffer, op: str) -> None:
    shape = tuple(_value(s) for s in desc.block_shape)
    if shape != buf.shape or desc.dtype != buf.dtype:
        raise ValueError(f"{op}: descriptor block {desc.dtype}{list(shape)} does not match buffer "
                         f"{buf.dtype}{list(buf.shape)}")


def async_descriptor_load(desc: Any, result: Any, offsets: Sequence[Any], barrier: Any, pred: Any = None,
                          cache_modifier: str = "", eviction_policy: str = "",
                          multicast_targets: Sequence[Any] = [], two_ctas: bool = False) -> None:
    """Read the tile now; it lands (and its bytes count on ``barrier``) when the barrier is waited on."""
    dst, bar = _buffer(result, "async_descriptor_load"), _barrier(barrier, "async_descriptor_load")
    if len(_value(multicast_targets) or []) or _as_bool(two_ctas, False):
        raise NotImplementedError("async_descriptor_load: the interpreter runs one CTA per cluster; "
                                  "multicast_targets and two_ctas are not supported")
    if _value(cache_modifier):  # as on the compile path (tlx/tma.py)
        raise NotImplementedError(f"async_descriptor_load: cache_modifier={_value(cache_modifier)!r} has no PTX form "
                                  "on a TMA load (only an L2 policy: use eviction_policy)")
    _check_tile(desc, dst, "async_descriptor_load")
    if _as_bool(pred, True):
        tile = compat.semantic_descriptor_load(_semantic(), desc, list(offsets), _value(cache_modifier),
                                               _value(eviction_policy))
        bar.inflight.append((dst.data, tile.handle.data))


_STORE_REDUCE = {"add": "add", "min": "minimum", "max": "maximum", "and": "and_", "or": "or_", "xor": "xor_"}


def async_descriptor_store(desc: Any, source: Any, offsets: Sequence[Any], eviction_policy: str = "",
                           store_reduce: str = "") -> None:
    """Write the tile at issue; global writes are not observable by the kernel before the wait anyway."""
    src = _buffer(source, "async_descriptor_store")
    _check_tile(desc, src, "async_descriptor_store")
    sem, reduce = _semantic(), _value(store_reduce)
    value = local_load(src)
    if reduce:
        if reduce not in _STORE_REDUCE:
            raise ValueError(f"async_descriptor_store: store_reduce must be one of {list(_STORE_REDUCE)}, "
                             f"got {reduce!r}")
        old = compat.semantic_descriptor_load(sem, desc, list(offsets), "", "")
        combine = getattr(sem, _STORE_REDUCE[reduce])
        if reduce == "add":
            value = combine(old, value, True)
        elif reduce in ("min", "max"):
            value = combine(old, value, tl.PropagateNan.NONE)
        else:
            value = combine(old, value)
    sem.descriptor_store(desc, value, list(offsets))


def async_descriptor_prefetch_tensor(desc: Any, offsets: Sequence[Any], pred: Any = None,
                                     eviction_policy: str = "") -> None:
    """An L2 prefetch changes no value: only the arguments are checked."""
    desc = _value(desc)
    if not isinstance(desc, tl.core.tensor_descriptor_base):
        raise TypeError(f"async_descriptor_prefetch_tensor: desc must be a tensor descriptor, got {type(desc).__name__}")
    if len(offsets) != len(desc.block_shape):
        raise ValueError(f"async_descriptor_prefetch_tensor: {len(offsets)} offsets for a rank-"
                         f"{len(desc.block_shape)} block")


def async_store(dst_global_ptr: Any, src_smem: Any, size: Any) -> None:
    """Copy ``size`` bytes of the buffer to ``dst_global_ptr`` at issue, like ``async_descriptor_store``."""
    src, size = _buffer(src_smem, "async_store"), _as_int(size)
    if size <= 0 or size % 16 or size > src.data.nbytes:
        raise ValueError(f"async_store: size={size} must be a positive multiple of 16 of at most the buffer's "
                         f"{src.data.nbytes} bytes")
    dst = _value(dst_global_ptr)
    if not isinstance(dst, tl.tensor) or dst.type.is_block() or not dst.dtype.is_ptr():
        raise TypeError(f"async_store: dst_global_ptr must be a scalar pointer, got {getattr(dst, 'type', dst)}")
    data = np.ascontiguousarray(src.data).view(np.uint8).reshape(-1)[:size]
    ctypes.memmove(int(dst.handle.data.item()), data.ctypes.data, size)


def async_descriptor_store_wait(pendings: Any) -> None:
    if _as_int(pendings) < 0:
        raise ValueError(f"async_descriptor_store_wait: pendings must be >= 0, got {_as_int(pendings)}")


class DescriptorPtr:
    """``allocate_tensor_descriptor``: slot ``index`` of ``slots``; a slot holds what ``make_tensor_descriptor``
    wrote there (base, shape, strides, padding), from which ``reinterpret_tensor_descriptor`` rebuilds it."""

    def __init__(self, slots: list, index: int = 0) -> None:
        self.slots = slots
        self.index = index

    def __getitem__(self, i: Any) -> "DescriptorPtr":
        i = self.index + _as_int(i)
        if not 0 <= i < len(self.slots):
            raise IndexError(f"tensor_descriptor_ptr: slot {i} out of range for {len(self.slots)} descriptors")
        return DescriptorPtr(self.slots, i)


def _desc_ptr(x: Any, op: str) -> DescriptorPtr:
    x = _value(x)
    if not isinstance(x, DescriptorPtr):
        raise TypeError(f"{op}: desc_ptr must come from allocate_tensor_descriptor, got {type(x).__name__}")
    return x


def allocate_tensor_descriptor(num: Any) -> DescriptorPtr:
    num = _as_int(num)
    if num < 1:
        raise ValueError(f"allocate_tensor_descriptor: num must be >= 1, got {num}")
    return DescriptorPtr([None] * num)


def make_tensor_descriptor(desc_ptr: Any, base: Any, shape: Sequence[Any], strides: Sequence[Any],
                           block_shape: Sequence[Any], padding_option: str = "zero") -> Any:
    """A device-side descriptor is Triton's own in the interpreter; with ``desc_ptr`` it is also kept in the slot."""
    args = (base, list(shape), list(strides), _value(padding_option))
    desc = _semantic().make_tensor_descriptor(args[0], args[1], args[2], list(block_shape), args[3])
    if _value(desc_ptr) is not None:
        ptr = _desc_ptr(desc_ptr, "make_tensor_descriptor")
        ptr.slots[ptr.index] = args
    return desc


def reinterpret_tensor_descriptor(desc_ptr: Any, block_shape: Sequence[Any], dtype: Any) -> Any:
    """The descriptor written to the slot, seen with ``block_shape`` blocks of ``dtype``."""
    ptr = _desc_ptr(desc_ptr, "reinterpret_tensor_descriptor")
    args = ptr.slots[ptr.index]
    if args is None:
        raise ValueError(f"reinterpret_tensor_descriptor: descriptor slot {ptr.index} was never written by "
                         "make_tensor_descriptor(desc_ptr=...)")
    base, shape, strides, padding = args
    if base.dtype.element_ty != _value(dtype):
        raise ValueError(f"reinterpret_tensor_descriptor: slot {ptr.index} describes {base.dtype.element_ty} "
                         f"elements, not {_value(dtype)}")
    return _semantic().make_tensor_descriptor(base, shape, strides, [_as_int(b) for b in _as_shape(block_shape)],
                                              padding)


# ----------------------------------------------------------------------------------------------
# Warp specialization (see interp_tasks)
# ----------------------------------------------------------------------------------------------


def async_tasks(**kwargs: Any) -> AsyncTasks:
    return AsyncTasks(**kwargs)


def async_task(*args: Any, **kwargs: Any) -> AsyncTask:
    return AsyncTask(*args, **kwargs)


def async_task_replica_id() -> tl.constexpr:
    return tl.constexpr(current_context().replica_id)


# ----------------------------------------------------------------------------------------------
# Utilities
# ----------------------------------------------------------------------------------------------


def thread_id(axis: Any) -> tl.tensor:
    """The interpreter runs each program as one thread of control, so every thread id is 0."""
    axis = _as_int(axis)
    if axis not in (0, 1, 2):
        raise ValueError(f"thread_id axis must be 0, 1, or 2 but got {axis}")
    return _scalar(0, tl.int32)


def clock64() -> tl.tensor:
    return _scalar(time.perf_counter_ns(), tl.int64)


def dtype_of(v: Any) -> tl.dtype:
    """Pointee type of a pointer (tensor); element type of a tensor, tensor descriptor or local buffer."""
    v = _value(v)
    if isinstance(v, (SharedBuffer, tl.core.tensor_descriptor_base)):
        return v.dtype
    if isinstance(v, tl.tensor):
        return v.dtype.element_ty if v.dtype.is_ptr() else v.dtype
    raise ValueError(f"dtype_of only works on tensors and tensor descriptors, but got {v}")


def size_of(dtype: Any) -> tl.constexpr:
    return tl.constexpr(_value(dtype).primitive_bitwidth // 8)
