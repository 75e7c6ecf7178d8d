"""Several allocations in one shared-memory region: the fork's ``storage_alias_spec``, ``reuse_group``
and ``set_buffer_overlap`` on stock Triton.

One backing allocation holds ``slots`` equal slots of ``stride`` bytes. The ``reuse_group`` tree places
buffer ``i`` of every member inside slot ``i``: members of a *shared* group at one offset, members of a
*distinct* group one after another; ``group_size=G`` on a member puts ``G`` of its buffers in one slot.
As in the fork, a member is the backing seen as the member's type with more buffers (``scale`` per slot,
``ttg.memdesc_reinterpret``), and ``local_view(member, i)`` picks buffer ``(i // G) * scale + off + i % G``
of it (``off`` is the member's offset in a slot, in its own buffers). Without ``set_buffer_overlap`` the
members share one offset. The plan is made when the kernel is built; the lowering
(:mod:`tritium.tlx.lowering`) takes the last plan of each spec.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import triton.language as tl
from triton.language.core import base_type, builtin

from . import args, layouts
from .core import memdesc_type
from .emit import emit
from .types import buffered_tensor, reuse_group, reuse_group_type, tlx_value
from .triton_compat import ir, kernel_state, unwrap_if_constexpr

_SPECS = "alias_specs"  # in kernel_state: spec id -> _Spec


@dataclass
class Member:
    """What the planner needs of one member: a key, its buffer count and bytes per buffer."""
    key: Any
    num: int
    nbytes: int
    align: int = 16


@dataclass
class Placement:
    stride: int  # bytes per slot
    slots: int
    where: dict = field(default_factory=dict)  # member key -> (byte offset in a slot, group size)


def place(tree: reuse_group, members: dict[Any, Member], key_of: Any, what: str = "tlx.reuse_group") -> Placement:
    """Lay out a ``reuse_group`` tree (see the module docstring); ``key_of(leaf)`` finds a leaf's member."""

    def member(node: Any) -> Member:
        m = members.get(key_of(node))
        if m is None:
            raise TypeError(f"{what}: elements must be buffers allocated with reuse=<this spec> or reuse_groups, "
                            f"got {node!r}")
        return m

    def walk(node: Any) -> tuple[int, int, list[tuple[Any, int, int]]]:
        """(slots, bytes per slot, [(key, offset, group size)]) of ``node``."""
        if not isinstance(node, reuse_group):
            m = member(node)
            return m.num, m.nbytes, [(m.key, 0, 1)]
        if node.group_size > 1:
            if len(node.args) != 1 or isinstance(node.args[0], reuse_group):
                raise NotImplementedError(f"{what}: group_size > 1 is supported on a group of one buffer")
            m = member(node.args[0])
            if m.num % node.group_size:
                raise ValueError(f"{what}: group_size {node.group_size} does not divide the {m.num} buffers")
            return m.num // node.group_size, m.nbytes * node.group_size, [(m.key, 0, node.group_size)]
        parts = [walk(child) for child in node.args]
        if len({slots for slots, _, _ in parts}) != 1:
            raise ValueError(f"{what}: the elements of a group must have one buffer count (after group_size), got "
                             f"{[slots for slots, _, _ in parts]}")
        out, offset = [], 0
        for _, nbytes, leaves in parts:
            out += [(key, offset + off, g) for key, off, g in leaves]
            if node.group_type == reuse_group_type.distinct:
                offset += nbytes
        size = offset if node.group_type == reuse_group_type.distinct else max(n for _, n, _ in parts)
        return parts[0][0], size, out

    slots, stride, leaves = walk(tree)
    seen = [key for key, _, _ in leaves]
    if len(set(seen)) != len(seen):
        raise ValueError(f"{what}: a buffer appears twice in the tree")
    for key, off, _ in leaves:
        m = members[key]
        if stride % m.nbytes or off % m.nbytes:
            raise NotImplementedError(f"{what}: a {m.nbytes}-byte buffer sits at offset {off} of a {stride}-byte slot; "
                                      "stock Triton views it as whole buffers of the backing, so the slot and the "
                                      "offset must be multiples of its size (put larger buffers first)")
        if off % m.align:
            raise ValueError(f"{what}: a buffer whose layout needs {m.align}-byte alignment sits at offset {off}")
    return Placement(stride, slots, {key: (off, g) for key, off, g in leaves})


