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

import math
import time
from typing import Any, Optional, Sequence

import numpy as np
import triton.language as tl
from triton.runtime import interpreter as _interp

from tritium import compat

from .interp_tasks import AsyncTask, AsyncTasks, TLXDeadlockError, current_context, wait_until

__all__ = [
    "SharedBuffer", "MBarrier", "BarrierArray", "AsyncToken", "TLXDeadlockError", "check_async_dot_shape",
    "local_alloc", "local_view", "local_slice", "local_trans", "local_reshape", "local_reinterpret", "local_load",
    "local_store", "async_load", "async_load_commit_group", "async_load_wait_group", "async_dot", "async_dot_wait",
    "alloc_barriers", "barrier_expect_bytes", "barrier_wait", "barrier_arrive", "fence", "fence_async_shared",
    "async_descriptor_load", "async_descriptor_store", "async_descriptor_store_wait", "make_tensor_descriptor",
    "async_tasks", "async_task", "async_task_replica_id", "thread_id", "clock64", "dtype_of", "size_of"
]

_STORAGE_KINDS = ("smem", "tmem", "smemCluster")
_FENCE_SCOPES = ("gpu", "sys", "async_shared")
_POISON = 0xFF


def _semantic() -> Any:
    return _interp.interpreter_semantic


def _value(x: Any) -> Any:
    return tl.core._unwrap_if_constexpr(x)


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
    return _interp._get_np_dtype(dtype)


def _scalar(value: int, dtype: tl.dtype) -> tl.tensor:
    return tl.tensor(_interp.TensorHandle(np.array([value], dtype=_np_dtype(dtype)), dtype), dtype)


def _to_register(data: np.ndarray, dtype: tl.dtype) -> tl.tensor:
    handle = _interp.TensorHandle(np.array(data, order="C"), dtype)
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
    if reuse is None:
        raw = np.full(nbytes, _POISON, dtype=np.uint8)
    else:
        raw = _buffer(reuse, "local_alloc(reuse=...)").storage
        if raw.nbytes < nbytes:
            raise ValueError(f"local_alloc: reused allocation has {raw.nbytes} bytes, {nbytes} needed")
    return SharedBuffer(raw[:nbytes].view(np_dtype).reshape((num, ) + shape), dtype, raw)


def local_view(buf: Any, idx: Any) -> Any:
    """Select buffer ``idx`` of a multi-buffer allocation or barrier array."""
    buf, idx = _value(buf), _as_int(idx)
    if isinstance(buf, BarrierArray):
        return buf[idx]
    buf = _buffer(buf, "local_view")
    if not 0 <= idx < buf.shape[0]:
        raise IndexError(f"local_view: index {idx} out of range for {buf.shape[0]} buffers")
    return buf.view(buf.data[idx])


def local_slice(buf: Any, offset: Any, shape: Any) -> SharedBuffer:
    buf, offset, shape = _buffer(buf, "local_slice"), _as_shape(offset), _as_shape(shape)
    if not len(offset) == len(shape) == buf.data.ndim:
        raise ValueError(f"local_slice: offset {offset} and shape {shape} must have rank {buf.data.ndim}")
    if any(o < 0 or o + s > d for o, s, d in zip(offset, shape, buf.shape)):
        raise IndexError(f"local_slice: offset {offset} + shape {shape} exceeds buffer shape {buf.shape}")
    return buf.view(buf.data[tuple(slice(o, o + s) for o, s in zip(offset, shape))])


def local_trans(buf: Any, dims: Any = (1, 0)) -> SharedBuffer:
    buf = _buffer(buf, "local_trans")
    return buf.view(buf.data.transpose(_as_shape(dims)))


def local_reshape(buf: Any, shape: Any) -> SharedBuffer:
    buf, shape = _buffer(buf, "local_reshape"), _as_shape(shape)
    data = buf.data.view()
    try:
        data.shape = shape  # raises instead of copying, so the result keeps aliasing the buffer
    except (AttributeError, ValueError) as exc:
        raise ValueError(f"local_reshape: cannot view buffer of shape {buf.shape} as {shape}") from exc
    return buf.view(data)


def local_reinterpret(buf: Any, dtype: Any, shape: Any = None, layout: Any = None) -> SharedBuffer:
    """Reinterpret the bytes at the start of a contiguous view as ``dtype``/``shape``."""
    buf, dtype = _buffer(buf, "local_reinterpret"), _value(dtype)
    shape = buf.shape if _value(shape) is None else _as_shape(shape)
    if not buf.data.flags.c_contiguous:
        raise ValueError("local_reinterpret: the view must be contiguous (not a transposed or sliced view)")
    np_dtype = _np_dtype(dtype)
    start, nbytes = buf.byte_offset(), math.prod(shape) * np_dtype.itemsize
    if start + nbytes > buf.storage.nbytes:
        raise ValueError(f"local_reinterpret: {dtype}{list(shape)} needs {nbytes} bytes past the end of the buffer")
    return buf.view(buf.storage[start:start + nbytes].view(np_dtype).reshape(shape), dtype)


