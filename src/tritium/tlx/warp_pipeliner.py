"""The ``tlx.warp_pipeline`` pass: loops with ``warp_pipeline_stage`` markers, staggered over two warp groups.

What the TLX fork's AMD backend does in C++ (its ``WarpPipeliner`` and ``ConvertWarpPipeline`` passes),
done here on printed TTGIR at the end of the ttgir stage, so stock Triton 3.6 lowers the result:

* The frontend leaves a border (``rocdl.sched.barrier`` of an empty mask with ``tlx.warp_pipeline.border =
  label`` and ``tlx.warp_pipeline.priority``) where each stage ends. The pass cuts the loop body at the borders into
  stages; ops after the last border form one more stage. Waits and barriers (``ttg.async_wait``,
  ``gpu.barrier``) may sit between stages, not inside one; pure scalar ops right before such a wait
  move after it, into the next stage, as in the fork.
* Before the loop: a ``gpu.barrier`` (pending LDS traffic drains, so stock membar puts no barrier in the
  first stage), then the warp group of each thread (``workitem.id.x / (4 * warp size)``: one wave per
  SIMD per group) and ``amdg.cond_barrier`` on the upper group, which holds it back one barrier: the
  two groups now run one stage apart. After the loop, ``amdg.cond_barrier`` on the lower group brings
  them together again.
* At every stage boundary: ``s_setprio`` of the stage that starts there, and a barrier between two
  ``rocdl.sched.barrier``s of an empty mask (so LLVM moves nothing across it). The barrier is ``gpu.barrier`` (LDS
  drained) where two stages touch the same shared-memory allocation, one writing, on the circular
  schedule (the stage of one iteration and every stage of the next), and a bare ``s_barrier`` elsewhere.
  A wait already between two stages serves as that boundary's barrier. The first stage's boundary is
  the wrap-around one, before the yield; its priority is also set before the loop.

Misuse is refused naming ``tlx.warp_pipeline_stage`` and the kernel line: a stage outside a loop body
(or in an ``if`` in one), fewer than two stages, a wait or a loop inside a stage, two waits between
the same two stages.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from tritium import compat
from tritium.plugins import mlir_pass

from .lowering import writes
from .placeholders import Placeholder
from . import triton_compat
from .triton_compat import SCHED_BARRIER, ir
from .ttgir_text import SSA, SSA_DEF, source_location, strip_strings

BORDER = "tlx.warp_pipeline.border"
PRIORITY = "tlx.warp_pipeline.priority"
OP = "tlx.warp_pipeline_stage"
#: Waves of one warp group per SIMD: a CDNA compute unit has 4 SIMDs (the fork's ``warpSize * 4`` threads).
SIMDS = 4

_BORDER = re.compile(re.escape(SCHED_BARRIER) + r' \{' + re.escape(BORDER) + r' = ("(?:[^"\\]|\\.)*")'
                     r'(?:, ' + re.escape(PRIORITY) + r' = (\d+) : i32)?\}')
#: Ops that may sit between stages, never inside one.
_BETWEEN = re.compile(r"^(?:%[\w$.-]+ = )?(?:ttg\.async_wait|amdg\.async_wait|gpu\.barrier|rocdl\.s\.barrier)\b")
_LOOP = re.compile(r"^(?:%[\w$.:-]+ = )?scf\.(?:for|while)\b")
_PURE_SCALAR = re.compile(r"^%[\w$.-]+ = arith\.\w+ [^:]*: (?:i\d+|index|f\d+)(?: loc\(.*\))?$")
_OP_NAME = re.compile(r"^(?:%[\w$.:#-]+(?:, %[\w$.:#-]+)* = )?\"?([\w.]+)")
#: Ops that name a view of their operand's allocation (no access of their own).
_VIEWS = ("ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.memdesc_subview", "ttg.memdesc_trans",
          "ttg.memdesc_reshape", "ttg.memdesc_reinterpret")
_READS = ("ttg.local_load", "ttg.local_gather")
_WRITES = ("ttg.local_store", "ttg.async_copy_global_to_local", "amdg.buffer_load_to_local", "ttg.local_scatter")
#: An allocation of unknown origin (a loop-carried view, a function argument): it may alias any other.
ANY = "*"


@writes("warp_pipeline_border")
def _border(self: Any, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
    """The fork's border marker, which stock passes keep in place (it has side effects)."""
    prio = f", {PRIORITY} = {a['priority']} : i32" if a.get("priority") is not None else ""
    out.append(f"{ind}{SCHED_BARRIER} {{{BORDER} = {json.dumps(a['label'])}{prio}}}{loc}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _loc(line: str) -> str:
    m = re.search(r"loc\((?:[^()]|\([^()]*\))*\)\s*$", line)
    return m.group(0) if m else ""


@dataclass
class _Op:
    """One op of the loop body: lines ``first..last`` (more than one when it has regions)."""

    first: int
    last: int
    head: str  # its first line, stripped

    @property
    def name(self) -> str:
        m = _OP_NAME.match(self.head)
        return m.group(1) if m else ""


@dataclass
class _Stage:
    ops: list[_Op]
    label: str
    priority: Optional[int]
    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)

    def conflicts(self, other: "_Stage") -> bool:
        def meet(a: set, b: set) -> bool:
            return bool(a & b) or (bool(a) and ANY in b) or (bool(b) and ANY in a)

        return meet(self.writes, other.reads | other.writes) or meet(self.reads, other.writes)


