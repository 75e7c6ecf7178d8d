"""mbarriers: arrays of shared-memory barriers and their expect/wait/arrive ops."""
from __future__ import annotations

from typing import Any

import triton.language as tl

from . import args, layouts
from .args import ConstInt, Pred, Scalar
from .cluster_launch import cluster_ctas, ptx_link
from .core import CLUSTER_PUBLISHED, check_target, current_task, executing_warps, memdesc_type, predicate
from .emit import emit, tlx_builtin
from .mem import _view
from .misc import read_register
from .types import buffered_tensor
from .triton_compat import compile_options, kernel_state, statement_location, unwrap_if_constexpr

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


#: ``barrier(bar, op)``: ``bar`` if it is one local mbarrier (tma.py and cluster.py check with it too).
barrier = args.barrier


# --------------------------------------------------------------------------------------------
# Argument checks, shared with tlx/interpreter.py (see tlx/args.py)
# --------------------------------------------------------------------------------------------
def check_alloc_barriers(num_barriers: Any, arrive_count: Any) -> tuple[int, int]:
    return (args.compile_time_int(num_barriers, "alloc_barriers", "num_barriers"),
            args.compile_time_int(arrive_count, "alloc_barriers", "arrive_count"))


def check_alloc_warp_barrier(num_barriers: Any, num_warps: Any, num_arrivals: Any) -> tuple[int, int, int]:
    op = "alloc_warp_barrier"
    return (args.compile_time_int(num_barriers, op, "num_barriers"), args.compile_time_int(num_warps, op, "num_warps"),
            args.compile_time_int(num_arrivals, op, "num_arrivals"))


def check_barrier_expect_bytes(bar: Any, size: Any, pred: Any) -> int:
    args.barrier(bar, "barrier_expect_bytes")
    args.scalar_pred(pred, "barrier_expect_bytes")
    return args.compile_time_int(size, "barrier_expect_bytes", "size", 0)


def check_barrier_wait(bar: Any, phase: Any, pred: Any) -> None:
    args.barrier(bar, "barrier_wait")
    args.integer_scalar(phase, "barrier_wait", "phase")
    args.scalar_pred(pred, "barrier_wait")


def check_barrier_arrive(bar: Any, arrive_count: Any, remote_cta_rank: Any, pred: Any, ctas: int = 1) -> int:
    """The arrive count; a ``remote_cta_rank`` must name a CTA of the cluster of ``ctas``
    (:func:`args.check_remote_rank`)."""
    args.barrier(bar, "barrier_arrive")
    count = args.compile_time_int(arrive_count, "barrier_arrive", "arrive_count")
    if args.unwrap(remote_cta_rank) is not None:
        args.check_remote_rank(remote_cta_rank, "barrier_arrive", "remote_cta_rank", ctas)
    args.scalar_pred(pred, "barrier_arrive")
    return count


def check_named_barrier(op: str, bar: Any, arrive_count: Any, threads: int) -> None:
    """Hardware barrier ``bar`` (0-15) for ``arrive_count`` threads (an int: a multiple of the warp size, at
    least the ``threads`` executing the op) or run-time integer scalars."""
    for name, value, low, high in (("bar", bar, 0, NUM_NAMED_BARRIERS - 1),
                                   ("arrive_count", arrive_count, THREADS_PER_WARP, MAX_CTA_THREADS)):
        value = args.integer_scalar(value, op, name)
        if isinstance(value, tl.tensor):
            continue
        if not low <= value <= high:
            raise ValueError(f"tlx.{op}: {name} must be an int in [{low}, {high}], got {value!r}")
        if name == "arrive_count" and value % THREADS_PER_WARP:
            raise ValueError(f"tlx.{op}: arrive_count counts threads and must be a multiple of the warp size "
                             f"{THREADS_PER_WARP}, got {value}")
        if name == "arrive_count" and value < threads:
            raise ValueError(f"tlx.{op}: arrive_count={value} is fewer than the {threads} threads "
                             f"({threads // THREADS_PER_WARP} warps) executing it; it counts every participating "
                             "thread")


