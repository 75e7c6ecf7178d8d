"""The ``tlx.dot_operand_layouts`` pass (AMD): layouts of dot operands read from LDS, as the fork chooses them.

**Buffers.** ``local_alloc`` without ``layout=`` gets the planner's swizzle (tlx/layouts.py), chosen before
the dot that reads the buffer exists: it assumes a K-contiguous operand of the default ``kWidth``. Once
``accelerate_matmul`` has picked the MFMA instruction, the fork (and uTLX) give such a buffer the layout
Triton composes for that operand (``AMDMfmaEncodingAttr::composeSharedLayoutForOperand``: the operand's
``kWidth`` as the vector, no swizzle when K is not the contiguous dimension on CDNA3, phases spanning one
row of banks). :func:`operand_buffer_layouts` does the same for each planned buffer whose every
``local_load`` feeds one dot operand (``tlx.planned_layout`` on its ``ttg.local_alloc``, set by the
lowering, then removed) and that no transposed, reshaped or reinterpreted view derives from. With
``kpack=2``, ``amd_gemm_pipelined`` on gfx942 then has uTLX's 8 ``ds_write`` and 72 ``ds_read`` instead of
16 and 80. Buffers the planner gave one encoding that feed different operands (its 64 x 128 A and 128 x 64 B
at ``BLOCK_K=128``) get a layout each, written into the lines of each allocation, its views and their
uses, where every use is one the rewrite can follow (:func:`_buffers_of`); the fork types each allocation
on its own.

**Loads carried round a loop.**
Fork kernels load the next iteration's operands from LDS at the end of an iteration and carry them in
``iter_args`` (``a = tlx.local_load(...)`` before the loop and at its bottom, ``tl.dot(a, ...)`` at its
top). Stock layout propagation stops at the loop: the loads keep a blocked layout and every iteration
converts the carried value to the dot operand layout, which ``reduce_data_duplication`` makes a round trip
through LDS (a scratch buffer per operand and a store, a barrier and a load per iteration). The fork's
frontend asks for the operand layout on the load itself (its ``insert_require_layout`` and
``propagate_layout`` passes). This pass does the same on printed TTGIR, just before
``reduce_data_duplication``, for a carried value when

* the loop's initial value and the yielded value are each a ``ttg.local_load`` used only by the loop, and
* every use of the iteration argument, and of the loop's result, is a ``ttg.convert_layout`` to one dot
  operand layout (or there is none).

Then both loads produce that layout, the loop carries it, and the conversions become identities (folded by
the canonicalizer that follows).
"""
from __future__ import annotations

import re
from typing import Any, Optional

from tritium import compat
from tritium.plugins import mlir_pass

from .lowering import PLANNED_LAYOUT
from . import triton_compat
from .triton_compat import ir
from .ttgir_text import SSA, SSA_DEF, split_types, strip_strings

_ALIAS = re.compile(r"^(#[\w$.-]+) = (.*)$")
_FOR = re.compile(r"^(?P<ind>\s*)(?P<res>%[\w$.-]+)(?::(?P<n>\d+))? = scf\.for (?P<iv>%[\w$.-]+) = .*? "
                  r"iter_args\((?P<args>[^)]*)\) -> \((?P<types>.*)\)\s+: \S+ \{$")
_CONVERT = re.compile(r"^(?P<ind>\s*)(?P<res>%[\w$.-]+) = ttg\.convert_layout (?P<src>%[\w$.#-]+) : "
                      r"tensor<.*?> -> (?P<to>tensor<.*?>)(?P<loc> loc\(.*\))?$")
_LOAD = re.compile(r"^(?P<head>\s*(?P<res>%[\w$.-]+) = ttg\.local_load .* -> )(?P<ty>tensor<.*?>)(?P<loc> loc\(.*\))?$")


def _layout(ty: str, aliases: dict[str, str]) -> str:
    """The encoding of a printed tensor type, aliases resolved."""
    enc = split_types(ty[len("tensor<"):-1])[-1].strip() if "," in ty else ""
    return aliases.get(enc, enc)


