"""Warp specialization: ``with async_tasks():`` holding ``with async_task(...):`` blocks.

The arguments are the TLX fork's (``third_party/tlx/language/tlx/async_task_utils.py`` and its code
generator); what each one maps to on stock Triton is stated where it is checked below.

Each task copy is built inside an ``scf.if`` on an opaque ``i1`` placeholder that carries its
configuration. The ``scf.if`` gives the body its own region, so TTIR passes cannot CSE or move
values between tasks, and ``convert_to_ttgpuir`` lays it out like any other code. A task with
``replicate=R`` is code-generated R times, once per replica, with ``async_task_replica_id()`` the
compile-time constant ``r`` in copy ``r``; so kernels may write ``cid: tl.constexpr =
tlx.async_task_replica_id()`` and use ``cid`` in ``if cid == 0:`` or constexpr arithmetic, as in the
fork. The lowering (:func:`tritium.tlx.ws_outline.outline`) then turns the consecutive task
``scf.if``s of one region into one ``ttg.warp_specialize``: the default task's first copy becomes the
default region, every other copy a partition, and values the partitions use from outside become
explicit operands. As in TLX, names bound inside a task are not visible after it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import triton.language as tl
from .args import describe, is_int
from . import core
from .core import check_target
from .emit import emit, tlx_builtin
from .triton_compat import (SubRegion, builder_state, compile_options, kernel_state, statement_location,
                            unwrap_if_constexpr, visit_body, with_statement)

_MODULE_STATE = "ws_state"  # in kernel_state: regions seen so far

#: ``setmaxnreg`` takes a multiple of 8 in this range (PTX ISA); the fork only checks the multiple of 8.
MIN_REGS, MAX_REGS = 24, 256
#: Warps of one CTA: 1024 threads per block on NVIDIA, the only target of ``async_tasks`` (sm_90 and newer).
MAX_CTA_WARPS = 1024 // 32


# --------------------------------------------------------------------------------------------
# Arguments (shared with the interpreter, tlx/interp_tasks.py)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskConfig:
    """One ``async_task``: ``default`` runs on the kernel's own warps (``num_warps`` is then ``None``)."""

    default: bool
    num_warps: Optional[int]
    num_regs: Optional[int]
    replicate: int
    warp_group_start_id: Optional[int]


def task_config(args: Sequence[Any], num_warps: Any = None, num_regs: Any = None, registers: Any = None,
                replicate: Any = 1, warp_group_start_id: Any = None) -> TaskConfig:
    """Check the arguments of ``async_task`` (the fork's names and defaults) and return them as plain values."""
    args = [unwrap_if_constexpr(a) for a in args]
    num_warps, num_regs, registers = map(unwrap_if_constexpr, (num_warps, num_regs, registers))
    replicate, start = unwrap_if_constexpr(replicate), unwrap_if_constexpr(warp_group_start_id)
    if len(args) == 1 and isinstance(args[0], (list, tuple, tl.tuple)):
        raise NotImplementedError(
            "tlx.async_task([task ids]): task-id lists annotate code for the TLX fork's automatic warp "
            "specialization, which stock Triton does not have; write explicit tasks instead: "
            "async_task('default') and async_task(num_warps=...)")
    if args and args != ["default"]:
        raise ValueError(f"tlx.async_task: the only positional argument is 'default', got {args}")
    if num_regs is not None and registers is not None:
        raise ValueError("tlx.async_task: registers is an alias of num_regs; give one of them, not both")
    regs = num_regs if num_regs is not None else registers
    if regs is not None and (not is_int(regs) or not MIN_REGS <= regs <= MAX_REGS or regs % 8):
        raise ValueError(f"tlx.async_task: num_regs (registers) must be divisible by 8 and in [{MIN_REGS}, {MAX_REGS}] "
                         f"(setmaxnreg), got {describe(regs)}")
    default = bool(args)
    if default:
        if num_warps is not None:
            raise ValueError("tlx.async_task('default') runs on the kernel's own warps (its num_warps); it takes "
                             "no num_warps")
        if regs is not None:
            raise NotImplementedError(
                "tlx.async_task('default', num_regs/registers=...): stock Triton's ttg.warp_specialize has no "
                "register request for the default region (requestedRegisters covers only the other tasks); "
                "the default task gets the registers the other tasks leave, as in the TLX fork's 3.7.4 "
                "release, which rejects this argument too. Remove it from the default task")
    elif not is_int(num_warps) or num_warps < 1 or num_warps & (num_warps - 1):
        raise ValueError(f"tlx.async_task: num_warps must be a power-of-two compile-time int, got "
                         f"{describe(num_warps)}")
    if not is_int(replicate) or replicate < 1:
        raise ValueError(f"tlx.async_task: replicate must be a positive compile-time int, got {describe(replicate)}")
    if start is not None and (not is_int(start) or start < 0):
        raise ValueError(f"tlx.async_task: warp_group_start_id must be a non-negative compile-time int, got "
                         f"{describe(start)}")
    return TaskConfig(default, num_warps, regs, replicate, start)


