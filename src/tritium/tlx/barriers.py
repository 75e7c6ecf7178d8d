"""mbarriers: arrays of shared-memory barriers and their expect/wait/arrive ops."""
from __future__ import annotations

from typing import Any

import triton.language as tl

from . import layouts
from .emit import emit, tlx_builtin
from .mem import _memdesc_type, _view
from .types import buffered_tensor
from .triton_compat import compile_options, statement_location, unwrap_if_constexpr

#: One i64 per barrier, unswizzled (as Gluon's ``MBarrierLayout``).
BARRIER_LAYOUT = layouts.SwizzledSharedLayout(1, 1, 1, (0, ))
#: ``buffered_tensor_type.barrier`` of ``alloc_warp_barrier`` barriers and of ``remote_view``s (tlx/cluster.py);
#: plain mbarriers have ``True``.
WARP_BARRIER = "warp"
REMOTE_BARRIER = "remote"
THREADS_PER_WARP = 32
#: PTX named barriers 0-15; an sm_90 CTA has at most 1024 threads.
NUM_NAMED_BARRIERS = 16
MAX_CTA_THREADS = 1024


def _compile_time_int(value: Any, what: str, low: int = 1) -> int:
    value = unwrap_if_constexpr(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{what} must be a compile-time int >= {low}, got {value!r}")
    return value


def check_target(_semantic: Any, op: str, min_cap: int = 80) -> None:
    cap = layouts.cuda_capability(compile_options(_semantic).arch)
    if cap is None or cap < min_cap:
        raise NotImplementedError(f"tlx.{op} needs NVIDIA sm_{min_cap} or newer; the target is "
                                  f"{compile_options(_semantic).arch}")


def barrier(bar: Any, op: str) -> buffered_tensor:
    """``bar`` if it is one mbarrier (an indexed ``alloc_barriers`` element)."""
    if not isinstance(bar, buffered_tensor) or not bar.type.barrier:
        raise TypeError(f"tlx.{op} expects an mbarrier (from tlx.alloc_barriers), got {bar}")
    if bar.type.barrier == REMOTE_BARRIER:
        raise TypeError(f"tlx.{op} does not take a remote_view of an mbarrier: pass the local mbarrier"
                        f"{' and remote_cta_rank=' if op == 'barrier_arrive' else ''}")
    if bar.type.num:
        raise TypeError(f"tlx.{op}: pick one barrier of the array with tlx.local_view (or bars[i]) first")
    return bar


def predicate(_semantic: Any, pred: Any) -> tl.tensor:
    """``pred`` as an i1 scalar (``None`` is true)."""
    pred = unwrap_if_constexpr(pred)
    value = _semantic.to_tensor(True if pred is None else pred)
    if value.type.is_block():
        raise TypeError(f"tlx: pred must be a scalar, got a tensor of shape {value.shape}")
    return value if value.dtype == tl.int1 else _semantic.not_equal(value, 0)


@tlx_builtin
def alloc_barriers(num_barriers, arrive_count=1, _semantic=None) -> buffered_tensor:
    """``num_barriers`` mbarriers, each completing a phase after ``arrive_count`` arrivals."""
    check_target(_semantic, "alloc_barriers")
    num = _compile_time_int(num_barriers, "tlx.alloc_barriers: num_barriers")
    count = _compile_time_int(arrive_count, "tlx.alloc_barriers: arrive_count")
    one = _memdesc_type(_semantic, tl.int64, (1, ), BARRIER_LAYOUT, (1, ))
    return _view(_semantic, "alloc_barriers", tl.int64, (1, ), BARRIER_LAYOUT, (num, 1), num, barrier=True,
                 arrive_count=count, one=one)


@tlx_builtin
def barrier_expect_bytes(bar, size, pred=None, _semantic=None) -> None:
    """Arrive once on ``bar`` and make its phase also wait for ``size`` bytes of TMA traffic."""
    check_target(_semantic, "barrier_expect_bytes", 90)
    bar = barrier(bar, "barrier_expect_bytes")
    size = _compile_time_int(size, "tlx.barrier_expect_bytes: size", 0)
    emit(_semantic, "barrier_expect", operands=[predicate(_semantic, pred)], bar=bar.type.id, size=size)


@tlx_builtin
def barrier_wait(bar, phase, pred=None, _semantic=None) -> None:
    """Wait until the phase of parity ``phase`` of ``bar`` completed."""
    check_target(_semantic, "barrier_wait")
    bar = barrier(bar, "barrier_wait")
    phase = _semantic.to_tensor(phase)
    if phase.type.is_block() or not phase.dtype.is_int():
        raise TypeError(f"tlx.barrier_wait: phase must be an integer scalar, got {phase.type}")
    phase = _semantic.cast(phase, tl.int32) if phase.dtype != tl.int32 else phase
    emit(_semantic, "barrier_wait", operands=[phase, predicate(_semantic, pred)], bar=bar.type.id)


@tlx_builtin
def alloc_warp_barrier(num_barriers, num_warps=1, num_arrivals=1, _semantic=None) -> buffered_tensor:
    """``num_barriers`` mbarriers on which every thread of ``num_warps`` warps arrives ``num_arrivals`` times
    per phase (the fork's per-thread "warp barriers": arrive count ``num_warps * 32 * num_arrivals``).

    Stock Triton has no per-thread arrive, so ``barrier_arrive`` on such a barrier is one elected arrive
    that counts for every thread of the warps executing it: the phase accounting is the fork's, at the
    cost of the warp-group sync the fork's per-thread arrive avoids.
    """
    check_target(_semantic, "alloc_warp_barrier")
    num = _compile_time_int(num_barriers, "tlx.alloc_warp_barrier: num_barriers")
    warps = _compile_time_int(num_warps, "tlx.alloc_warp_barrier: num_warps")
    arrivals = _compile_time_int(num_arrivals, "tlx.alloc_warp_barrier: num_arrivals")
    one = _memdesc_type(_semantic, tl.int64, (1, ), BARRIER_LAYOUT, (1, ))
    return _view(_semantic, "alloc_barriers", tl.int64, (1, ), BARRIER_LAYOUT, (num, 1), num, barrier=WARP_BARRIER,
                 arrive_count=warps * THREADS_PER_WARP * arrivals, one=one)


@tlx_builtin
def barrier_arrive(bar, arrive_count=1, remote_cta_rank=None, pred=None, _semantic=None) -> None:
    """Arrive ``arrive_count`` times on ``bar``: once per execution by the task's warps (one elected thread
    arrives after they synchronize), not once per thread, so a barrier released by two consumer tasks
    is allocated with ``arrive_count=2``. On an ``alloc_warp_barrier`` barrier every thread of the
    executing warps counts, as in the fork. ``remote_cta_rank`` names the CTA of the cluster whose copy of
    ``bar`` to arrive on; a TLX kernel on stock Triton is a cluster of one CTA, so it is 0 (tlx/cluster.py)."""
    check_target(_semantic, "barrier_arrive")
    bar = barrier(bar, "barrier_arrive")
    count = _compile_time_int(arrive_count, "tlx.barrier_arrive: arrive_count")
    if unwrap_if_constexpr(remote_cta_rank) is not None:
        from .cluster import remote_rank
        remote_rank(_semantic, remote_cta_rank, "barrier_arrive", "remote_cta_rank")
    if bar.type.barrier == WARP_BARRIER:
        count *= executing_warps(_semantic) * THREADS_PER_WARP
    emit(_semantic, "barrier_arrive", operands=[predicate(_semantic, pred)], bar=bar.type.id, count=count)


def current_task(_semantic: Any) -> Any:
    """The ``async_task`` being built, or None outside task regions."""
    from .tasks import _region  # tasks imports this module
    region = _region(_semantic)
    return region.current if region is not None else None


def executing_warps(_semantic: Any) -> int:
    """Warps executing the op being built: its ``async_task``'s, else the kernel's ``num_warps``."""
    task = current_task(_semantic)
    if task is not None and not task.config.default:
        return task.config.num_warps
    return compile_options(_semantic).num_warps


def _named_barrier(_semantic: Any, op: str, bar: Any, arrive_count: Any) -> None:
    """``bar.sync``/``bar.arrive`` on hardware barrier ``bar`` for ``arrive_count`` threads (PTX)."""
    if layouts.cuda_capability(compile_options(_semantic).arch) is None:
        raise NotImplementedError(f"tlx.{op} needs NVIDIA named barriers (PTX bar.sync/bar.arrive); AMD CDNA has "
                                  f"only the whole-workgroup s_barrier. The target is {compile_options(_semantic).arch}")
    values = []
    for name, value, low, high in (("bar", bar, 0, NUM_NAMED_BARRIERS - 1), ("arrive_count", arrive_count,
                                                                             THREADS_PER_WARP, MAX_CTA_THREADS)):
        value = unwrap_if_constexpr(value)
        if isinstance(value, tl.tensor):
            if value.type.is_block() or not value.dtype.is_int():
                raise TypeError(f"tlx.{op}: {name} must be an integer scalar, got {value.type}")
            values.append(_semantic.cast(value, tl.int32) if value.dtype != tl.int32 else value)
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"tlx.{op}: {name} must be an int in [{low}, {high}], got {value!r}")
        if name == "arrive_count" and value % THREADS_PER_WARP:
            raise ValueError(f"tlx.{op}: arrive_count counts threads and must be a multiple of the warp size "
                             f"{THREADS_PER_WARP}, got {value}")
        values.append(value)
    count, warps = values[1], executing_warps(_semantic)
    if isinstance(count, int) and count < warps * THREADS_PER_WARP:
        raise ValueError(f"tlx.{op}: arrive_count={count} is fewer than the {warps * THREADS_PER_WARP} threads "
                         f"({warps} warps) executing it; it counts every participating thread")
    consts = {k: v for k, v in zip(("bar", "count"), values) if isinstance(v, int)}
    operands = [_semantic.to_tensor(v) for v in values]
    emit(_semantic, "named_barrier", operands=operands, kind="sync" if op == "named_barrier_wait" else "arrive",
         where=statement_location(_semantic), **consts)


@tlx_builtin
def named_barrier_wait(bar, arrive_count, _semantic=None) -> None:
    """Wait on hardware named barrier ``bar`` (0-15) until ``arrive_count`` threads arrived or waited on it,
    this task's threads included (PTX ``bar.sync``)."""
    _named_barrier(_semantic, "named_barrier_wait", bar, arrive_count)


@tlx_builtin
def named_barrier_arrive(bar, arrive_count, _semantic=None) -> None:
    """Arrive on hardware named barrier ``bar`` without waiting (PTX ``bar.arrive``); ``arrive_count`` is the
    same total the waiters give."""
    _named_barrier(_semantic, "named_barrier_arrive", bar, arrive_count)