def local_load(src: Any, token: Any = None) -> tl.tensor:
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


# ----------------------------------------------------------------------------------------------
# cp.async copies
# ----------------------------------------------------------------------------------------------


class AsyncToken:
    """Result of an async op; it only orders ops in the compile path."""


def async_load(src: Any, result: Any, mask: Any = None, other: Any = None, cache_modifier: str = "",
               eviction_policy: str = "", is_volatile: bool = False) -> AsyncToken:
    """Gather now (like the hardware reading pointers at issue) but land at the matching wait."""
    dst = _buffer(result, "async_load")
    sem = _semantic()
    mask, other = _value(mask), _value(other)
    mask = None if mask is None else sem.to_tensor(mask)
    other = None if other is None else sem.to_tensor(other)
    values = compat.semantic_load(sem, _value(src), mask, other, _value(cache_modifier), _value(eviction_policy),
                                  _as_bool(is_volatile, False))
    if _as_shape(values.shape) != dst.shape or values.dtype != dst.dtype:
        raise ValueError(f"async_load: pointers to {values.dtype}{list(values.shape)} do not match buffer "
                         f"{dst.dtype}{list(dst.shape)}")
    current_context().open_copies.append((dst.data, values.handle.data))
    return AsyncToken()


def async_load_commit_group(tokens: Sequence[Any] = []) -> AsyncToken:
    ctx = current_context()
    ctx.groups.append(ctx.open_copies)
    ctx.open_copies = []
    return AsyncToken()


def async_load_wait_group(pendings: Any, tokens: Sequence[Any] = []) -> AsyncToken:
    """Land every committed group except the newest ``pendings`` ones."""
    pendings = _as_int(pendings)
    if pendings < 0:
        raise ValueError(f"async_load_wait_group: pendings must be >= 0, got {pendings}")
    ctx = current_context()
    while len(ctx.groups) > pendings:
        for dst, values in ctx.groups.pop(0):
            dst[...] = values
    return AsyncToken()


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

    def __init__(self, arrive_count: int) -> None:
        self.arrive_count = arrive_count
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


def barrier_arrive(bar: Any, arrive_count: Any = 1, pred: Any = None) -> None:
    bar = _barrier(bar, "barrier_arrive")
    if _as_bool(pred, True):
        bar.arrive(_as_int(arrive_count))


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
                          multicast_targets: Sequence[Any] = []) -> None:
    """Read the tile now; it lands (and its bytes count on ``barrier``) when the barrier is waited on."""
    dst, bar = _buffer(result, "async_descriptor_load"), _barrier(barrier, "async_descriptor_load")
    if len(multicast_targets):
        raise NotImplementedError("async_descriptor_load: the interpreter runs one CTA per cluster; "
                                  "multicast_targets is not supported")
    _check_tile(desc, dst, "async_descriptor_load")
    if _as_bool(pred, True):
        tile = compat.semantic_descriptor_load(_semantic(), desc, list(offsets), _value(cache_modifier),
                                               _value(eviction_policy))
        bar.inflight.append((dst.data, tile.handle.data))


_STORE_REDUCE = {"add": "add", "min": "minimum", "max": "maximum"}


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
        value = combine(old, value, True) if reduce == "add" else combine(old, value, tl.PropagateNan.NONE)
    sem.descriptor_store(desc, value, list(offsets))


def async_descriptor_store_wait(pendings: Any) -> None:
    if _as_int(pendings) < 0:
        raise ValueError(f"async_descriptor_store_wait: pendings must be >= 0, got {_as_int(pendings)}")


def make_tensor_descriptor(base: Any, shape: Sequence[Any], strides: Sequence[Any], block_shape: Sequence[Any],
                           padding_option: str = "zero") -> Any:
    """A device-side descriptor is Triton's own in the interpreter."""
    return _semantic().make_tensor_descriptor(base, list(shape), list(strides), list(block_shape),
                                              _value(padding_option))


# ----------------------------------------------------------------------------------------------
# Warp specialization (see interp_tasks)
# ----------------------------------------------------------------------------------------------


def async_tasks() -> AsyncTasks:
    return AsyncTasks()


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


def dtype_of(ptr_or_tensor: Any) -> tl.dtype:
    """Pointee type of a pointer (tensor); element type of a tensor, tensor descriptor or local buffer."""
    v = _value(ptr_or_tensor)
    if isinstance(v, (SharedBuffer, tl.core.tensor_descriptor_base)):
        return v.dtype
    if isinstance(v, tl.tensor):
        return v.dtype.element_ty if v.dtype.is_ptr() else v.dtype
    raise ValueError(f"dtype_of only works on tensors and tensor descriptors, but got {v}")


def size_of(dtype: Any) -> tl.constexpr:
    return tl.constexpr(_value(dtype).primitive_bitwidth // 8)