# --------------------------------------------------------------------------------------------
# Compile path
# --------------------------------------------------------------------------------------------
@dataclass
class _Spec:
    size: Optional[int]
    members: dict[int, tuple[Member, buffered_tensor]] = field(default_factory=dict)  # buffer id -> ...
    explicit: bool = False


def _alignment(layout: Any) -> int:
    """Shared-memory alignment a layout needs (NVMMA swizzles repeat every 8 rows of the swizzle width)."""
    if isinstance(layout, layouts.NVMMASharedLayout) and layout.swizzle_bytes:
        return layout.swizzle_bytes * 8
    return 16


class storage_alias_spec_type(base_type):
    """A spec is a dummy ``i32`` in TTIR, named by its placeholder id (like a buffer); the fork's
    constructor arguments come first."""

    def __init__(self, storage: layouts.storage_kind, buffer_size_bytes: Optional[int] = None, id: int = 0) -> None:
        self.storage, self.buffer_size_bytes, self.id = storage, buffer_size_bytes, id

    def _unflatten_ir(self, handles: list[ir.value], cursor: int) -> tuple["storage_alias_spec_value", int]:
        return storage_alias_spec_value(handles[cursor], self.storage, self.buffer_size_bytes, self.id), cursor + 1

    def _flatten_ir_types(self, builder: ir.builder, out: list[ir.type]) -> None:
        out.append(builder.get_int32_ty())

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and (self.storage, self.buffer_size_bytes, self.id) == \
            (other.storage, other.buffer_size_bytes, other.id)

    def __str__(self) -> str:
        size = f", size={self.buffer_size_bytes}" if self.buffer_size_bytes else ""
        return f"storage_alias_spec_type(storage={self.storage.value}{size})"

    __repr__ = __str__

    def mangle(self) -> str:
        return f"storage_alias_spec_{self.storage.value}_{self.buffer_size_bytes or 0}_I{self.id}"


class storage_alias_spec_value(tlx_value):
    """The value ``tlx.storage_alias_spec()`` returns; pass it as ``local_alloc(..., reuse=spec)``."""

    def __init__(self, handle: ir.value, storage: layouts.storage_kind, buffer_size_bytes: Optional[int] = None,
                 id: int = 0) -> None:
        if storage == layouts.storage_kind.smemCluster:
            raise ValueError("storage_alias_spec: smemCluster storage is not supported")
        self.handle, self.type = handle, storage_alias_spec_type(storage, buffer_size_bytes, id)

    def _flatten_ir(self, handles: list[ir.value]) -> None:
        handles.append(self.handle)

    @property
    def storage(self) -> layouts.storage_kind:
        return self.type.storage

    @property
    def buffer_size_bytes(self) -> Optional[int]:
        return self.type.buffer_size_bytes

    @builtin
    def set_buffer_overlap(self, overlap_def: reuse_group, _semantic: Any = None) -> None:
        """Place this spec's allocations as the ``reuse_group`` tree says (call it after allocating them)."""
        overlap_def = check_overlap_def(overlap_def)
        spec = _state(_semantic, self)
        spec.explicit = True
        _emit_plan(_semantic, self, overlap_def, "storage_alias_spec.set_buffer_overlap")

    def __repr__(self) -> str:
        return str(self.type)


def _state(_semantic: Any, spec: storage_alias_spec_value) -> _Spec:
    return kernel_state(_semantic).setdefault(_SPECS, {})[spec.type.id]


def check_not_member(_semantic: Any, buf: buffered_tensor, op: str) -> None:
    """A member is only a backing seen through its type: whole-allocation views of it would miss its offset."""
    specs = kernel_state(_semantic).get(_SPECS, {})
    if buf.type.num and any(buf.type.id in spec.members for spec in specs.values()):
        raise NotImplementedError(f"tlx.{op}: this allocation lives in a storage_alias_spec; view its buffers "
                                  "(local_view) instead of the whole allocation")


def check_overlap_def(overlap_def: Any) -> reuse_group:
    """``set_buffer_overlap``'s tree (shared with tlx/interpreter.py, as are the checks below)."""
    overlap_def = unwrap_if_constexpr(overlap_def)
    if not isinstance(overlap_def, reuse_group):
        raise TypeError(f"storage_alias_spec.set_buffer_overlap: overlap_def must be a tlx.reuse_group, got "
                        f"{args.describe(overlap_def)}")
    return overlap_def