@tlx_builtin
def alloc_barriers(num_barriers: ConstInt, arrive_count: ConstInt = 1, _semantic: Any = None) -> buffered_tensor:
    """``num_barriers`` mbarriers in shared memory, each completing a phase after ``arrive_count`` arrivals.

    Args:
        num_barriers: how many (index the result, ``bars[i]``, for one).
        arrive_count: arrivals that complete a phase: one per ``barrier_arrive`` execution by a task (not
            per thread), plus one per ``barrier_expect_bytes``.
    """
    check_target(_semantic, "alloc_barriers")
    num, count = check_alloc_barriers(num_barriers, arrive_count)
    one = memdesc_type(_semantic, tl.int64, (1, ), BARRIER_LAYOUT, (1, ))
    bars = _view(_semantic, "alloc_barriers", tl.int64, (1, ), BARRIER_LAYOUT, (num, 1), num, barrier=True,
                 arrive_count=count, one=one)
    _publish_to_cluster(_semantic, "alloc_barriers")
    return bars


def fence_mbarrier_init(_semantic: Any) -> None:
    """``fence.mbarrier_init.release.cluster``: this thread's barrier inits, visible to the whole cluster."""
    read_register(_semantic, "fence.mbarrier_init.release.cluster;\n\tmov.u32 $0, 0;", "=r", tl.int32)


def _publish_to_cluster(_semantic: Any, op: str) -> None:
    """In a cluster of several CTAs, make the barriers just initialized visible to the peers before any of them
    can arrive on one or multicast into this CTA (the fork's compiler inserts the same sync): the init fence at
    cluster scope, then a barrier of the whole cluster, which every thread of every CTA must reach. In a
    warp-specialized kernel the task warps cannot reach it (tlx/lowering.py), so there every task opens with a
    cluster barrier instead (tlx/tasks.py), and this one is dropped."""
    ctas = cluster_ctas(_semantic)
    if ctas == 1:
        return
    if current_task(_semantic) is not None:
        raise NotImplementedError(f"tlx.{op}: with ctas_per_cga=({ctas}, 1, 1), allocate barriers outside "
                                  "async_tasks: their initialization is published to the cluster by a barrier "
                                  "that every thread of the CTA takes")
    fence_mbarrier_init(_semantic)
    emit(_semantic, "cluster_barrier", in_task=False, where=statement_location(_semantic), publish=op)
    kernel_state(_semantic)[CLUSTER_PUBLISHED] = True


@tlx_builtin
def barrier_expect_bytes(bar: buffered_tensor, size: ConstInt, pred: Pred = None, _semantic: Any = None) -> None:
    """Arrive once on ``bar`` and make its phase also wait for ``size`` bytes of TMA traffic.

    Args:
        bar: one mbarrier.
        size: bytes the TMA loads completing on ``bar`` bring in this phase.
        pred: skip the op where false.
    """
    check_target(_semantic, "barrier_expect_bytes", 90)
    size = check_barrier_expect_bytes(bar, size, pred)
    emit(_semantic, "barrier_expect", operands=[predicate(_semantic, pred)], bar=bar.type.id, size=size)


@tlx_builtin
def barrier_wait(bar: buffered_tensor, phase: Scalar, pred: Pred = None, _semantic: Any = None) -> None:
    """Wait until the phase of parity ``phase`` of ``bar`` completed.

    Args:
        bar: one mbarrier.
        phase: the parity (0 or 1) of the phase to wait for; it flips each time the barrier completes.
        pred: skip the wait where false.
    """
    check_target(_semantic, "barrier_wait")
    check_barrier_wait(bar, phase, pred)
    phase = _semantic.to_tensor(phase)
    phase = _semantic.cast(phase, tl.int32) if phase.dtype != tl.int32 else phase
    emit(_semantic, "barrier_wait", operands=[phase, predicate(_semantic, pred)], bar=bar.type.id)


@tlx_builtin
def alloc_warp_barrier(num_barriers: ConstInt, num_warps: ConstInt = 1, num_arrivals: ConstInt = 1,
                       _semantic: Any = None) -> buffered_tensor:
    """``num_barriers`` mbarriers on which every thread of ``num_warps`` warps arrives ``num_arrivals`` times
    per phase (the fork's per-thread "warp barriers": arrive count ``num_warps * 32 * num_arrivals``).

    Stock Triton has no per-thread arrive, so ``barrier_arrive`` on such a barrier is one elected arrive
    that counts for every thread of the warps executing it: the phase accounting is the fork's, at the
    cost of the warp-group sync the fork's per-thread arrive avoids.

    Args:
        num_barriers: how many.
        num_warps: warps whose every thread arrives.
        num_arrivals: arrivals per thread and phase.
    """
    check_target(_semantic, "alloc_warp_barrier")
    num, warps, arrivals = check_alloc_warp_barrier(num_barriers, num_warps, num_arrivals)
    one = memdesc_type(_semantic, tl.int64, (1, ), BARRIER_LAYOUT, (1, ))
    bars = _view(_semantic, "alloc_barriers", tl.int64, (1, ), BARRIER_LAYOUT, (num, 1), num, barrier=WARP_BARRIER,
                 arrive_count=warps * THREADS_PER_WARP * arrivals, one=one)
    _publish_to_cluster(_semantic, "alloc_warp_barrier")
    return bars


