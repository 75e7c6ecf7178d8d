"""Hopper warpgroup MMA (wgmma): ``async_dot`` and ``async_dot_wait``."""
from __future__ import annotations

from typing import Any

import triton.language as tl

from tritium import compat

from . import layouts
from .emit import emit, tensor_type, tlx_builtin
from .mem import _buffer
from .types import buffered_tensor
from .triton_compat import builder_state, compile_options, dot_input_precision, unwrap_if_constexpr

#: Per-kernel memory of the accumulator layout chosen for each (M, N), so that waits on loop-carried
#: accumulators use the very layout of the in-flight wgmma.
_ACC_LAYOUTS = "acc_layouts"


def check_wgmma_shape(M: int, N: int, K: int, dtype: tl.dtype) -> None:
    """wgmma limits: M a multiple of 64, N a multiple of 8 in [8, 256], K a multiple of the instruction K."""
    instr_k = 256 // dtype.primitive_bitwidth
    if M % 64 or N % 8 or not 8 <= N <= 256 or K % instr_k:
        raise ValueError(f"tlx.async_dot: shape M={M} N={N} K={K} is outside wgmma limits (M multiple of 64, "
                         f"N multiple of 8 in [8, 256], K multiple of {instr_k} for {dtype})")


def _acc_layout(_semantic: Any, M: int, N: int, a_dtype: tl.dtype) -> layouts.NvidiaMmaLayout:
    memo = builder_state(_semantic).setdefault(_ACC_LAYOUTS, {})
    return memo.setdefault((M, N), layouts.wgmma_layout(M, N, compile_options(_semantic).num_warps, a_dtype))


@tlx_builtin
def async_dot(A, B, acc=None, use_acc=None, pred=None, mBarriers=[], two_ctas=False, force_async=False,
              input_precision=None, out_dtype=tl.float32, _semantic=None) -> tl.tensor:
    """Issue ``A @ B (+ acc)`` as an asynchronous wgmma; wait for it with ``async_dot_wait``."""
    opts = compile_options(_semantic)
    if not layouts.is_hopper(opts.arch):
        raise NotImplementedError(f"tlx.async_dot is implemented for Hopper (sm_90 wgmma); the target is {opts.arch}")
    if opts.num_warps % 4:
        raise ValueError(f"tlx.async_dot: wgmma needs whole warpgroups; num_warps={opts.num_warps}")
    if unwrap_if_constexpr(pred) is not None or list(mBarriers) or unwrap_if_constexpr(two_ctas):
        raise NotImplementedError("tlx.async_dot: pred, mBarriers and two_ctas are Blackwell (tcgen05) features")
    B = _buffer(B, "async_dot", _semantic)
    if not isinstance(A, (buffered_tensor, tl.tensor)):
        raise TypeError(f"tlx.async_dot: A must be a TLX buffer or a tensor, got {type(A).__name__}")
    if isinstance(A, buffered_tensor):
        A = _buffer(A, "async_dot", _semantic)
    if len(A.shape) != 2 or len(B.shape) != 2:
        raise ValueError(f"tlx.async_dot: A and B must be 2D, got {list(A.shape)} and {list(B.shape)}")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"tlx.async_dot: inner dimensions differ: A is {list(A.shape)}, B is {list(B.shape)}")
    if A.dtype != B.dtype:
        raise TypeError(f"tlx.async_dot: A is {A.dtype} but B is {B.dtype}")
    check_wgmma_shape(M, N, K, A.dtype)
    out_dtype = unwrap_if_constexpr(out_dtype)
    if acc is None:
        acc = _semantic.full([M, N], 0, out_dtype)
    elif tuple(acc.shape) != (M, N) or acc.dtype != out_dtype:
        raise ValueError(f"tlx.async_dot: acc must be [{M}, {N}] {out_dtype}, got {list(acc.shape)} {acc.dtype}")
    use_acc = unwrap_if_constexpr(use_acc)
    if use_acc is not None:  # wgmma's scale-d operand, as a select on the accumulator it reads
        acc = _semantic.where(_semantic.to_tensor(use_acc), acc, _semantic.full([M, N], 0, out_dtype))
    precision = unwrap_if_constexpr(input_precision) or opts.default_dot_input_precision
    precision = dot_input_precision(_semantic, precision)
    imprecise = opts.max_num_imprecise_acc_default if A.dtype.is_fp8() else 0
    layout = _acc_layout(_semantic, M, N, A.dtype)
    operands, attrs = [acc], {}
    if isinstance(A, tl.tensor):
        attrs["a_reg"] = tensor_type(_semantic, A.dtype, [M, K], layouts.wgmma_operand_layout(layout, A.dtype))
        if K == N:
            operands.append(A)
        else:  # one placeholder's tensors share a shape: A travels in a placeholder of its own
            attrs["a_op"], _ = emit(_semantic, "wgmma_a", operands=[A], a_reg=attrs["a_reg"])
    else:
        attrs["a"] = A.type.id
    _, out = emit(_semantic, "wgmma", operands=operands, result=out_dtype, shape=[M, N], b=B.type.id,
                  acc=tensor_type(_semantic, out_dtype, [M, N], layout), precision=compat.enum_value(precision),
                  imprecise=imprecise or 0, **attrs)
    return tl.tensor(out, tl.block_type(out_dtype, [M, N]))


@tlx_builtin
def async_dot_wait(pendings, inp, _semantic=None) -> tl.tensor:
    """Wait until at most ``pendings`` async dots are in flight; returns ``inp`` safe to read."""
    pendings = unwrap_if_constexpr(pendings)
    if not isinstance(pendings, int) or pendings < 0:
        raise ValueError(f"tlx.async_dot_wait: pendings must be a non-negative compile-time int, got {pendings!r}")
    if not isinstance(inp, tl.tensor) or len(inp.shape) != 2:
        raise TypeError(f"tlx.async_dot_wait: inp must be the 2D result of tlx.async_dot, got {inp!r}")
    M, N = inp.shape
    acc = tensor_type(_semantic, inp.dtype, [M, N], _acc_layout(_semantic, M, N, tl.float16))
    _, out = emit(_semantic, "wgmma_wait", operands=[inp], result=inp.dtype, shape=[M, N], acc=acc,
                  pendings=pendings)
    return tl.tensor(out, inp.type)
