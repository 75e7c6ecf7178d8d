"""Asynchronous global -> shared copies (cp.async on NVIDIA, direct-to-LDS loads on AMD CDNA3/CDNA4),
their commit/wait groups, and L2 prefetch hints.

Each ``async_load`` lowers to ``ttg.async_copy_global_to_local``; ``async_load_commit_group`` and
``async_load_wait_group`` to ``ttg.async_commit_group`` / ``ttg.async_wait``, which stock Triton lowers
to ``cp.async.commit_group`` / ``cp.async.wait_group`` on NVIDIA and to ``s_waitcnt vmcnt`` on AMD.
A copy the hardware cannot run asynchronously (fewer than 4 provable bytes per thread, or a non-zero
``other``) compiles to a synchronous copy with a warning (:mod:`.copy_fallback`).
"""
from __future__ import annotations

from typing import Any, Sequence

import triton.language as tl

from tritium import compat

from . import layouts
from .emit import emit, tensor_type, tlx_builtin
from .mem import _buffer
from .types import async_token, buffered_tensor
from .triton_compat import compile_options, unwrap_if_constexpr

#: AMD targets with direct-to-LDS loads that stock Triton lowers ``ttg.async_copy_global_to_local`` to.
AMD_ASYNC_COPY_ARCHS = ("gfx942", "gfx950")


def _check_target(arch: str, op: str) -> None:
    cap = layouts.cuda_capability(arch)
    if (cap is not None and cap >= 80) or arch in AMD_ASYNC_COPY_ARCHS:
        return
    raise NotImplementedError(f"tlx.{op} needs cp.async (NVIDIA sm_80 or newer); the target is {arch} "
                              f"(on AMD, direct-to-LDS copies exist on {' and '.join(AMD_ASYNC_COPY_ARCHS)})")


