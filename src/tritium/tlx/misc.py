"""Small TLX utilities: dtype queries, thread id, cycle counter and memory fences."""
from __future__ import annotations

from typing import Any

import triton.language as tl

from . import args, layouts
from .args import ConstInt
from .emit import emit, tlx_builtin
from .triton_compat import compile_options, unwrap_if_constexpr

#: ``fence`` scopes.
FENCE_SCOPES = ("gpu", "sys", "async_shared")


# --------------------------------------------------------------------------------------------
# Argument checks, shared with tlx/interpreter.py (see tlx/args.py)
# --------------------------------------------------------------------------------------------
def element_dtype(v: Any) -> tl.dtype:
    """``dtype_of(v)``: the element dtype of a pointer, a tensor (of pointers), a descriptor or a TLX buffer."""
    x, kind = args.unwrap(v), args.kind_of(v)
    if kind in (args.BUFFER, args.BUFFERS, args.DESCRIPTOR):
        return x.dtype
    if kind in (args.MBARRIER, args.MBARRIERS, args.REMOTE_MBARRIER):
        return tl.int64
    if not isinstance(x, tl.tensor):
        raise TypeError(f"tlx.dtype_of expects a pointer, a tensor, a descriptor or a TLX buffer, got {kind}")
    scalar = x.type.scalar
    return scalar.element_ty if scalar.is_ptr() else scalar


def check_size_of(dtype: Any) -> int:
    """``size_of(dtype)`` in bytes."""
    dtype = args.unwrap(dtype)
    if not isinstance(dtype, tl.dtype):
        raise TypeError(f"tlx.size_of expects a dtype, got {dtype!r}")
    return dtype.primitive_bitwidth // 8


def check_thread_id(axis: Any) -> int:
    axis = args.constant(axis)
    if not args.is_int(axis) or axis not in (0, 1, 2):
        raise ValueError(f"tlx.thread_id: axis must be 0, 1 or 2, got {axis!r}")
    return axis


def check_fence(scope: Any) -> str:
    scope = args.unwrap(scope)
    if scope not in FENCE_SCOPES:
        raise ValueError(f"tlx.fence: scope must be 'gpu', 'sys' or 'async_shared', got {scope!r}")
    return scope


@tlx_builtin
def dtype_of(v: Any, _semantic: Any = None) -> tl.dtype:
    """Element dtype of a pointer, a tensor (of pointers), a tensor descriptor or a TLX buffer.

    Args:
        v: the value; a pointer's (or tensor of pointers') element is what it points to.
    """
    return element_dtype(v)


@tlx_builtin
def size_of(dtype: tl.dtype, _semantic: Any = None) -> tl.constexpr:
    """Size of ``dtype`` in bytes, as a compile-time constant.

    Args:
        dtype: a Triton dtype.
    """
    return tl.constexpr(check_size_of(dtype))


#: FP8 dtypes -> the format names scaled-MMA ops take.
FP8_FORMAT_NAMES = {tl.float8e5: "e5m2", tl.float8e4nv: "e4m3"}


def fp8_format_name(dtype: Any) -> str:
    """``"e5m2"``/``"e4m3"`` for ``tl.float8e5``/``tl.float8e4nv`` (shared with the interpreter)."""
    dtype = unwrap_if_constexpr(dtype)
    if not isinstance(dtype, tl.dtype):
        raise TypeError(f"tlx.get_fp8_format_name expects a dtype, got {dtype!r}")
    if dtype not in FP8_FORMAT_NAMES:
        raise ValueError(f"tlx.get_fp8_format_name only supports tl.float8e5 (e5m2) and tl.float8e4nv (e4m3), "
                         f"got {dtype}")
    return FP8_FORMAT_NAMES[dtype]


@tlx_builtin
def get_fp8_format_name(dtype: tl.dtype, _semantic: Any = None) -> tl.constexpr:
    """The FP8 format name of ``dtype`` as a compile-time string, e.g. for ``dot_scaled`` formats.

    Args:
        dtype: an FP8 dtype (``tl.float8e4nv``, ``tl.float8e5``, ...).
    """
    return tl.constexpr(fp8_format_name(dtype))


def _nvidia_only(_semantic, op: str) -> None:
    arch = compile_options(_semantic).arch
    if layouts.cuda_capability(arch) is None:
        raise NotImplementedError(f"tlx.{op} is implemented for NVIDIA targets only; the target is {arch}")


def read_register(_semantic, asm: str, constraint: str, dtype: tl.dtype) -> tl.tensor:
    return tl.inline_asm_elementwise(asm, constraint, [], dtype=dtype, is_pure=False, pack=1, _semantic=_semantic)


@tlx_builtin
def thread_id(axis: ConstInt, _semantic: Any = None) -> tl.tensor:
    """This thread's index inside the CTA, an i32 (NVIDIA).

    Args:
        axis: 0, 1 or 2 (x, y, z).
    """
    axis = check_thread_id(axis)
    _nvidia_only(_semantic, "thread_id")
    return read_register(_semantic, f"mov.u32 $0, %tid.{'xyz'[axis]};", "=r", tl.int32)


@tlx_builtin
def clock64(_semantic: Any = None) -> tl.tensor:
    """The SM's 64-bit cycle counter."""
    _nvidia_only(_semantic, "clock64")
    return read_register(_semantic, "mov.u64 $0, %clock64;", "=l", tl.int64)


@tlx_builtin
def fence_async_shared(_semantic: Any = None) -> None:
    """Order this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma, TMA)."""
    cap = layouts.cuda_capability(compile_options(_semantic).arch)
    if cap is None or cap < 90:
        raise NotImplementedError("tlx.fence_async_shared needs the Hopper async proxy (sm_90 or newer)")
    emit(_semantic, "fence_async_shared")


@tlx_builtin
def fence(scope: str, _semantic: Any = None) -> None:
    """A memory fence (NVIDIA).

    Args:
        scope: ``"async_shared"`` (the proxy fence, :func:`fence_async_shared`), ``"gpu"`` or ``"sys"``
            (acq_rel at that scope).
    """
    scope = check_fence(scope)
    if scope == "async_shared":
        return fence_async_shared(_semantic=_semantic)
    _nvidia_only(_semantic, "fence")
    read_register(_semantic, f"fence.acq_rel.{scope};\n\tmov.u32 $0, 0;", "=r", tl.int32)
