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

from . import args, layouts, triton_compat
from .args import ConstInt
from .core import check_target
from .emit import emit, tensor_type, tlx_builtin
from .mem import _buffer
from .tma import bulk_box, prefetch_tensormap
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


def _cache_hints(_semantic: Any, cache_modifier: Any, eviction_policy: Any) -> dict:
    """The copy's cache hints, as the lowering builds them; a hint Triton rejects is an error naming the op."""
    try:
        return triton_compat.async_copy_hints(_semantic, unwrap_if_constexpr(cache_modifier),
                                              unwrap_if_constexpr(eviction_policy))
    except ValueError as e:
        raise ValueError(f"tlx.async_load: {e} (cache_modifier={cache_modifier!r}, "
                         f"eviction_policy={eviction_policy!r})") from e


# --------------------------------------------------------------------------------------------
# Argument checks, shared with tlx/interpreter.py (see tlx/args.py)
# --------------------------------------------------------------------------------------------
def check_async_load(src: Any, result: Any, mask: Any, other: Any, is_volatile: Any, bulk: Any, bulk_size: Any,
                     barrier: Any) -> bool:
    """The arguments of ``async_load``; returns whether it is a bulk copy."""
    result = args.buffer(result, "async_load", one=True)
    src, mask, other = args.unwrap(src), args.unwrap(mask), args.unwrap(other)
    bulk_size, barrier = args.unwrap(bulk_size), args.unwrap(barrier)
    if args.unwrap(bulk):
        _check_bulk(src, result, bulk_size, barrier, mask, other)
        return True
    if bulk_size is not None:
        raise ValueError("tlx.async_load: bulk_size requires bulk=True")
    if barrier is not None:
        raise ValueError("tlx.async_load: barrier requires bulk=True")
    if not isinstance(src, tl.tensor) or not src.type.is_block() or not src.dtype.is_ptr():
        raise TypeError(f"tlx.async_load: src must be a tensor of pointers, got {args.describe(src)}")
    if src.dtype.element_ty.is_block():
        raise NotImplementedError("tlx.async_load: src as a block pointer is not supported (nor in the fork)")
    if args.dims(src.shape) != list(result.shape):
        raise ValueError(f"tlx.async_load: src shape {args.dims(src.shape)} != buffer shape {list(result.shape)}")
    if src.dtype.element_ty != result.dtype:
        raise TypeError(f"tlx.async_load: src points to {src.dtype.element_ty}, buffer holds {result.dtype}")
    if other is not None and mask is None:
        raise ValueError("tlx.async_load: other requires mask")
    args.bool_mask(mask, "async_load", "a boolean tensor")
    args.compile_time_bool(is_volatile, "async_load", "is_volatile")
    return False


def _check_bulk(src: Any, result: Any, bulk_size: Any, barrier: Any, mask: Any, other: Any) -> None:
    """The fork's rules for ``async_load(bulk=True)``, and cp.async.bulk's 16-byte granularity."""
    op, shape = "async_load(bulk=True)", list(result.shape)
    if len(shape) != 1:
        raise ValueError(f"tlx.{op}: the result buffer must be 1-D, got shape {shape}")
    if barrier is None:
        raise ValueError(f"tlx.{op}: barrier (an mbarrier the copy completes on) is required")
    if args.kind_of(barrier) != args.MBARRIER:
        raise TypeError(f"tlx.{op}: barrier must be one mbarrier, got {args.describe(barrier)}")
    if mask is not None or other is not None:
        raise ValueError(f"tlx.{op}: mask and other are not supported with bulk copies")
    nbytes = shape[0] * result.dtype.primitive_bitwidth // 8
    if args.is_int(bulk_size) and not 0 < bulk_size <= nbytes:
        raise ValueError(f"tlx.{op}: bulk_size={bulk_size} must be in 1..{nbytes} (the destination buffer's bytes)")
    size = args.integer_scalar(nbytes if bulk_size is None else bulk_size, op, "bulk_size")
    if args.is_int(size) and size % 16:
        raise ValueError(f"tlx.{op}: bulk_size={size} must be a multiple of 16 bytes (cp.async.bulk)")
    args.scalar_pointer(src, op, "src")


def check_wait_group(pendings: Any, tokens: Any) -> int:
    """``async_load_wait_group``'s pending group count."""
    pendings = args.compile_time_int(pendings, "async_load_wait_group", "pendings", 0)
    args.tokens(tokens, "async_load_wait_group")
    return pendings


