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

import contextlib
import ctypes
import math
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np
import triton.language as tl

from . import (alias, args, async_copy, barriers, buffer_ops, cluster, layouts, mem, misc, mma, tma, triton_compat,
               warp, warp_pipeline)
from .emit import interprets
from .interp_tasks import AsyncTask, AsyncTasks, TLXDeadlockError, current_context, wait_until
from .triton_compat import TensorHandle, interpreter_builder, interpreter_semantic, np_dtype, unwrap_if_constexpr

#: The interpreter's value classes (its ops register themselves with ``@interprets``, tlx/emit.py).
__all__ = ["SharedBuffer", "MBarrier", "BarrierArray", "AsyncToken", "TLXDeadlockError", "check_async_dot_shape",
           "ThreadBarrier", "RemoteBarrier", "DescriptorPtr"]

_POISON = 0xFF
_WARP_SIZE = barriers.THREADS_PER_WARP


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
    """A view into one allocation: ``data`` is a numpy view of the allocation's byte ``storage``.

    As on the compile path, a ``local_alloc`` result is the whole allocation of ``num`` buffers (``data``
    is ``num x shape``), which ops taking one buffer refuse; any view of it has ``num`` 0. ``sliced``
    marks ``local_slice`` views (the compile path cannot reinterpret them).
    """

    def __init__(self, data: np.ndarray, dtype: tl.dtype, storage: np.ndarray, num: int = 0,
                 sliced: bool = False) -> None:
        self.data = data
        self.dtype = dtype
        self.storage = storage
        self.num = num
        self.sliced = sliced

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def tlx_kind(self) -> str:
        """What this value is, as the shared argument checks name it (tlx/args.py)."""
        return args.BUFFERS if self.num else args.BUFFER

    def __getitem__(self, idx: Any) -> "SharedBuffer":
        return local_view(self, idx)

    def view(self, data: np.ndarray, dtype: Optional[tl.dtype] = None, sliced: bool = False) -> "SharedBuffer":
        return SharedBuffer(data, dtype or self.dtype, self.storage, sliced=sliced)

    def byte_offset(self) -> int:
        return self.data.__array_interface__["data"][0] - self.storage.__array_interface__["data"][0]

    def __repr__(self) -> str:
        return f"SharedBuffer({self.dtype}, shape={self.shape})"


@interprets
def local_alloc(shape: Any, dtype: Any, num: Any, storage: Any = "smem", reuse: Any = None,
                layout: Any = None) -> SharedBuffer:
    """Allocate ``num`` buffers of ``shape``; the layout is only checked (it matters to the compile path)."""
    shape, dtype, num = mem.check_local_alloc(shape, dtype, num, storage)
    mem.check_shared_layout("local_alloc", layout, shape, dtype)
    np_dtype, reuse = _np_dtype(dtype), _value(reuse)
    nbytes = num * math.prod(shape) * np_dtype.itemsize
    if isinstance(reuse, AliasSpec):
        return reuse.add(AliasMember(num, shape, dtype))
    if reuse is None:
        raw = np.full(nbytes, _POISON, dtype=np.uint8)
    else:
        root = args.buffer(reuse, "local_alloc(reuse=...)")
        mem.check_reuse(root, bool(root.num), root.data.nbytes, num, shape, dtype)
        raw = root.storage
    return SharedBuffer(raw[:nbytes].view(np_dtype).reshape((num, ) + shape), dtype, raw, num)


@interprets
def local_view(local_allocated_buffers: Any, buffer_idx: Any) -> Any:
    """Select buffer ``idx`` of a multi-buffer allocation or barrier array."""
    buf, idx = local_allocated_buffers, buffer_idx  # the fork's parameter names
    buf, idx = _value(buf), _as_int(mem.check_local_view(buf, idx))
    if isinstance(buf, BarrierArray):
        return buf[idx]
    if isinstance(buf, AliasMember):
        return buf.at(idx)
    mem.check_view_index(idx, buf.shape[0], bool(buf.num))
    # A 1-D view indexes to its one element ``idx``, shape [1], as in the fork.
    return buf.view(buf.data[idx:idx + 1] if buf.data.ndim == 1 else buf.data[idx])


