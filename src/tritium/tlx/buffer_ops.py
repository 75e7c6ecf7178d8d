"""AMD buffer ops with the fork's signatures: a scalar base pointer plus a tensor of i32 element offsets.

The fork emits ``amdg.buffer_load``/``buffer_store``/``buffer_atomic_rmw``/``buffer_load_to_local``
directly. Stock Triton's AMD pipeline already rewrites ``base + offsets`` loads, stores, atomics and
async copies into exactly those ops (``convert_to_buffer_ops``) when it can prove the offsets are
32-bit and non-negative, which these signatures guarantee. So each op here is the plain Triton (or
TLX async-copy) op on ``base + offsets``, with the fork's argument checks; the buffer instruction is
chosen by the stock pass. They are AMD-only, as in the fork: NVIDIA has no buffer instructions.
The same code runs under the interpreter (``_semantic`` is then the interpreter's).
"""
from __future__ import annotations

from typing import Any, Optional

import triton.language as tl

from . import layouts
from .args import ConstInt
from .async_copy import async_load
from .emit import tlx_builtin
from .types import async_token, buffered_tensor
from .triton_compat import compile_options, interpreted, unwrap_if_constexpr


def _check(_semantic: Any, op: str, ptr: Any, offsets: Any, mask: Any = None, other: Any = None) -> None:
    if not interpreted(_semantic) and not layouts.is_amd(compile_options(_semantic).arch):
        raise NotImplementedError(f"tlx.{op} is an AMD buffer instruction; the target "
                                  f"{compile_options(_semantic).arch} has none (use base + offsets with tl ops)")
    if not isinstance(ptr, tl.tensor) or ptr.type.is_block() or not ptr.dtype.is_ptr():
        raise TypeError(f"tlx.{op}: ptr must be a scalar pointer, got {getattr(ptr, 'type', ptr)}")
    if not isinstance(offsets, tl.tensor) or not offsets.type.is_block() or offsets.dtype not in (tl.int32, tl.uint32):
        raise TypeError(f"tlx.{op}: offsets must be a tensor of int32 or uint32 element offsets, got "
                        f"{getattr(offsets, 'type', offsets)}")
    if other is not None and mask is None:
        raise ValueError(f"tlx.{op}: other requires mask")


def _contiguity(value: Any, op: str) -> int:
    value = unwrap_if_constexpr(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1):
        raise ValueError(f"tlx.{op}: contiguity must be a positive power of two, got {value!r}")
    return value


def _addresses(_semantic: Any, ptr: Any, offsets: Any, contiguity: int) -> tl.tensor:
    """``ptr + offsets``, with the caller's promise that runs of ``contiguity`` offsets are contiguous
    and start at multiples of ``contiguity`` along the last dimension (what lets the load vectorize)."""
    if contiguity > 1 and not interpreted(_semantic):  # hints mean nothing to the interpreter
        hint = [tl.constexpr(1)] * (len(offsets.shape) - 1) + [tl.constexpr(contiguity)]
        offsets = tl.max_contiguous(tl.multiple_of(offsets, hint, _semantic=_semantic), hint, _semantic=_semantic)
    return _semantic.add(ptr, offsets, True)


def _mask(_semantic: Any, mask: Any) -> Optional[tl.tensor]:
    mask = unwrap_if_constexpr(mask)
    return None if mask is None else _semantic.cast(_semantic.to_tensor(mask), tl.int1)