@dataclass(frozen=True)
class RegionConfig:
    """One ``async_tasks`` region (the fork's keyword arguments)."""

    exclusive: bool
    no_ending_cluster_sync: bool
    mbarrier_try_wait_suspend_ns: Optional[int]


def region_config(warp_specialize: Any = True, exclusive: Any = False, no_ending_cluster_sync: Any = False,
                  mbarrier_try_wait_suspend_ns: Any = None) -> RegionConfig:
    """Check the arguments of ``async_tasks``. What they mean on stock Triton for sm_90:

    * ``warp_specialize``: the fork accepts and ignores it (a region is always warp-specialized).
    * ``exclusive=True``: the fork's promise that the module has exactly one warp-specialized region,
      which lets its lowering skip the partitions' state loop. The promise is checked here. Stock
      Triton keeps its general lowering, which computes the same thing.
    * ``no_ending_cluster_sync=True``: the user syncs the CTA cluster after the region. The fork uses
      it only before a Blackwell TMEM deallocation in a clustered kernel. Stock Triton emits no
      cluster sync after a region, and TLX kernels here run without clusters, so there is nothing to skip.
    * ``mbarrier_try_wait_suspend_ns``: a suspend-time hint that the fork adds to ``barrier_wait``
      only on compute capability 10.0 and newer. On sm_90 the fork ignores it, and so does tritium.
    """
    values = [unwrap_if_constexpr(v) for v in (warp_specialize, exclusive, no_ending_cluster_sync)]
    for name, value in zip(("warp_specialize", "exclusive", "no_ending_cluster_sync"), values):
        if not isinstance(value, bool):
            raise ValueError(f"tlx.async_tasks: {name} must be a compile-time bool, got {describe(value)}")
    suspend = unwrap_if_constexpr(mbarrier_try_wait_suspend_ns)
    if suspend is not None and (not is_int(suspend) or suspend < 0):
        raise ValueError(f"tlx.async_tasks: mbarrier_try_wait_suspend_ns must be a non-negative int, got "
                         f"{describe(suspend)}")
    return RegionConfig(values[1], values[2], suspend)


