"""Frontend values of TLX: shared-memory buffers and async tokens.

They are ordinary Triton ``base_value``s so they can live in kernel variables, cross ``if``/``for``
boundaries and be passed to ``@triton.jit`` helpers like any tensor.
"""
from __future__ import annotations

import enum
from typing import Any, Callable, List, Tuple

import triton.language as tl
from triton.language.core import base_type, base_value, builtin

from . import triton_compat
from .args import BUFFER, BUFFERS, kind_of
from .layouts import SharedLayout
from .triton_compat import ir, unwrap_if_constexpr

#: The ops that values' methods are (``buf[i]`` is ``local_view``, a descriptor's ``load`` and ``store``), by
#: name, registered by their op families (tlx/mem.py, tlx/tma.py) with :func:`method_op`: this floor imports
#: no op family. ``import tritium.tlx`` imports them all.
METHOD_OPS: dict[str, Callable[..., Any]] = {}


def method_op(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register the op ``fn`` (a builtin) as the one a value method of the same name calls."""
    METHOD_OPS[fn.__name__] = fn
    return fn


class buffered_tensor_type(base_type):
    """A view of shared memory: ``shape`` elements of ``dtype`` with a shared ``layout``.

    ``alloc_shape`` is the shape of the whole allocation (``(num, *shape)`` for multi-buffers), as
    TritonGPU memdescs require. ``num`` is the buffer count for multi-buffers, else 0. ``barrier``
    marks mbarriers (``alloc_barriers``), so barrier ops can reject plain buffers.
    """

    def __init__(self, dtype: tl.dtype, shape: Tuple[int, ...], layout: SharedLayout, alloc_shape: Tuple[int, ...],
                 num: int, id: int, memdesc: str, barrier: bool = False) -> None:
        self.element_ty = dtype
        self.shape = tuple(shape)
        self.layout = layout
        self.alloc_shape = tuple(alloc_shape)
        self.num = num
        self.id = id  # the placeholder that made this view (see tlx/placeholders.py)
        self.memdesc = memdesc  # its TritonGPU type, printed
        self.barrier = barrier
        self.origin = ""  # the kernel line that made the view, so two views that print alike can be told apart

    def _unflatten_ir(self, handles: List[ir.value], cursor: int) -> Tuple["buffered_tensor", int]:
        if triton_compat.unflattening_loop_carry():
            return buffered_tensor(handles[cursor], loop_carried_type(self)), cursor + 1
        chosen = triton_compat.if_result()
        if chosen is not None:  # a view chosen by the branch taken: a new view, of the if's result
            return _IF_RESULT[0](*chosen, handles[cursor], self), cursor + 1
        return buffered_tensor(handles[cursor], self), cursor + 1

    def _flatten_ir_types(self, builder: ir.builder, out: List[ir.type]) -> None:
        out.append(builder.get_int32_ty())  # a buffer is a dummy i32 in TTIR

    def __eq__(self, other: Any) -> bool:
        # The id is part of the type: a loop that rebinds a buffer variable to another buffer is a
        # type change, which Triton reports, instead of silently using the first buffer. The branches of
        # an ``if`` may pick different views of one type: the ``if`` yields a new view (``_unflatten_ir``).
        return (type(self) is type(other) and self.memdesc == other.memdesc
                and (self.id == other.id or (self.barrier == other.barrier and triton_compat.comparing_if_branches())))

    def __str__(self) -> str:
        buffers = f"{self.num} x " if self.num else ""
        made = f" made at {self.origin}" if self.origin else ""
        if self.barrier:
            return (f"mbarrier<{buffers}>" if self.num else "mbarrier") + made
        return f"buffered_tensor<{buffers}{list(self.shape)} {self.element_ty}, {self.layout}>{made}"

    def mangle(self) -> str:
        shape = "_".join(map(str, self.shape))
        alloc = "_".join(map(str, self.alloc_shape))
        return f"TLXB{self.element_ty.mangle()}S{shape}A{alloc}N{self.num}I{self.id}{'M' if self.barrier else ''}B"


#: Makes the view an ``if`` yields, ``(semantic, "file:line" of the if, handle, type) -> buffered_tensor``;
#: tlx/mem.py registers it.
_IF_RESULT: List[Callable[[Any, str, ir.value, buffered_tensor_type], "buffered_tensor"]] = []


def if_result_view(make: Callable[[Any, str, ir.value, buffered_tensor_type], "buffered_tensor"]) -> Callable:
    """Register ``make`` as the maker of the views ``if``s yield (this floor imports no op family)."""
    _IF_RESULT[:] = [make]
    return make


class loop_carried_type(buffered_tensor_type):
    """A buffer view that a loop carries: the variable was rebound to another view inside the loop.

    TLX ops name a view by the placeholder that made it (its ``id``), fixed when the op is traced, so
    a use of the carried value would always see the view from before the loop. Reading its ``id``
    (which every TLX op and helper call does) is therefore an error; carrying it unused is not.
    """

    def __init__(self, carried: buffered_tensor_type) -> None:
        self.__dict__.update((k, v) for k, v in vars(carried).items() if k != "id")

    @property
    def id(self) -> int:
        what = "mbarrier" if self.barrier else "buffer"
        raise TypeError(f"this TLX {what} view was rebound inside a loop and is used where its value depends on "
                        f"the iteration (or after the loop); tritium fixes the {what} an op uses when the op is "
                        f"traced, so it cannot follow a view carried by the loop. Make the view from the loop's "
                        f"own index where it is used (tlx.local_view(bufs, i % NUM))")


class tlx_value(base_value):
    """Base of TLX frontend values (anything a kernel variable or a jit helper's argument can hold)."""

    def _set_name(self, builder: ir.builder, name: str) -> None:
        """Name this value's IR handles after its variable: Triton 3.8+ calls this (3.6/3.7 do the same themselves)."""
        triton_compat.name_value_handles(self, builder, name)


class buffered_tensor(tlx_value):
    """A TLX shared-memory buffer (or multi-buffer); ``buf[i]`` is ``tlx.local_view(buf, i)``."""

    def __init__(self, handle: ir.value, type: buffered_tensor_type = None, *, element_ty: tl.dtype = None,
                 shape: Any = None, num: int = 0, storage: Any = None, layout: Any = None) -> None:
        """``(handle, type)`` inside tritium; the fork's keywords (``element_ty``, ``shape``, ``num``,
        ``storage``, ``layout``) describe a buffer outside a kernel (no placeholder, id 0)."""
        if type is None:
            shape = tuple(shape)
            type = buffered_tensor_type(element_ty, shape, layout, (num, *shape) if num else shape, num, 0, "")
        self.handle = handle
        self.type = type

    def _flatten_ir(self, handles: List[ir.value]) -> None:
        handles.append(self.handle)

    @property
    def dtype(self) -> tl.dtype:
        return self.type.element_ty

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.type.shape

    @property
    def layout(self) -> SharedLayout:
        return self.type.layout

    @property
    def tlx_kind(self) -> str:
        """What this value is, as the argument checks name it (tlx/args.py)."""
        barrier = self.type.barrier
        if barrier == "remote":
            return "remote mbarrier"
        if barrier:
            return "mbarriers" if self.type.num else "mbarrier"
        return "buffers" if self.type.num else "buffer"

    @builtin
    def __getitem__(self, idx: Any, _semantic: Any = None) -> "buffered_tensor":
        """``buf[i]``: ``tlx.local_view(buf, i)``."""
        return METHOD_OPS["local_view"](self, idx, _semantic=_semantic)

    def __str__(self) -> str:
        return str(self.type)


class async_token_type(base_type):
    """Async-copy and group tokens order nothing in TTGIR here. In a kernel each carries a dummy ``i32`` (a
    constant) all the same: a value with no IR at all breaks an ``if`` that assigns it in both branches
    (stock codegen yields twice from an ``scf.if`` without results)."""

    def _unflatten_ir(self, handles: List[ir.value], cursor: int) -> Tuple["async_token", int]:
        return async_token(handles[cursor]), cursor + 1

    def _flatten_ir_types(self, builder: ir.builder, out: List[ir.type]) -> None:
        out.append(builder.get_int32_ty())

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __str__(self) -> str:
        return "async_token"

    def mangle(self) -> str:
        return "TLXT"


class async_token(tlx_value):
    tlx_kind = "async token"

    def __init__(self, handle: Any = None) -> None:
        """``handle``: the dummy ``i32`` (see :class:`async_token_type`); None outside a kernel."""
        self.handle = handle
        self.type = async_token_type()

    @classmethod
    def made(cls, _semantic: Any) -> "async_token":
        """A token returned by an op of the kernel being built."""
        return cls(_semantic.builder.get_int32(0))

    def _flatten_ir(self, handles: List[ir.value]) -> None:
        if self.handle is not None:
            handles.append(self.handle)


class tensor_descriptor_type(base_type):
    """A TMA descriptor made in the kernel (``make_tensor_descriptor``): a dummy ``i32`` in TTIR, like a buffer."""

    def __init__(self, block_type: tl.block_type, id: int, desc: str) -> None:
        self.block_type = block_type
        self.id = id  # the placeholder that made it
        self.desc = desc  # its ``!tt.tensordesc`` type, printed

    def _unflatten_ir(self, handles: List[ir.value], cursor: int) -> Tuple["tensor_descriptor", int]:
        return tensor_descriptor(handles[cursor], self), cursor + 1

    def _flatten_ir_types(self, builder: ir.builder, out: List[ir.type]) -> None:
        out.append(builder.get_int32_ty())

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and self.id == other.id and self.desc == other.desc

    def __str__(self) -> str:
        return f"tensor_descriptor<{self.block_type}>"

    def mangle(self) -> str:
        return f"TLXD{self.block_type.mangle()}I{self.id}D"


class tensor_descriptor(tlx_value):
    """A device-side TMA descriptor; host-side ones arrive as Triton's own ``tl.tensor_descriptor``."""
    tlx_kind = "tensor descriptor"

    def __init__(self, handle: ir.value, type: tensor_descriptor_type) -> None:
        self.handle = handle
        self.type = type

    def _flatten_ir(self, handles: List[ir.value]) -> None:
        handles.append(self.handle)

    @property
    def block_shape(self) -> List[int]:
        return self.type.block_type.shape

    @property
    def dtype(self) -> tl.dtype:
        return self.type.block_type.element_ty

    @builtin
    def load(self, offsets: Any, _semantic: Any = None) -> tl.tensor:
        """``desc.load(offsets)``, as on Triton's own descriptors (:func:`tma.descriptor_load`)."""
        return METHOD_OPS["descriptor_load"](self, offsets, _semantic=_semantic)

    @builtin
    def store(self, offsets: Any, value: Any, _semantic: Any = None) -> None:
        """``desc.store(offsets, value)``, as on Triton's own descriptors (:func:`tma.descriptor_store`)."""
        METHOD_OPS["descriptor_store"](self, offsets, value, _semantic=_semantic)


class reuse_group_type(enum.Enum):
    """How the members of a fork ``reuse_group`` share storage."""
    shared = "shared"
    distinct = "distinct"


class reuse_group:
    """A node of the fork's buffer-overlap tree for ``storage_alias_spec.set_buffer_overlap``
    (tlx/alias.py): its elements (buffers or groups) share one region (``shared``) or sit side by
    side (``distinct``); ``group_size=G`` puts ``G`` consecutive buffers of its element in one slot."""

    def __init__(self, *args: Any, group_type: reuse_group_type = reuse_group_type.shared, group_size: int = 1):
        if not args:
            raise ValueError("tlx.reuse_group requires at least one element")
        group_type, group_size = unwrap_if_constexpr(group_type), unwrap_if_constexpr(group_size)
        if not isinstance(group_type, reuse_group_type):
            raise TypeError(f"tlx.reuse_group: group_type must be a tlx.reuse_group_type, got {group_type!r}")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"tlx.reuse_group: group_size must be a positive int, got {group_size!r}")
        self.args = tuple(unwrap_if_constexpr(a) for a in args)
        for elem in self.args:  # buffers of either path (the interpreter's too) say what they are
            if not isinstance(elem, reuse_group) and kind_of(elem) not in (BUFFER, BUFFERS):
                raise TypeError(f"tlx.reuse_group: elements must be buffered_tensor or reuse_group, got "
                                f"{type(elem).__name__}")
        self.group_type, self.group_size = group_type, group_size

    def __repr__(self) -> str:
        return f"reuse_group({self.args}, group_type={self.group_type.value}, group_size={self.group_size})"