@interprets
def local_slice(buffer: Any, offset: Any, shape: Any) -> SharedBuffer:
    offset, shape = mem.check_local_slice(buffer, offset, shape)  # ``buffer``: the fork's parameter name
    buf = _value(buffer)
    return buf.view(buf.data[tuple(slice(o, o + s) for o, s in zip(offset, shape))], sliced=True)


@interprets
def local_trans(input: Any, dims: Any = (1, 0)) -> SharedBuffer:
    dims = mem.check_local_trans(input, dims)  # ``input``: the fork's parameter name
    return _value(input).view(_value(input).data.transpose(dims))


@interprets
def local_reshape(src: Any, shape: Any) -> SharedBuffer:
    shape = mem.check_local_reshape(src, shape)  # ``src``: the fork's parameter name
    buf = _value(src)
    data = buf.data.view()
    try:
        data.shape = shape  # raises instead of copying, so the result keeps aliasing the buffer
    except (AttributeError, ValueError) as exc:
        raise ValueError(f"tlx.local_reshape: cannot view buffer of shape {buf.shape} as {shape} without a copy "
                         "(the interpreter's views are row-major arrays)") from exc
    return buf.view(data)


@interprets
def local_reinterpret(src: Any, dtype: Any, shape: Any = None, layout: Any = None) -> SharedBuffer:
    """Reinterpret the bytes at the start of a contiguous view as ``dtype``/``shape``."""
    buf = args.buffer(src, "local_reinterpret")  # ``src``: the fork's parameter name
    dtype, shape = mem.check_local_reinterpret(buf, buf.shape, buf.sliced, dtype, shape)
    mem.check_shared_layout("local_reinterpret", layout, shape, dtype)
    if not buf.data.flags.c_contiguous:
        raise ValueError("tlx.local_reinterpret: the interpreter reinterprets row-major bytes, so the view must be "
                         "contiguous (not a transposed view)")
    np_dtype = _np_dtype(dtype)
    start, nbytes = buf.byte_offset(), math.prod(shape) * np_dtype.itemsize
    return buf.view(buf.storage[start:start + nbytes].view(np_dtype).reshape(shape), dtype)


@interprets
def local_load(src: Any, token: Any = None, layout: Any = None, relaxed: Any = False,
               rematerialize_coordinates: Any = False, rematerialize_coordinates_group: Any = None) -> tl.tensor:
    """The register layout and the fork's AMD scheduling hints are only checked (they matter to the compile path)."""
    mem.check_local_load(src, layout, relaxed, rematerialize_coordinates, rematerialize_coordinates_group)
    src = _value(src)
    return _to_register(src.data, src.dtype)


@interprets
def local_store(dst: Any, src: Any) -> None:
    mem.check_local_store(dst, src)
    _value(dst).data[...] = _value(src).handle.data


def _gather_indices(op: str, buf: SharedBuffer, indices: Any, axis: int) -> np.ndarray:
    """The (checked) indices of ``local_gather``/``local_scatter``, which must lie in the buffer: the
    interpreter knows their values, so it checks what the compiled kernel cannot."""
    idx = _value(indices).handle.data.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= buf.shape[axis]):
        raise IndexError(f"tlx.{op}: an index is outside [0, {buf.shape[axis]}) on axis {axis}")
    return idx


@interprets
def local_gather(src: Any, indices: Any, axis: Any, token: Any = None) -> tl.tensor:
    """``out[.., i, ..] = src[.., indices[.., i, ..], ..]`` along ``axis`` (``torch.gather``)."""
    axis = mem.check_gather("local_gather", src, indices, axis)
    buf = _value(src)
    idx = _gather_indices("local_gather", buf, indices, axis)
    return _to_register(np.take_along_axis(buf.data, idx, axis), buf.dtype)


@interprets
def local_scatter(dst: Any, src: Any, indices: Any, axis: Any, token: Any = None) -> None:
    """``dst[.., indices[.., i, ..], ..] = src[.., i, ..]`` along ``axis``; the last duplicate wins."""
    axis = mem.check_local_scatter(dst, src, indices, axis)
    buf = _value(dst)
    idx = _gather_indices("local_scatter", buf, indices, axis)
    np.put_along_axis(buf.data, idx, _value(src).handle.data, axis)  # numpy keeps the last of duplicate indices


