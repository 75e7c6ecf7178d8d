"""Argument checks that TLX ops share between the compile path and the interpreter.

An op's own check lives in the op's module (e.g. ``mem.check_local_store``), which both its
``@tlx_builtin`` and the same-named function in :mod:`.interpreter` call, so a misuse raises the same
error, naming the op and the argument, compiled or interpreted. The checks take plain values: Python
ints, tuples and strings, Triton dtypes, ``tl.tensor`` (which both paths use) and TLX values, whose
classes in both paths say what they are through a ``tlx_kind`` attribute (see :func:`kind_of`).
This module holds the pieces those checks are made of.
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import triton.language as tl

from .triton_compat import unwrap_if_constexpr

#: What builtins' parameters accept, for their type hints: an int known when compiling (a Python int or a
#: ``tl.constexpr``), a scalar that may be a run-time value, and a predicate (None is true).
ConstInt = Union[int, tl.constexpr]
Scalar = Union[int, tl.tensor, tl.constexpr]
Pred = Union[bool, tl.tensor, tl.constexpr, None]

#: ``tlx_kind`` of TLX values: a single buffer (a view), a whole allocation of ``num`` buffers, one
#: mbarrier, an array of them, an mbarrier of another CTA (``remote_view``), a TMA descriptor.
BUFFER, BUFFERS, MBARRIER, MBARRIERS, REMOTE_MBARRIER = "buffer", "buffers", "mbarrier", "mbarriers", "remote mbarrier"
DESCRIPTOR = "tensor descriptor"


def unwrap(x: Any) -> Any:
    return unwrap_if_constexpr(x)


def constant(x: Any) -> Any:
    """``x`` unwrapped, and an integer scalar whose value is known while the kernel is built as that value.

    Compiled, a scalar tensor has no value yet (a compile-time int arrives as an int or a constexpr). The
    interpreter computes as it goes: arithmetic on constexprs there can yield a scalar tensor where the
    compiler would have folded a constant, so its value counts as compile-time.
    """
    x = unwrap(x)
    if isinstance(x, tl.tensor) and not x.type.is_block() and x.dtype.is_int() and hasattr(x.handle, "data"):
        value = x.handle.data.item()
        return bool(value) if x.dtype.is_bool() else int(value)
    return x


def kind_of(x: Any) -> str:
    """What ``x`` is, in words both paths print the same: a TLX value's ``tlx_kind``, ``"tensor"``
    or ``"scalar"`` for Triton values, else the Python type name."""
    x = unwrap(x)
    kind = getattr(x, "tlx_kind", None)
    if kind is not None:
        return kind
    if isinstance(x, tl.core.tensor_descriptor_base):
        return DESCRIPTOR
    if isinstance(x, tl.tensor):
        return "tensor" if x.type.is_block() else "scalar"
    return type(x).__name__


def describe(x: Any) -> str:
    """``x`` in an error message: a Triton value by its type (``fp32``, ``a [16, 16] fp32 tensor``), a TLX
    value by its kind, anything else by its repr."""
    x = unwrap(x)
    if isinstance(x, tl.tensor) and getattr(x, "tlx_kind", None) is None:
        return f"a {dims(x.shape)} {x.dtype} tensor" if x.type.is_block() else str(x.dtype)
    if getattr(x, "tlx_kind", None) is not None or isinstance(x, tl.core.tensor_descriptor_base):
        return kind_of(x)
    return repr(x)


def dims(shape: Sequence[Any]) -> list[int]:
    """A Triton shape (whose entries may be constexprs) as plain ints."""
    return [int(unwrap(d)) for d in shape]


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def int_tuple(value: Any, op: str, name: str) -> tuple[int, ...]:
    """A shape: one or more positive compile-time ints."""
    value = constant(value)
    if isinstance(value, int):
        value = (value, )
    items = tuple(constant(v) for v in value) if isinstance(value, (tuple, list, tl.tuple)) else None
    if not items or not all(is_int(v) and v > 0 for v in items):
        raise ValueError(f"tlx.{op}: {name} must be a tuple of positive compile-time ints, got {value!r}")
    return items


def compile_time_int(value: Any, op: str, name: str, low: int = 1) -> int:
    value = constant(value)
    if not is_int(value) or value < low:
        what = "a non-negative compile-time int" if low == 0 else f"a compile-time int >= {low}"
        raise ValueError(f"tlx.{op}: {name} must be {what}, got {describe(value)}")
    return value


def compile_time_bool(value: Any, op: str, name: str) -> bool:
    value = unwrap(value)
    if not isinstance(value, bool):
        raise TypeError(f"tlx.{op}: {name} must be a compile-time bool, got {describe(value)}")
    return value


def scalar_dtype(value: Any, op: str, name: str = "dtype") -> tl.dtype:
    value = unwrap(value)
    if not isinstance(value, tl.dtype) or isinstance(value, tl.pointer_type):
        raise TypeError(f"tlx.{op}: {name} must be a scalar Triton dtype, got {value!r}")
    return value


def choice(value: Any, allowed: Sequence[str], op: str, name: str) -> str:
    """One of ``allowed`` (``None`` counts as ``""``)."""
    value = unwrap(value)
    value = "" if value is None else value
    if value not in allowed:
        raise ValueError(f"tlx.{op}: {name} must be one of {list(allowed)}, got {value!r}")
    return value


def integer_scalar(value: Any, op: str, name: str) -> Any:
    """An int or an integer scalar tensor (a run-time value)."""
    value = unwrap(value)
    if isinstance(value, tl.tensor):
        if value.type.is_block() or not value.dtype.is_int() or value.dtype.is_bool():
            raise TypeError(f"tlx.{op}: {name} must be an integer scalar, got {describe(value)}")
    elif not is_int(value):
        raise TypeError(f"tlx.{op}: {name} must be an integer scalar, got {describe(value)}")
    return value


def scalar_pointer(value: Any, op: str, name: str) -> tl.tensor:
    value = unwrap(value)
    if not isinstance(value, tl.tensor) or value.type.is_block() or not value.dtype.is_ptr():
        raise TypeError(f"tlx.{op}: {name} must be a scalar pointer, got {describe(value)}")
    return value


def buffer(x: Any, op: str, one: bool = False) -> Any:
    """``x`` if it is a TLX buffer (one buffer when ``one``: a whole allocation must be indexed first)."""
    x = unwrap(x)
    kind = kind_of(x)
    if kind not in (BUFFER, BUFFERS):
        raise TypeError(f"tlx.{op} expects a TLX buffer (from tlx.local_alloc), got {kind}")
    if one and kind == BUFFERS:
        raise TypeError(f"tlx.{op}: pick one buffer with tlx.local_view first")
    return x


def barrier(x: Any, op: str) -> Any:
    """``x`` if it is one local mbarrier (an indexed ``alloc_barriers`` element)."""
    x = unwrap(x)
    kind = kind_of(x)
    if kind == REMOTE_MBARRIER:
        raise TypeError(f"tlx.{op} does not take a remote_view of an mbarrier: pass the local mbarrier"
                        f"{' and remote_cta_rank=' if op == 'barrier_arrive' else ''}")
    if kind == MBARRIERS:
        raise TypeError(f"tlx.{op}: pick one barrier of the array with tlx.local_view (or bars[i]) first")
    if kind != MBARRIER:
        raise TypeError(f"tlx.{op} expects an mbarrier (from tlx.alloc_barriers), got {kind}")
    return x


def tokens(value: Any, op: str) -> None:
    """``tokens`` of the commit/wait ops: a list of async tokens."""
    value = unwrap(value)
    items = list(getattr(value, "values", value)) if isinstance(value, (list, tuple, tl.tuple)) else None
    if items is None:
        raise TypeError(f"tlx.{op}: tokens must be a list of async tokens, got {describe(value)}")
    bad = [t for t in items if kind_of(t) != "async token"]
    if bad:
        raise TypeError(f"tlx.{op}: tokens must be async tokens (from tlx.async_load / commit / wait), "
                        f"got {describe(bad[0])}")


def scalar_pred(value: Any, op: str) -> None:
    """An op's ``pred``: None (true), a Python value or a scalar tensor."""
    value = unwrap(value)
    if isinstance(value, tl.tensor) and value.type.is_block():
        raise TypeError(f"tlx.{op}: pred must be a scalar, got a tensor of shape {dims(value.shape)}")


