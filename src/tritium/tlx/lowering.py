"""The TLX lowering: each placeholder becomes the TritonGPU op(s) it stands for, right after
``ttir.convert_to_ttgpuir`` (the ``tlx.lower_placeholders`` pass), in two steps.

:func:`build` builds in place, with the bindings, the ops of every placeholder that has a ``@lowers``
method (``_Build``): after the placeholder, at its location, the placeholder left dead for CSE.
:func:`lower` then writes, on the printed module, the ops that have no binding (``@writes`` methods of
``_Lowering``, each with its reason; docs/tlx-design.md lists them): the TMA ops, whose descriptors it
retypes (:class:`_DescriptorPlan`), async copies and cluster barriers. It also outlines the
warp-specialized regions last (:mod:`.ws_outline`). Both add ``ttg.convert_layout`` where the layout an
op needs differs from the one the conversion chose. Buffers and descriptors are named by placeholder
id, and a use refers to the closest lowered copy of its id above it.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import tma_llvm, triton_compat, ws_outline
from .placeholders import Placeholder, decode, parse
from .ttgir_text import SSA, func_signature, source_location, split_types, strip_strings


#: Marks a ``ttg.local_alloc`` whose shared layout is the planner's, not the kernel's (tlx/dot_operands.py).
PLANNED_LAYOUT = "tlx.planned_layout"

#: Placeholder op -> the ``_Build`` method that builds its ops in place, recorded by :func:`lowers`.
LOWERINGS: dict[str, Callable[..., None]] = {}
#: Placeholder op -> the ``_Lowering`` method that writes its TTGIR as text, recorded by :func:`writes`.
WRITERS: dict[str, Callable[..., None]] = {}


def _recorder(table: dict[str, Callable[..., None]], ops: tuple[str, ...]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def record(method: Callable[..., None]) -> Callable[..., None]:
        for op in ops:
            if op in LOWERINGS or op in WRITERS:
                raise AssertionError(f"two lowerings of placeholder op {op!r}")
            table[op] = method
        return method

    return record


def lowers(*ops: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Record the decorated ``_Build`` method as the lowering of the placeholder ops ``ops``: it builds their
    ops with the bindings in place of the placeholder (:func:`build`)."""
    return _recorder(LOWERINGS, ops)