def check_member_alloc(explicit: bool) -> None:
    """``local_alloc(reuse=spec)``: members are allocated before ``spec.set_buffer_overlap`` (``explicit``)."""
    if explicit:
        raise ValueError("tlx.local_alloc: reuse=<storage_alias_spec> after its set_buffer_overlap; allocate every "
                         "member first")


def plan(tree: reuse_group, members: dict[Any, Member], key_of: Any, size: Optional[int], what: str) -> Placement:
    """:func:`place`, checked: the plan fits ``buffer_size_bytes`` (``size``) and places every member."""
    placement = place(tree, members, key_of, what)
    total = placement.stride * placement.slots
    if size is not None and total > size:
        raise ValueError(f"{what}: the allocations need {total} bytes, more than buffer_size_bytes={size}")
    if any(key not in placement.where for key in members):
        raise ValueError(f"{what}: every allocation made with reuse=<this spec> must be in the reuse_group tree")
    return placement


def check_storage_alias_spec(storage: Any, buffer_size_bytes: Any) -> tuple[layouts.storage_kind, Optional[int]]:
    """``(storage, buffer_size_bytes)`` of ``storage_alias_spec`` (shared with tlx/interpreter.py)."""
    storage = unwrap_if_constexpr(storage)
    if not isinstance(storage, layouts.storage_kind):
        raise ValueError(f"tlx.storage_alias_spec: storage must be a tlx.storage_kind, got {storage!r}")
    if storage != layouts.storage_kind.smem:
        raise NotImplementedError(f"tlx.storage_alias_spec: storage={storage.value} is not shared memory; tensor "
                                  "memory and clusters are not on sm_90/AMD here")
    size = unwrap_if_constexpr(buffer_size_bytes)
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise ValueError(f"tlx.storage_alias_spec: buffer_size_bytes must be a positive compile-time int, got {size!r}")
    return storage, size


def new_spec(_semantic: Any, storage: Any, buffer_size_bytes: Any) -> storage_alias_spec_value:
    storage, size = check_storage_alias_spec(storage, buffer_size_bytes)
    pid, handle = emit(_semantic, "alias_spec")
    kernel_state(_semantic).setdefault(_SPECS, {})[pid] = _Spec(size)
    return storage_alias_spec_value(handle, storage, size, pid)


def member_alloc(_semantic: Any, spec: storage_alias_spec_value, buf: buffered_tensor) -> buffered_tensor:
    """Register the allocation ``buf`` (already emitted as ``alias_alloc``) with ``spec``."""
    state = _state(_semantic, spec)
    check_member_alloc(state.explicit)
    nbytes = math.prod(buf.shape) * buf.dtype.primitive_bitwidth // 8
    state.members[buf.type.id] = (Member(buf.type.id, buf.type.num, nbytes, _alignment(buf.layout)), buf)
    counts = {m.num for m, _ in state.members.values()}
    if len(counts) == 1:  # the default until set_buffer_overlap: every member at one offset
        _emit_plan(_semantic, spec, reuse_group(*(b for _, b in state.members.values())), "tlx.local_alloc")
    return buf


def _emit_plan(_semantic: Any, spec: storage_alias_spec_value, tree: reuse_group, what: str) -> None:
    state = _state(_semantic, spec)
    placement = plan(tree, {k: m for k, (m, _) in state.members.items()},
                     lambda leaf: leaf.type.id if isinstance(leaf, buffered_tensor) else None, state.size, what)
    # Each member sees the whole backing as its buffers (Triton 3.8 verifies that ttg.memdesc_reinterpret
    # keeps the byte size), so the backing holds a whole number of every member's buffers: a tail of
    # buffer_size_bytes shorter than the common multiple of their sizes, which no member could reach, goes.
    total = state.size or placement.stride * placement.slots
    total -= total % math.lcm(*(m.nbytes for m, _ in state.members.values()))
    members = {}
    for m, buf in state.members.values():
        off, group = placement.where[m.key]
        scale = placement.stride // m.nbytes
        count = total // m.nbytes
        members[m.key] = {"type": memdesc_type(_semantic, buf.dtype, (count, *buf.shape), buf.layout,
                                                     (count, *buf.shape)),
                               "scale": scale, "off": off // m.nbytes, "group": group}
    backing = memdesc_type(_semantic, tl.int8, (total, ), layouts.SwizzledSharedLayout(1, 1, 1, (0, )), (total, ))
    align = max([m.align for m, _ in state.members.values()] + [16])
    emit(_semantic, "buffer_overlap", spec=spec.type.id, backing=backing, align=align, members=members)
