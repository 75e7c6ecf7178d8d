"""Warp-level ops: the 32-lane ballot vote and the f32 warp reduction (NVIDIA)."""
from __future__ import annotations

from typing import Any

import triton.language as tl

from . import layouts
from .args import Pred, Scalar
from .emit import tlx_builtin
from .triton_compat import compile_options, unwrap_if_constexpr

#: ``warp_redux`` ops -> (redux.sync operation, whether |x| is reduced).
REDUX_OPS = {"max": ("max", False), "min": ("min", False), "abs_max": ("max", True), "abs_min": ("min", True)}


def ballot_mask(mask: Any) -> int:
    """``mask`` as the unsigned 32-bit lane mask (shared with the interpreter)."""
    mask = unwrap_if_constexpr(mask)
    if isinstance(mask, bool) or not isinstance(mask, int) or not -2**31 <= mask < 2**32:
        raise ValueError(f"tlx.vote_ballot_sync: mask must be a compile-time 32-bit lane mask, got {mask!r}")
    return mask & 0xFFFFFFFF


def check_ballot_pred(pred: Any) -> None:
    """``vote_ballot_sync``'s ``pred`` is a scalar (shared with the interpreter)."""
    pred = unwrap_if_constexpr(pred)
    if isinstance(pred, tl.tensor) and pred.type.is_block():
        raise NotImplementedError(f"tlx.vote_ballot_sync: pred must be a scalar, got a tensor of shape "
                                  f"{[unwrap_if_constexpr(d) for d in pred.shape]}: "
                                  "the fork ORs the elements each thread holds in the register layout, which stock "
                                  "Triton cannot express")


def check_redux_x(x: Any) -> None:
    """``warp_redux``'s ``x`` is float32 (shared with the interpreter)."""
    x = unwrap_if_constexpr(x)
    dtype = x.dtype if isinstance(x, tl.tensor) else tl.float32 if isinstance(x, float) else None
    if dtype != tl.float32:
        raise TypeError(f"tlx.warp_redux: x must be float32, got {dtype or repr(x)}")


def redux_op(op: Any) -> tuple[str, bool]:
    """The ``redux.sync`` operation of ``warp_redux``'s ``op`` (shared with the interpreter)."""
    op = unwrap_if_constexpr(op)
    if op not in REDUX_OPS:
        raise ValueError(f"tlx.warp_redux: op must be one of {list(REDUX_OPS)}, got {op!r}")
    return REDUX_OPS[op]


@tlx_builtin
def vote_ballot_sync(mask: Scalar, pred: Pred, _semantic: Any = None) -> tl.tensor:
    """Bit ``i`` of the result is lane ``i``'s ``pred``, for the lanes of ``mask`` (``vote.sync.ballot.b32``).

    Only a scalar ``pred`` is supported: for a tensor the fork first ORs the elements each thread holds in
    the register layout, and stock Triton has no op that works per thread across a tensor's elements.

    Args:
        mask: the lanes taking part, a 32-bit mask (0xFFFFFFFF: the whole warp).
        pred: this lane's scalar predicate.
    """
    mask = ballot_mask(mask)
    check_ballot_pred(pred)
    arch = compile_options(_semantic).arch
    if layouts.cuda_capability(arch) is None:
        raise NotImplementedError(f"tlx.vote_ballot_sync is the 32-lane NVIDIA warp ballot; AMD wavefronts have 64 "
                                  f"lanes and the fork has no AMD lowering either. The target is {arch}")
    pred = _semantic.to_tensor(unwrap_if_constexpr(pred))
    if pred.dtype != tl.int1:
        pred = _semantic.not_equal(pred, 0)
    vote = _semantic.cast(pred, tl.int32)
    asm = f"{{ .reg .pred p; setp.ne.b32 p, $1, 0; vote.sync.ballot.b32 $0, p, {mask:#x}; }}"
    return tl.inline_asm_elementwise(asm, "=r,r", [vote], dtype=tl.int32, is_pure=False, pack=1, _semantic=_semantic)


@tlx_builtin
def warp_redux(x: tl.tensor, op: str, _semantic: Any = None) -> tl.tensor:
    """Each f32 element replaced by its ``op`` ("max", "min", "abs_max", "abs_min") over the 32 lanes of its
    warp (``redux.sync.{max,min}.f32``, Blackwell sm_100 and newer).

    Args:
        x: an f32 tensor.
        op: "max", "min", "abs_max" or "abs_min".
    """
    kind, absolute = redux_op(op)
    check_redux_x(x)
    arch = compile_options(_semantic).arch
    cap = layouts.cuda_capability(arch)
    if cap is None or cap < 100:
        raise NotImplementedError(f"tlx.warp_redux needs redux.sync on f32, which NVIDIA has from sm_100 (Blackwell); "
                                  f"the target is {arch}")
    x = _semantic.to_tensor(unwrap_if_constexpr(x))
    clear_sign = "and.b32 t, t, 0x7FFFFFFF; " if absolute else ""
    asm = f"{{ .reg .b32 t; mov.b32 t, $1; {clear_sign}redux.sync.{kind}.f32 t, t, 0xFFFFFFFF; mov.b32 $0, t; }}"
    return tl.inline_asm_elementwise(asm, "=f,f", [x], dtype=tl.float32, is_pure=False, pack=1, _semantic=_semantic)
