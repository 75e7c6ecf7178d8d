"""The floor of TLX's op families: what every family needs and none owns.

The target check, predicates as i1 scalars, the task region being built (its state lives in the
builder, :mod:`.tasks` opens and closes regions), the warps executing an op, and the memdesc type of a
shared-memory view. The op families (mem, alias, barriers, cluster, tasks, tma, async_copy, ...) import
this module, :mod:`.types`, :mod:`.emit`, :mod:`.args`, :mod:`.layouts` and :mod:`.triton_compat`, and
each other only downward; nothing here imports an op family.
"""
from __future__ import annotations

from typing import Any, Sequence

import triton.language as tl

from . import layouts
from .triton_compat import builder_state, compile_options, type_builder, unwrap_if_constexpr

REGION = "ws_region"  # in builder_state: the async_tasks region being built (tlx/tasks.py)
#: In kernel_state: barriers were initialized for a cluster of several CTAs (tlx/barriers.py), so every task of
#: a warp-specialized region opens with a cluster barrier that publishes them (tlx/tasks.py).
CLUSTER_PUBLISHED = "cluster_published"


def check_target(_semantic: Any, op: str, min_cap: int = 80) -> None:
    """Refuse ``op`` when compiling for anything but NVIDIA sm_``min_cap`` or newer."""
    cap = layouts.cuda_capability(compile_options(_semantic).arch)
    if cap is None or cap < min_cap:
        raise NotImplementedError(f"tlx.{op} needs NVIDIA sm_{min_cap} or newer; the target is "
                                  f"{compile_options(_semantic).arch}")


def predicate(_semantic: Any, pred: Any) -> tl.tensor:
    """``pred`` (checked by the op: :func:`args.scalar_pred`) as an i1 scalar (``None`` is true)."""
    pred = unwrap_if_constexpr(pred)
    value = _semantic.to_tensor(True if pred is None else pred)
    return value if value.dtype == tl.int1 else _semantic.not_equal(value, 0)


def region(_semantic: Any) -> Any:
    """The ``async_tasks`` region being built (a ``tasks._Region``), or None outside one."""
    return builder_state(_semantic).get(REGION)


def current_task(_semantic: Any) -> Any:
    """The ``async_task`` being built, or None outside task regions."""
    r = region(_semantic)
    return r.current if r is not None else None


def executing_warps(_semantic: Any) -> int:
    """Warps executing the op being built: its ``async_task``'s, else the kernel's ``num_warps``."""
    task = current_task(_semantic)
    if task is not None and not task.config.default:
        return task.config.num_warps
    return compile_options(_semantic).num_warps


def memdesc_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: layouts.SharedLayout,
                 alloc_shape: Sequence[int]) -> str:
    """The ``!ttg.memdesc`` type (as text) of a shared-memory view."""
    g = type_builder(_semantic)
    return str(g.get_shared_mem_desc_ty(dtype.to_ir(g), list(shape), layout.to_ir(g), list(alloc_shape)))