def whole_warp_groups(warps: int) -> int:
    """``warps`` rounded up to whole warp groups of 4: what stock ``allocate_warp_groups`` adds to a kernel
    for partitions of ``warps`` warps in all."""
    return -(-warps // 4) * 4


def stock_start_ids(num_warps: Sequence[int], base: int, max_extra: int) -> list[int]:
    """The first warp of each partition, as stock ``allocate_warp_groups`` (Triton 3.6) places them.

    It pads every ``warp_specialize`` with empty partitions (largest power of two first) up to the
    warp groups the largest one in the module needs (``max_extra`` warps), stable-sorts all partitions
    by warp count (largest first) and gives them consecutive warps from ``base``, the kernel's
    num_warps. It overwrites any ``warpGroupStartIds`` it finds.
    """
    sizes = list(num_warps)
    pad = whole_warp_groups(max_extra) - sum(sizes)
    while pad > 0:
        sizes.append(1 << (pad.bit_length() - 1))
        pad -= sizes[-1]
    ids, nxt = [0] * len(sizes), base
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        ids[i], nxt = nxt, nxt + sizes[i]
    return ids[:len(num_warps)]


@dataclass(frozen=True)
class Partition:
    """One partition of a region: its warps and the warp it asks to start at."""

    num_warps: int
    start: Optional[int]


def partitions(configs: Sequence[TaskConfig], module_warps: int) -> list[Partition]:
    """The partitions of a region, in order: every replica of a non-default task, and replicas
    1, 2, ... of the default task (which run the default body on ``module_warps`` more warps, as in the
    fork). Replica ``r`` of a task with ``warp_group_start_id=s`` starts at warp ``s + r * num_warps``;
    for the default task, ``s`` is where its replica 1 starts."""
    out = []
    for c in configs:
        warps = module_warps if c.default else c.num_warps
        for k in range(c.replicate - c.default):
            out.append(Partition(warps, None if c.warp_group_start_id is None else c.warp_group_start_id + k * warps))
    return out


def check_tasks(configs: Sequence[TaskConfig], module_warps: int) -> None:
    """The fork's rules for the tasks of one region (compiled and interpreted alike), and the CTA's size:
    the partitions' warps are added to the kernel's ``module_warps``, and a CTA over the limit would only
    fail at launch."""
    if sum(c.default for c in configs) > 1:
        raise ValueError("tlx.async_tasks: there can be only one async_task('default')")
    extra = whole_warp_groups(sum(p.num_warps for p in partitions(configs, module_warps)))
    if module_warps + extra > MAX_CTA_WARPS:
        raise ValueError(
            f"tlx.async_tasks: the tasks make a CTA of {module_warps + extra} warps "
            f"({(module_warps + extra) * 32} threads): the kernel's num_warps={module_warps} plus {extra} for the "
            "tlx.async_task copies (num_warps times replicate; replicas of the default task take the kernel's "
            f"num_warps), rounded up to whole warp groups of 4; a CTA has at most {MAX_CTA_WARPS} warps "
            f"({MAX_CTA_WARPS * 32} threads). Lower the tasks' num_warps or replicate, or the kernel's num_warps")
    copies = [c for c in configs for _ in range(c.replicate - c.default)]  # one per partition
    for name, field in (("num_regs (registers)", "num_regs"), ("warp_group_start_id", "warp_group_start_id")):
        given = sum(getattr(c, field) is not None for c in copies)
        if given and given != len(copies):
            raise ValueError(f"tlx.async_task: {name} must be given for every non-default task or for none "
                             f"({given} of {len(copies)} task copies have it)")


def check_start_ids(parts: Sequence[Partition], module_warps: int, max_extra: int) -> None:
    """``warp_group_start_id`` works where stock places the partitions there anyway (the lowering
    orders them by start id and writes the ids into the op); anything else cannot be expressed."""
    ordered = sorted(parts, key=lambda p: p.start)
    want = [p.start for p in ordered]
    have = stock_start_ids([p.num_warps for p in ordered], module_warps, max_extra)
    if want != have:
        raise ValueError(
            f"tlx.async_task(warp_group_start_id=...): the task copies ask to start at warps {want}, "
            "but stock Triton places warp-specialized partitions itself (allocate_warp_groups: right after the "
            f"kernel's {module_warps} warps, largest first, padded to whole warp groups) and overwrites "
            f"warpGroupStartIds; for these tasks it places them at {have}. Request those start ids, or drop "
            "warp_group_start_id")


# --------------------------------------------------------------------------------------------
# Frontend
# --------------------------------------------------------------------------------------------
class _Region:

    def __init__(self, rid: int, block: Any, config: RegionConfig) -> None:
        self.id = rid
        self.block = block
        self.config = config
        self.tasks: list["_AsyncTask"] = []
        self.current: Optional["_AsyncTask"] = None


class _ModuleState:
    """Warp-specialized regions seen so far in the module (helpers share it)."""

    def __init__(self) -> None:
        self.count = 0
        self.regions: list[list[TaskConfig]] = []  # regions that have partitions
        self.exclusive = False
        self.task: Optional["_AsyncTask"] = None  # the task being generated (seen from helpers too)


def _module_state(_semantic: Any) -> _ModuleState:
    return kernel_state(_semantic).setdefault(_MODULE_STATE, _ModuleState())


def _module_warps(_semantic: Any) -> int:
    return compile_options(_semantic).num_warps


class _AsyncTasks:

    def __init__(self, _semantic: Any, config: RegionConfig) -> None:
        self.semantic = _semantic
        self.config = config

    def __enter__(self) -> None:
        check_target(self.semantic, "async_tasks", 90)
        ctas = getattr(compile_options(self.semantic), "num_ctas", 1)
        if ctas != 1:  # stock PlanCTA would fail on the warp-specialized region, naming no TLX op
            raise ValueError(f"tlx.async_tasks: num_ctas={ctas} splits one program over {ctas} CTAs, which "
                             "warp-specialized TLX kernels do not support; compile with num_ctas=1")
        b = self.semantic.builder
        if core.region(self.semantic) is not None:
            raise ValueError("tlx.async_tasks cannot be nested")
        state = _module_state(self.semantic)
        state.count += 1
        builder_state(self.semantic)[core.REGION] = _Region(state.count, b.get_insertion_block(), self.config)

    def __exit__(self, *exc: Any) -> None:
        region = builder_state(self.semantic).pop(core.REGION)
        state = _module_state(self.semantic)
        configs = [t.config for t in region.tasks]
        warps = _module_warps(self.semantic)
        if partitions(configs, warps):
            state.regions.append(configs)
        state.exclusive |= self.config.exclusive
        if state.exclusive and len(state.regions) > 1:
            raise ValueError("tlx.async_tasks(exclusive=True) requires exactly one warp-specialized region in the "
                             f"kernel, found {len(state.regions)}")
        check_tasks(configs, warps)
        max_extra = max((sum(p.num_warps for p in partitions(c, warps)) for c in state.regions), default=0)
        for other in state.regions:  # a larger region pads the others: their start ids may move
            parts = partitions(other, warps)
            if parts[0].start is not None:
                check_start_ids(parts, warps, max_extra)


class _AsyncTask:

    def __init__(self, _semantic: Any, config: TaskConfig) -> None:
        self.semantic = _semantic
        self.config = config
        self.node = with_statement(_semantic, "tlx.async_task")
        self.replica = 0

    def __enter__(self) -> None:
        region = core.region(self.semantic)
        b = self.semantic.builder
        if region is None:
            raise ValueError("tlx.async_task must be used inside `with tlx.async_tasks():`")
        if region.current is not None:
            raise ValueError("tlx.async_task blocks cannot be nested")
        if b.get_insertion_block().id() != region.block.id():
            raise ValueError("tlx.async_task must sit directly inside `with tlx.async_tasks():` (not in a loop or if)")
        self.index = len(region.tasks)
        region.tasks.append(self)
        region.current = _module_state(self.semantic).task = self
        self._open(region, 0)

    def __exit__(self, *exc: Any) -> None:
        region = core.region(self.semantic)
        self._close()
        for r in range(1, self.config.replicate):  # the body again, with replica id r
            self._open(region, r)
            visit_body(self.semantic, self.node.body)
            self._close()
        region.current = _module_state(self.semantic).task = None

    def _open(self, region: _Region, replica: int) -> None:
        """Start copy ``replica``: its placeholder, then a fresh block and scope for its body."""
        c = self.config
        default_region = c.default and replica == 0
        start = None  # the default region always starts at warp 0
        if c.warp_group_start_id is not None and not default_region:
            start = partitions([c], _module_warps(self.semantic))[replica - c.default].start
        _, self.cond = emit(self.semantic, "async_task", scalar=tl.int1, region=region.id, default=default_region,
                            task=self.index, replica=replica, num_warps=None if c.default else c.num_warps,
                            num_regs=c.num_regs, start=start)
        self.replica = replica
        self.scope = SubRegion(self.semantic)
        self.body = self.semantic.builder.create_block()
        if kernel_state(self.semantic).get(core.CLUSTER_PUBLISHED):  # the barriers reach the peer CTAs first
            emit(self.semantic, "cluster_barrier", in_task=True, where=statement_location(self.semantic))

    def _close(self) -> None:
        self.scope.restore_insertion_point()
        if_op = self.semantic.builder.create_if_op([], self.cond, False)
        self.body.merge_block_before(if_op.get_then_block())
        self.scope.close()


def _check_region(*, warp_specialize: Any = True, exclusive: Any = False, no_ending_cluster_sync: Any = False,
                  mbarrier_try_wait_suspend_ns: Any = None) -> None:
    region_config(warp_specialize, exclusive, no_ending_cluster_sync, mbarrier_try_wait_suspend_ns)


def _check_task(*args: Any, **kwargs: Any) -> None:
    task_config(args, **kwargs)


@tlx_builtin(checks=_check_region)
def async_tasks(*, warp_specialize: bool = True, exclusive: bool = False, no_ending_cluster_sync: bool = False,
                mbarrier_try_wait_suspend_ns: Optional[int] = None, _semantic: Any = None) -> _AsyncTasks:
    """``with async_tasks():`` opens a warp-specialized region made of ``async_task`` blocks.

    Args:
        warp_specialize: accepted for the fork's API (a region is always warp-specialized).
        exclusive: the promise that the module has exactly one warp-specialized region (checked).
        no_ending_cluster_sync: accepted; tritium adds no cluster sync at the region's end, so in clusters
            (``ctas_per_cga``) no CTA may exit while a peer still arrives on or multicasts into it.
        mbarrier_try_wait_suspend_ns: a suspend-time hint for mbarrier waits; see :func:`region_config`.
    """
    return _AsyncTasks(_semantic, region_config(warp_specialize, exclusive, no_ending_cluster_sync,
                                                mbarrier_try_wait_suspend_ns))


@tlx_builtin(checks=_check_task)
def async_task(*args: Any, num_warps: Optional[int] = None, num_regs: Optional[int] = None,
               registers: Optional[int] = None, replicate: int = 1, warp_group_start_id: Optional[int] = None,
               _semantic: Any = None) -> _AsyncTask:
    """``with async_task("default"):`` runs on the kernel's warps; ``async_task(num_warps=...)`` on extra
    ones.

    Args:
        args: ``"default"`` for the default task, or nothing.
        num_warps: the warps of a non-default task.
        num_regs: registers per thread, the partition's ``requestedRegisters`` (``setmaxnreg``).
        registers: the fork's other name for ``num_regs``.
        replicate: R copies of the task (``async_task_replica_id`` tells them apart).
        warp_group_start_id: where the copies' warps start (:func:`check_start_ids` says when stock Triton
            can honour it).
    """
    return _AsyncTask(_semantic, task_config(args, num_warps, num_regs, registers, replicate, warp_group_start_id))


@tlx_builtin
def async_task_replica_id(_semantic: Any = None) -> tl.constexpr:
    """Which copy of a replicated task this code is in (0 .. replicate - 1), as a compile-time constant
    (0 in the default task's own copy)."""
    region = core.region(_semantic)
    if region is None or region.current is None:
        if _module_state(_semantic).task is not None:
            raise ValueError("tlx.async_task_replica_id() must be called in the task's own body, not in a @triton.jit "
                             "helper (Triton generates a helper once for all replicas); pass the id to the helper as "
                             "a tl.constexpr argument")
        raise ValueError("tlx.async_task_replica_id() must be called inside a tlx.async_task")
    return tl.constexpr(region.current.replica)