@interprets
def zeros(shape: Any, dtype: Any, layout: Any = None) -> tl.tensor:
    """Register layouts are only checked: they matter to the compile path."""
    shape, dtype = mem.check_zeros(shape, dtype, layout)
    return _to_register(np.zeros(shape, _np_dtype(dtype)), dtype)


@interprets
def require_layout(x: Any, layout: Any, pin: Any = True, late_address_compute: Any = False) -> tl.tensor:
    return mem.check_require_layout(x, layout, pin, late_address_compute)


@interprets
def release_layout(x: Any) -> tl.tensor:
    return mem.check_register_tensor("release_layout", x)


@interprets
def subslice(local_allocated_buffer: Any, offset: Any, size: Any) -> None:
    mem.check_subslice()


@interprets
def assert_same_layout(lhs: Any, rhs: Any) -> None:
    """Layouts do not exist in the interpreter; only the operands are checked."""
    mem.check_layout_operand("assert_same_layout", lhs)
    if args.kind_of(rhs) in (args.BUFFER, args.BUFFERS, args.MBARRIER, args.MBARRIERS, "tensor"):
        mem.check_layout_operand("assert_same_layout", rhs)
    else:
        mem.check_shared_layout("assert_same_layout", rhs, _value(lhs).shape, _value(lhs).dtype)


@interprets
def dump_layout(x: Any) -> None:
    mem.check_layout_operand("dump_layout", x, tensor_ok=True)
    what = _value(x)
    print(f"dump_layout: {what!r} (the interpreter has no layouts: values are row-major arrays)", file=sys.stderr)


@interprets
def warp_pipeline_stage(label: Any = None, *, priority: Any = None) -> contextlib.nullcontext:
    """Stages run in order here: one program is one thread of control, with no warp groups to stagger."""
    warp_pipeline.stage_config(label, priority)
    return contextlib.nullcontext()