def _uses(lines: list[str], name: str, first: int, last: int) -> list[int]:
    """Lines in ``first..last`` that use SSA value ``name`` (not define it)."""
    pattern = re.compile(re.escape(name) + r"(?![\w$.-])")
    out = []
    for i in range(first, last + 1):
        text = strip_strings(lines[i])
        d = SSA_DEF.match(text.strip())
        body = text.strip()[d.end():] if d else text
        if pattern.search(body):
            out.append(i)
    return out


def _region_end(lines: list[str], header: int) -> int:
    ind = len(lines[header]) - len(lines[header].lstrip(" "))
    j = header + 1
    while not (len(lines[j]) - len(lines[j].lstrip(" ")) == ind and lines[j].lstrip().startswith("}")):
        j += 1
    return j


def _definition(lines: list[str], name: str, before: int) -> Optional[int]:
    for i in range(before - 1, -1, -1):
        d = SSA_DEF.match(lines[i].strip())
        if d and d.group(1) == name:
            return i
    return None


def _func_bounds(lines: list[str], i: int) -> tuple[int, int]:
    start = next(j for j in range(i, -1, -1) if lines[j].lstrip().startswith("tt.func"))
    return start, _region_end(lines, start)


def carry_operand_layouts(text: str) -> Optional[str]:
    """``text`` with each eligible carried ``local_load`` in its dot operand layout (None: nothing changed)."""
    lines = text.splitlines()
    aliases = {m.group(1): m.group(2) for line in lines if (m := _ALIAS.match(line))}
    changed = False
    for header, line in enumerate(lines):
        loop = _FOR.match(line)
        if not loop:
            continue
        end = _region_end(lines, header)
        args = [a.split("=") for a in split_types(loop["args"])]
        types = [t.strip() for t in split_types(loop["types"])]
        yield_line = next(i for i in range(end - 1, header, -1) if lines[i].strip().startswith("scf.yield"))
        yielded = SSA.findall(lines[yield_line].split(":", 1)[0])
        f_start, f_end = _func_bounds(lines, header)
        for k, (arg, init) in enumerate(args):
            arg, init = arg.strip(), init.strip()
            if not types[k].startswith("tensor<") or "dot_op" in _layout(types[k], aliases):
                continue
            result = f"{loop['res']}#{k}" if loop["n"] else loop["res"]
            converts = _uses(lines, arg, header + 1, end - 1) + _uses(lines, result, end + 1, f_end)
            targets = {m["to"] for i in converts if (m := _CONVERT.match(lines[i]))}
            if len(targets) != 1 or any(not _CONVERT.match(lines[i]) for i in converts):
                continue
            target = targets.pop()
            if "#ttg.dot_op<" not in _layout(target, aliases):
                continue
            loads = [_definition(lines, init, header), _definition(lines, yielded[k], yield_line)]
            if any(i is None or not _LOAD.match(lines[i]) for i in loads):
                continue
            if (_uses(lines, init, f_start, f_end) != [header]
                    or _uses(lines, yielded[k], header + 1, end) != [yield_line]):
                continue
            old = types[k]
            for i in loads:
                m = _LOAD.match(lines[i])
                lines[i] = f"{m['head']}{target}{m['loc'] or ''}"
            for i in converts:
                m = _CONVERT.match(lines[i])
                lines[i] = (f"{m['ind']}{m['res']} = ttg.convert_layout {m['src']} : {target} -> {target}"
                            f"{m['loc'] or ''}")
            types[k] = target
            lines[header] = line = line.replace(f"-> ({loop['types']})", f"-> ({', '.join(types)})")
            loop = _FOR.match(line)
            head, _, tail = lines[yield_line].rpartition(" : ")
            ytypes, loc = re.match(r"(.*?)( loc\(.*\))?$", tail).groups()
            ytypes = [t.strip() for t in split_types(ytypes)]
            if ytypes[k] != old:
                raise AssertionError(f"tlx: scf.yield operand {k} is {ytypes[k]!r}, the loop carries {old!r}")
            ytypes[k] = target
            lines[yield_line] = f"{head} : {', '.join(ytypes)}{loc or ''}"
            changed = True
    return "\n".join(lines) + "\n" if changed else None


