"""cp.async-style global -> shared copies and their commit/wait groups."""
from __future__ import annotations

import triton.language as tl
from triton.language.core import _unwrap_if_constexpr

from tritium import compat

from . import layouts
from .emit import emit, tensor_type, tlx_builtin
from .mem import _buffer
from .types import async_token


def _check_target(arch: str, op: str) -> None:
    cap = layouts.cuda_capability(arch)
    if cap is None or cap < 80:
        raise NotImplementedError(f"tlx.{op} needs cp.async (NVIDIA sm_80 or newer); the target is {arch}")


@tlx_builtin
def async_load(src, result, mask=None, other=None, cache_modifier="", eviction_policy="", is_volatile=False,
               _semantic=None) -> async_token:
    """Start copying the elements ``src`` points to into buffer ``result``; returns a token."""
    opts = _semantic.builder.options
    _check_target(opts.arch, "async_load")
    result = _buffer(result, "async_load")
    if result.type.num:
        raise TypeError("tlx.async_load: pick one buffer with tlx.local_view first")
    if not isinstance(src, tl.tensor) or not src.type.is_block() or not src.dtype.is_ptr():
        raise TypeError(f"tlx.async_load: src must be a tensor of pointers, got {getattr(src, 'type', src)}")
    if tuple(src.shape) != tuple(result.shape):
        raise ValueError(f"tlx.async_load: src shape {list(src.shape)} != buffer shape {list(result.shape)}")
    if src.dtype.element_ty != result.dtype:
        raise TypeError(f"tlx.async_load: src points to {src.dtype.element_ty}, buffer holds {result.dtype}")
    shape = list(result.shape)
    mask = _unwrap_if_constexpr(mask)
    other = _unwrap_if_constexpr(other)
    if mask is not None:
        mask = _semantic.broadcast_impl_shape(_semantic.to_tensor(mask), shape)
    if other is not None:
        other = _semantic.cast(_semantic.broadcast_impl_shape(_semantic.to_tensor(other), shape), result.dtype)
    cache_attrs = compat.async_copy_cache_attrs(_semantic, _unwrap_if_constexpr(cache_modifier),
                                                _unwrap_if_constexpr(eviction_policy))
    blocked = layouts.coalesced_layout(shape, result.dtype, opts.num_warps, opts.warp_size)
    operands = [x for x in (src, mask, other) if x is not None]
    emit(_semantic, "async_copy", operands=operands, dst=result.type.id,
         want=[tensor_type(_semantic, x.dtype, shape, blocked) for x in operands],
         has_mask=mask is not None, has_other=other is not None, cache_attrs=cache_attrs,
         volatile=bool(_unwrap_if_constexpr(is_volatile)))
    return async_token()


@tlx_builtin
def async_load_commit_group(tokens=[], _semantic=None) -> async_token:
    """Close the current group of async copies."""
    _check_target(_semantic.builder.options.arch, "async_load_commit_group")
    emit(_semantic, "commit_group")
    return async_token()


@tlx_builtin
def async_load_wait_group(pendings, tokens=[], _semantic=None) -> async_token:
    """Wait until at most ``pendings`` groups of async copies are in flight."""
    _check_target(_semantic.builder.options.arch, "async_load_wait_group")
    pendings = _unwrap_if_constexpr(pendings)
    if not isinstance(pendings, int) or pendings < 0:
        raise ValueError(f"tlx.async_load_wait_group: pendings must be a non-negative compile-time int, got {pendings!r}")
    emit(_semantic, "wait_group", num=pendings)
    return async_token()