def _body_ops(lines: list[str], start: int, end: int) -> list[_Op]:
    """Top-level ops of the region whose lines are ``start..end-1``."""
    ops, i = [], start
    while i < end:
        ind, j = _indent(lines[i]), i
        if strip_strings(lines[i]).rstrip().endswith("{"):
            j += 1
            while not (_indent(lines[j]) == ind and lines[j].lstrip().startswith("}")
                       and not strip_strings(lines[j]).rstrip().endswith("{")):
                j += 1
        ops.append(_Op(i, j, lines[i].strip()))
        i = j + 1
    return ops


def _region_end(lines: list[str], header: int) -> int:
    """The line closing the region opened at the end of line ``header``."""
    ind, j = _indent(lines[header]), header + 1
    while not (_indent(lines[j]) == ind and lines[j].lstrip().startswith("}")):
        j += 1
    return j


def _enclosing(lines: list[str], i: int) -> int:
    """The line of the op whose region holds line ``i`` (-1 at module level)."""
    ind = _indent(lines[i])
    for j in range(i - 1, -1, -1):
        if lines[j].strip() and _indent(lines[j]) < ind and strip_strings(lines[j]).rstrip().endswith("{"):
            return j
    return -1


def _roots(lines: list[str], upto: int) -> dict[str, str]:
    """SSA name of a shared-memory view -> its allocation (the ``ttg.local_alloc`` it views), lines before ``upto``."""
    roots: dict[str, str] = {}
    for line in lines[:upto]:
        s = strip_strings(line).strip()
        m = re.match(r"(%[\w$.-]+) = (ttg\.local_alloc|" + "|".join(map(re.escape, _VIEWS)) + r")\b(.*)", s)
        if not m:
            continue
        if m.group(2) == "ttg.local_alloc":
            roots[m.group(1)] = m.group(1)
        else:
            src = SSA.search(m.group(3))
            roots[m.group(1)] = roots.get(src.group(0), ANY) if src else ANY
    return roots


def _accesses(lines: list[str], op: _Op, roots: dict[str, str], stage: _Stage) -> None:
    """Add the shared-memory reads and writes of ``op`` (and the ops in its regions) to ``stage``."""
    for line in lines[op.first:op.last + 1]:
        s = strip_strings(line).strip()
        m = _OP_NAME.match(s)
        name = m.group(1) if m else ""
        defined = SSA_DEF.match(s)
        if name in _VIEWS:
            roots[defined.group(1)] = roots.get((SSA.findall(s[defined.end():]) or [ANY])[0], ANY)
            continue
        if name == "ttg.local_alloc":
            roots[defined.group(1)] = defined.group(1)
            if "%" in s[defined.end():].split(":", 1)[0]:  # initialized from a tensor: a write
                stage.writes.add(defined.group(1))
            continue
        operands = SSA.findall(s[defined.end():] if defined else s)
        used = {roots[v] for v in operands if v in roots}
        if name == "ttg.local_dealloc" or not (used or "memdesc" in s or "#smem" in s):
            continue
        used = used or {ANY}
        if name in _READS:
            stage.reads |= used
        elif name in _WRITES:
            stage.writes |= used
        else:
            stage.reads |= used
            stage.writes |= used


