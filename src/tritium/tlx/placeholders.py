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
copy gets a fresh SSA name, and a use refers to the closest copy of its id above it.
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from triton._C.libtriton import ir

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
         result: Optional[Any] = None, result_shape: Sequence[int] = (), **attrs: Any) -> tuple[int, Any]:
    """Emit one placeholder; returns ``(id, result value)``.

    ``operands`` are IR values, all tensors (``tensor_operands``) or all scalars: the op's verifier
    wants one kind.  ``result`` is the IR type of the result tensor (of ``result_shape``), or ``None``
    for a dummy ``i32``.  A tensor result with no tensor operand gets a dummy ``i8`` tensor operand
    of its shape, which :func:`lower` drops.
    """
    ids = builder.__dict__.setdefault("_tlx_ids", _Ids())
    if not ids.next:
        module.set_attr(MODULE_ATTR, builder.get_int32_attr(1))
    pid = ids.take()
    operands = list(operands)
    dummy = result is not None and not tensor_operands
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

    def __init__(self) -> None:
        self.names: dict[int, str] = {}  # placeholder id -> SSA name of its latest lowered copy
        self.memdesc: dict[int, str] = {}
        self.native: dict[str, tuple[str, str]] = {}  # placeholder result -> (laid-out value, its type)
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
            attrs = []
            if a.get("cache"):
                attrs.append(f"cache = {a['cache']} : i32")
            if a.get("evict"):
                attrs.append(f"evict = {a['evict']} : i32")
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
        else:
            raise ValueError(f"tlx: no lowering for placeholder op {p.op!r}")
        return out


def lower(text: str) -> str:
    """Rewrite every TLX placeholder of printed TTGIR into its TritonGPU op(s)."""
    state = _Lowering()
    lines = []
    for line in text.splitlines():
        p = parse(line)
        if p is None:
            lines.append(line)
            continue
        lines.extend(state.lower(p))
    return "\n".join(lines) + "\n"


def placeholders(text: str) -> Iterator[Placeholder]:
    for line in text.splitlines():
        p = parse(line)
        if p is not None:
            yield p


def is_tlx_module(mod: Any) -> bool:
    return isinstance(mod, ir.module) and mod.get_int_attr(MODULE_ATTR) is not None
