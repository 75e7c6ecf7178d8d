"""Warp specialization: ``with async_tasks():`` holding ``with async_task(...):`` blocks.

Each task body is built inside an ``scf.if`` on an opaque ``i1`` placeholder that carries the task's
configuration. The ``scf.if`` gives the body its own region, so TTIR passes cannot CSE or move
values between tasks, and ``convert_to_ttgpuir`` lays it out like any other code. The lowering
(:func:`tritium.tlx.placeholders.lower`) then turns the consecutive task ``scf.if``s of one region into
one ``ttg.warp_specialize``: the default task becomes the default region, every other task (one
copy per replica) a partition, and values the partitions use from outside become explicit operands.
As in TLX, names bound inside a task are not visible after it.
"""
from __future__ import annotations

from typing import Any, Optional

import triton.language as tl
from triton.compiler.code_generator import enter_sub_region
from triton.language.core import _unwrap_if_constexpr

from .barriers import check_target
from .emit import _code_generator, emit, tlx_builtin

_REGION = "_tlx_ws_region"


class _Region:

    def __init__(self, rid: int, block: Any) -> None:
        self.id = rid
        self.block = block
        self.tasks: list["_AsyncTask"] = []
        self.current: Optional["_AsyncTask"] = None


def _region(_semantic: Any) -> Optional[_Region]:
    return _semantic.builder.__dict__.get(_REGION)


class _AsyncTasks:

    def __init__(self, _semantic: Any) -> None:
        self.semantic = _semantic

    def __enter__(self) -> None:
        check_target(self.semantic, "async_tasks", 90)
        b = self.semantic.builder
        if _region(self.semantic) is not None:
            raise ValueError("tlx.async_tasks cannot be nested")
        regions = b.__dict__.setdefault("_tlx_ws_count", [0])
        regions[0] += 1
        b.__dict__[_REGION] = _Region(regions[0], b.get_insertion_block())

    def __exit__(self, *exc: Any) -> None:
        region = self.semantic.builder.__dict__.pop(_REGION)
        workers = [t for t in region.tasks if not t.default]
        with_regs = [t for t in workers if t.num_regs is not None]
        if with_regs and len(with_regs) != len(workers):
            raise ValueError("tlx.async_task: num_regs must be given for every non-default task or for none "
                             f"({len(with_regs)} of {len(workers)} give it)")


class _AsyncTask:

    def __init__(self, _semantic: Any, args: tuple, num_warps: Any, num_regs: Any, replicate: Any) -> None:
        self.semantic = _semantic
        args = [_unwrap_if_constexpr(a) for a in args]
        num_warps, num_regs = _unwrap_if_constexpr(num_warps), _unwrap_if_constexpr(num_regs)
        replicate = _unwrap_if_constexpr(replicate)
        if args and args != ["default"]:
            raise ValueError(f"tlx.async_task: the only positional argument is 'default', got {args}")
        self.default = bool(args)
        if self.default and (num_warps is not None or num_regs is not None or replicate != 1):
            raise ValueError("tlx.async_task('default') runs on the kernel's own warps: it takes no num_warps, "
                             "num_regs or replicate")
        if not self.default:
            if isinstance(num_warps, bool) or not isinstance(num_warps, int) or num_warps < 1 \
                    or num_warps & (num_warps - 1):
                raise ValueError(f"tlx.async_task: num_warps must be a power-of-two compile-time int, got {num_warps!r}")
            if num_regs is not None and (not isinstance(num_regs, int) or not 24 <= num_regs <= 256 or num_regs % 8):
                raise ValueError(f"tlx.async_task: num_regs must be a multiple of 8 in [24, 256], got {num_regs!r}")
            if isinstance(replicate, bool) or not isinstance(replicate, int) or replicate < 1:
                raise ValueError(f"tlx.async_task: replicate must be a positive compile-time int, got {replicate!r}")
        self.num_warps, self.num_regs, self.replicate = num_warps, num_regs, replicate

    def __enter__(self) -> None:
        region = _region(self.semantic)
        b = self.semantic.builder
        if region is None:
            raise ValueError("tlx.async_task must be used inside `with tlx.async_tasks():`")
        if region.current is not None:
            raise ValueError("tlx.async_task blocks cannot be nested")
        if b.get_insertion_block().id() != region.block.id():
            raise ValueError("tlx.async_task must sit directly inside `with tlx.async_tasks():` (not in a loop or if)")
        if self.default and any(t.default for t in region.tasks):
            raise ValueError("tlx.async_tasks: there can be only one async_task('default')")
        region.tasks.append(self)
        region.current = self
        _, self.cond = emit(self.semantic, "async_task", scalar=tl.int1, region=region.id, default=self.default,
                            num_warps=self.num_warps, num_regs=self.num_regs, replicate=self.replicate)
        self.gen = _code_generator(b)
        self.scope = enter_sub_region(self.gen)
        self.scope.__enter__()
        self.body = b.create_block()

    def __exit__(self, *exc: Any) -> None:
        b = self.semantic.builder
        b.restore_insertion_point(self.scope.insert_point)
        if_op = b.create_if_op([], self.cond, False)
        self.body.merge_block_before(if_op.get_then_block())
        self.scope.__exit__()
        _region(self.semantic).current = None


@tlx_builtin
def async_tasks(_semantic=None) -> _AsyncTasks:
    """``with async_tasks():`` opens a warp-specialized region made of ``async_task`` blocks."""
    return _AsyncTasks(_semantic)


@tlx_builtin
def async_task(*args, num_warps=None, num_regs=None, replicate=1, _semantic=None) -> _AsyncTask:
    """``with async_task("default"):`` runs on the kernel's warps; ``async_task(num_warps=...)`` on extra ones."""
    return _AsyncTask(_semantic, args, num_warps, num_regs, replicate)


@tlx_builtin
def async_task_replica_id(_semantic=None) -> tl.tensor:
    """Which copy of a replicated task runs this code (0 .. replicate - 1)."""
    region = _region(_semantic)
    if region is None or region.current is None or region.current.default:
        raise ValueError("tlx.async_task_replica_id() must be called inside a non-default tlx.async_task")
    _, value = emit(_semantic, "replica_id", scalar=tl.int32)
    return tl.tensor(value, tl.int32)