@tlx_builtin
def barrier_arrive(bar: buffered_tensor, arrive_count: ConstInt = 1, remote_cta_rank: Scalar | None = None,
                   pred: Pred = None, _semantic: Any = None) -> None:
    """Arrive ``arrive_count`` times on ``bar``: once per execution by the task's warps (one elected thread
    arrives after they synchronize), not once per thread, so a barrier released by two consumer tasks
    is allocated with ``arrive_count=2``. On an ``alloc_warp_barrier`` barrier every thread of the
    executing warps counts, as in the fork. ``remote_cta_rank`` names the CTA of the cluster whose copy of
    ``bar`` to arrive on (any CTA of a ``ctas_per_cga`` cluster; else 0, this CTA).

    Args:
        bar: one mbarrier (or a ``remote_view`` of one).
        arrive_count: arrivals this execution counts for.
        remote_cta_rank: the cluster CTA whose barrier to arrive on.
        pred: skip the arrive where false.
    """
    check_target(_semantic, "barrier_arrive")
    ctas = cluster_ctas(_semantic)
    count = check_barrier_arrive(bar, arrive_count, remote_cta_rank, pred, ctas)
    if bar.type.barrier == WARP_BARRIER:
        count *= executing_warps(_semantic) * THREADS_PER_WARP
    rank = unwrap_if_constexpr(remote_cta_rank)
    if rank is None or ctas == 1:  # this CTA's own barrier
        emit(_semantic, "barrier_arrive", operands=[predicate(_semantic, pred)], bar=bar.type.id, count=count)
        return
    check_target(_semantic, "barrier_arrive(remote_cta_rank=...)", 90)
    rank = _semantic.cast(_semantic.to_tensor(rank), tl.int32)
    emit(_semantic, "remote_arrive", operands=[predicate(_semantic, pred)], bar=bar.type.id, count=count,
         link=ptx_link(_semantic, rank))


def _named_barrier(_semantic: Any, op: str, bar: Any, arrive_count: Any) -> None:
    """``bar.sync``/``bar.arrive`` on hardware barrier ``bar`` for ``arrive_count`` threads (PTX)."""
    if layouts.cuda_capability(compile_options(_semantic).arch) is None:
        raise NotImplementedError(f"tlx.{op} needs NVIDIA named barriers (PTX bar.sync/bar.arrive); AMD CDNA has "
                                  f"only the whole-workgroup s_barrier. The target is {compile_options(_semantic).arch}")
    check_named_barrier(op, bar, arrive_count, executing_warps(_semantic) * THREADS_PER_WARP)
    values = [unwrap_if_constexpr(v) for v in (bar, arrive_count)]
    values = [_semantic.cast(v, tl.int32) if isinstance(v, tl.tensor) and v.dtype != tl.int32 else v for v in values]
    consts = {k: v for k, v in zip(("bar", "count"), values) if isinstance(v, int)}
    operands = [_semantic.to_tensor(v) for v in values]
    emit(_semantic, "named_barrier", operands=operands, kind="sync" if op == "named_barrier_wait" else "arrive",
         where=statement_location(_semantic), **consts)


@tlx_builtin
def named_barrier_wait(bar: ConstInt, arrive_count: ConstInt, _semantic: Any = None) -> None:
    """Wait on hardware named barrier ``bar`` until ``arrive_count`` threads arrived or waited on it, this
    task's threads included (PTX ``bar.sync``).

    Args:
        bar: the named barrier, 0-15 (stock Triton uses 0-3 for its own syncs).
        arrive_count: threads taking part, a multiple of 32.
    """
    _named_barrier(_semantic, "named_barrier_wait", bar, arrive_count)


@tlx_builtin
def named_barrier_arrive(bar: ConstInt, arrive_count: ConstInt, _semantic: Any = None) -> None:
    """Arrive on hardware named barrier ``bar`` without waiting (PTX ``bar.arrive``).

    Args:
        bar: the named barrier, 0-15.
        arrive_count: the same total of threads the waiters give.
    """
    _named_barrier(_semantic, "named_barrier_arrive", bar, arrive_count)
