"""How TLX ops travel through stock ``convert_to_ttgpuir``: as placeholders, lowered right after it.

A ``@triton.jit`` kernel is TTIR until ``ttir.convert_to_ttgpuir`` gives every tensor a layout.
TritonGPU ops cannot sit in TTIR next to layout-free tensors: the conversion keeps them as they
are, so any of them that touches a tensor the conversion re-types fails to legalize
(docs/tlx-design.md has the evidence). Each TLX op is therefore emitted as a *placeholder*: a
side-effecting ``tt.elementwise_inline_asm`` whose asm string carries the op and its attributes.
TTIR passes leave it in place, and the conversion re-types its tensor operands and results like
any Triton op. :func:`.lowering.lower`, run right after the conversion, then rewrites each
placeholder into the real TritonGPU op. It adds ``ttg.convert_layout`` where the layout the op needs differs from
the one the conversion chose, and stock ``remove_layout_conversions`` removes what it can.

Shared-memory buffers are not Triton types, so a buffer value is only a dummy ``i32`` in TTIR.
Placeholders name buffers by id. Passes may copy a placeholder (loop unrolling), so each lowered
copy gets a fresh SSA name, and a use refers to the closest copy of its id above it. TMA
descriptors are named too (tlx/tma.py), and warp-specialized regions, built as ``scf.if``s on task
placeholders (tlx/tasks.py), become ``ttg.warp_specialize`` in a last step (:mod:`.ws_outline`).

This module is the placeholder codec: :func:`emit` encodes an op and its attributes into a
placeholder (a base64 JSON payload after :data:`PREFIX`), :func:`parse` decodes one printed line.
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from .triton_compat import ir
from .ttgir_text import split_types

PREFIX = "tlx:"
#: Module attribute marking kernels that use TLX ops (the TLX pipelines apply only to them).
MODULE_ATTR = "tlx.kernel"


class Ids:
    """Per-kernel id counter, kept with the module: every ``@triton.jit`` helper gets its own builder but
    shares the kernel's module, and a buffer passed to a helper is named by its id there."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next


def emit(builder: Any, module: Any, ids: Ids, op: str, *, operands: Sequence[Any] = (), tensor_operands: bool = False,
         result: Optional[Any] = None, result_shape: Optional[Sequence[int]] = (), **attrs: Any) -> tuple[int, Any]:
    """Emit one placeholder into ``module`` (the kernel's, whose placeholders ``ids`` numbers); returns
    ``(id, result value)``.

    ``operands`` are IR values, all tensors (``tensor_operands``) or all scalars: the op's verifier
    wants one kind.  ``result`` is the IR type of the result tensor (of ``result_shape``), or of a
    scalar result when ``result_shape`` is ``None``, or ``None`` for a dummy ``i32``.  A tensor result
    with no tensor operand gets a dummy ``i8`` tensor operand of its shape, which :func:`.lowering.lower` drops.
    """
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


#: A placeholder line of printed TTGIR.
_LINE = re.compile(r'^(?P<indent>\s*)(?:(?P<res>%[\w.$#-]+) = )?tt\.elementwise_inline_asm "' + PREFIX
                   + r'(?P<payload>[A-Za-z0-9_=-]+)" (?P<attrs>\{[^}]*\})(?P<rest>.*?)(?P<loc> loc\(.*\))?$')


@dataclass
class Placeholder:
    indent: str
    result: Optional[str]
    payload: dict
    operands: list[str]
    operand_types: list[str]
    result_type: str
    loc: str
    built: bool = False  # its ops were built in place, and it is left for CSE (see lowering.build)

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
    return Placeholder(m["indent"], m["res"], payload, operands, types, out.strip(), m["loc"] or "",
                       "pure = true" in m["attrs"])


def decode(asm: str) -> Optional[dict]:
    """The payload of a placeholder's asm string, or ``None`` if it is not one."""
    if not asm.startswith(PREFIX):
        return None
    return json.loads(base64.urlsafe_b64decode(asm[len(PREFIX):]))


_PAYLOAD = re.compile('"' + PREFIX + r'(?P<payload>[A-Za-z0-9_=-]+)"')


def decoded(text: str) -> str:
    """``text`` (printed IR) with each placeholder's base64 payload written as the op and its arguments,
    ``"tlx:local_alloc(id=1, ...)"``: for people reading a listing or a diff, not for :func:`parse`."""
    def readable(m: re.Match) -> str:
        try:
            payload = json.loads(base64.urlsafe_b64decode(m["payload"]))
        except ValueError:
            return m[0]
        if not isinstance(payload, dict) or "op" not in payload:
            return m[0]
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in payload.items() if k != "op" and (k != "dummy" or v))
        return f'"{PREFIX}{payload["op"]}({args})"'
    return _PAYLOAD.sub(readable, text)


def placeholders(text: str) -> Iterator[Placeholder]:
    for line in text.splitlines():
        p = parse(line)
        if p is not None:
            yield p


def is_tlx_module(mod: Any) -> bool:
    return isinstance(mod, ir.module) and mod.get_int_attr(MODULE_ATTR) is not None
