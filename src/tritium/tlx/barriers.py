"""mbarriers: arrays of shared-memory barriers and their expect/wait/arrive ops."""
from __future__ import annotations

from typing import Any

import triton.language as tl
from triton.language.core import _unwrap_if_constexpr

from . import layouts
from .emit import emit, tlx_builtin
from .mem import _memdesc_type, _view
from .types import buffered_tensor

#: One i64 per barrier, unswizzled (as Gluon's ``MBarrierLayout``).
BARRIER_LAYOUT = layouts.SwizzledSharedLayout(1, 1, 1, (0, ))


def _compile_time_int(value: Any, what: str, low: int = 1) -> int:
    value = _unwrap_if_constexpr(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{what} must be a compile-time int >= {low}, got {value!r}")
    return value


def check_target(_semantic: Any, op: str, min_cap: int = 80) -> None:
    cap = layouts.cuda_capability(_semantic.builder.options.arch)
    if cap is None or cap < min_cap:
        raise NotImplementedError(f"tlx.{op} needs NVIDIA sm_{min_cap} or newer; the target is "
                                  f"{_semantic.builder.options.arch}")


def barrier(bar: Any, op: str) -> buffered_tensor:
    """``bar`` if it is one mbarrier (an indexed ``alloc_barriers`` element)."""
    if not isinstance(bar, buffered_tensor) or not bar.type.barrier:
        raise TypeError(f"tlx.{op} expects an mbarrier (from tlx.alloc_barriers), got {bar}")
    if bar.type.num:
        raise TypeError(f"tlx.{op}: pick one barrier of the array with tlx.local_view (or bars[i]) first")
    return bar


def predicate(_semantic: Any, pred: Any) -> tl.tensor:
    """``pred`` as an i1 scalar (``None`` is true)."""
    pred = _unwrap_if_constexpr(pred)
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
def barrier_arrive(bar, arrive_count=1, pred=None, _semantic=None) -> None:
    """Arrive ``arrive_count`` times on ``bar``: once per execution by the task's warps (one elected thread
    arrives after they synchronize), not once per thread, so a barrier released by two consumer tasks
    is allocated with ``arrive_count=2``."""
    check_target(_semantic, "barrier_arrive")
    bar = barrier(bar, "barrier_arrive")
    count = _compile_time_int(arrive_count, "tlx.barrier_arrive: arrive_count")
    emit(_semantic, "barrier_arrive", operands=[predicate(_semantic, pred)], bar=bar.type.id, count=count)
