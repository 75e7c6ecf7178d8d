"""``with tlx.warp_pipeline_stage(label, priority=p):``, the fork's AMD warp-pipelining marker.

The body of the ``with`` is one stage of the loop that holds it. Leaving the block emits a border
placeholder naming the stage and its priority; the lowering makes it a ``rocdl.sched.barrier`` marked
as the fork's frontend does, and the ``tlx.warp_pipeline`` pass (:mod:`.warp_pipeliner`) splits the loop
at those markers and staggers the kernel's two warp groups by one stage. Under the interpreter the stages
simply run in order (the interpreter's version checks the same arguments and does nothing else).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import describe, is_int
from .emit import emit, tlx_builtin
from .triton_compat import compile_options, kernel_state, unwrap_if_constexpr

#: ``s_setprio`` takes 0 (lowest) to 3.
MAX_PRIORITY = 3
_OPEN = "warp_pipeline_open"  # in kernel_state: the stage being built, so that nesting is refused


@dataclass(frozen=True)
class StageConfig:
    label: str
    priority: Optional[int]


def stage_config(label: Any = None, priority: Any = None) -> StageConfig:
    """Check ``warp_pipeline_stage``'s arguments (the fork's rules; shared with the interpreter)."""
    label, priority = unwrap_if_constexpr(label), unwrap_if_constexpr(priority)
    if label is not None and not isinstance(label, str):
        raise ValueError(f"tlx.warp_pipeline_stage: label must be a string or None, got {describe(label)}")
    if priority is not None and (not is_int(priority) or not 0 <= priority <= MAX_PRIORITY):
        raise ValueError(f"tlx.warp_pipeline_stage: priority must be a compile-time int in 0..{MAX_PRIORITY} "
                         f"(s_setprio), got {describe(priority)}")
    return StageConfig("cluster" if label is None else label, priority)


class _Stage:

    def __init__(self, _semantic: Any, config: StageConfig) -> None:
        self.semantic = _semantic
        self.config = config

    def __enter__(self) -> "_Stage":
        arch = str(compile_options(self.semantic).arch)
        if not arch.startswith("gfx9"):
            raise NotImplementedError(f"tlx.warp_pipeline_stage is implemented for AMD CDNA (gfx942, gfx950); the "
                                      f"target is {arch}")
        state = kernel_state(self.semantic)
        if state.get(_OPEN) is not None:
            raise ValueError(f"tlx.warp_pipeline_stage({self.config.label!r}) is inside stage "
                             f"{state[_OPEN].label!r}: stages cannot be nested; put them one after the other in "
                             "the loop body")
        state[_OPEN] = self.config
        return self

    def __exit__(self, *exc: Any) -> None:
        kernel_state(self.semantic)[_OPEN] = None
        emit(self.semantic, "warp_pipeline_border", label=self.config.label, priority=self.config.priority)


@tlx_builtin
def warp_pipeline_stage(label: Optional[str] = None, *, priority: Optional[int] = None,
                        _semantic: Any = None) -> _Stage:
    """``with warp_pipeline_stage(label, priority=p):`` makes its body one warp-pipeline stage of the loop
    it is in (AMD gfx942/gfx950). The loop's two warp groups run one stage apart, with ``s_setprio p``
    while in the stage.

    Args:
        label: the stage's name (for IR and diagnostics); ``None`` is the fork's ``"cluster"``.
        priority: the wave priority in the stage, 0..3 (``s_setprio``); ``None`` keeps it unset.
    """
    return _Stage(_semantic, stage_config(label, priority))