def writes(*ops: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Record the decorated ``_Lowering`` method as the text lowering of ``ops`` (:func:`lower`): for ops that the
    bindings cannot build yet, each with its reason beside it."""
    return _recorder(WRITERS, ops)


class _Names(dict):
    """Placeholder id -> SSA name of its latest lowered copy, within one ``tt.func``.

    Helpers are inlined before the lowering, so a buffer made in the kernel and used in a helper is
    in the same function by then. A ``noinline`` helper stays a function of its own, and SSA names do
    not cross functions, so an id made outside it is an error there (see :func:`lower`).
    """

    def __init__(self, function: str = "") -> None:
        super().__init__()
        self.function = function

    def __missing__(self, pid: int) -> str:
        raise _MadeOutside(pid, self.function)


class _MadeOutside(KeyError):
    pass


#: CUtensorMapDataType and size per printed element type (8-bit types travel as bytes). Integers print
#: signless (``i32``), or signed or unsigned (``si32``, ``ui32``) in descriptors made from a TLX dtype;
#: 16-bit ones have only the unsigned code, which copies the same bits.
_TENSORMAP_ELEM = {"f16": (6, 2), "bf16": (9, 2), "f32": (7, 4), "f64": (8, 8),
                   "i16": (1, 2), "si16": (1, 2), "ui16": (1, 2), "i32": (3, 4), "si32": (3, 4), "ui32": (2, 4),
                   "i64": (5, 8), "si64": (5, 8), "ui64": (4, 8)}


@dataclass
class _TensorMap:
    """What ``tensormap_create`` needs besides operands: the block, element type and size, padding, encoding."""
    block: list[int]
    elem_type: int
    elem_bytes: int
    fill: int
    desc_type: str

    @classmethod
    def of(cls, desc_type: str, fill: int) -> "_TensorMap":
        m = re.search(r"tensordesc<(?:tensor<)?((?:\d+x)+)(\w+)", desc_type)  # 3.8+ print no ``tensor<``
        block = [int(d) for d in m.group(1).rstrip("x").split("x")]
        elem = m.group(2)
        if elem not in _TENSORMAP_ELEM and not re.fullmatch(r"[su]?i8|f8\w*", elem):
            raise ValueError(f"TMA descriptor of {elem} elements: no tensor-map data type for it")
        elem_type, elem_bytes = _TENSORMAP_ELEM.get(elem, (0, 1))
        return cls(block, elem_type, elem_bytes, fill, desc_type)


#: The tag :func:`build` puts on each buffer it built while the text lowering still reads buffers by id.
_BUILT_TAG = re.compile(r'tlx\.ids = "(?P<ids>[\d,]+)"')
#: Payload entries that hold a printed type (``type``, ``want``, ...): they start so.
_TYPE_PREFIXES = ("!", "tensor<")


def _payload_types(value: Any, out: set[str]) -> None:
    """Every printed type in a payload (nested in lists and dicts, as a ``buffer_overlap``'s plan)."""
    if isinstance(value, str) and value.startswith(_TYPE_PREFIXES):
        out.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            _payload_types(v, out)
    elif isinstance(value, list):
        for v in value:
            _payload_types(v, out)


def _element(tensor_type: str) -> str:
    """The element type of a printed tensor type."""
    return re.match(r"tensor<(?:\d+x)*([\w]+)", tensor_type)[1]


@dataclass
class _Op:
    """A placeholder found in the module, for a ``@lowers`` method: its payload, op, operands (the dummy tensor
    operand dropped) and result."""
    payload: dict
    op: Any
    operands: list
    result: Any

    @property
    def name(self) -> str:
        return self.payload["op"]


class _Built(dict):
    """Placeholder id -> the value of its latest built copy, within one ``tt.func`` (see :class:`_Names`)."""

    def __missing__(self, pid: int) -> Any:
        raise _MadeOutside(pid, "")


class _Build:
    """State while building the ops of one module's placeholders in place (:func:`build`)."""

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self.b = triton_compat.op_builder(mod.context)
        self.values = _Built()
        self.by_result: dict[int, Any] = {}  # id of a placeholder's result -> the value built for it
        self.tags: dict[int, list[int]] = {}  # id of a built value -> the placeholder ids it stands for
        self.index_map: dict[int, tuple[int, int, int]] = {}  # id of an aliased buffer -> (scale, off, group)
        self.overlaps: dict[int, dict] = {}  # storage_alias_spec id -> its last plan (tlx/alias.py)
        self.barriers: list[tuple[int, Any, Any]] = []  # this function's barrier allocations: (block id, value, loc)
        self.types: dict[str, Any] = {}
        self.tagging = False  # whether the text lowering runs after (and reads tags)
        self.native: dict[int, Any] = {}  # id of a converted result -> the laid-out value it converts
        self.wgmma_a: dict[int, Any] = {}  # wgmma_a placeholder id -> its operand in the wgmma A layout
        self.sync: list[Optional[str]] = []  # per built async copy, in program order: why it must be synchronous
        self.mixed: set[int] = set()  # id of a chosen view (see merge) of aliased buffers placed unlike

    def type(self, printed: str) -> Any:
        return self.types[printed]

    def define(self, pid: int, value: Any, result: Any = None) -> None:
        """``value`` is now placeholder ``pid``'s buffer (and, given, the placeholder result ``result``'s)."""
        self.values[pid] = value
        if result is not None:
            self.by_result[result.id()] = value
        if self.tagging:
            ids = self.tags.setdefault(value.id(), [])
            ids.append(pid)
            value.set_attr("tlx.ids", self.b.get_string_attr(",".join(map(str, ids))))

    def where(self, p: _Op) -> str:
        """``file:line`` of a placeholder, for an error (the bindings do not print a location)."""
        asm = p.op.get_str_attr("asm_string")
        text = self.mod.str()
        line = next((line for line in text.splitlines() if asm in line), "")
        found = parse(line)
        return source_location(text, found.loc if found else "")

    # One method per placeholder op (``@lowers``), called with the builder after the placeholder, at its location.

    @lowers("local_alloc")
    def _local_alloc(self, p: _Op) -> None:
        a = p.payload
        value = self.b.create_local_alloc(self.type(a["type"]))
        if a.get("planned"):
            value.set_attr(PLANNED_LAYOUT, self.b.get_unit_attr())
        self.define(a["id"], value, p.result)

    @lowers("alias_spec")
    def _alias_spec(self, p: _Op) -> None:
        """The backing allocation of the spec's members (tlx/alias.py)."""
        plan = self.overlaps.get(p.payload["id"])
        if plan is None:
            raise ValueError(f"tlx.storage_alias_spec at {self.where(p)}: no local_alloc uses it, or its allocations "
                             "have no common placement; call set_buffer_overlap")
        value = self.b.create_local_alloc(self.type(plan["backing"]))
        value.set_attr("alignment", self.b.get_int32_attr(plan["align"]))
        self.define(p.payload["id"], value, p.result)

    @lowers("alias_alloc")
    def _alias_alloc(self, p: _Op) -> None:
        """A member: the backing seen with its type, more buffers (tlx/alias.py)."""
        a = p.payload
        member = self.overlaps[a["spec"]]["members"][str(a["id"])]
        value = self.b.create_memdesc_reinterpret(self.type(member["type"]), self.values[a["spec"]])
        self.index_map[value.id()] = (member["scale"], member["off"], member["group"])
        self.define(a["id"], value, p.result)

    @lowers("buffer_overlap")
    def _buffer_overlap(self, p: _Op) -> None:
        """Nothing to build: the placement it asks for is planned before the lowering (``overlaps``)."""

    @lowers("anchor")
    def _anchor(self, p: _Op) -> None:
        """A buffer from another function, by SSA value when it names one, or the one a run-time ``if`` chose
        (see tlx/mem.py and :meth:`merge`)."""
        view = self.by_result.get(p.operands[0].id())
        if view is None and "chosen" in p.payload:
            raise ValueError(f"tlx: the buffer view chosen by the run-time if at {p.payload['chosen']} does not come "
                             "from an scf.if whose branches both yield a view (a branch that returns makes the if "
                             "jumps between blocks, which tritium does not follow); choose the view in an if "
                             "without a return, or index the buffers by a run-time value")
        self.define(p.payload["id"], view if view is not None else self.values[p.payload["src"]], p.result)

    @lowers("dump_layout")
    def _dump_layout(self, p: _Op) -> None:
        """The layout convert_to_ttgpuir gave the tensor; stock passes may change it."""
        print(f"tlx.dump_layout at {self.where(p)}: {p.operands[0].get_type()} (as converted to TritonGPU, before "
              "stock layout optimizations)", file=sys.stderr)

    @lowers("memdesc_index")
    def _memdesc_index(self, p: _Op) -> None:
        a, b = p.payload, self.b
        src, index = self.values[a["src"]], p.operands[0]
        if src.id() in self.mixed:
            raise ValueError(f"tlx.local_view at {self.where(p)}: the buffers are chosen by a run-time if among "
                             "allocations of a storage_alias_spec placed differently, and where buffer i lies in "
                             "the shared backing is fixed when compiling; index each allocation in its branch")
        if src.id() in self.index_map:  # buffer i of an aliased member: (i // G) * scale + off + i % G
            scale, off, group = self.index_map[src.id()]
            g = b.get_int32(group)
            div, rem = b.create_sdiv(index, g), b.create_srem(index, g)
            scaled = b.create_mul(div, b.get_int32(scale))
            index = b.create_add(b.create_add(scaled, b.get_int32(off)), rem)
        self.define(a["id"], b.create_memdesc_index(self.type(a["type"]), src, index), p.result)

    @lowers("memdesc_subslice", "memdesc_trans", "memdesc_reshape", "memdesc_reinterpret")
    def _memdesc_view(self, p: _Op) -> None:
        a, b = p.payload, self.b
        src, ty = self.values[a["src"]], a["type"]
        if p.name == "memdesc_subslice":
            value = b.create_memdesc_subslice(self.type(ty), src, a["offsets"])
        elif p.name == "memdesc_trans":
            value = b.create_memdesc_trans(src, a["order"])
        elif p.name == "memdesc_reshape":
            value = b.create_memdesc_reshape(src, [int(d) for d in re.match(r"!ttg\.memdesc<((?:\d+x)+)", ty)[1]
                                                   .rstrip("x").split("x")])
        else:
            value = b.create_memdesc_reinterpret(self.type(ty), src)
        if str(value.get_type()) != ty:
            # The bindings infer a transpose's and a reshape's result type and take none; a reshape of a 1-D
            # swizzled buffer comes out with the equivalent shared_linear layout, seen here with the planned one.
            value = b.create_memdesc_reinterpret(self.type(ty), value)
        self.define(a["id"], value, p.result)

    @lowers("fence_async_shared")
    def _fence_async_shared(self, p: _Op) -> None:
        self.b.create_fence_async_shared(False)

    @lowers("alloc_barriers")
    def _alloc_barriers(self, p: _Op) -> None:
        a, b = p.payload, self.b
        value = b.create_local_alloc(self.type(a["type"]))
        self.barriers.append((p.op.get_block().id(), value, p.result.get_loc()))
        for i in range(int(a["type"].split("<", 1)[1].split("x", 1)[0])):
            b.create_mbarrier_init(b.create_memdesc_index(self.type(a["one"]), value, b.get_int32(i)),
                                   a["arrive_count"])
        self.define(a["id"], value, p.result)

    @lowers("barrier_expect")
    def _barrier_expect(self, p: _Op) -> None:
        self.b.create_mbarrier_expect(self.values[p.payload["bar"]], p.payload["size"], p.operands[0])

    @lowers("barrier_wait")
    def _barrier_wait(self, p: _Op) -> None:
        self.b.create_mbarrier_wait(self.values[p.payload["bar"]], p.operands[0], p.operands[1], [])

    @lowers("barrier_arrive")
    def _barrier_arrive(self, p: _Op) -> None:
        triton_compat.mbarrier_arrive(self.b, self.values[p.payload["bar"]], p.payload["count"], p.operands[0])

    def value(self, v: Any, want: str) -> Any:
        """``v`` in type ``want``: itself, the laid-out twin of a result built here, or a conversion."""
        if str(v.get_type()) == want:
            return v
        twin = self.native.get(v.id())
        if twin is not None and str(twin.get_type()) == want:
            return twin
        return self.b.create_convert_layout(self.type(want), v)

    def result(self, p: _Op, value: Any) -> None:
        """Give the placeholder's users the built ``value``, converted to the layout they expect."""
        cvt = self.b.create_convert_layout(p.result.get_type(), value)
        p.result.replace_all_uses_with(cvt)
        self.native[cvt.id()] = value

    @lowers("async_copy")
    def _async_copy(self, p: _Op) -> None:
        a = p.payload
        src, *rest = [self.value(v, w) for v, w in zip(p.operands, a["want"])]
        mask = rest[0] if a["has_mask"] else None
        other = rest[-1] if a["has_other"] else None
        triton_compat.async_copy(self.b, self.values[a["dst"]], src, mask, other, a["hints"], a.get("volatile", False))
        if a.get("sync"):  # tlx/copy_fallback.py makes this copy synchronous, and says why
            self.sync.append(a["sync"])
        else:
            self.sync.append(None)

    @lowers("commit_group")
    def _commit_group(self, p: _Op) -> None:
        self.b.create_async_commit_group()

    @lowers("wait_group")
    def _wait_group(self, p: _Op) -> None:
        self.b.create_async_wait_group(p.payload["num"])

    @lowers("local_load")
    def _local_load(self, p: _Op) -> None:
        a = p.payload
        self.result(p, self.b.create_local_load(self.type(a["want"]), self.values[a["src"]]))

    @lowers("local_store")
    def _local_store(self, p: _Op) -> None:
        a = p.payload
        self.b.create_local_store(self.values[a["dst"]], self.value(p.operands[0], a["want"]))

    @lowers("zeros")
    def _zeros(self, p: _Op) -> None:
        """A constant made in the requested register layout: the bindings build no dense constant of a tensor
        type, but ``create_splat`` folds a splat of a constant scalar into one as it builds it."""
        want = p.payload["want"]
        self.result(p, self.b.create_splat(self.type(want), self.b.get_null_value(self.type(_element(want)))))

    @lowers("require_layout")
    def _require_layout(self, p: _Op) -> None:
        self.result(p, self.value(p.operands[0], p.payload["want"]))

    @lowers("wgmma_a")
    def _wgmma_a(self, p: _Op) -> None:
        """A register A operand shaped unlike the accumulator (mma.async_dot)."""
        self.wgmma_a[p.payload["id"]] = self.value(p.operands[0], p.payload["a_reg"])

    @lowers("wgmma")
    def _wgmma(self, p: _Op) -> None:
        a = p.payload
        acc = self.value(p.operands[0], a["acc"])
        if "a_op" in a:
            a_val = self.wgmma_a[a["a_op"]]
        elif "a_reg" in a:
            a_val = self.value(p.operands[1], a["a_reg"])
        else:
            a_val = self.values[a["a"]]
        self.result(p, triton_compat.warpgroup_mma(self.b, a_val, self.values[a["b"]], acc, a["precision"],
                                                   a["imprecise"]))

    @lowers("wgmma_wait")
    def _wgmma_wait(self, p: _Op) -> None:
        value = self.value(p.operands[0], p.payload["acc"])
        self.result(p, self.b.create_warpgroup_mma_wait([value], p.payload["pendings"])[0])

    @lowers("tma_store_wait")
    def _tma_store_wait(self, p: _Op) -> None:
        triton_compat.tma_store_wait(self.b, p.payload["pendings"])

    @lowers("named_barrier")
    def _named_barrier(self, p: _Op) -> None:
        """No TTGIR op on stock Triton: PTX, as Triton's own partition barriers."""
        a = p.payload
        keys = ("bar", "count")  # a compile-time value is an immediate, a run-time one an operand
        ins = [v for k, v in zip(keys, p.operands) if k not in a]
        regs = iter(f"${i + 1}" for i in range(len(ins)))
        bar, count = (str(a[k]) if k in a else next(regs) for k in keys)
        asm = self.b.create_inline_asm(f"bar.{a['kind']} {bar}, {count}; mov.u32 $0, 0;",
                                       ",".join(["=r"] + ["r"] * len(ins)), ins, [p.result.get_type()], False, 1)
        p.result.replace_all_uses_with(asm.get_result(0))

    def merge(self, op: Any, found: list, k: int, at: Optional[tuple[str, Any]]) -> None:
        """Views chosen by a run-time condition: results of the ``scf.if`` (or, once the canonicalizer has turned
        an ``if`` choosing between views made before it into one, of the ``arith.select``) ``op`` that are the
        dummies of a view in both branches. The ``if`` is rebuilt to yield the branches' memdescs too (before
        ``op``, at ``at``: where :func:`build` appends to its block; ``op`` is ``found[k]`` of its walk), a
        select becomes such an ``if``, and the memdesc it yields is the chosen view (:meth:`_anchor`): a memdesc
        result of ``scf.if`` is what Triton's shared-memory alias analysis joins, as it does for loops."""
        b = self.b
        if op.get_name() == "arith.select":
            then, other = self.by_result.get(op.get_operand(1).id()), self.by_result.get(op.get_operand(2).id())
            if then is None or other is None:
                return
            b.set_insertion_point_after(op)
            chosen = b.create_if_op([then.get_type()], op.get_operand(0), True)
            for block, view in ((chosen.get_then_block(), then), (chosen.get_else_block(), other)):
                b.set_insertion_point_to_end(block)
                b.create_yield_op([view])
            b.set_insertion_point_after(chosen.get_operation())
            self.chosen(op.get_result(0), chosen.get_result(0), then, other)
            return
        regions = [op.get_region(0).id(), op.get_region(1).id()]
        yields: list[Any] = [None, None]
        for j in range(k - 1, -1, -1):  # the if's own yields end its regions, just before it in the walk
            o = found[j][0]
            if o.get_name() == "scf.yield" and o.get_block().get_parent().id() in regions:
                yields[regions.index(o.get_block().get_parent().id())] = o
                if all(yields):
                    break
        views = []
        for i in range(op.get_num_results()):
            then = self.by_result.get(yields[0].get_operand(i).id())
            other = self.by_result.get(yields[1].get_operand(i).id())
            if then is not None and other is not None:
                views.append((i, then, other))
        if not views:
            return
        b.set_loc(op.get_result(0).get_loc())
        for o in yields:  # the text lowering drops built placeholders, whose dummies the branches yield
            for i, _, _ in views:
                b.set_insertion_point_to_start(o.get_block())
                o.get_block().replace_use_in_block_with(o.get_operand(i), b.get_int32(0))
        if at is None:
            b.set_insertion_point_to_start(op.get_block())
        elif at[0] == "op":
            b.set_insertion_point_after(at[1])
        else:
            b.restore_insertion_point(at[1])
        n = op.get_num_results()
        new = triton_compat.if_with_more_results(b, op, yields, [t for _, t, _ in views], [e for _, _, e in views])
        b.set_insertion_point_after(new.get_operation())
        for j, (i, then, other) in enumerate(views):
            self.chosen(new.get_result(i), new.get_result(n + j), then, other)

    def chosen(self, dummy: Any, view: Any, then: Any, other: Any) -> None:
        """``view`` (a memdesc chosen between ``then`` and ``other``) is the view of the placeholder result ``dummy``.
        The text lowering names built buffers by a tag on their one-line op, so there it is first seen through a
        subslice at offset 0 to its own type (no instructions; 3.8+ refuse a reinterpret of a subview). An index
        into aliased buffers (index_map) follows the candidates' placement, when they agree."""
        if self.tagging:
            rank = len(re.match(r"!ttg\.memdesc<((?:\d+x)+)", str(view.get_type()))[1].rstrip("x").split("x"))
            view = self.b.create_memdesc_subslice(view.get_type(), view, [0] * rank)
        self.by_result[dummy.id()] = view
        placed = {self.index_map.get(then.id()), self.index_map.get(other.id())}
        if len(placed) == 1 and None not in placed:
            self.index_map[view.id()] = placed.pop()
        elif placed != {None}:
            self.mixed.add(view.id())

    def barriers_kept(self, block: int) -> None:
        """Deallocations, at the insertion point (before a return), of the barriers allocated in the same block:
        they keep each barrier's shared memory its own to the end. Otherwise the allocator reuses a barrier's
        slot once its last use is past, for another barrier or for data, and PTX requires ``mbarrier.inval``
        before an mbarrier's memory is reused. Each is at its allocation's location."""
        for alloc_block, value, loc in self.barriers:
            if alloc_block == block:
                self.b.set_loc(loc)
                self.b.create_local_dealloc(value)


def build(mod: Any) -> bool:
    """Build, in place of each placeholder that has a ``@lowers`` method, the ops it stands for; the placeholder
    is left dead for CSE (:func:`.triton_compat.mark_dead`). Returns whether placeholders remain for the text
    lowering (:func:`lower`); then built buffers and results carry tags that it reads (:meth:`_Lowering.built`)."""
    ops = triton_compat.module_ops(mod)
    found: list[tuple[Any, Optional[_Op]]] = []
    types: set[str] = set()
    state = _Build(mod)
    for op in ops:
        payload = decode(op.get_str_attr("asm_string")) if op.get_name() == "tt.elementwise_inline_asm" else None
        if payload is None:
            found.append((op, None))
            continue
        found.append((op, _Op(payload, op, [], op.get_result(0))))
        if payload["op"] == "buffer_overlap":
            state.overlaps[payload["spec"]] = payload
        if payload["op"] in LOWERINGS:
            _payload_types(payload, types)
        if payload["op"] == "zeros":
            types.add(_element(payload["want"]))
    payloads = [p.payload for _, p in found if p is not None]
    _check_barriers(payloads)
    state.tagging = any(p["op"] not in LOWERINGS for p in payloads)
    state.types = triton_compat.parse_types(mod.context, sorted(types))
    b = state.b
    end: dict[int, Any] = {}  # block id -> where an op appended to it now goes: after an op, or an insertion point
    for k, (op, p) in enumerate(found):
        name = op.get_name()
        block = op.get_block()
        if name == "tt.return" and block is not None and state.barriers:
            at = end.get(block.id())
            if at is not None:
                kind, where = at
                if kind == "op":
                    b.set_insertion_point_after(where)
                else:
                    b.restore_insertion_point(where)
                state.barriers_kept(block.id())
        if name == "tt.func":  # the end of a function (post-order): its values are its own
            state.values, state.by_result, state.barriers, state.native = _Built(), {}, [], {}
            continue
        if name in ("scf.if", "arith.select") and op.get_num_results():
            state.merge(op, found, k, end.get(block.id()))
        if p is None or p.name not in LOWERINGS:
            if block is not None:
                end[block.id()] = ("op", op)
            continue
        if not p.payload["dummy"]:  # read now: a placeholder built before may have replaced one
            p.operands = [op.get_operand(i) for i in range(op.get_num_operands())]
        b.set_insertion_point_after(op)
        b.set_loc(p.result.get_loc())
        try:
            LOWERINGS[p.name](state, p)
        except _MadeOutside as e:
            fn = next((o.get_str_attr("sym_name") for o, _ in found[k:] if o.get_name() == "tt.func"),
                      "?")
            raise ValueError(f"tlx.{p.payload.get('use', p.name)} at {state.where(p)}: its buffer (or descriptor) was "
                             f"made outside the function {fn}, which was not inlined. TLX buffers can be passed to "
                             "@triton.jit helpers that are inlined, not to noinline=True ones") from None
        triton_compat.mark_dead(b, op)
        end[block.id()] = ("ip", b.get_insertion_point())
    if any(state.sync):
        _mark_sync(mod, state)
    return state.tagging


def _mark_sync(mod: Any, state: _Build) -> None:
    """Put the ``tlx.sync`` reason on the async copies that :mod:`.copy_fallback` makes synchronous. The copy's
    binding returns no op, so they are found again by a walk: in program order, as they were built (the module
    has no other async copy before the lowering)."""
    copies = [op for op in triton_compat.module_ops(mod) if op.get_name() == "ttg.async_copy_global_to_local"]
    if len(copies) != len(state.sync):
        raise AssertionError(f"tlx: built {len(state.sync)} async copies, the module has {len(copies)}")
    for op, why in zip(copies, state.sync):
        if why:
            op.get_result(0).set_attr("tlx.sync", state.b.get_string_attr(why))


class _Lowering:
    """State while lowering one module: handle types, and the laid-out twin of each result."""

    def __init__(self, args: list[tuple[str, str]]) -> None:
        self.names: _Names = _Names()
        self.memdesc: dict[int, str] = {}
        self.types: dict[str, str] = {}  # SSA name of each lowered handle -> its type (see ws_outline.py)
        self.args = args  # the kernel's (name, type) arguments
        self.fresh = 0
        self.marks: list[str] = []  # location aliases made by :meth:`mark`, appended to the module
        self.text = ""  # the module being lowered (for source locations in errors)
        self.desc_ptr: dict[Any, str] = {}  # descriptor (SSA name or slot placeholder id) -> its tensor map's address
        self.ws = False  # whether the module is warp-specialized (has async_task placeholders)

    def built(self, line: str) -> str:
        """``line`` without the tag :func:`build` puts on the buffers it built, once the tag's ids name that line's
        result and type (which the ops written as text read by id)."""
        m = _BUILT_TAG.search(line)
        if m is None:
            return line
        name = line.split("=", 1)[0].strip()
        ty = line.rsplit(" -> ", 1)[1]
        ty = ty[:ty.find(" loc(")] if " loc(" in ty else ty
        for pid in map(int, m["ids"].split(",")):
            self.names[pid], self.memdesc[pid] = name, ty
        self.types[name] = ty
        tag = m[0]
        return line.replace(f", {tag}", "").replace(f"{tag}, ", "").replace(f" {{{tag}}}", "")

    def define(self, pid: int) -> str:
        self.fresh += 1
        self.names[pid] = f"%tlx_{pid}_{self.fresh}"
        return self.names[pid]

    def temp(self) -> str:
        self.fresh += 1
        return f"%tlx_t{self.fresh}"

    def bulk_operands(self, out: list, ind: str, p: Placeholder, buffer: int, loc: str) -> tuple[str, str, str]:
        """The 1-D descriptor, buffer view and zero offset of a bulk copy (``bulk_load``/``bulk_store``):
        its global pointer as ``!tt.ptr<i8>`` reinterpreted as the payload's descriptor, and ``buffer``
        reinterpreted as the payload's view. Appends their definitions to ``out``."""
        a = p.payload
        ptr, desc, view, zero = self.temp(), self.temp(), self.temp(), self.temp()
        if p.operand_types[0] == "!tt.ptr<i8>":
            ptr = p.operands[0]
        else:
            out.append(f"{ind}{ptr} = tt.bitcast {p.operands[0]} : {p.operand_types[0]} -> !tt.ptr<i8>{loc}")
        out += [f"{ind}{desc} = ttng.reinterpret_tensor_descriptor {ptr} : !tt.ptr<i8> to {a['desc']}{loc}",
                f'{ind}{view} = "ttg.memdesc_reinterpret"({self.names[buffer]}) : ({self.memdesc[buffer]}) -> '
                f"{a['view']}{loc}",
                f"{ind}{zero} = arith.constant 0 : i32{loc}"]
        return desc, view, zero

    def descriptor(self, a: dict) -> tuple[str, str]:
        """SSA name and type of the descriptor a TMA placeholder names (see tlx/tma.py, :class:`_DescriptorPlan`)."""
        if "desc_name" in a:
            return a["desc_name"], a["desc_type"]
        return self.names[a["desc_id"]], a["desc_type"]

    def tensormap_create(self, ind: str, loc: str, slot: str, base: str, base_type: str, shape: list[str],
                         strides: list[str], t: "_TensorMap") -> list[str]:
        """Write a tensor map into ``slot`` as stock ``tma_lowering`` writes the one of
        ``tt.make_tensor_descriptor``: dims innermost first, outer strides in bytes, boxes clipped to the
        swizzle width (and to 256 rows), then the proxy fence before TMA reads it."""
        rank = len(t.block)
        m = re.search(r"swizzlingByteWidth = (\d+)", t.desc_type)
        swizzle = int(m.group(1)) if m else 0
        box = [min(b, 256) for b in t.block]
        if swizzle:
            box[-1] = min(box[-1], swizzle // t.elem_bytes)
        out: list[str] = []

        def const(value: int, ty: str) -> str:
            name = self.temp()
            out.append(f"{ind}{name} = arith.constant {value} : {ty}{loc}")
            return name

        elem_bytes = const(t.elem_bytes, "i64")
        byte_strides = []
        for stride in reversed(strides[:-1]):
            byte_strides.append(self.temp())
            out.append(f"{ind}{byte_strides[-1]} = arith.muli {stride}, {elem_bytes} : i64{loc}")
        boxes = [const(b, "i32") for b in reversed(box)]
        one = const(1, "i32")
        types = ", ".join(["!tt.ptr<i8>", base_type] + ["i32"] * (2 * rank) + ["i64"] * (rank - 1) + ["i32"] * rank)
        mode = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle]
        out.append(f"{ind}ttng.tensormap_create {slot}, {base}, [{', '.join(boxes)}], [{', '.join(reversed(shape))}], "
                   f"[{', '.join(byte_strides)}], [{', '.join([one] * rank)}] {{elem_type = {t.elem_type} : i32, "
                   f"fill_mode = {t.fill} : i32, interleave_layout = 0 : i32, swizzle_mode = {mode} : i32}} : "
                   f"({types}) -> (){loc}")
        out.append(f"{ind}ttng.tensormap_fenceproxy_acquire {slot} : !tt.ptr<i8>{loc}")
        return out

    def descriptor_in_scratch(self, line: str) -> list[str]:
        """A ``tt.make_tensor_descriptor`` line expanded as stock ``tma_lowering`` would, done here because an
        op (a TMA prefetch) needs the tensor map's address, which the expanded form names."""
        m = re.match(r"^(?P<ind>\s*)(?P<name>%[\w$.-]+) = tt\.make_tensor_descriptor (?P<base>%[\w$.-]+), "
                     r"\[(?P<shape>[^]]*)\], \[(?P<strides>[^]]*)\](?P<attrs> \{[^}]*\})? : (?P<types>.*?)"
                     r"(?P<loc> loc\(.*\))?$", line)
        base_type, desc_type = (t if t.startswith("!") else prefix + t
                                for t, prefix in zip(split_types(m["types"]), ("!tt.ptr", "!tt.tensordesc")))
        slot = self.temp()
        ind, loc = m["ind"], m["loc"] or ""
        out = [f"{ind}{slot} = ttg.global_scratch_alloc {{alignment = 128 : i32, nbytes = 128 : i32}} : "
               f"!tt.ptr<i8>{loc}"]
        out += self.tensormap_create(ind, loc, slot, m["base"], base_type, split_types(m["shape"]),
                                     split_types(m["strides"]),
                                     _TensorMap.of(desc_type, int("nan" in (m["attrs"] or ""))))
        out.append(f"{ind}{m['name']} = ttng.reinterpret_tensor_descriptor {slot} : !tt.ptr<i8> to {desc_type}{loc}")
        self.desc_ptr[m["name"]] = slot
        self.types[slot] = "!tt.ptr<i8>"
        return out

    def mark(self, loc: str, key: str) -> str:
        """``loc`` wrapped in the name location ``tlx.ptx:<key>`` (tlx/tma_llvm.py), through an alias appended to
        the module: a location alias may not be used, nested, before it is defined."""
        inner = loc.strip()[len("loc("):-1] if loc.strip() else "unknown"
        alias = f"#tlx_mark{len(self.marks)}"
        self.marks.append(f'{alias} = loc("{tma_llvm.MARK}{key}"({inner}))')
        return f" loc({alias})"

    def prefetch(self, p: Placeholder) -> list[str]:
        """``cp.async.bulk.prefetch.tensor`` (``prefetch.tensormap`` without coordinates) as inline PTX. It needs
        the tensor map's address: an operand for a device-made descriptor, or for a host one the kernel
        argument, which TTGIR cannot name, added on the LLVM dialect (tlx/tma_llvm.py)."""
        a, ind, loc = p.payload, p.indent, p.loc
        *coords, pred = p.operands
        desc = a.get("desc_name") or a["desc_id"]
        arg = next((i for i, (name, _) in enumerate(self.args) if name == desc), None)
        ptr = self.desc_ptr.get(desc)
        if ptr is None and arg is None:
            raise ValueError(f"tlx.{'async_descriptor_prefetch_tensor' if coords else 'prefetch'} at "
                             f"{source_location(self.text, loc)}: the descriptor is neither a kernel argument nor "
                             "made in the kernel, so its tensor map has no address to prefetch")
        flag = self.temp()
        out = [f"{ind}{flag} = arith.extui {pred} : i1 to i32{loc}"]
        ins = ([] if ptr is None else [(ptr, "!tt.ptr<i8>", "l")]) + [(c, "i32", "r") for c in coords] + [
            (flag, "i32", "r")]
        regs = {v: f"${i + 1}" for i, (v, _, _) in enumerate(ins)}
        text = tma_llvm.prefetch_asm("$D" if ptr is None else regs[ptr], [regs[c] for c in reversed(coords)],
                                     regs[flag], a.get("evict", ""))
        if ptr is None:
            text = f"{tma_llvm.MARK}arg:{arg};{text}"
        out.append(f'{ind}{p.result} = tt.elementwise_inline_asm "{text}" {{constraints = '
                   f'"{",".join(["=r"] + [c for _, _, c in ins])}", packed_element = 1 : i32, pure = false}} '
                   f"{', '.join(v for v, _, _ in ins)} : {', '.join(t for _, t, _ in ins)} -> {p.result_type}{loc}")
        return out

    def lower(self, p: Placeholder) -> list[str]:
        a, pid, ind, loc = p.payload, p.payload["id"], p.indent, p.loc
        out: list[str] = []
        h = self.define(pid)
        lowering = WRITERS.get(p.op)
        if lowering is None:
            raise ValueError(f"tlx: no lowering for placeholder op {p.op!r}")
        lowering(self, p, a, pid, h, ind, loc, out)
        return out

    # One method per placeholder op (``@writes``): ``a`` is its payload, ``h`` the SSA name it defines,
    # ``ind`` and ``loc`` its indentation and location; the TTGIR lines go to ``out``.

    @writes("tma_load")
    def _tma_load(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        desc, desc_type = self.descriptor(a)
        *coords, pred = p.operands
        hinted = self.mark(loc, f"l2:{a['evict']}") if a.get("evict") else loc
        if "multicast" in a:
            hinted = self.mark(hinted, f"multicast:{a['multicast']}")
        out.append(f"{ind}ttng.async_tma_copy_global_to_local {desc}[{', '.join(coords)}] {self.names[a['dst']]}, "
                   f"{self.names[a['bar']]}, {pred} : {desc_type}, {self.memdesc[a['bar']]} -> "
                   f"{self.memdesc[a['dst']]}{hinted}")

    @writes("remote_arrive")
    def _remote_arrive(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        """An arrive on a peer CTA's copy of a barrier: Triton's own arrive, whose PTX tlx/tma_llvm.py maps to
        the peer (``mapa``) with the rank :func:`.cluster_launch.ptx_link` passed."""
        marked = self.mark(loc, f"remote:{a['link']}")
        out.append(f"{ind}ttng.arrive_barrier {self.names[a['bar']]}, {a['count']}, {p.operands[0]} : "
                   f"{self.memdesc[a['bar']]}{marked}")

    @writes("tma_store", "tma_reduce")
    def _tma_store(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        desc, desc_type = self.descriptor(a)
        head = (f"ttng.async_tma_reduce {a['kind']}, " if p.op == "tma_reduce"
                else "ttng.async_tma_copy_local_to_global ")
        hinted = self.mark(loc, f"l2:{a['evict']}") if a.get("evict") else loc
        out.append(f"{ind}{head}{desc}[{', '.join(p.operands)}] {self.names[a['src']]} : "
                   f"{desc_type}, {self.memdesc[a['src']]}{hinted}")

    @writes("tma_prefetch")
    def _tma_prefetch(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        out.extend(self.prefetch(p))

    @writes("bulk_store")
    def _bulk_store(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        """A TMA store that tlx/tma_llvm.py turns into a bulk copy."""
        size = p.operands[1]
        desc, view, zero = self.bulk_operands(out, ind, p, a["src"], loc)
        out.append(f"{ind}ttng.async_tma_copy_local_to_global {desc}[{zero}, {size}] {view} : {a['desc']}, "
                   f"{a['view']}{self.mark(loc, 'bulk_store')}")

    @writes("bulk_load")
    def _bulk_load(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        """A TMA load that tlx/tma_llvm.py turns into a bulk copy (tlx/async_copy.py)."""
        size = p.operands[1]
        desc, view, zero = self.bulk_operands(out, ind, p, a["dst"], loc)
        true = self.temp()
        out += [f"{ind}{true} = arith.constant true{loc}",
                f"{ind}ttng.async_tma_copy_global_to_local {desc}[{zero}, {size}] {view}, {self.names[a['bar']]}, "
                f"{true} : {a['desc']}, {self.memdesc[a['bar']]} -> {a['view']}{self.mark(loc, 'bulk_load')}"]

    @writes("alloc_desc")
    def _alloc_desc(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        out.append(f"{ind}{p.result} = ttg.global_scratch_alloc {{alignment = {a['alignment']} : i32, "
                   f"nbytes = {a['nbytes']} : i32}} : {p.result_type}{loc}")

    @writes("make_desc_slot")
    def _make_desc_slot(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        rank = a["rank"]
        out.extend(self.tensormap_create(ind, loc, p.operands[0], p.operands[1], p.operand_types[1],
                                         p.operands[2:2 + rank], p.operands[2 + rank:],
                                         _TensorMap.of(a["desc_type"], a["fill"])))
        self._reinterpret_desc(p, a, pid, h, ind, loc, out)  # the descriptor is the slot, seen as its type

    @writes("reinterpret_desc")
    def _reinterpret_desc(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        out.append(f"{ind}{h} = ttng.reinterpret_tensor_descriptor {p.operands[0]} : {p.operand_types[0]} to "
                   f"{a['desc_type']}{loc}")
        self.types[h] = a["desc_type"]
        self.desc_ptr[pid] = p.operands[0]

    @writes("cluster_barrier")
    def _cluster_barrier(self, p: Placeholder, a: dict, pid: int, h: str, ind: str, loc: str, out: list[str]) -> None:
        if a.get("publish") and self.ws:  # a warp-specialized kernel's tasks publish the barriers themselves
            if p.result:  # the placeholder's dummy result
                out.append(f"{ind}{p.result} = arith.constant 0 : {p.result_type}{loc}")
            return
        out += [f"{ind}{op}{loc}" for op in triton_compat.cluster_barrier_ops(p.result, p.result_type)]


#: Placeholders that :func:`.ws_outline.outline` lowers, once the rest of the module is lowered.
_WS_OPS = ("async_task",)


def _typed_signature(line: str, desc_types: dict[int, str]) -> tuple[str, list[tuple[str, str]]]:
    """The ``tt.func`` line with TMA descriptor arguments given the encodings TLX needs."""
    start, end, args = func_signature(line)
    if not desc_types:
        return line, args
    parts = split_types(line[start + 1:end])
    for i, want in desc_types.items():
        name, have = args[i]
        parts[i] = parts[i].replace(f"{name}: {have}", f"{name}: {want}", 1)
        args[i] = (name, want)
    return line[:start + 1] + ", ".join(parts) + line[end:], args


def _check_barriers(payloads: list[dict]) -> None:
    """Reject named barriers that Triton itself uses: barrier 0 syncs the kernel's (or the default task's)
    warps, and in a warp-specialized kernel barrier 1 switches tasks and barrier 2 + k syncs partition k.
    Reject a cluster barrier outside the tasks of a warp-specialized kernel: the task warps wait in Triton's
    task switch there and never arrive, so it would hang."""
    regions: dict[int, int] = {}
    for a in payloads:
        if a["op"] == "async_task" and not a["default"]:
            regions[a["region"]] = regions.get(a["region"], 0) + a.get("replicate", 1)
    reserved = 2 + max(regions.values()) if regions else 1
    # the last payload after which tasks meet on a cluster barrier (program order), -1 if none
    last_meeting = max((i for i, a in enumerate(payloads) if a["op"] == "cluster_barrier" and a["in_task"]),
                       default=-1)
    for i, a in enumerate(payloads):
        if a["op"] == "cluster_barrier" and regions and not a["in_task"] and a.get("publish"):
            if i > last_meeting:
                raise ValueError(f"tlx.{a['publish']} at {a['where']}: in clusters of several CTAs (ctas_per_cga) a "
                                 "warp-specialized kernel publishes its barriers' initialization to the peers as its "
                                 "tasks start; allocate the barriers before the async_tasks region")
            continue  # the tasks' own cluster barriers publish them (:meth:`_Lowering._cluster_barrier` drops it)
        if a["op"] == "cluster_barrier" and regions and not a["in_task"]:
            raise ValueError(f"tlx.cluster_barrier at {a['where']}: outside the async_tasks of a "
                             "warp-specialized kernel the task warps wait in Triton's task switch and never arrive, "
                             "so every thread of the cluster cannot meet; call it in every task instead")
        if a["op"] == "named_barrier" and a.get("bar", reserved) < reserved:
            partitions = "2" if reserved == 3 else f"2-{reserved - 1}"
            users = "the kernel's own barrier (0)" if not regions else (
                f"Triton's own barriers of this warp-specialized kernel: 0 (default task), 1 (task switch) and "
                f"{partitions} (one per partition)")
            kind = "named_barrier_wait" if a["kind"] == "sync" else "named_barrier_arrive"
            raise ValueError(f"tlx.{kind} at {a['where']}: bar={a['bar']} is one of "
                             f"{users}; use a barrier id in [{reserved}, 15]")


#: A descriptor carrier (tlx/tma.py): ``tt.descriptor_store %desc[...], %zeros : <desc type>, <tensor type>``.
_CARRIER = re.compile(r"^\s*tt\.descriptor_store (?P<name>%[\w$.-]+)\[[^]]*\], %[\w$.-]+ : (?P<types>.*?)(?: loc\(.*\))?$")
#: TMA placeholders -> the TLX op named in errors.
_TMA_OPS = {"tma_load": "async_descriptor_load", "tma_store": "async_descriptor_store",
            "tma_reduce": "async_descriptor_store", "make_desc_slot": "make_tensor_descriptor",
            "reinterpret_desc": "reinterpret_tensor_descriptor"}


class _DescriptorPlan:
    """Which type each descriptor TLX ops use must have, and the line edits that give it that type.

    Triton descriptors reach TMA placeholders through carriers (tlx/tma.py): the carrier names the
    descriptor and its current type, and is dropped. The descriptor is retyped where it is defined (the
    kernel signature, a ``tt.make_tensor_descriptor``) and wherever another op prints its type. Slot
    descriptors (by placeholder id) take the type their uses want; a slot write takes the type its
    reinterprets want, since they read the tensor map it writes (they share the slot pointer).
    """

    def __init__(self, text: str) -> None:
        lines = text.splitlines()
        self.drop: set[int] = set()  # carrier lines
        self.carried: dict[int, str] = {}  # placeholder line -> descriptor SSA name
        self.retype: dict[str, tuple[str, str]] = {}  # descriptor SSA name -> (printed type, wanted type)
        self.slot_types: dict[int, str] = {}  # slot placeholder id -> its descriptor type
        self.addressed: set[str] = set()  # descriptors whose tensor map address an op needs (prefetch)
        by_id: dict[int, tuple[str, str]] = {}
        slots: list[Placeholder] = []
        for i, line in enumerate(lines):
            p = parse(line)
            if p is None or p.built:  # a built placeholder names no descriptor
                continue
            a, where = p.payload, f"tlx.{_TMA_OPS.get(p.op, p.op)} at {source_location(text, p.loc)}"
            if a.get("carried"):
                m = _CARRIER.match(lines[i - 1]) if i else None
                if m is None:
                    raise ValueError(f"{where}: the descriptor carrier before it is gone (see tlx/tma.py)")
                self.drop.add(i - 1)
                self.carried[i] = m["name"]
                if p.op == "tma_prefetch":  # any layout will do; it needs the tensor map's address
                    self.addressed.add(m["name"])
                    continue
                have = split_types(m["types"])[0]
                old = self.retype.setdefault(m["name"], (have, a["desc_type"]))
                self._same(old[1], a["desc_type"], where)
            elif "desc_id" in a and "desc_type" in a:
                self._same(by_id.setdefault(a["desc_id"], (a["desc_type"], where))[0], a["desc_type"], where)
            elif p.op in ("make_desc_slot", "reinterpret_desc"):
                slots.append(p)
        read: dict[str, tuple[str, str]] = {}  # slot pointer -> type its reinterprets want
        for p in slots:
            if p.op == "reinterpret_desc" and p.payload["id"] in by_id:
                want, where = by_id[p.payload["id"]]
                self._same(read.setdefault(p.operands[0], (want, where))[0], want, where)
        for p in slots:
            own, linked = by_id.get(p.payload["id"]), read.get(p.operands[0])
            if own and linked and p.op == "make_desc_slot":
                self._same(own[0], linked[0], linked[1])
            self.slot_types[p.payload["id"]] = (own or linked or (p.payload["default"], ""))[0]

    @staticmethod
    def _same(have: str, want: str, where: str) -> None:
        if have != want:
            raise ValueError(f"{where}: this descriptor is also used with buffers of another shared layout "
                             f"({have} vs {want}). Its tensor map has one swizzle, so every buffer it fills or "
                             "stores from needs the same layout")

    def arg_types(self, line: str) -> dict[int, str]:
        """Kernel arguments (of the ``tt.func`` ``line``) to retype: argument index -> wanted type."""
        return {i: self.retype[name][1] for i, (name, _) in enumerate(func_signature(line)[2]) if name in self.retype}

    def rewrite(self, i: int, line: str, text: str) -> Optional[str]:
        """``lines[i]`` with descriptor types updated, or ``None`` for a carrier."""
        if i in self.drop:
            return None
        if line.lstrip().startswith("tt.func"):
            return line  # arguments: see arg_types
        code = strip_strings(line)
        for name in set(SSA.findall(code)) & self.retype.keys():
            have, want = self.retype[name]
            d = re.match(rf"^\s*{re.escape(name)} = (\S+) ", code)
            if d and d.group(1) == "tt.make_tensor_descriptor":
                head, _, tail = line.rpartition(" : ")
                loc = tail.find(" loc(")
                types = split_types(tail if loc < 0 else tail[:loc])
                line = f"{head} : {types[0]}, {want}{'' if loc < 0 else tail[loc:]}"
            elif d or re.search(rf"{re.escape(name)}(?::\d+)?\s*=\s", code):
                loc = re.search(r"loc\(.*\)$", line)
                raise ValueError(f"tlx: a TMA descriptor used by TLX ops comes from '{(d.group(1) if d else 'a loop')}'"
                                 f" at {source_location(text, loc.group(0) if loc else '')}; TLX gives a descriptor "
                                 "the layout of its buffers where it is made, so pass a kernel argument or one made "
                                 "by tl/tlx.make_tensor_descriptor, not one carried through a loop or branch")
            else:
                line = line.replace(have, want)
        return line

    def needs_address(self, line: str) -> bool:
        """Whether ``line`` makes (``tt.make_tensor_descriptor``) a descriptor whose tensor map address is needed."""
        m = re.match(r"^\s*(%[\w$.-]+) = tt\.make_tensor_descriptor ", line)
        return m is not None and m.group(1) in self.addressed

    def annotate(self, i: int, p: Placeholder) -> None:
        if i in self.carried:
            p.payload["desc_name"] = self.carried[i]
        elif p.op in ("make_desc_slot", "reinterpret_desc"):
            p.payload["desc_type"] = self.slot_types[p.payload["id"]]

    def local_types(self) -> dict[str, str]:
        """Types of retyped descriptors, for ``ttg.warp_specialize`` captures (arguments get theirs from the signature)."""
        return {name: want for name, (_, want) in self.retype.items()}


#: An ``arith.select`` between two views (see :func:`selects_as_ifs`).
_VIEW_SELECT = re.compile(r"^(?P<ind>\s*)(?P<res>%[\w$.#-]+) = arith\.select (?P<cond>%[\w$.#-]+), "
                          r"(?P<then>%[\w$.#-]+), (?P<other>%[\w$.#-]+) : (?P<type>!ttg\.memdesc<.*?>)"
                          r"(?P<loc> loc\(.*\))?$")


def selects_as_ifs(text: str) -> str:
    """``text`` (printed TTGIR) with each ``arith.select`` between two memdescs written as the ``scf.if`` it came
    from. The canonicalizer turns an ``if`` choosing between views made before it into a select, but Triton's
    shared-memory alias analysis knows no select of memdescs (it asserts); it joins the views an ``scf.if``
    yields (or, after ``convert-scf-to-cf``, a block argument receives)."""
    out = []
    for line in text.splitlines():
        m = _VIEW_SELECT.match(line)
        if m is None:
            out.append(line)
            continue
        ind, ty, loc = m["ind"], m["type"], m["loc"] or ""
        out += [f"{ind}{m['res']} = scf.if {m['cond']} -> ({ty}) {{", f"{ind}  scf.yield {m['then']} : {ty}{loc}",
                f"{ind}}} else {{", f"{ind}  scf.yield {m['other']} : {ty}{loc}", f"{ind}}}{loc}"]
    return "\n".join(out) + "\n"


def lower(text: str) -> str:
    """Rewrite every TLX placeholder of printed TTGIR into its TritonGPU op(s)."""
    plan = _DescriptorPlan(text)
    state = _Lowering([])
    state.types.update(plan.local_types())
    state.text = text
    state.ws = any(p is not None and p.op == "async_task" for p in map(parse, text.splitlines()))
    lines = []
    for i, line in enumerate(text.splitlines()):
        line = plan.rewrite(i, line, text)
        if line is None:
            continue
        if plan.needs_address(line):
            lines.extend(state.descriptor_in_scratch(line))
            continue
        if line.lstrip().startswith("tt.func"):
            line, state.args = _typed_signature(line, plan.arg_types(line))
            state.names = _Names(re.search(r'@"?([\w.$-]+?)(?:__|"|\()', line).group(1))
        line = state.built(line)
        p = parse(line)
        if p is not None and p.built:  # its ops were built in place (:func:`build`); dead now
            continue
        if p is None or p.op in _WS_OPS:
            lines.append(line)
            continue
        plan.annotate(i, p)
        try:
            lines.extend(state.lower(p))
        except _MadeOutside as e:
            raise ValueError(f"tlx.{p.payload.get('use', p.op)} at {source_location(text, p.loc)}: its buffer (or descriptor) was made "
                             f"outside the function {e.args[1]}, which was not inlined. TLX buffers can be passed "
                             "to @triton.jit helpers that are inlined, not to noinline=True ones") from None
    known = {**dict(state.args), **state.types}
    return "\n".join([*ws_outline.outline(lines, known), *state.marks]) + "\n"