def _barriers(stages: list[_Stage]) -> list[bool]:
    """Which boundaries need an LDS barrier (boundary ``i`` is before stage ``i``; 0 is the wrap-around).

    For every pair of stages whose accesses conflict, from ``src`` to the next ``dst`` on the circular
    schedule (``dst == src`` one iteration later), some boundary in between must drain LDS. Nearer pairs
    go first, so barriers placed for them serve farther ones; a pair not yet served gets one at ``dst``
    when adjacent, else just before ``dst - 1``'s stage ends (the fork's choice)."""
    n = len(stages)
    bars = [False] * n
    for dist in range(1, n + 1):
        for src in range(n):
            dst = (src + dist) % n
            at = dst if dist == 1 else (dst - 1) % n
            covered, i = False, src + 1
            while True:
                if bars[i % n]:
                    covered = True
                    break
                if i % n == at:
                    break
                i += 1
            if not covered and stages[src].conflicts(stages[dst]):
                bars[at] = True
    return bars


def _error(text: str, line: str, why: str) -> ValueError:
    return ValueError(f"{OP} at {source_location(text, _loc(line))}: {why}")


def _split(text: str, lines: list[str], ops: list[_Op]) -> tuple[list[_Stage], dict[int, _Op]]:
    """The stages of a loop body and the waits between them (by the index of the stage that follows)."""
    stages: list[_Stage] = []
    between: dict[int, _Op] = {}
    current: list[_Op] = []
    for op in ops:
        border = _BORDER.search(op.head)
        if border:
            stages.append(_Stage(current, json.loads(border.group(1)),
                                 None if border.group(2) is None else int(border.group(2))))
            current = []
        elif _BETWEEN.match(op.head):
            if current:
                raise _error(text, op.head, f"{op.name} (a wait or barrier, e.g. tlx.async_load_wait_group) is "
                                            "inside a stage, after other ops; put it between stages, or first in "
                                            "the stage")
            if len(stages) in between:
                raise _error(text, op.head, f"two waits or barriers between the same two stages "
                                            f"({between[len(stages)].name}, {op.name}); put one of them in a stage")
            between[len(stages)] = op
        elif _LOOP.match(op.head):
            raise _error(text, op.head, "a loop cannot be inside a warp-pipeline stage; put the stages in the "
                                        "inner loop's body instead")
        elif op.name == "scf.yield":
            break
        else:
            current.append(op)
    if current:
        stages.append(_Stage(current, "last_cluster", None))
    return stages, between


def _sink_scalars(ops: list[_Op]) -> list[_Op]:
    """Move each run of pure scalar ops right before a wait to after the wait (into the next stage),
    unless the wait uses one of them."""
    out: list[_Op] = []
    pending: list[_Op] = []
    i = 0
    while i < len(ops):
        op = ops[i]
        if _PURE_SCALAR.match(op.head):
            pending.append(op)
            i += 1
            continue
        waits = []
        while i < len(ops) and _BETWEEN.match(ops[i].head):
            waits.append(ops[i])
            i += 1
        if waits:
            names = {SSA_DEF.match(p.head).group(1) for p in pending}
            used = {v for w in waits for v in SSA.findall(w.head.split("=", 1)[-1])}
            out += waits + pending if not names & used else pending + waits
        else:
            out += pending + [op]
            i += 1
        pending = []
    return out + pending


