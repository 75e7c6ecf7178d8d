"""How TLX ops travel through stock ``convert_to_ttgpuir``: as placeholders, lowered right after it.

A ``@triton.jit`` kernel is TTIR until ``ttir.convert_to_ttgpuir`` gives every tensor a layout.
TritonGPU ops cannot sit in TTIR next to layout-free tensors: the conversion keeps them as they
are, so any of them that touches a tensor the conversion re-types fails to legalize
(docs/tlx-design.md has the evidence). Each TLX op is therefore emitted as a *placeholder*: a
side-effecting ``tt.elementwise_inline_asm`` whose asm string carries the op and its attributes.
TTIR passes leave it in place, and the conversion re-types its tensor operands and results like
any Triton op. :func:`lower`, run right after the conversion, then rewrites each placeholder into
the real TritonGPU op. It adds ``ttg.convert_layout`` where the layout the op needs differs from
the one the conversion chose, and stock ``remove_layout_conversions`` removes what it can.

Shared-memory buffers are not Triton types, so a buffer value is only a dummy ``i32`` in TTIR.
Placeholders name buffers by id. Passes may copy a placeholder (loop unrolling), so each lowered
copy gets a fresh SSA name, and a use refers to the closest copy of its id above it. TMA
descriptors are named too (tlx/tma.py), and warp-specialized regions, built as ``scf.if``s on task
placeholders (tlx/tasks.py), become ``ttg.warp_specialize`` in a last step (:func:`_warp_specialize`).
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from triton._C.libtriton import ir

from tritium import compat

PREFIX = "tlx:"
#: Module attribute marking kernels that use TLX ops (the TLX pipelines apply only to them).
MODULE_ATTR = "tlx.kernel"


class _Ids:
    """Per-kernel id counter, kept on the kernel's builder."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next


def emit(builder: Any, module: Any, op: str, *, operands: Sequence[Any] = (), tensor_operands: bool = False,
         result: Optional[Any] = None, result_shape: Optional[Sequence[int]] = (), **attrs: Any) -> tuple[int, Any]:
    """Emit one placeholder; returns ``(id, result value)``.

    ``operands`` are IR values, all tensors (``tensor_operands``) or all scalars: the op's verifier
    wants one kind.  ``result`` is the IR type of the result tensor (of ``result_shape``), or of a
    scalar result when ``result_shape`` is ``None``, or ``None`` for a dummy ``i32``.  A tensor result
    with no tensor operand gets a dummy ``i8`` tensor operand of its shape, which :func:`lower` drops.
    """
    ids = builder.__dict__.setdefault("_tlx_ids", _Ids())
    if not ids.next:
        module.set_attr(MODULE_ATTR, builder.get_int32_attr(1))
    pid = ids.take()
    operands = list(operands)
    dummy = result is not None and result_shape is not None and not tensor_operands
    if dummy:
        i8 = builder.get_block_ty(builder.get_int8_ty(), list(result_shape))
        operands = [builder.create_splat(i8, builder.get_int8(0))]
    payload = {"op": op, "id": pid, "dummy": dummy, **attrs}
    asm = PREFIX + base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    constraints = ",".join(["=r"] + ["r"] * len(operands))
    res_ty = result if result is not None else builder.get_int32_ty()
    inline = builder.create_inline_asm(asm, constraints, operands, [res_ty], False, 1)
    return pid, inline.get_result(0)


# --------------------------------------------------------------------------------------------
# Lowering (on printed TTGIR)
# --------------------------------------------------------------------------------------------
_LINE = re.compile(r'^(?P<indent>\s*)(?:(?P<res>%[\w.$#-]+) = )?tt\.elementwise_inline_asm "' + PREFIX
                   + r'(?P<payload>[A-Za-z0-9_=-]+)" \{[^}]*\}(?P<rest>.*?)(?P<loc> loc\(.*\))?$')