class AliasMember(SharedBuffer):
    """An allocation made with ``reuse=<storage_alias_spec>``: its buffers live where the spec's plan puts them."""

    def __init__(self, num: int, shape: tuple[int, ...], dtype: tl.dtype) -> None:
        self.item_shape, self.group = shape, 1
        self.nbytes = math.prod(shape) * _np_dtype(dtype).itemsize
        raw = np.full(num * self.nbytes, _POISON, dtype=np.uint8)
        super().__init__(raw.view(_np_dtype(dtype)).reshape((num, ) + shape), dtype, raw, num)

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
        mem.check_view_index(idx, self.num, True)
        data = self.data[idx // self.group, idx % self.group] if self.data.ndim > len(self.item_shape) + 1 \
            else self.data[idx]
        return SharedBuffer(data, self.dtype, self.storage)


class AliasSpec:
    """``storage_alias_spec``: one region for its members, placed as ``tritium.tlx.alias.place`` says."""

    def __init__(self, size: Optional[int]) -> None:
        self.size, self.members, self.explicit = size, [], False
        self.buffer_size_bytes = size

    def add(self, member: AliasMember) -> AliasMember:
        alias.check_member_alloc(self.explicit)
        self.members.append(member)
        if len({m.num for m in self.members}) == 1:  # until set_buffer_overlap: all at one offset
            self._apply(alias.reuse_group(*self.members), "tlx.local_alloc")
        return member

    def set_buffer_overlap(self, overlap_def: Any) -> None:
        overlap_def = alias.check_overlap_def(overlap_def)
        self.explicit = True
        self._apply(overlap_def, "storage_alias_spec.set_buffer_overlap")

    def _apply(self, tree: Any, what: str) -> None:
        members = {id(m): alias.Member(id(m), m.num, m.nbytes) for m in self.members}
        plan = alias.plan(tree, members, id, self.size, what)
        raw = np.full(self.size or plan.stride * plan.slots, _POISON, dtype=np.uint8)
        for m in self.members:
            m.place(raw, plan.stride, *plan.where[id(m)])


@interprets
def storage_alias_spec(storage: Any = layouts.storage_kind.smem, buffer_size_bytes: Any = None) -> AliasSpec:
    return AliasSpec(alias.check_storage_alias_spec(storage, buffer_size_bytes)[1])


# ----------------------------------------------------------------------------------------------
# cp.async copies
# ----------------------------------------------------------------------------------------------


class AsyncToken:
    """Result of an async op; it only orders ops in the compile path."""
    tlx_kind = "async token"


@interprets
def async_load(src: Any, result: Any, mask: Any = None, other: Any = None, cache_modifier: str = "",
               eviction_policy: str = "", is_volatile: bool = False, bulk: Any = False, bulk_size: Any = None,
               barrier: Any = None) -> AsyncToken:
    """Gather now (like the hardware reading pointers at issue) but land at the matching wait; masked
    elements get ``other`` (zero when omitted). ``bulk=True`` copies ``bulk_size`` bytes (default: the
    whole 1-D buffer) from the scalar pointer ``src``; they land when ``barrier`` completes its phase
    and count toward its expected bytes, as ``cp.async.bulk ... mbarrier::complete_tx`` does."""
    bulk = async_copy.check_async_load(src, result, mask, other, is_volatile, bulk, bulk_size, barrier)
    dst = _value(result)
    sem = _semantic()
    mask, other, bulk_size, barrier = _value(mask), _value(other), _value(bulk_size), _value(barrier)
    if bulk:
        nbytes = dst.data.nbytes if bulk_size is None else _as_int(bulk_size)
        if isinstance(bulk_size, tl.tensor):  # a run-time size: its value is known here, so check it too
            async_copy.check_async_load(src, result, mask, other, is_volatile, True, nbytes, barrier)
        address = int(_value(src).handle.data.item())
        if address % 16:
            raise ValueError(f"tlx.async_load(bulk=True): cp.async.bulk needs a 16-byte aligned source; got address "
                             f"{address:#x}")
        byte_ptrs = TensorHandle(np.uint64(address) + np.arange(nbytes, dtype=np.uint64),
                                         tl.pointer_type(tl.uint8))
        every = TensorHandle(np.ones(nbytes, dtype=bool), tl.int1)
        values = triton_compat.interpreter_masked_load(interpreter_builder(), byte_ptrs, every)
        raw = dst.storage[dst.byte_offset():dst.byte_offset() + nbytes]
        barrier.inflight.append((raw, values.data.view(np.uint8)))
        return AsyncToken()
    mask = None if mask is None else sem.to_tensor(mask)
    other = None if other is None else sem.to_tensor(other)
    values = triton_compat.semantic_load(sem, _value(src), mask, other, _value(cache_modifier), _value(eviction_policy),
                                  _value(is_volatile))
    current_context().open_copies.append((dst.data, values.handle.data))
    return AsyncToken()


@interprets
def async_load_commit_group(tokens: Sequence[Any] = []) -> AsyncToken:
    """Close the group of every copy issued since the last commit (``tokens`` only document them)."""
    args.tokens(tokens, "async_load_commit_group")
    ctx = current_context()
    ctx.groups.append(ctx.open_copies)
    ctx.open_copies = []
    return AsyncToken()


@interprets
def async_load_wait_group(pendings: Any, tokens: Sequence[Any] = []) -> AsyncToken:
    """Land every committed group except the newest ``pendings`` ones."""
    pendings = async_copy.check_wait_group(pendings, tokens)
    ctx = current_context()
    while len(ctx.groups) > pendings:
        for dst, values in ctx.groups.pop(0):
            dst[...] = values
    return AsyncToken()


@interprets
def prefetch(pointer: Any, level: Any = "L2", mask: Any = None, tensormap: Any = False) -> None:
    """A cache hint: nothing to do on the CPU once the arguments are checked."""
    if async_copy.check_prefetch(pointer, level, mask, tensormap):
        tma.check_descriptor(pointer, "prefetch", "pointer (with tensormap=True)")
        return
    pointer, mask = _value(pointer), _value(mask)
    if isinstance(mask, tl.tensor) and mask.type.is_block():
        _semantic().broadcast_impl_shape(mask, list(pointer.shape))  # raises unless it broadcasts


def _buffer_op(name: str) -> Any:
    """The AMD buffer op ``name`` (tlx/buffer_ops.py): the same code, on the interpreter's semantic."""

    def op(*args: Any, **kwargs: Any) -> Any:
        return getattr(buffer_ops, name).__wrapped__(*args, _semantic=_semantic(), **kwargs)

    op.__name__ = op.__qualname__ = name
    return interprets(op)


buffer_load = _buffer_op("buffer_load")
buffer_store = _buffer_op("buffer_store")
buffer_atomic_add = _buffer_op("buffer_atomic_add")
buffer_load_to_local = _buffer_op("buffer_load_to_local")


# ----------------------------------------------------------------------------------------------
# Tensor-core MMA
# ----------------------------------------------------------------------------------------------


#: wgmma's shape rules (tlx/mma.py), which the interpreter applies too.
check_async_dot_shape = mma.check_async_dot_shape


@interprets
def async_dot(A: Any, B: Any, acc: Any = None, use_acc: Any = None, pred: Any = None, mBarriers: Sequence[Any] = [],
              two_ctas: bool = False, force_async: bool = False, input_precision: Any = None,
              out_dtype: Any = tl.float32) -> tl.tensor:
    """``acc + A @ B`` computed eagerly like ``tl.dot``; completion is immediate, so ``mBarriers`` arrive now."""
    M, N, _ = mma.check_async_dot(A, B, acc, out_dtype)
    a = _value(A)
    a = local_load(a) if isinstance(a, SharedBuffer) else a
    b = local_load(B)
    acc, out_dtype = _value(acc), _value(out_dtype)
    if not _as_bool(pred, True):  # not issued: the accumulator is left as it was
        return acc if acc is not None else _to_register(np.zeros((M, N), _np_dtype(out_dtype)), out_dtype)
    use_acc = acc is not None and _as_bool(use_acc, True)
    if a.dtype == tl.bfloat16:  # Triton 3.6's interpreted tl.dot multiplies bf16 bit patterns as integers
        a, b = _semantic().cast(a, tl.float32), _semantic().cast(b, tl.float32)  # exact: bf16 fits in fp32
        input_precision = "ieee"
    result = _semantic().dot(a, b, acc if use_acc else None, _value(input_precision), None, out_dtype)
    if result.dtype != out_dtype:  # float64 operands (tritium.ops.matmul's gradcheck): wgmma accumulates in out_dtype
        result = _semantic().cast(result, out_dtype)
    for bar in mBarriers:
        args.barrier(bar, "async_dot(mBarriers=...)").arrive(1)
    return result


@interprets
def async_dot_wait(pendings: Any, inp: Any) -> Any:
    mma.check_async_dot_wait(pendings, inp)
    return inp


# ----------------------------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------------------------


class MBarrier:
    """An mbarrier: a phase completes when all arrivals happened and all expected bytes landed."""
    tlx_kind = args.MBARRIER

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
    tlx_kind = args.MBARRIERS

    def __init__(self, barriers: list[MBarrier]) -> None:
        self.barriers = barriers

    def __getitem__(self, idx: Any) -> MBarrier:
        idx = _as_int(mem.check_local_view(self, idx))
        mem.check_view_index(idx, len(self.barriers), True)
        return self.barriers[idx]


@interprets
def alloc_barriers(num_barriers: Any, arrive_count: Any = 1) -> BarrierArray:
    num, count = barriers.check_alloc_barriers(num_barriers, arrive_count)
    return BarrierArray([MBarrier(count) for _ in range(num)])


@interprets
def barrier_expect_bytes(bar: Any, size: Any, pred: Any = None) -> None:
    """``mbarrier.arrive.expect_tx``: expect ``size`` bytes and arrive once."""
    size, bar = barriers.check_barrier_expect_bytes(bar, size, pred), _value(bar)
    if _as_bool(pred, True):
        bar.expect(size)
        bar.arrive(1)


@interprets
def barrier_wait(bar: Any, phase: Any, pred: Any = None) -> None:
    """Wait until the phase with parity ``phase`` completed (returns at once for the other parity)."""
    barriers.check_barrier_wait(bar, phase, pred)
    bar = _value(bar)
    if _as_bool(pred, True):
        phase = _as_int(phase) & 1
        wait_until(lambda: bar.phase_completed(phase),
                   lambda: f"barrier_wait(phase={phase}) can never complete on {bar!r}")


@interprets
def alloc_warp_barrier(num_barriers: Any, num_warps: Any = 1, num_arrivals: Any = 1) -> BarrierArray:
    """Barriers every thread arrives on: ``num_warps * 32 * num_arrivals`` arrivals per phase."""
    num, warps, arrivals = barriers.check_alloc_warp_barrier(num_barriers, num_warps, num_arrivals)
    return BarrierArray([MBarrier(warps * _WARP_SIZE * arrivals, per_thread=True) for _ in range(num)])


@interprets
def barrier_arrive(bar: Any, arrive_count: Any = 1, remote_cta_rank: Any = None, pred: Any = None) -> None:
    """One arrival per call, or one per thread of the calling task on an ``alloc_warp_barrier`` barrier."""
    count, bar = barriers.check_barrier_arrive(bar, arrive_count, remote_cta_rank, pred), _value(bar)
    if _value(remote_cta_rank) is not None:
        _own_cta(remote_cta_rank, "barrier_arrive", "remote_cta_rank")
    if _as_bool(pred, True):
        bar.arrive(count * _task_threads() if bar.per_thread else count)


def _task_threads() -> int:
    """Threads of the calling task (or of the whole program outside warp-specialized regions)."""
    return (current_context().num_warps or triton_compat.interpreter_num_warps()) * _WARP_SIZE


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
            self.named = [ThreadBarrier(f"named barrier {i}") for i in range(barriers.NUM_NAMED_BARRIERS)]
            self.cluster = ThreadBarrier("the cluster barrier")
        return self


_PROGRAM_BARRIERS = _ProgramBarriers()


def _thread_barrier(bar: ThreadBarrier, expected: int, wait: bool, op: str) -> None:
    generation = bar.arrive(_task_threads(), expected, op)
    if wait:
        wait_until(lambda: bar.generation != generation, lambda: f"{op} can never complete: {bar!r}")


def _named_barrier(bar: Any, arrive_count: Any, wait: bool, op: str) -> None:
    barriers.check_named_barrier(op, bar, arrive_count, _task_threads())
    bar, count = _as_int(bar), _as_int(arrive_count)
    barriers.check_named_barrier(op, bar, count, _task_threads())  # run-time values are known here too
    _thread_barrier(_PROGRAM_BARRIERS.get().named[bar], count, wait, op)


@interprets
def named_barrier_wait(bar: Any, arrive_count: Any) -> None:
    """``bar.sync``: arrive with every thread of the calling task, then wait for ``arrive_count`` threads."""
    _named_barrier(bar, arrive_count, True, "named_barrier_wait")


@interprets
def named_barrier_arrive(bar: Any, arrive_count: Any) -> None:
    """``bar.arrive``: arrive with every thread of the calling task and go on."""
    _named_barrier(bar, arrive_count, False, "named_barrier_arrive")


# ----------------------------------------------------------------------------------------------
# Clusters: the interpreter runs each program as a cluster of one CTA (it does not model ctas_per_cga)
# ----------------------------------------------------------------------------------------------


class RemoteBarrier:
    """``remote_view`` of an mbarrier: no barrier op takes one (as in the fork)."""
    tlx_kind = args.REMOTE_MBARRIER

    def __init__(self, bar: MBarrier) -> None:
        self.bar = bar


def _one_cta(op: str) -> None:
    """Refuse a cluster op in a launch with clusters of several CTAs: the interpreter runs each program alone."""
    shape = triton_compat.interpreter_launch_option("ctas_per_cga", None)
    if shape is not None and math.prod(shape) > 1:
        raise NotImplementedError(f"tlx.{op}: the TLX interpreter runs each program as a cluster of one CTA, so "
                                  f"ctas_per_cga={tuple(shape)} needs the GPU")


def _own_cta(rank: Any, op: str, arg: str) -> None:
    """The compile path's rank check, also of a run-time rank, whose value is known here."""
    _one_cta(op)
    args.check_remote_rank(rank, op, arg)
    args.check_remote_rank(_as_int(rank), op, arg)


@interprets
def cluster_cta_rank() -> tl.tensor:
    _one_cta("cluster_cta_rank")
    return _scalar(0, tl.int32)


@interprets
def cluster_size_1d() -> tl.tensor:
    _one_cta("cluster_size_1d")
    return _scalar(1, tl.int32)


@interprets
def cluster_barrier() -> None:
    """Every thread of the CTA arrives and waits: all tasks of a warp-specialized region must call it."""
    worker = current_context().worker
    if worker is not None:  # outside a region the program is one thread of control
        _thread_barrier(_PROGRAM_BARRIERS.get().cluster, worker.scheduler.total_warps() * _WARP_SIZE, True,
                        "cluster_barrier")


@interprets
def fence_mbarrier_init_cluster() -> None:
    """Barrier inits are visible at once: one CTA, one task running at a time."""


@interprets
def remote_view(local_allocated_buffer: Any, remote_cta_rank: Any) -> RemoteBarrier:
    bar = args.barrier(local_allocated_buffer, "remote_view")
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


@interprets
def vote_ballot_sync(mask: Any, pred: Any) -> tl.tensor:
    """Every lane votes the same scalar ``pred``: the ballot is ``mask`` or 0."""
    mask = warp.ballot_mask(mask)
    warp.check_ballot_pred(pred)
    vote = _as_bool(_lane_uniform(pred, "vote_ballot_sync", "pred"), False)
    return _scalar(np.array(mask if vote else 0, dtype=np.uint32).view(np.int32).item(), tl.int32)


@interprets
def warp_redux(x: Any, op: Any) -> tl.tensor:
    """Over 32 identical lanes the reduction of a scalar is the scalar (its magnitude for abs_*)."""
    _, absolute = warp.redux_op(op)
    warp.check_redux_x(x)
    x = _lane_uniform(x, "warp_redux", "x")
    value = float(x.handle.data.item())
    return _scalar(abs(value) if absolute else value, tl.float32)


@interprets
def get_fp8_format_name(dtype: Any) -> tl.constexpr:
    return tl.constexpr(misc.fp8_format_name(dtype))


@interprets
def fence(scope: Any) -> None:
    """Memory fences order nothing in a sequential interpreter; only the scope is checked."""
    misc.check_fence(scope)


@interprets
def fence_async_shared() -> None:
    fence("async_shared")


# ----------------------------------------------------------------------------------------------
# TMA
# ----------------------------------------------------------------------------------------------


@interprets
def async_descriptor_load(desc: Any, result: Any, offsets: Sequence[Any], barrier: Any, pred: Any = None,
                          cache_modifier: str = "", eviction_policy: str = "",
                          multicast_targets: Sequence[Any] = [], two_ctas: bool = False) -> None:
    """Read the tile now; it lands (and its bytes count on ``barrier``) when the barrier is waited on."""
    if multicast_targets:
        _one_cta("async_descriptor_load")
    evict = tma.check_descriptor_load(desc, result, offsets, barrier, pred, cache_modifier, eviction_policy,
                                      multicast_targets, two_ctas)
    dst, bar = _value(result), _value(barrier)
    if _as_bool(pred, True):
        tile = triton_compat.semantic_descriptor_load(_semantic(), desc, list(offsets), "", evict)
        bar.inflight.append((dst.data, tile.handle.data))


_STORE_REDUCE = {"add": "add", "min": "minimum", "max": "maximum", "and": "and_", "or": "or_", "xor": "xor_"}


@interprets
def async_descriptor_store(desc: Any, source: Any, offsets: Sequence[Any], eviction_policy: str = "",
                           store_reduce: str = "") -> None:
    """Write the tile at issue; global writes are not observable by the kernel before the wait anyway."""
    _, reduce = tma.check_descriptor_store(desc, source, offsets, eviction_policy, store_reduce)
    sem, value = _semantic(), local_load(source)
    if reduce:
        old = triton_compat.semantic_descriptor_load(sem, desc, list(offsets), "", "")
        combine = getattr(sem, _STORE_REDUCE[reduce])
        if reduce == "add":
            value = combine(old, value, True)
        elif reduce in ("min", "max"):
            value = combine(old, value, tl.PropagateNan.NONE)
        else:
            value = combine(old, value)
    sem.descriptor_store(desc, value, list(offsets))


@interprets
def async_descriptor_prefetch_tensor(desc: Any, offsets: Sequence[Any], pred: Any = None,
                                     eviction_policy: str = "") -> None:
    """An L2 prefetch changes no value: only the arguments are checked."""
    tma.check_prefetch_tensor(desc, offsets, pred, eviction_policy)


@interprets
def async_store(dst_global_ptr: Any, src_smem: Any, size: Any) -> None:
    """Copy ``size`` bytes of the buffer to ``dst_global_ptr`` at issue, like ``async_descriptor_store``."""
    tma.check_async_store(dst_global_ptr, src_smem, size)
    tma.check_async_store(dst_global_ptr, src_smem, _as_int(size))  # a run-time size is known here too
    src, size, dst = _value(src_smem), _as_int(size), _value(dst_global_ptr)
    data = np.ascontiguousarray(src.data).view(np.uint8).reshape(-1)[:size]
    ctypes.memmove(int(dst.handle.data.item()), data.ctypes.data, size)


@interprets
def async_descriptor_store_wait(pendings: Any) -> None:
    args.compile_time_int(pendings, "async_descriptor_store_wait", "pendings", 0)


class DescriptorPtr:
    """``allocate_tensor_descriptor``: slot ``index`` of ``slots``; a slot holds what ``make_tensor_descriptor``
    wrote there (base, shape, strides, padding), from which ``reinterpret_tensor_descriptor`` rebuilds it."""
    tlx_kind = tma.DESCRIPTOR_SLOTS

    def __init__(self, slots: list, index: int = 0) -> None:
        self.slots = slots
        self.index = index

    def __getitem__(self, i: Any) -> "DescriptorPtr":
        i = self.index + _as_int(args.integer_scalar(i, "tensor_descriptor_ptr", "the slot index"))
        tma.check_slot_index(i, len(self.slots))
        return DescriptorPtr(self.slots, i)


@interprets
def allocate_tensor_descriptor(num: Any) -> DescriptorPtr:
    return DescriptorPtr([None] * args.compile_time_int(num, "allocate_tensor_descriptor", "num"))


@interprets
def make_tensor_descriptor(desc_ptr: Any, base: Any, shape: Sequence[Any], strides: Sequence[Any],
                           block_shape: Sequence[Any], padding_option: str = "zero") -> Any:
    """A device-side descriptor is Triton's own in the interpreter; with ``desc_ptr`` it is also kept in the slot."""
    block, padding = tma.check_make_tensor_descriptor(desc_ptr, base, shape, strides, block_shape, padding_option)
    written = (_value(base), list(_value(shape)), list(_value(strides)), padding)
    desc = _semantic().make_tensor_descriptor(written[0], written[1], written[2], block, padding)
    if _value(desc_ptr) is not None:
        ptr = _value(desc_ptr)
        ptr.slots[ptr.index] = written
    return desc


@interprets
def reinterpret_tensor_descriptor(desc_ptr: Any, block_shape: Sequence[Any], dtype: Any) -> Any:
    """The descriptor written to the slot, seen with ``block_shape`` blocks of ``dtype``."""
    block, dtype = tma.check_reinterpret_tensor_descriptor(desc_ptr, block_shape, dtype)
    ptr = _value(desc_ptr)
    written = ptr.slots[ptr.index]
    if written is None:
        raise ValueError(f"tlx.reinterpret_tensor_descriptor: descriptor slot {ptr.index} was never written by "
                         "make_tensor_descriptor(desc_ptr=...)")
    base, shape, strides, padding = written
    if base.dtype.element_ty != dtype:
        raise ValueError(f"tlx.reinterpret_tensor_descriptor: slot {ptr.index} describes {base.dtype.element_ty} "
                         f"elements, not {dtype}")
    return _semantic().make_tensor_descriptor(base, shape, strides, block, padding)


# ----------------------------------------------------------------------------------------------
# Warp specialization (see interp_tasks)
# ----------------------------------------------------------------------------------------------


@interprets
def async_tasks(**kwargs: Any) -> AsyncTasks:
    return AsyncTasks(**kwargs)


@interprets
def async_task(*args: Any, **kwargs: Any) -> AsyncTask:
    return AsyncTask(*args, **kwargs)


@interprets
def async_task_replica_id() -> tl.constexpr:
    return tl.constexpr(current_context().replica_id)


# ----------------------------------------------------------------------------------------------
# Utilities
# ----------------------------------------------------------------------------------------------


@interprets
def thread_id(axis: Any) -> tl.tensor:
    """The interpreter runs each program as one thread of control, so every thread id is 0."""
    misc.check_thread_id(axis)
    return _scalar(0, tl.int32)


@interprets
def clock64() -> tl.tensor:
    return _scalar(time.perf_counter_ns(), tl.int64)


@interprets
def dtype_of(v: Any) -> tl.dtype:
    """Pointee type of a pointer (tensor); element type of a tensor, tensor descriptor or local buffer."""
    return misc.element_dtype(v)


@interprets
def size_of(dtype: Any) -> tl.constexpr:
    return tl.constexpr(misc.check_size_of(dtype))
