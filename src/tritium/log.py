"""Logging through :mod:`logging`: the ``tritium`` logger, and one line per compiled kernel.

``TRITIUM_LOG=info`` (``tritium.knobs.logs.level``) attaches a stderr handler to the ``tritium`` logger.
At INFO, each compiled kernel logs the pipelines that applied and, per stage, the passes they
inserted, disabled or replaced; kernels no pipeline touched and cache hits log at DEBUG. The line is
written from Triton's ``knobs.compilation.listener`` (called once per compilation, cache hits
included), chained with any listener already set, so it names the kernel and whether it was cached.
"""
from __future__ import annotations

import logging
import threading
import warnings
from typing import Any, Optional

from triton import knobs as triton_knobs

from . import knobs

logger = logging.getLogger("tritium")


class _Applied(threading.local):
    """What the stages of the compilation in progress on this thread applied, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []


_applied = _Applied()


def start_compilation() -> None:
    """Forget what a compilation that failed before reaching the listener left behind."""
    _applied.lines = []


def note_stage(stage: str, pipelines: list[str], changes: list[str]) -> None:
    """Called by the runner for each stage that ran with a pipeline's edits."""
    if logger.isEnabledFor(logging.INFO):
        _applied.lines.append(f"{stage} [{', '.join(pipelines)}]: {', '.join(changes) or 'no pass changed'}")


class _Listener:
    """A ``knobs.compilation.listener`` that logs what :func:`note_stage` collected, then calls ``previous``."""

    def __init__(self, previous: Optional[Any]) -> None:
        self.previous = previous

    def __call__(self, *, src: Any, metadata: dict, cache_hit: bool, **kw: Any) -> None:
        lines, _applied.lines = _applied.lines, []
        name = getattr(getattr(src, "fn", None), "__name__", None) or metadata.get("name", "?")
        target = metadata.get("target")
        where = f"{getattr(target, 'backend', '?')}:{getattr(target, 'arch', '?')}" if target is not None else "?"
        if lines:
            logger.info("kernel %s (%s): %s", name, where, "; ".join(lines))
        else:
            logger.debug("kernel %s (%s): %s", name, where, "cache hit" if cache_hit else "no pipeline applied")
        if self.previous is not None:
            self.previous(src=src, metadata=metadata, cache_hit=cache_hit, **kw)


def install_listener() -> None:
    """Set the compilation listener (idempotent), keeping any listener already there."""
    current = triton_knobs.compilation.listener
    if not isinstance(current, _Listener):
        triton_knobs.compilation.listener = _Listener(current)


def configure_logging(level: Optional[str] = None) -> None:
    """Give the ``tritium`` logger a stderr handler at ``level`` (default: ``TRITIUM_LOG``; nothing if unset)."""
    level = level or knobs.logs.level
    if not level:
        return
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        warnings.warn(f"TRITIUM_LOG={level!r} is not a logging level (debug, info, warning, error); ignored")
        return
    if not any(getattr(h, "_tritium", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[tritium] %(levelname)s %(message)s"))
        handler._tritium = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(numeric)