class _Rewrite:

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        m = re.search(r'"ttg\.threads-per-warp" = (\d+)', text)
        self.group_threads = SIMDS * int(m.group(1) if m else 64)
        self.count = 0

    def temp(self, what: str) -> str:
        self.count += 1
        return f"%tlx_wp{self.count}_{what}"

    def run(self) -> str:
        loops: list[int] = []
        for i, line in enumerate(self.lines):
            if not _BORDER.search(line):
                continue
            parent = _enclosing(self.lines, i)
            if parent < 0 or not re.match(r"^(?:%[\w$.:-]+ = )?scf\.for\b", self.lines[parent].strip()):
                m = re.search(r"\b(scf\.\w+|tt\.func|ttg\.\w+)\b", self.lines[parent]) if parent >= 0 else None
                what = m.group(1) if m else "scf.if"
                hint = ("; a tl.static_range loop is unrolled and leaves no loop to pipeline" if what == "tt.func"
                        else "")
                raise _error(self.text, line, f"a warp-pipeline stage must be directly in the body of a loop "
                                              f"(tl.range), not in {what}{hint}")
            if parent not in loops:
                loops.append(parent)
        # Innermost-last order does not matter: a loop with stages has no pipelined loop inside a stage.
        edits: list[tuple[int, int, list[str]]] = []  # (first line, last line, replacement) per loop
        for header in loops:
            end = _region_end(self.lines, header)
            edits.append((header, end, self.pipeline(header, end)))
        out: list[str] = []
        prev = 0
        for first, last, new in sorted(edits):
            out += self.lines[prev:first] + new
            prev = last + 1
        out += self.lines[prev:]
        return "\n".join(out) + "\n"

    def pipeline(self, header: int, end: int) -> list[str]:
        lines, text = self.lines, self.text
        ops = _sink_scalars(_body_ops(lines, header + 1, end))
        stages, between = _split(text, lines, ops)
        loc = " " + _loc(lines[end])  # the loop's own location is printed after its region
        if len(stages) < 2:
            raise _error(text, lines[end], "the loop's warp-pipeline stages make fewer than two stages; a "
                                              "pipeline staggers two warp groups by one stage, so it needs two")
        if 0 in between and len(stages) in between:
            raise _error(text, lines[end], "the loop body has a wait or barrier both before its first stage "
                                              "and after its last; keep one of them")
        top = 0 in between
        if len(stages) in between:  # a wait at the bottom is the wrap-around boundary's
            between[0] = between.pop(len(stages))
        roots = _roots(lines, header)
        for stage in stages:
            for op in stage.ops:
                _accesses(lines, op, roots, stage)
        local = _barriers(stages)
        any_priority = any(s.priority is not None for s in stages)
        ind = " " * _indent(lines[header])
        body_ind = ind + "  "

        def priority(stage: _Stage, at: str) -> list[str]:
            if stage.priority is not None:
                return [f"{at}rocdl.s.setprio {stage.priority}{loc}"]
            return [f"{at}rocdl.s.setprio 0{loc}"] if any_priority else []

        def boundary(i: int) -> list[str]:
            sched = f"{body_ind}{SCHED_BARRIER}{loc}"
            if i in between:
                wait = between[i]
                return [*priority(stages[i], body_ind), sched, *lines[wait.first:wait.last + 1], sched]
            barrier = "gpu.barrier" if local[i] else "rocdl.s.barrier"
            return [*priority(stages[i], body_ind), sched, f"{body_ind}{barrier}{loc}", sched]

        tid, zero, size, group = self.temp("tid"), self.temp("c0"), self.temp("group_threads"), self.temp("group")
        low, high = self.temp("low"), self.temp("high")
        out = [f"{ind}gpu.barrier{loc}",
               f"{ind}{tid} = rocdl.workitem.id.x : i32{loc}",
               f"{ind}{zero} = arith.constant 0 : i32{loc}",
               f"{ind}{size} = arith.constant {self.group_threads} : i32{loc}",
               f"{ind}{group} = arith.divsi {tid}, {size} : i32{loc}",
               f"{ind}{low} = arith.cmpi eq, {group}, {zero} : i32{loc}",
               f"{ind}{high} = arith.cmpi ne, {group}, {zero} : i32{loc}",
               f"{ind}amdg.cond_barrier {high}{loc}"]
        if not top:  # the first iteration's; later ones get it at the bottom of the loop
            out += priority(stages[0], ind)
        out.append(lines[header])
        yield_op = next(op for op in ops if op.name == "scf.yield")
        for i, stage in enumerate(stages):
            if i > 0 or top:
                out += boundary(i)
            for op in stage.ops:
                out += lines[op.first:op.last + 1]
        if not top:
            out += boundary(0)
        out += lines[yield_op.first:yield_op.last + 1]
        out.append(lines[end])
        if any_priority:
            out.append(f"{ind}rocdl.s.setprio 0{loc}")
        out.append(f"{ind}amdg.cond_barrier {low}{loc}")
        return out


def pipeline_warps(text: str) -> Optional[str]:
    """``text`` with every loop that has warp-pipeline stages rewritten (None: there are none)."""
    if BORDER not in text:
        return None
    return _Rewrite(text).run()


@mlir_pass(name="tlx.warp_pipeline")
def warp_pipeline(mod: ir.module, ctx: Any) -> Any:
    """Split loops at their ``warp_pipeline_stage`` borders and stagger the warp groups (see the module). The
    loops keep their arguments' locations (:func:`.triton_compat.copy_argument_locations`: no canonicalizer
    follows this pass to remove markers)."""
    text = pipeline_warps(mod.str())
    if text is None:
        return None
    parsed = compat.parse_module(text, mod.context)
    triton_compat.copy_argument_locations(mod, parsed)
    return parsed