def _bulk_load(_semantic: Any, src: Any, result: buffered_tensor, bulk_size: Any, barrier: buffered_tensor) -> None:
    """``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes`` of ``bulk_size`` bytes from the scalar
    pointer ``src`` into ``result``, completing on ``barrier``.

    Stock Triton has no such op. Like ``async_store`` (tlx/tma.py), it is emitted as a TMA load of the
    buffer's bytes seen as one box, through a descriptor that is only the source pointer, and
    tlx/tma_llvm.py rewrites that load's PTX into the bulk copy of ``bulk_size`` bytes (its innermost
    coordinate), so the barrier counts exactly those bytes, as in the fork."""
    check_target(_semantic, "async_load(bulk=True)", 90)
    nbytes = result.shape[0] * result.dtype.primitive_bitwidth // 8
    size = _semantic.to_tensor(nbytes if bulk_size is None else bulk_size)
    size = _semantic.cast(size, tl.int32) if size.dtype != tl.int32 else size
    desc, view = bulk_box(_semantic, nbytes, "async_load(bulk=True)")
    emit(_semantic, "bulk_load", operands=[src, size], dst=result.type.id, bar=barrier.type.id, desc=desc, view=view)


@tlx_builtin
def async_load(src: tl.tensor, result: buffered_tensor, mask: tl.tensor | None = None, other: Any = None,
               cache_modifier: str = "", eviction_policy: str = "", is_volatile: bool = False, bulk: bool = False,
               bulk_size: ConstInt | None = None, barrier: buffered_tensor | None = None,
               _semantic: Any = None) -> async_token:
    """Start copying the elements ``src`` points to into buffer ``result``; returns a token.

    Masked-off elements get ``other``, zero when it is omitted (what the hardware writes). The copy
    lands at the ``async_load_wait_group`` that retires its commit group.

    Args:
        src: a tensor of pointers of the buffer's shape (or, with ``bulk``, one pointer).
        result: the shared buffer receiving the elements.
        mask: where false, nothing is read and ``other`` is written.
        other: the value of masked-off elements (zero without it).
        cache_modifier: a cache operator Triton takes for ``cp.async`` (others raise, naming the op).
        eviction_policy: an L2 eviction hint.
        is_volatile: a volatile copy (the copy op's ``isVolatile``).
        bulk: one ``cp.async.bulk`` of ``bulk_size`` bytes completing on ``barrier`` (sm_90).
        bulk_size: the bytes of a bulk copy.
        barrier: the mbarrier a bulk copy completes on.
    """
    opts = compile_options(_semantic)
    _check_target(opts.arch, "async_load")
    bulk = check_async_load(src, result, mask, other, is_volatile, bulk, bulk_size, barrier)
    result = _buffer(result, "async_load", _semantic)
    mask, other = unwrap_if_constexpr(mask), unwrap_if_constexpr(other)
    bulk_size, barrier = unwrap_if_constexpr(bulk_size), unwrap_if_constexpr(barrier)
    if bulk:
        _cache_hints(_semantic, cache_modifier, eviction_policy)  # validated; the bulk copy has no hints
        _bulk_load(_semantic, src, result, bulk_size, barrier)
        return async_token.made(_semantic)
    shape = list(result.shape)
    if mask is not None:
        mask = _semantic.broadcast_impl_shape(_semantic.to_tensor(mask), shape)
    sync = None
    if other is not None and _is_zero(other):
        other = None  # zero-fill is what the copy does anyway
    if other is not None:
        other = _semantic.cast(_semantic.broadcast_impl_shape(_semantic.to_tensor(other), shape), result.dtype)
        sync = "other"
    hints = _cache_hints(_semantic, cache_modifier, eviction_policy)
    volatile = unwrap_if_constexpr(is_volatile)
    blocked = layouts.coalesced_layout(shape, result.dtype, opts.num_warps, opts.warp_size)
    operands = [x for x in (src, mask, other) if x is not None]
    emit(_semantic, "async_copy", operands=operands, dst=result.type.id,
         want=[tensor_type(_semantic, x.dtype, shape, blocked) for x in operands],
         has_mask=mask is not None, has_other=other is not None, hints=hints, volatile=volatile, sync=sync)
    return async_token.made(_semantic)


