"""Warp-specialize outlining: the task ``scf.if``s of a region become one ``ttg.warp_specialize``.

tlx/tasks.py builds each copy of each ``async_task`` as an ``scf.if`` on an ``async_task`` placeholder,
so TTIR passes keep the tasks apart and ``convert_to_ttgpuir`` lays them out like any other code. Once
the other placeholders are lowered (:mod:`.lowering`), :func:`outline` turns the consecutive task
``scf.if``s of one region into a ``ttg.warp_specialize``: the default task's first copy becomes the
default region and every other copy a partition. A partition receives the values it uses from outside
as explicit operands, or recomputes them when they are cheap and pure, and gets the register layouts
of its own warp count.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .placeholders import parse
from .ttgir_text import SSA, SSA_DEF, STRING, closing_bracket, split_types, strip_strings

#: A register tensor type (a TMA descriptor's block type ``!tt.tensordesc<tensor<...>>`` is not one).
_REGISTER_TENSOR = re.compile(r"(?<!tensordesc<)tensor<")

_RESULTS = re.compile(r"^\s*(%[\w$.-]+(?::\d+)?(?:, %[\w$.-]+)*) = ")  # an op's result list
_BLOCK_ARG = re.compile(r"(%[\w$.-]+):\s")
#: Ops a partition recomputes instead of receiving: pure, one result, no region.
#: ``tt.make_tensor_descriptor`` too: a task builds its own tensor map of a device descriptor.
_CLONABLE = re.compile(r"(arith|math)\.\w+|tt\.(get_program_id|get_num_programs|splat|make_range|expand_dims|"
                       r"broadcast|addptr|make_tensor_descriptor)|ttg\.convert_layout")


def _rename(line: str, prefix: str) -> str:
    """Prefix every SSA name of ``line`` outside string literals."""
    out, last = [], 0
    for m in STRING.finditer(line):
        out.append(SSA.sub(lambda n: "%" + prefix + n.group(0)[1:], line[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(SSA.sub(lambda n: "%" + prefix + n.group(0)[1:], line[last:]))
    return "".join(out)


@dataclass
class _Task:
    payload: dict
    lines: list[str]  # the body


def _tasks(lines: list[str], start: int) -> tuple[int, list[_Task]]:
    """The tasks of the region whose first task placeholder is ``lines[start]``, and the index past them."""
    region = parse(lines[start]).payload["region"]
    tasks, i = [], start
    while i < len(lines):
        p = parse(lines[i])
        if p is None or p.op != "async_task" or p.payload["region"] != region:
            break
        head = f"{p.indent}scf.if {p.result} {{"
        if i + 1 < len(lines) and lines[i + 1] == head:
            end = next(j for j in range(i + 2, len(lines))
                       if lines[j] == f"{p.indent}}}" or lines[j].startswith(f"{p.indent}}} loc("))
            tasks.append(_Task(p.payload, lines[i + 2:end]))
            i = end + 1
        else:  # a task without side effects: its scf.if was folded away
            tasks.append(_Task(p.payload, []))
            i += 1
    return i, tasks


def _captures(body: list[str], defs: dict[str, str], known: dict[str, str]) -> tuple[list[str], list[tuple[str, str]]]:
    """What a partition needs from outside: (definitions it recomputes, (value, type) operands)."""
    code = [strip_strings(line) for line in body]
    defined = {m.group(1) for line in code for m in (*SSA_DEF.finditer(line), *_BLOCK_ARG.finditer(line))}
    defined |= {name for line in code if _RESULTS.match(line) for name in SSA.findall(_RESULTS.match(line).group(1))}
    clones: list[str] = []
    operands: list[tuple[str, str]] = []
    seen: set[str] = set()

    def need(use: str) -> None:
        name = use.split("#")[0]
        if use in seen or name in defined:
            return
        seen.add(use)
        if name in known:
            operands.append((name, known[name]))
            return
        line = defs.get(name)
        op = line.split("=", 1)[1].split()[0] if line else ""
        if op in _SCF_RESULTS:  # the result of a loop or if before the region: passed in, typed by its header
            operands.append((use, _region_result_types(line)[int(use.partition("#")[2] or 0)]))
            return
        scalar = line and _SCALAR_ASM.search(line)
        if scalar:  # a register read before the region (cluster_cta_rank): passed in, not read again
            operands.append((name, scalar.group(1)))
            return
        if line is None or not _CLONABLE.fullmatch(op) or _RESULTS.match(line).group(1) != name:
            raise ValueError(f"tlx.async_task: {name} is used inside a task but defined before it by "
                             f"{op or 'something'} that cannot be passed into a warp-specialized task; compute "
                             f"it inside the task")
        for use in _USE.findall(strip_strings(line.split("=", 1)[1])):
            need(use)
        clones.append(line)

    for line in code:
        for use in _USE.findall(line):
            need(use)
    return clones, operands


#: An inline asm with a scalar result that is no placeholder or mark of tritium's (``"tlx...``): a register read
#: such as ``%cluster_ctarank``. A partition receives its value: the asm may have side effects, so it is not rerun.
_SCALAR_ASM = re.compile(r'= tt\.elementwise_inline_asm "(?!tlx).*-> ([if]\d+)(?: loc\(.*\))?$')
#: A use of a value, with the result index of a multi-result op (``%x#1``).
_USE = re.compile(r"%[\w$.-]+(?:#\d+)?")
#: Region ops whose printed header ends with their result types, ``-> (t0, t1)``.
_SCF_RESULTS = ("scf.if", "scf.for", "scf.while", "scf.execute_region", "scf.index_switch")


def _region_result_types(line: str) -> list[str]:
    """The result types of a region op from its header line (``%r:2 = scf.for ... -> (i32, i32)  : i32 {``)."""
    start = line.index("-> (") + 3
    return split_types(line[start + 1:closing_bracket(line, start)])


def outline(lines: list[str], known: dict[str, str]) -> list[str]:
    """Turn each region of task ``scf.if``s into a ``ttg.warp_specialize`` (see tlx/tasks.py). ``known`` gives the
    type of each value a partition may receive by name (the kernel's arguments, handles the lowering made)."""
    out: list[str] = []
    defs: dict[str, str] = {}
    module_warps = 0
    layouts = _PartitionLayouts()
    module_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        p = parse(line)
        if p is None or p.op != "async_task":
            m = re.search(r'"ttg\.num-warps" = (\d+)', line)
            module_warps = int(m.group(1)) if m and line.startswith("module") else module_warps
            module_line = len(out) if line.startswith("module") else module_line
            layouts.read_alias(line)
            d = _RESULTS.match(line)
            for name in SSA.findall(d.group(1)) if d else ():
                defs[name] = line.strip()
            out.append(line)
            i += 1
            continue
        i, tasks = _tasks(lines, i)
        out.extend(_region_text(tasks, p.indent, p.loc, defs, known, module_warps, layouts))
    out[module_line:module_line] = layouts.definitions()
    return out


_LAYOUT_ALIAS = re.compile(r"^(#[A-Za-z_][\w]*) = (#ttg\.\w+)<(.*)>$")
_ALIAS_USE = re.compile(r"#[A-Za-z_][\w.]*")
_INLINE_BLOCKED = re.compile(r"#ttg\.blocked<\{([^{}]*)\}>")
#: Register layouts (besides blocked ones, which are re-laid out) tied to the kernel's warp count.
_WARP_LAYOUTS = ("#ttg.nvidia_mma", "#ttg.amd_mfma", "#ttg.amd_wmma", "#ttg.linear", "#ttg.dot_op", "#ttg.slice")


class _PartitionLayouts:
    """Register layouts for a partition whose num_warps W differs from the kernel's.

    ``convert_to_ttgpuir`` lays out every tensor for the kernel's num_warps, so a partition of W warps
    gets each blocked layout it uses with ``warpsPerCTA`` redistributed to W warps (new aliases
    ``#blockedK_wW``; slices follow their parent). Other register layouts (MMA, linear, dot operands)
    are fixed by the ops that chose them and stay an error there.
    """

    def __init__(self) -> None:
        self.aliases: dict[str, tuple[str, str]] = {}  # alias -> (attribute kind, body)
        self.new: dict[str, str] = {}  # new alias -> its definition

    def read_alias(self, line: str) -> None:
        m = _LAYOUT_ALIAS.match(line)
        if m:
            self.aliases[m.group(1)] = (m.group(2), m.group(3))

    def definitions(self) -> list[str]:
        return [f"{name} = {text}" for name, text in self.new.items()]

    def line(self, line: str, warps: int, where: str) -> str:
        """``line`` with its register layouts for ``warps`` warps (string literals are left alone)."""
        out, last = [], 0
        for m in STRING.finditer(line):
            out.extend([self._code(line[last:m.start()], warps, where), m.group(0)])
            last = m.end()
        out.append(self._code(line[last:], warps, where))
        return "".join(out)

    def _code(self, code: str, warps: int, where: str) -> str:
        code = _INLINE_BLOCKED.sub(lambda m: f"#ttg.blocked<{{{_rewarp(m.group(1), warps)}}}>", code)
        for kind in _WARP_LAYOUTS:
            if kind + "<" in code and kind != "#ttg.slice":
                raise ValueError(f"{where} uses a {kind[5:]} register layout, which is laid out for the kernel's warps; "
                                 "give the task the kernel's num_warps")

        def alias(m: re.Match) -> str:
            kind, body = self.aliases.get(m.group(0), ("", ""))
            if kind == "#ttg.blocked":
                name = f"{m.group(0)}_w{warps}"
                self.new.setdefault(name, f"#ttg.blocked<{_rewarp(body[1:-1], warps).join('{}')}>")
                return name
            if kind in _WARP_LAYOUTS:
                raise ValueError(f"{where} uses the {kind[5:]} register layout {m.group(0)}, which is laid out "
                                 "for the kernel's warps; give the task the kernel's num_warps")
            return m.group(0)

        return _ALIAS_USE.sub(alias, code)


def _rewarp(body: str, warps: int) -> str:
    """A blocked layout's attribute body with ``warpsPerCTA`` redistributed over ``warps`` warps: halve
    the largest factor while there are too many, give the slowest-varying dimension the rest."""
    m = re.search(r"warpsPerCTA = \[([\d, ]+)\]", body)
    dims = [int(x) for x in m.group(1).split(", ")]
    order = [int(x) for x in re.search(r"order = \[([\d, ]+)\]", body).group(1).split(", ")]
    while math.prod(dims) > warps:
        dims[max(range(len(dims)), key=lambda d: dims[d])] //= 2
    dims[order[-1]] *= warps // math.prod(dims)
    return body[:m.start(1)] + ", ".join(map(str, dims)) + body[m.end(1):]


def _region_text(tasks: list[_Task], ind: str, loc: str, defs: dict[str, str], known: dict[str, str],
                 module_warps: int, layouts: _PartitionLayouts) -> list[str]:
    """One region's ``ttg.warp_specialize``: each task copy (tlx/tasks.py generates one per replica) other
    than the default region is a partition. The frontend checked the copies' settings (all or none
    have ``num_regs``/``start``) and that stock Triton places them at their ``start`` warps once they
    are ordered by it."""
    default = next((t.lines for t in tasks if t.payload["default"]), [])
    workers = sorted((t for t in tasks if not t.payload["default"]), key=lambda t: t.payload["start"] or 0)
    if not workers:
        return default
    parts = []
    for task in workers:
        warps = task.payload["num_warps"] or module_warps  # None: a copy of the default task
        parts.append((task, warps, *_captures(task.lines, defs, known)))
    operands = list(dict((n, t) for *_, ops in parts for n, t in ops).items())
    attrs = [f"{attr} = array<i32: {', '.join(str(task.payload[key]) for task, *_ in parts)}>"
             for attr, key in (("requestedRegisters", "num_regs"), ("warpGroupStartIds", "start"))
             if parts[0][0].payload[key] is not None]
    attrs = f" attributes {{{', '.join(attrs)}}}" if attrs else ""
    text = [f"{ind}ttg.warp_specialize({', '.join(n for n, _ in operands)}){attrs}", f"{ind}default {{", *default,
            f"{ind}  ttg.warp_yield{loc}", f"{ind}}}"]
    for k, (task, warps, clones, _) in enumerate(parts):
        prefix = f"t{k}_"
        # one result of a multi-result op (%r#1) arrives as a block argument of its own (%tK_r_1)
        results = {f"%{prefix}{n[1:]}": f"%{prefix}{n[1:].replace('#', '_')}" for n, _ in operands if "#" in n}
        args = ", ".join(f"%{prefix}{n[1:].replace('#', '_')}: {t}{loc}" for n, t in operands)  # at the region's line
        text.append(f"{ind}partition{k}({args}) num_warps({warps}) {{")
        where = f"tlx.async_task(num_warps={warps}) in a kernel of num_warps={module_warps}"
        if warps != module_warps and any(_REGISTER_TENSOR.search(t) for _, t in operands):
            raise ValueError(f"{where} receives a register tensor made outside it; compute it inside the task")
        for line in [*(f"{ind}  {c}" for c in clones), *task.lines]:
            line = _rename(line, prefix)
            if warps != module_warps and _REGISTER_TENSOR.search(line):
                line = layouts.line(line, warps, where)
            for use, arg in results.items():
                line = re.sub(re.escape(use) + r"\b", arg, line)
            text.append(line)
        text.extend([f"{ind}  ttg.warp_return{loc}", f"{ind}}}"])
    text[-1] += f" : ({', '.join(t for _, t in operands)}) -> (){loc}"
    return text
