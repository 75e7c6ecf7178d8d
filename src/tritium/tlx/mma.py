"""Hopper warpgroup MMA (wgmma): ``async_dot`` and ``async_dot_wait``."""
from __future__ import annotations

from typing import Any, Sequence

import triton.language as tl

from . import args, layouts, triton_compat
from .args import ConstInt, Pred
from .emit import emit, tensor_type, tlx_builtin
from .mem import _buffer
from .types import buffered_tensor
from .triton_compat import builder_state, compile_options, dot_input_precision, unwrap_if_constexpr

#: Per-kernel memory of the accumulator layout chosen for each (M, N), so that waits on loop-carried
#: accumulators use the very layout of the in-flight wgmma.
_ACC_LAYOUTS = "acc_layouts"


# --------------------------------------------------------------------------------------------
# Argument checks, shared with tlx/interpreter.py (see tlx/args.py)
# --------------------------------------------------------------------------------------------
def check_async_dot_shape(M: int, N: int, K: int, dtype: tl.dtype | None = None) -> None:
    """Reject shapes Hopper wgmma cannot execute. K must be a multiple of the instruction K (32 bytes of
    operand: 16 for fp16, 8 for tf32), or of the smallest one (8) when the operand ``dtype`` is not given."""
    if M <= 0 or M % 64:
        raise ValueError(f"tlx.async_dot: M={M} must be a positive multiple of 64 (Hopper wgmma)")
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"tlx.async_dot: N={N} must be a multiple of 8 in [8, 256] (Hopper wgmma)")
    instr_k = 8 if dtype is None else 256 // dtype.primitive_bitwidth
    if K <= 0 or K % instr_k:
        raise ValueError(f"tlx.async_dot: K={K} must be a positive multiple of {instr_k} (Hopper wgmma"
                         f"{'' if dtype is None else f' with {dtype} operands'})")


def check_async_dot(A: Any, B: Any, acc: Any, out_dtype: Any) -> tuple[int, int, int]:
    """``(M, N, K)`` of ``async_dot(A, B, acc)``: A one buffer or a register tensor, B one buffer."""
    op = "async_dot"
    args.buffer(B, op, one=True)
    if args.kind_of(A) in (args.BUFFER, args.BUFFERS):
        args.buffer(A, op, one=True)
    elif args.kind_of(A) != "tensor":
        raise TypeError(f"tlx.{op}: A must be a TLX buffer or a tensor, got {args.kind_of(A)}")
    A, B = args.unwrap(A), args.unwrap(B)
    a_shape, b_shape = args.dims(A.shape), args.dims(B.shape)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"tlx.{op}: A and B must be 2D, got {a_shape} and {b_shape}")
    (M, K), (K2, N) = a_shape, b_shape
    if K != K2:
        raise ValueError(f"tlx.{op}: inner dimensions differ: A is {a_shape}, B is {b_shape}")
    if A.dtype != B.dtype:
        raise TypeError(f"tlx.{op}: A is {A.dtype} but B is {B.dtype}")
    check_async_dot_shape(M, N, K, A.dtype)
    acc, out_dtype = args.unwrap(acc), args.unwrap(out_dtype)
    if acc is not None and (args.kind_of(acc) != "tensor" or args.dims(acc.shape) != [M, N] or acc.dtype != out_dtype):
        raise ValueError(f"tlx.{op}: acc must be [{M}, {N}] {out_dtype}, got {args.describe(acc)}")
    return M, N, K


def check_async_dot_wait(pendings: Any, inp: Any) -> int:
    pendings = args.compile_time_int(pendings, "async_dot_wait", "pendings", 0)
    inp = args.unwrap(inp)
    if args.kind_of(inp) != "tensor" or len(inp.shape) != 2:
        raise TypeError(f"tlx.async_dot_wait: inp must be the 2D result of tlx.async_dot, got {args.describe(inp)}")
    return pendings


def _acc_layout(_semantic: Any, M: int, N: int, a_dtype: tl.dtype) -> layouts.NvidiaMmaLayout:
    memo = builder_state(_semantic).setdefault(_ACC_LAYOUTS, {})
    return memo.setdefault((M, N), layouts.wgmma_layout(M, N, compile_options(_semantic).num_warps, a_dtype))


@tlx_builtin
def async_dot(A: tl.tensor | buffered_tensor, B: buffered_tensor, acc: tl.tensor | None = None,
              use_acc: Pred = None, pred: Pred = None, mBarriers: Sequence[Any] = (), two_ctas: bool = False,
              force_async: bool = False, input_precision: str | None = None, out_dtype: tl.dtype = tl.float32,
              _semantic: Any = None) -> tl.tensor:
    """Issue ``A @ B (+ acc)`` as an asynchronous wgmma (Hopper); wait for it with ``async_dot_wait``.

    Args:
        A: the [M, K] operand, a shared buffer or a register tensor.
        B: the [K, N] operand, a shared buffer.
        acc: the [M, N] accumulator added to (zeros without it).
        use_acc: where false, the accumulator is not read (wgmma's scale-d).
        pred, mBarriers, two_ctas: Blackwell (tcgen05) features; refused.
        force_async: accepted for the fork's API (a wgmma is always asynchronous).
        input_precision: as ``tl.dot``'s (the target's default without it).
        out_dtype: the accumulator's dtype.
    """
    opts = compile_options(_semantic)
    if not layouts.is_hopper(opts.arch):
        raise NotImplementedError(f"tlx.async_dot is implemented for Hopper (sm_90 wgmma); the target is {opts.arch}")
    if opts.num_warps % 4:
        raise ValueError(f"tlx.async_dot: wgmma needs whole warpgroups; num_warps={opts.num_warps}")
    if unwrap_if_constexpr(pred) is not None or list(mBarriers) or unwrap_if_constexpr(two_ctas):
        raise NotImplementedError("tlx.async_dot: pred, mBarriers and two_ctas are Blackwell (tcgen05) features")
    M, N, K = check_async_dot(A, B, acc, out_dtype)
    B = _buffer(B, "async_dot", _semantic)
    A = unwrap_if_constexpr(A)
    A = A if isinstance(A, tl.tensor) else _buffer(A, "async_dot", _semantic)
    out_dtype = unwrap_if_constexpr(out_dtype)
    if acc is None:
        acc = _semantic.full([M, N], 0, out_dtype)
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
                  acc=tensor_type(_semantic, out_dtype, [M, N], layout), precision=triton_compat.enum_value(precision),
                  imprecise=imprecise or 0, **attrs)
    return tl.tensor(out, tl.block_type(out_dtype, [M, N]))


@tlx_builtin
def async_dot_wait(pendings: ConstInt, inp: tl.tensor, _semantic: Any = None) -> tl.tensor:
    """Wait until at most ``pendings`` async dots are in flight; returns ``inp`` safe to read.

    Args:
        pendings: wgmma groups that may stay in flight (0 waits for all).
        inp: the accumulator of the last ``async_dot``.
    """
    pendings = check_async_dot_wait(pendings, inp)
    M, N = inp.shape
    acc = tensor_type(_semantic, inp.dtype, [M, N], _acc_layout(_semantic, M, N, tl.float16))
    _, out = emit(_semantic, "wgmma_wait", operands=[inp], result=inp.dtype, shape=[M, N], acc=acc,
                  pendings=pendings)
    return tl.tensor(out, inp.type)