@tlx_builtin
def async_load_commit_group(tokens: Sequence[async_token] = (), _semantic: Any = None) -> async_token:
    """Close the current group of async copies: every copy issued since the last commit, whatever
    ``tokens`` lists (tokens only document which copies the caller means).

    Args:
        tokens: the copies the caller means; every copy since the last commit is in the group.
    """
    _check_target(compile_options(_semantic).arch, "async_load_commit_group")
    args.tokens(tokens, "async_load_commit_group")
    emit(_semantic, "commit_group")
    return async_token.made(_semantic)


@tlx_builtin
def async_load_wait_group(pendings: ConstInt, tokens: Sequence[async_token] = (), _semantic: Any = None) -> async_token:
    """Wait until at most ``pendings`` groups of async copies are in flight.

    Args:
        pendings: groups that may stay in flight (0 waits for all).
        tokens: accepted for the fork's API.
    """
    _check_target(compile_options(_semantic).arch, "async_load_wait_group")
    pendings = check_wait_group(pendings, tokens)
    emit(_semantic, "wait_group", num=pendings)
    return async_token.made(_semantic)


PREFETCH_LEVELS = ("L1", "L2")


def check_prefetch(pointer: Any, level: Any, mask: Any, tensormap: Any) -> bool:
    """The arguments of ``prefetch`` (shared with the interpreter); returns ``tensormap``, with which
    ``pointer`` is a descriptor, checked by ``tma.prefetch_tensormap``."""
    if args.compile_time_bool(tensormap, "prefetch", "tensormap"):
        return True
    level, pointer, mask = args.unwrap(level), args.unwrap(pointer), args.unwrap(mask)
    if level not in PREFETCH_LEVELS:
        raise ValueError(f"tlx.prefetch: level must be 'L1' or 'L2', got {level!r}")
    if not isinstance(pointer, tl.tensor) or not pointer.dtype.is_ptr() or pointer.dtype.element_ty.is_block():
        raise TypeError(f"tlx.prefetch: pointer must be a pointer or a tensor of pointers, got "
                        f"{args.describe(pointer)}")
    args.bool_mask(mask, "prefetch")
    if isinstance(mask, tl.tensor) and mask.type.is_block() and not pointer.type.is_block():
        raise ValueError(f"tlx.prefetch: mask of shape {args.dims(mask.shape)} for a scalar pointer")
    return False


@tlx_builtin
def prefetch(pointer: Any, level: str = "L2", mask: tl.tensor | None = None, tensormap: bool = False,
             _semantic: Any = None) -> None:
    """Hint the hardware to fetch the elements ``pointer`` points to into L2 (``level="L2"``) or L1 and
    L2 (``"L1"``): one ``prefetch.global.L2``/``.L1`` per element, skipped where ``mask`` is false. With
    ``tensormap=True``, ``pointer`` is a tensor descriptor whose tensor map is prefetched (``level`` and
    ``mask`` are ignored, as in the fork).

    Args:
        pointer: a tensor of pointers, or with ``tensormap`` a tensor descriptor.
        level: ``"L2"`` or ``"L1"``.
        mask: skip the elements where false.
        tensormap: prefetch the descriptor's tensor map instead.
    """
    level, mask = unwrap_if_constexpr(level), unwrap_if_constexpr(mask)
    tensormap = check_prefetch(pointer, level, mask, tensormap)
    arch = compile_options(_semantic).arch
    if tensormap:  # the descriptor's address reaches PTX as for TMA prefetches (tlx/tma.py)
        return prefetch_tensormap(pointer, _semantic)
    if layouts.cuda_capability(arch) is None:
        raise NotImplementedError(f"tlx.prefetch: the target {arch} has no global-memory prefetch instruction "
                                  "(CDNA3/CDNA4 have none; NVIDIA emits prefetch.global.L1/L2)")
    operands = [pointer]
    asm = f"prefetch.global.{level} [$1];"
    constraints = "=r,l"
    if mask is not None:
        mask = _semantic.to_tensor(mask)
        if pointer.type.is_block():
            mask = _semantic.broadcast_impl_shape(mask, list(pointer.shape))
        operands.append(_semantic.cast(mask, tl.int32))
        asm = f"{{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.{level} [$1]; }}"
        constraints += ",r"
    # Not pure, so it stays; its i32 result is an unused dummy (inline asm must have one).
    tl.inline_asm_elementwise(f"mov.u32 $0, 0; {asm}", constraints, operands, tl.int32, is_pure=False, pack=1,
                              _semantic=_semantic)