def split_types(text: str) -> list[str]:
    """Split a printed type list at top-level commas (types nest ``<...>``, ``{...}``, ``[...]``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


@dataclass
class Placeholder:
    indent: str
    result: Optional[str]
    payload: dict
    operands: list[str]
    operand_types: list[str]
    result_type: str
    loc: str

    @property
    def op(self) -> str:
        return self.payload["op"]


def parse(line: str) -> Optional[Placeholder]:
    m = _LINE.match(line)
    if not m:
        return None
    payload = json.loads(base64.urlsafe_b64decode(m["payload"]))
    head, _, out = m["rest"].rpartition("-> ")
    names, _, ins = head.partition(" : ")  # no operands: the rest is just "-> type"
    operands = [o.strip() for o in names.split(",") if o.strip()]
    types = split_types(ins)
    if payload["dummy"]:
        operands, types = [], []
    return Placeholder(m["indent"], m["res"], payload, operands, types, out.strip(), m["loc"] or "")


class _Lowering:
    """State while lowering one module: handle types, and the laid-out twin of each result."""

    def __init__(self, args: list[tuple[str, str]]) -> None:
        self.names: dict[int, str] = {}  # placeholder id -> SSA name of its latest lowered copy
        self.memdesc: dict[int, str] = {}
        self.native: dict[str, tuple[str, str]] = {}  # placeholder result -> (laid-out value, its type)
        self.types: dict[str, str] = {}  # SSA name of each lowered handle -> its type (see _warp_specialize)
        self.args = args  # the kernel's (name, type) arguments
        self.fresh = 0

    def value(self, name: str, have: str, want: str, lines: list[str], p: Placeholder) -> str:
        """``name`` (of type ``have``) in type ``want``: the op's own laid-out twin, or a conversion."""
        if have == want:
            return name
        twin = self.native.get(name)
        if twin is not None and twin[1] == want:
            return twin[0]
        self.fresh += 1
        out = f"%tlx_cvt{self.fresh}"
        lines.append(f"{p.indent}{out} = ttg.convert_layout {name} : {have} -> {want}{p.loc}")
        return out

    def result(self, p: Placeholder, value: str, value_type: str, lines: list[str]) -> None:
        """Give the placeholder's result name the lowered value, converted to the layout users expect."""
        lines.append(f"{p.indent}{p.result} = ttg.convert_layout {value} : {value_type} -> {p.result_type}{p.loc}")
        self.native[p.result] = (value, value_type)

    def define(self, pid: int) -> str:
        self.fresh += 1
        self.names[pid] = f"%tlx_{pid}_{self.fresh}"
        return self.names[pid]

    def temp(self) -> str:
        self.fresh += 1
        return f"%tlx_t{self.fresh}"

    def descriptor(self, a: dict) -> tuple[str, str]:
        """SSA name and type of the descriptor a TMA placeholder names (see tlx/tma.py)."""
        if "desc_id" in a:
            return self.names[a["desc_id"]], a["desc_type"]
        return self.args[a["desc_arg"]][0], a["desc_type"]

    def lower(self, p: Placeholder) -> list[str]:
        a, pid, ind, loc = p.payload, p.payload["id"], p.indent, p.loc
        out: list[str] = []
        handle = self.names.__getitem__
        h = self.define(pid)
        if p.op == "local_alloc":
            self.memdesc[pid] = a["type"]
            out.append(f"{ind}{h} = ttg.local_alloc : () -> {a['type']}{loc}")
        elif p.op == "memdesc_index":
            self.memdesc[pid] = a["type"]
            out.append(f"{ind}{h} = ttg.memdesc_index {handle(a['src'])}[{p.operands[0]}] : "
                       f"{self.memdesc[a['src']]} -> {a['type']}{loc}")
        elif p.op in ("memdesc_subslice", "memdesc_trans", "memdesc_reshape", "memdesc_reinterpret"):
            self.memdesc[pid] = a["type"]
            props = {"memdesc_subslice": f"<{{offsets = array<i32: {', '.join(map(str, a.get('offsets', [])))}>}}> ",
                     "memdesc_trans": f"<{{order = array<i32: {', '.join(map(str, a.get('order', [])))}>}}> "}
            out.append(f'{ind}{h} = "ttg.{p.op}"({handle(a["src"])}) {props.get(p.op, "")}: '
                       f"({self.memdesc[a['src']]}) -> {a['type']}{loc}")
        elif p.op == "async_copy":
            parts = [self.value(v, t, w, out, p) for v, t, w in zip(p.operands, p.operand_types, a["want"])]
            src, rest = parts[0], parts[1:]
            mask = f" mask {rest[0]}" if a["has_mask"] else ""
            other = f" other {rest[-1]}" if a["has_other"] else ""
            dst = self.memdesc[a["dst"]]
            attrs = list(a["cache_attrs"])  # printed by tritium.compat for this Triton
            if a.get("volatile"):
                attrs.append("isVolatile = true")
            attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
            out.append(f"{ind}{h} = ttg.async_copy_global_to_local {src}, {handle(a['dst'])}{mask}{other}{attr_text} : "
                       f"{a['want'][0]} -> {dst[len('!ttg.memdesc'):]}{loc}")
        elif p.op == "commit_group":
            out.append(f"{ind}{h} = ttg.async_commit_group{loc}")
        elif p.op == "wait_group":
            out.append(f"{ind}{h} = ttg.async_wait {{num = {a['num']} : i32}}{loc}")
        elif p.op == "local_load":
            out.append(f"{ind}{h} = ttg.local_load {handle(a['src'])} : {self.memdesc[a['src']]} -> {a['want']}{loc}")
            self.result(p, h, a["want"], out)
        elif p.op == "local_store":
            value = self.value(p.operands[0], p.operand_types[0], a["want"], out, p)
            out.append(f"{ind}ttg.local_store {value}, {handle(a['dst'])} : {a['want']} -> {self.memdesc[a['dst']]}{loc}")
        elif p.op == "wgmma":
            acc = self.value(p.operands[0], p.operand_types[0], a["acc"], out, p)
            if "a_reg" in a:
                a_val = self.value(p.operands[1], p.operand_types[1], a["a_reg"], out, p)
                a_type = a["a_reg"]
            else:
                a_val, a_type = handle(a["a"]), self.memdesc[a["a"]]
            b_val, b_type = handle(a["b"]), self.memdesc[a["b"]]
            out.append(f"{ind}{h} = ttng.warp_group_dot {a_val}, {b_val}, {acc} {{inputPrecision = {a['precision']} : i32"
                       f"{', maxNumImpreciseAcc = %d : i32' % a['imprecise'] if a['imprecise'] else ''}, isAsync = true}} : "
                       f"{a_type} * {b_type} -> {a['acc']}{loc}")
            self.result(p, h, a["acc"], out)
        elif p.op == "wgmma_wait":
            value = self.value(p.operands[0], p.operand_types[0], a["acc"], out, p)
            out.append(f"{ind}{h} = ttng.warp_group_dot_wait {value} {{pendings = {a['pendings']} : i32}} : {a['acc']}{loc}")
            self.result(p, h, a["acc"], out)
        elif p.op == "fence_async_shared":
            out.append(f"{ind}ttng.fence_async_shared {{bCluster = false}}{loc}")
        elif p.op == "alloc_barriers":
            self.memdesc[pid] = a["type"]
            out.append(f"{ind}{h} = ttg.local_alloc : () -> {a['type']}{loc}")
            for i in range(int(a["type"].split("<", 1)[1].split("x", 1)[0])):
                index, bar = self.temp(), self.temp()
                out.append(f"{ind}{index} = arith.constant {i} : i32{loc}")
                out.append(f"{ind}{bar} = ttg.memdesc_index {h}[{index}] : {a['type']} -> {a['one']}{loc}")
                out.append(f"{ind}ttng.init_barrier {bar}, {a['arrive_count']} : {a['one']}{loc}")
        elif p.op == "barrier_expect":
            out.append(f"{ind}ttng.barrier_expect {handle(a['bar'])}, {a['size']}, {p.operands[0]} : "
                       f"{self.memdesc[a['bar']]}{loc}")
        elif p.op == "barrier_wait":
            out.append(f"{ind}ttng.wait_barrier {handle(a['bar'])}, {p.operands[0]}, {p.operands[1]} : "
                       f"{self.memdesc[a['bar']]}{loc}")
        elif p.op == "barrier_arrive":
            out.append(f"{ind}ttng.arrive_barrier {handle(a['bar'])}, {a['count']}, {p.operands[0]} : "
                       f"{self.memdesc[a['bar']]}{loc}")
        elif p.op == "tma_load":
            desc, desc_type = self.descriptor(a)
            *coords, pred = p.operands
            out.append(f"{ind}ttng.async_tma_copy_global_to_local {desc}[{', '.join(coords)}] {handle(a['dst'])}, "
                       f"{handle(a['bar'])}, {pred} : {desc_type}, {self.memdesc[a['bar']]} -> "
                       f"{self.memdesc[a['dst']]}{loc}")
        elif p.op == "tma_store":
            desc, desc_type = self.descriptor(a)
            out.append(f"{ind}ttng.async_tma_copy_local_to_global {desc}[{', '.join(p.operands)}] {handle(a['src'])} : "
                       f"{desc_type}, {self.memdesc[a['src']]}{loc}")
        elif p.op == "tma_store_wait":
            out.append(f"{ind}ttng.async_tma_store_wait {compat.tma_store_wait_attrs(a['pendings'])}{loc}")
        elif p.op == "make_desc":
            base, rest = p.operands[0], p.operands[1:]
            shape, strides = rest[:a["rank"]], rest[a["rank"]:]
            out.append(f"{ind}{h} = tt.make_tensor_descriptor {base}, [{', '.join(shape)}], [{', '.join(strides)}] : "
                       f"{p.operand_types[0]}, {a['desc']}{loc}")
            self.types[h] = a["desc"]
        else:
            raise ValueError(f"tlx: no lowering for placeholder op {p.op!r}")
        if pid in self.memdesc:
            self.types[h] = self.memdesc[pid]
        return out