_SWIZZLED = re.compile(r"^(#[\w$.-]+) = #ttg\.swizzled_shared<\{vec = (\d+), perPhase = (\d+), maxPhase = (\d+), "
                       r"order = \[([\d, ]+)\]\}>$")
_MEMDESC_LOAD = re.compile(r"ttg\.local_load %[\w$.#-]+(?: token %[\w$.#-]+)? : "
                           r"!ttg\.memdesc<(?P<shape>[\dx]+)x(?P<elem>[a-z]+\d+), (?P<enc>#[\w$.-]+)[^>]*> -> "
                           r"tensor<[^,]+, (?P<res>.*)>(?: loc\(.*\))?$")
_DOT = re.compile(r"#ttg\.dot_op<\{opIdx = (\d+), parent = (#[\w$.-]+), kWidth = (\d+)\}>")


def operand_swizzle(op_idx: int, k_width: int, shape: list[int], order: list[int], bits: int, mfma: str) -> tuple:
    """``(vec, perPhase, maxPhase)`` Triton composes for an MFMA operand buffer (its
    ``composeSharedLayoutForOperand``): ``mfma`` is the parent's printed attribute."""
    cdna4 = "version = 4" in mfma
    k_dim = 1 if op_idx == 0 else 0
    if order[0] != k_dim and not (cdna4 and bits in (8, 16)):
        return 1, 1, 1
    inner = shape[order[0]]
    per_phase = max(1, (64 if cdna4 else 32) * 32 // bits // inner)
    max_phase = max(min(16 // per_phase, inner // k_width), 1)
    if re.search(r"instrShape = \[4,", mfma):
        max_phase = 4
    return k_width, per_phase, max_phase


def _load_target(m: re.Match, aliases: dict[str, str]) -> tuple:
    """``(dot groups or None, buffer shape, element bits)`` of a :data:`_MEMDESC_LOAD` match."""
    dot = _DOT.search(aliases.get(m["res"], m["res"]))
    shape = [int(x) for x in m["shape"].split("x")[-2:]]
    return dot.groups() if dot else None, tuple(shape), int(re.search(r"\d+", m["elem"]).group(0))


def _operand_layout(m: re.Match, use: Optional[tuple], aliases: dict[str, str]) -> Optional[str]:
    """The operand layout for a :data:`_SWIZZLED` alias ``m`` whose loads all are ``use`` (None: keep it)."""
    if use is None or use[0] is None:
        return None
    (op_idx, parent, k_width), shape, bits = use
    order = [int(x) for x in m.group(5).split(",")]
    vec, per_phase, max_phase = operand_swizzle(int(op_idx), int(k_width), list(shape), order, bits,
                                                aliases.get(parent, parent))
    return (f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = {max_phase}, "
            f"order = [{m.group(5)}]}}>")


#: Ops that may use a buffer (or a view of it) whose encoding :func:`_buffers_of` gives per allocation: each
#: takes one buffer and says its type on its own line, so re-encoding that line re-encodes that use.
_BUFFER_USERS = ("ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.local_load", "ttg.local_store",
                 "ttg.local_dealloc", "ttg.async_copy_global_to_local", "amdg.buffer_load_to_local")
_OP = re.compile(r"^\s*(?:%[\w$.#:-]+(?:, %[\w$.#:-]+)* = )?([\w.]+)")


def _buffers_of(lines: list[str], enc: str) -> Optional[dict[int, list[int]]]:
    """Each planned allocation of shared encoding ``enc`` (its line) with the lines of it and its views
    (``memdesc_index``/``subslice``) and their uses; None when a line naming ``enc`` is not one of them, or
    uses a buffer other than by :data:`_BUFFER_USERS`, or two of them, or a view's name is not unique."""
    token = re.compile(re.escape(enc) + r"(?![\w$.-])")
    defined: dict[str, int] = {}
    for line in lines:
        if d := SSA_DEF.match(line.strip()):
            defined[d.group(1)] = defined.get(d.group(1), 0) + 1
    owner: dict[str, int] = {}
    out: dict[int, list[int]] = {}
    for i, line in enumerate(lines):
        text = strip_strings(line).strip()
        if text.startswith("#"):
            continue
        d = SSA_DEF.match(text)
        if PLANNED_LAYOUT in text and re.search(r"= ttg\.local_alloc\b", text) and token.search(text):
            owner[d.group(1)] = i
            out[i] = [i]
            continue
        users = {owner[n] for n in SSA.findall(text[d.end():] if d else text) if n in owner}
        if not users:
            if token.search(text):
                return None
            continue
        op = _OP.match(text)
        if len(users) != 1 or not op or op.group(1) not in _BUFFER_USERS:
            return None
        alloc, = users
        if op.group(1) in ("ttg.memdesc_index", "ttg.memdesc_subslice"):
            if defined[d.group(1)] != 1:
                return None
            owner[d.group(1)] = alloc
        out[alloc].append(i)
    return out


def _load_use(lines: list[str], users: list[int], aliases: dict[str, str]) -> Optional[tuple]:
    """What every ``local_load`` among ``users`` reads into, when they agree (None otherwise)."""
    targets = {_load_target(m, aliases) if (m := _MEMDESC_LOAD.search(lines[i])) else None
               for i in users if _OP.match(strip_strings(lines[i]).strip()).group(1) == "ttg.local_load"}
    return targets.pop() if len(targets) == 1 else None


def operand_buffer_layouts(text: str) -> str:
    """``text`` with each planned buffer that feeds one dot operand in that operand's layout, and the
    planner's marks removed."""
    lines = text.splitlines()
    if not any(PLANNED_LAYOUT in line for line in lines):
        return text
    aliases = {m.group(1): m.group(2) for line in lines if (m := _ALIAS.match(line))}
    planned, other = set(), set()  # shared encodings of planned allocations, and of any other or derived one
    for line in lines:
        m = re.search(r"= ttg\.local_alloc.* -> !ttg\.memdesc<[^,]+, (#[\w$.-]+)", line)
        if m:
            (planned if PLANNED_LAYOUT in line else other).add(m.group(1))
        elif re.search(r"= ttg\.memdesc_(?:trans|reshape|reinterpret)\b", line):
            # a view whose encoding is derived from its source's: both must stay as they are
            other.update(re.findall(r"!ttg\.memdesc<[^,]+, (#[\w$.-]+)", line))
    uses: dict[str, set] = {}
    for line in lines:
        m = _MEMDESC_LOAD.search(line)
        if m and m["enc"] in planned:
            uses.setdefault(m["enc"], set()).add(_load_target(m, aliases))
    for i, line in enumerate(lines):
        m = _SWIZZLED.match(line)
        if not m or m.group(1) not in uses or m.group(1) in other:
            continue
        if len(uses[m.group(1)]) == 1:
            layout = _operand_layout(m, next(iter(uses[m.group(1)])), aliases)
            if layout:
                lines[i] = f"{m.group(1)} = {layout}"
            continue
        for users in (_buffers_of(lines, m.group(1)) or {}).values():
            # allocations sharing the planner's encoding but feeding different operands: one layout each
            layout = _operand_layout(m, _load_use(lines, users, aliases), aliases)
            token = re.compile(re.escape(m.group(1)) + r"(?![\w$.-])")
            for j in users if layout else ():
                lines[j] = token.sub(layout, lines[j])
    return "\n".join(line.replace(f" {{{PLANNED_LAYOUT}}}", "") for line in lines) + "\n"


@mlir_pass(name="tlx.dot_operand_layouts")
def dot_operand_layouts(mod: ir.module, ctx: Any) -> Any:
    """See the module: planned operand buffers in their dot's layout; carried loads read straight into it.
    A module that changes keeps its loop arguments' locations (:func:`.triton_compat.copy_argument_locations`)."""
    text = mod.str()
    carried = carry_operand_layouts(text)
    out = operand_buffer_layouts(carried or text)
    if out == text:
        return None
    parsed = compat.parse_module(out, mod.context)
    triton_compat.copy_argument_locations(mod, parsed)
    return parsed