def bool_mask(mask: Any, op: str, what: str = "boolean") -> None:
    """An op's ``mask``: None, a Python bool or a boolean tensor."""
    mask = unwrap(mask)
    if mask is None or isinstance(mask, bool) or (isinstance(mask, tl.tensor) and mask.dtype == tl.int1):
        return
    got = mask.dtype if isinstance(mask, tl.tensor) else describe(mask)
    raise TypeError(f"tlx.{op}: mask must be {what}, got {got}")


#: Why another CTA of a cluster cannot be named without ``ctas_per_cga`` (tlx/cluster_launch.py).
ONE_CTA = ("the kernel runs as clusters of one CTA: launch it with ctas_per_cga=(n, 1, 1) for clusters of n")


def check_remote_rank(rank: Any, op: str, arg: str, ctas: int = 1) -> None:
    """A CTA rank in a cluster of ``ctas``: an int must be below it; a run-time scalar is checked by the
    interpreter, which knows its value (and runs clusters of one CTA). Shared with tlx/interpreter.py."""
    rank = integer_scalar(rank, op, arg)
    if not isinstance(rank, tl.tensor) and not 0 <= rank < ctas:
        if ctas == 1:
            raise ValueError(f"tlx.{op}: {arg}={rank} names another CTA of the cluster, but {ONE_CTA}")
        raise ValueError(f"tlx.{op}: {arg}={rank} is not a CTA of a cluster of {ctas} (ctas_per_cga)")