#: Placeholders that :func:`_warp_specialize` lowers, once the rest of the module is lowered.
_WS_OPS = ("async_task", "replica_id")


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "<{[(":
            depth += 1
        elif text[i] in ">}])":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"tlx: unbalanced brackets in {text!r}")


def _signature(line: str) -> tuple[int, int, list[tuple[str, str]]]:
    """Where the argument list of a printed ``tt.func`` starts and ends, and its (name, type) pairs."""
    start = line.index("(", line.index("@"))
    end = _matching(line, start)
    args = []
    for arg in split_types(line[start + 1:end]):
        name, _, rest = arg.partition(":")
        depth, cut = 0, len(rest)
        for i, ch in enumerate(rest):
            depth += ch in "<{[(" and 1 or (-1 if ch in ">}])" else 0)
            if depth == 0 and (rest.startswith(" {", i) or rest.startswith(" loc(", i)):
                cut = i
                break
        args.append((name.strip(), rest[:cut].strip()))
    return start, end, args


def _typed_signature(line: str, desc_types: dict[int, str]) -> tuple[str, list[tuple[str, str]]]:
    """The ``tt.func`` line with TMA descriptor arguments given the encodings TLX needs."""
    start, end, args = _signature(line)
    if not desc_types:
        return line, args
    parts = split_types(line[start + 1:end])
    for i, want in desc_types.items():
        name, have = args[i]
        parts[i] = parts[i].replace(f"{name}: {have}", f"{name}: {want}", 1)
        args[i] = (name, want)
    return line[:start + 1] + ", ".join(parts) + line[end:], args