def _is_zero(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == 0


def _cache_attrs(_semantic: Any, cache_modifier: Any, eviction_policy: Any) -> list[str]:
    """The copy's printed cache-hint attributes; a hint Triton rejects is an error naming the op."""
    try:
        return compat.async_copy_cache_attrs(_semantic, unwrap_if_constexpr(cache_modifier),
                                             unwrap_if_constexpr(eviction_policy))
    except ValueError as e:
        raise ValueError(f"tlx.async_load: {e} (cache_modifier={cache_modifier!r}, "
                         f"eviction_policy={eviction_policy!r})") from e


def _check_tokens(tokens: Any, op: str) -> None:
    tokens = unwrap_if_constexpr(tokens)
    items = list(getattr(tokens, "values", tokens)) if isinstance(tokens, (list, tuple, tl.tuple)) else None
    if items is None:
        raise TypeError(f"tlx.{op}: tokens must be a list of async tokens, got {tokens!r}")
    bad = [t for t in items if not isinstance(unwrap_if_constexpr(t), async_token)]
    if bad:
        raise TypeError(f"tlx.{op}: tokens must be async tokens (from tlx.async_load / commit / wait), got {bad[0]!r}")


def check_bulk_args(shape: Sequence[int], dtype_bits: int, bulk_size: Any, barrier: Any, mask: Any, other: Any,
                    is_barrier: bool) -> None:
    """The fork's rules for ``async_load(bulk=True)``, shared by the compile path and the interpreter."""
    if len(shape) != 1:
        raise ValueError(f"tlx.async_load(bulk=True): the result buffer must be 1-D, got shape {list(shape)}")
    if barrier is None:
        raise ValueError("tlx.async_load(bulk=True): barrier (an mbarrier the copy completes on) is required")
    if not is_barrier:
        raise TypeError(f"tlx.async_load(bulk=True): barrier must be one mbarrier, got {barrier!r}")
    if mask is not None or other is not None:
        raise ValueError("tlx.async_load(bulk=True): mask and other are not supported with bulk copies")
    if isinstance(bulk_size, int) and not 0 < bulk_size <= shape[0] * dtype_bits // 8:
        raise ValueError(f"tlx.async_load(bulk=True): bulk_size={bulk_size} must be in 1..{shape[0] * dtype_bits // 8} "
                         "(the destination buffer's bytes)")


def _bulk_load(_semantic: Any, src: Any, result: buffered_tensor, bulk_size: Any, barrier: buffered_tensor) -> None:
    """``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes`` of ``bulk_size`` bytes from the scalar
    pointer ``src`` into ``result``, completing on ``barrier``.

    Stock Triton has no such op. Like ``async_store`` (tlx/tma.py), it is emitted as a TMA load of the
    buffer's bytes seen as one box, through a descriptor that is only the source pointer, and
    tlx/tma_llvm.py rewrites that load's PTX into the bulk copy of ``bulk_size`` bytes (its innermost
    coordinate), so the barrier counts exactly those bytes, as in the fork."""
    from .barriers import check_target
    from .tma import bulk_box
    check_target(_semantic, "async_load(bulk=True)", 90)
    if not isinstance(src, tl.tensor) or src.type.is_block() or not src.dtype.is_ptr():
        raise TypeError(f"tlx.async_load(bulk=True): src must be a scalar pointer, got {getattr(src, 'type', src)}")
    nbytes = result.shape[0] * result.dtype.primitive_bitwidth // 8
    size = nbytes if bulk_size is None else bulk_size
    if isinstance(size, int) and size % 16:
        raise ValueError(f"tlx.async_load(bulk=True): bulk_size={size} must be a multiple of 16 bytes (cp.async.bulk)")
    size = _semantic.to_tensor(size)
    if size.type.is_block() or not size.dtype.is_int():
        raise TypeError(f"tlx.async_load(bulk=True): bulk_size must be an integer scalar (bytes), got {size.type}")
    size = _semantic.cast(size, tl.int32) if size.dtype != tl.int32 else size
    desc, view = bulk_box(_semantic, nbytes, "async_load(bulk=True)")
    emit(_semantic, "bulk_load", operands=[src, size], dst=result.type.id, bar=barrier.type.id, desc=desc, view=view)


@tlx_builtin
def async_load(src, result, mask=None, other=None, cache_modifier="", eviction_policy="", is_volatile=False, bulk=False,
               bulk_size=None, barrier=None, _semantic=None) -> async_token:
    """Start copying the elements ``src`` points to into buffer ``result``; returns a token.

    Masked-off elements get ``other``, zero when it is omitted (what the hardware writes). The copy
    lands at the ``async_load_wait_group`` that retires its commit group.
    """
    opts = compile_options(_semantic)
    _check_target(opts.arch, "async_load")
    result = _buffer(result, "async_load", _semantic)
    if result.type.num:
        raise TypeError("tlx.async_load: pick one buffer with tlx.local_view first")
    mask, other = unwrap_if_constexpr(mask), unwrap_if_constexpr(other)
    bulk_size, barrier = unwrap_if_constexpr(bulk_size), unwrap_if_constexpr(barrier)
    if unwrap_if_constexpr(bulk):
        check_bulk_args(result.shape, result.dtype.primitive_bitwidth, bulk_size, barrier, mask, other,
                        isinstance(barrier, buffered_tensor) and bool(barrier.type.barrier) and not barrier.type.num)
        _cache_attrs(_semantic, cache_modifier, eviction_policy)  # validated; the bulk copy has no hints
        _bulk_load(_semantic, src, result, bulk_size, barrier)
        return async_token()
    if bulk_size is not None:
        raise ValueError("tlx.async_load: bulk_size requires bulk=True")
    if barrier is not None:
        raise ValueError("tlx.async_load: barrier requires bulk=True")
    if not isinstance(src, tl.tensor) or not src.type.is_block() or not src.dtype.is_ptr():
        raise TypeError(f"tlx.async_load: src must be a tensor of pointers, got {getattr(src, 'type', src)}")
    if src.dtype.element_ty.is_block():
        raise NotImplementedError("tlx.async_load: src as a block pointer is not supported (nor in the fork)")
    if tuple(src.shape) != tuple(result.shape):
        raise ValueError(f"tlx.async_load: src shape {list(src.shape)} != buffer shape {list(result.shape)}")
    if src.dtype.element_ty != result.dtype:
        raise TypeError(f"tlx.async_load: src points to {src.dtype.element_ty}, buffer holds {result.dtype}")
    shape = list(result.shape)
    if other is not None and mask is None:
        raise ValueError("tlx.async_load: other requires mask")
    if mask is not None:
        mask = _semantic.broadcast_impl_shape(_semantic.to_tensor(mask), shape)
        if mask.dtype != tl.int1:
            raise TypeError(f"tlx.async_load: mask must be a boolean tensor, got {mask.dtype}")
    sync = None
    if other is not None and _is_zero(other):
        other = None  # zero-fill is what the copy does anyway
    if other is not None:
        other = _semantic.cast(_semantic.broadcast_impl_shape(_semantic.to_tensor(other), shape), result.dtype)
        sync = "other"
    cache_attrs = _cache_attrs(_semantic, cache_modifier, eviction_policy)
    volatile = unwrap_if_constexpr(is_volatile)
    if not isinstance(volatile, bool):
        raise TypeError(f"tlx.async_load: is_volatile must be a compile-time bool, got {volatile!r}")
    blocked = layouts.coalesced_layout(shape, result.dtype, opts.num_warps, opts.warp_size)
    operands = [x for x in (src, mask, other) if x is not None]
    emit(_semantic, "async_copy", operands=operands, dst=result.type.id,
         want=[tensor_type(_semantic, x.dtype, shape, blocked) for x in operands],
         has_mask=mask is not None, has_other=other is not None, cache_attrs=cache_attrs, volatile=volatile, sync=sync)
    return async_token()


@tlx_builtin
def async_load_commit_group(tokens=[], _semantic=None) -> async_token:
    """Close the current group of async copies: every copy issued since the last commit, whatever
    ``tokens`` lists (tokens only document which copies the caller means)."""
    _check_target(compile_options(_semantic).arch, "async_load_commit_group")
    _check_tokens(tokens, "async_load_commit_group")
    emit(_semantic, "commit_group")
    return async_token()


@tlx_builtin
def async_load_wait_group(pendings, tokens=[], _semantic=None) -> async_token:
    """Wait until at most ``pendings`` groups of async copies are in flight."""
    _check_target(compile_options(_semantic).arch, "async_load_wait_group")
    pendings = unwrap_if_constexpr(pendings)
    if isinstance(pendings, bool) or not isinstance(pendings, int) or pendings < 0:
        raise ValueError(f"tlx.async_load_wait_group: pendings must be a non-negative compile-time int, "
                         f"got {pendings!r}")
    _check_tokens(tokens, "async_load_wait_group")
    emit(_semantic, "wait_group", num=pendings)
    return async_token()


PREFETCH_LEVELS = ("L1", "L2")


def check_prefetch_args(level: Any, tensormap: Any) -> None:
    """Argument rules of ``prefetch`` shared by the compile path and the interpreter."""
    if not isinstance(tensormap, bool):
        raise TypeError(f"tlx.prefetch: tensormap must be a compile-time bool, got {tensormap!r}")
    if not tensormap and level not in PREFETCH_LEVELS:
        raise ValueError(f"tlx.prefetch: level must be 'L1' or 'L2', got {level!r}")


@tlx_builtin
def prefetch(pointer, level="L2", mask=None, tensormap=False, _semantic=None) -> None:
    """Hint the hardware to fetch the elements ``pointer`` points to into L2 (``level="L2"``) or L1 and
    L2 (``"L1"``): one ``prefetch.global.L2``/``.L1`` per element, skipped where ``mask`` is false. With
    ``tensormap=True``, ``pointer`` is a tensor descriptor whose tensor map is prefetched (``level`` and
    ``mask`` are ignored, as in the fork)."""
    level, mask, tensormap = (unwrap_if_constexpr(x) for x in (level, mask, tensormap))
    check_prefetch_args(level, tensormap)
    arch = compile_options(_semantic).arch
    if tensormap:  # the descriptor's address reaches PTX as for TMA prefetches (tlx/tma.py)
        from .tma import prefetch_tensormap
        return prefetch_tensormap(pointer, _semantic)
    if layouts.cuda_capability(arch) is None:
        raise NotImplementedError(f"tlx.prefetch: the target {arch} has no global-memory prefetch instruction "
                                  "(CDNA3/CDNA4 have none; NVIDIA emits prefetch.global.L1/L2)")
    if not isinstance(pointer, tl.tensor) or not pointer.dtype.is_ptr() or pointer.dtype.element_ty.is_block():
        raise TypeError(f"tlx.prefetch: pointer must be a pointer or a tensor of pointers, got "
                        f"{getattr(pointer, 'type', pointer)}")
    operands = [pointer]
    asm = f"prefetch.global.{level} [$1];"
    constraints = "=r,l"
    if mask is not None:
        mask = _semantic.to_tensor(mask)
        if mask.dtype != tl.int1:
            raise TypeError(f"tlx.prefetch: mask must be boolean, got {mask.dtype}")
        if pointer.type.is_block():
            mask = _semantic.broadcast_impl_shape(mask, list(pointer.shape))
        elif mask.type.is_block():
            raise ValueError(f"tlx.prefetch: mask of shape {list(mask.shape)} for a scalar pointer")
        operands.append(_semantic.cast(mask, tl.int32))
        asm = f"{{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.{level} [$1]; }}"
        constraints += ",r"
    # Not pure, so it stays; its i32 result is an unused dummy (inline asm must have one).
    tl.inline_asm_elementwise(f"mov.u32 $0, 0; {asm}", constraints, operands, tl.int32, is_pure=False, pack=1,
                              _semantic=_semantic)