@tlx_builtin
def buffer_load(ptr: tl.tensor, offsets: tl.tensor, mask: tl.tensor | None = None, other: Any = None,
                cache: str | None = None, contiguity: ConstInt = 1, _semantic: Any = None) -> tl.tensor:
    """Load ``ptr[offsets]`` into registers (masked elements get ``other``; undefined without it).

    Args:
        ptr: the scalar base pointer.
        offsets: element offsets from ``ptr``, an i32 tensor.
        mask: where false, nothing is read.
        other: the value of masked-off elements.
        cache: a cache modifier, as ``tl.load``'s.
        contiguity: how many consecutive offsets are contiguous.
    """
    mask, other = _mask(_semantic, mask), unwrap_if_constexpr(other)
    _check(_semantic, "buffer_load", ptr, offsets, mask, other)
    addresses = _addresses(_semantic, ptr, offsets, _contiguity(contiguity, "buffer_load"))
    return tl.load(addresses, mask=mask, other=other, cache_modifier=unwrap_if_constexpr(cache) or "",
                   _semantic=_semantic)


@tlx_builtin
def buffer_store(stored_value: tl.tensor, ptr: tl.tensor, offsets: tl.tensor, mask: tl.tensor | None = None,
                 cache: str | None = None, _semantic: Any = None) -> None:
    """Store ``stored_value`` to ``ptr[offsets]`` where ``mask`` holds.

    Args:
        stored_value: the values, of ``offsets``'s shape.
        ptr: the scalar base pointer.
        offsets: element offsets from ``ptr``.
        mask: where false, nothing is written.
        cache: a cache modifier, as ``tl.store``'s.
    """
    mask = _mask(_semantic, mask)
    _check(_semantic, "buffer_store", ptr, offsets, mask)
    tl.store(_semantic.add(ptr, offsets, True), stored_value, mask=mask,
             cache_modifier=unwrap_if_constexpr(cache) or "", _semantic=_semantic)


@tlx_builtin
def buffer_atomic_add(ptr: tl.tensor, offsets: tl.tensor, value: tl.tensor, mask: tl.tensor | None = None,
                      sem: str | None = None, scope: str | None = None, contiguity: ConstInt = 1,
                      _semantic: Any = None) -> tl.tensor:
    """Atomically add ``value`` to ``ptr[offsets]``; returns the old values.

    Args:
        ptr: the scalar base pointer.
        offsets: element offsets from ``ptr``.
        value: what to add.
        mask: where false, nothing happens.
        sem, scope: as ``tl.atomic_add``'s.
        contiguity: how many consecutive offsets are contiguous.
    """
    mask = _mask(_semantic, mask)
    _check(_semantic, "buffer_atomic_add", ptr, offsets, mask)
    element = ptr.dtype.element_ty
    if not (element.is_floating() and element.primitive_bitwidth >= 16 or element in (tl.int32, tl.int64)):
        raise TypeError(f"tlx.buffer_atomic_add supports only f16, bf16, f32, f64, i32 and i64 values, got {element}")
    addresses = _addresses(_semantic, ptr, offsets, _contiguity(contiguity, "buffer_atomic_add"))
    return tl.atomic_add(addresses, value, mask=mask, sem=unwrap_if_constexpr(sem), scope=unwrap_if_constexpr(scope),
                         _semantic=_semantic)


@tlx_builtin
def buffer_load_to_local(dest: buffered_tensor, ptr: tl.tensor, offsets: tl.tensor, mask: tl.tensor | None = None,
                         other: Any = None, cache_modifier: str = "", _semantic: Any = None) -> async_token:
    """Asynchronously copy ``ptr[offsets]`` into shared buffer ``dest`` (``tlx.async_load`` semantics:
    commit, then wait for it; masked elements get ``other``, zero without it).

    Args:
        dest: the shared buffer receiving the elements.
        ptr: the scalar base pointer.
        offsets: element offsets from ``ptr``.
        mask: where false, ``other`` is written.
        other: the value of masked-off elements (zero without it).
        cache_modifier: as ``async_load``'s.
    """
    mask, other = _mask(_semantic, mask), unwrap_if_constexpr(other)
    _check(_semantic, "buffer_load_to_local", ptr, offsets, mask, other)
    return async_load(_semantic.add(ptr, offsets, True), dest, mask=mask, other=other, cache_modifier=cache_modifier,
                      _semantic=_semantic)