def lower(text: str) -> str:
    """Rewrite every TLX placeholder of printed TTGIR into its TritonGPU op(s)."""
    desc_types: dict[int, str] = {}
    for p in placeholders(text):
        i, want = p.payload.get("desc_arg"), p.payload.get("desc_type")
        if i is not None and desc_types.setdefault(i, want) != want:
            raise ValueError(f"tlx: kernel argument {i} is used as a TMA descriptor with two shared layouts: "
                             f"{desc_types[i]} and {want}")
    state = _Lowering([])
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("tt.func"):
            line, state.args = _typed_signature(line, desc_types)
        p = parse(line)
        if p is None or p.op in _WS_OPS:
            lines.append(line)
            continue
        lines.extend(state.lower(p))
    return "\n".join(_warp_specialize(lines, state)) + "\n"


# --------------------------------------------------------------------------------------------
# Warp specialization (see tlx/tasks.py): task ``scf.if``s -> one ``ttg.warp_specialize``
# --------------------------------------------------------------------------------------------
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SSA = re.compile(r"%[\w$.-]+")
_SSA_DEF = re.compile(r"(%[\w$.-]+)(?::\d+)?\s*=\s")  # also loop variables and iter_args
_RESULTS = re.compile(r"^\s*(%[\w$.-]+(?::\d+)?(?:, %[\w$.-]+)*) = ")  # an op's result list
_BLOCK_ARG = re.compile(r"(%[\w$.-]+):\s")
#: Ops a partition recomputes instead of receiving: pure, one result, no region.
_CLONABLE = re.compile(r"(arith|math)\.\w+|tt\.(get_program_id|get_num_programs|splat|make_range|expand_dims|"
                       r"broadcast|addptr)|ttg\.convert_layout")


def _code(line: str) -> str:
    """``line`` without its string literals (inline asm text may contain ``%``)."""
    return _STRING.sub('""', line)


def _rename(line: str, prefix: str) -> str:
    """Prefix every SSA name of ``line`` outside string literals."""
    out, last = [], 0
    for m in _STRING.finditer(line):
        out.append(_SSA.sub(lambda n: "%" + prefix + n.group(0)[1:], line[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_SSA.sub(lambda n: "%" + prefix + n.group(0)[1:], line[last:]))
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
    code = [_code(line) for line in body]
    defined = {m.group(1) for line in code for m in (*_SSA_DEF.finditer(line), *_BLOCK_ARG.finditer(line))}
    defined |= {name for line in code if _RESULTS.match(line) for name in _SSA.findall(_RESULTS.match(line).group(1))}
    clones: list[str] = []
    operands: list[tuple[str, str]] = []
    seen: set[str] = set()

    def need(name: str) -> None:
        if name in seen or name in defined:
            return
        seen.add(name)
        if name in known:
            operands.append((name, known[name]))
            return
        line = defs.get(name)
        op = line.split("=", 1)[1].split()[0] if line else ""
        if line is None or not _CLONABLE.fullmatch(op) or _RESULTS.match(line).group(1) != name:
            raise ValueError(f"tlx.async_task: {name} is used inside a task but defined before it by "
                             f"{op or 'something'} that cannot be passed into a warp-specialized task; compute "
                             f"it inside the task")
        for use in _SSA.findall(_code(line.split("=", 1)[1])):
            need(use.split("#")[0])
        clones.append(line)

    for line in code:
        for use in _SSA.findall(line):
            need(use.split("#")[0])
    return clones, operands


def _warp_specialize(lines: list[str], state: _Lowering) -> list[str]:
    """Turn each region of task ``scf.if``s into a ``ttg.warp_specialize`` (see tlx/tasks.py)."""
    out: list[str] = []
    defs: dict[str, str] = {}
    module_warps = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        p = parse(line)
        if p is not None and p.op == "replica_id":
            raise ValueError("tlx.async_task_replica_id() outside a task survived to the lowering")
        if p is None or p.op != "async_task":
            m = re.search(r'"ttg\.num-warps" = (\d+)', line)
            module_warps = int(m.group(1)) if m and line.startswith("module") else module_warps
            d = _RESULTS.match(line)
            for name in _SSA.findall(d.group(1)) if d else ():
                defs[name] = line.strip()
            out.append(line)
            i += 1
            continue
        i, tasks = _tasks(lines, i)
        out.extend(_region_text(tasks, p.indent, p.loc, defs, {**dict(state.args), **state.types}, module_warps))
    return out


def _region_text(tasks: list[_Task], ind: str, loc: str, defs: dict[str, str], known: dict[str, str],
                 module_warps: int) -> list[str]:
    default = next((t.lines for t in tasks if t.payload["default"]), [])
    workers = [(t, r) for t in tasks if not t.payload["default"] for r in range(t.payload["replicate"])]
    if not workers:
        return default
    parts = []
    for k, (task, replica) in enumerate(workers):
        body = []
        for line in task.lines:
            p = parse(line)
            body.append(f"{p.indent}{p.result} = arith.constant {replica} : i32{p.loc}"
                        if p is not None and p.op == "replica_id" else line)
        if task.payload["num_warps"] != module_warps and any("tensor<" in line for line in body):
            raise ValueError(f"tlx.async_task(num_warps={task.payload['num_warps']}) uses register tensors, "
                             f"which the compile path lays out for the kernel's num_warps={module_warps}; "
                             "give the task the kernel's num_warps")
        parts.append((task.payload, body, *_captures(body, defs, known)))
    operands = list(dict((n, t) for *_, ops in parts for n, t in ops).items())
    regs = [payload["num_regs"] for payload, *_ in parts]
    attrs = f" attributes {{requestedRegisters = array<i32: {', '.join(map(str, regs))}>}}" if regs[0] else ""
    text = [f"{ind}ttg.warp_specialize({', '.join(n for n, _ in operands)}){attrs}", f"{ind}default {{", *default,
            f"{ind}  ttg.warp_yield{loc}", f"{ind}}}"]
    for k, (payload, body, clones, _) in enumerate(parts):
        prefix = f"t{k}_"
        args = ", ".join(f"%{prefix}{n[1:]}: {t}" for n, t in operands)
        text.append(f"{ind}partition{k}({args}) num_warps({payload['num_warps']}) {{")
        text.extend(_rename(f"{ind}  {line}", prefix) for line in clones)
        text.extend(_rename(line, prefix) for line in body)
        text.extend([f"{ind}  ttg.warp_return{loc}", f"{ind}}}"])
    text[-1] += f" : ({', '.join(t for _, t in operands)}) -> (){loc}"
    return text


def placeholders(text: str) -> Iterator[Placeholder]:
    for line in text.splitlines():
        p = parse(line)
        if p is not None:
            yield p


def is_tlx_module(mod: Any) -> bool:
    return isinstance(mod, ir.module) and mod.get_int_attr(MODULE_ATTR) is not None
