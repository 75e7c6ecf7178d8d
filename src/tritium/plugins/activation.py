"""Which pipeline applies to the next compilation: set globally, by context, or bound to a kernel.

A pipeline set with :func:`activate` holds for everything compiled from then on, in every thread,
until :func:`deactivate`.  :func:`use_pipeline` nests per execution context (a ``contextvars``
value, so threads and asyncio tasks are isolated alike) and wins over the global one; :func:`bind`
makes one kernel compile (and look up its cache) under its own pipeline.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from typing import Any, Iterator, Optional, Union

from .. import compat
from .errors import PipelineError
from .pipeline import Generation, Pipeline
from .registry import auto_pipelines, find_pipeline

PipelineLike = Union[Pipeline, str]

_lock = threading.Lock()
_global: Optional[Pipeline] = None


#: This context's ``use_pipeline`` nesting, innermost last; a tuple, so each context owns its value.
_stack: contextvars.ContextVar[tuple[Optional[Pipeline], ...]] = contextvars.ContextVar("tritium_pipelines",
                                                                                       default=())


@contextlib.contextmanager
def _pushed(pipeline: Optional[Pipeline]) -> Iterator[None]:
    token = _stack.set((*_stack.get(), pipeline))
    try:
        yield
    finally:
        _stack.reset(token)


def resolve_pipeline(pipeline: Optional[PipelineLike]) -> Optional[Pipeline]:
    if pipeline is None or isinstance(pipeline, Pipeline):
        return pipeline
    if isinstance(pipeline, str):
        return find_pipeline(pipeline)
    raise PipelineError(f"expected a Pipeline or a pipeline name, got {type(pipeline).__name__}")


def activate(pipeline: PipelineLike) -> Pipeline:
    """Use ``pipeline`` for every compilation from now until :func:`deactivate`."""
    global _global
    resolved = resolve_pipeline(pipeline)
    with _lock:
        _global = resolved
    return resolved  # type: ignore[return-value]


def deactivate() -> None:
    global _global
    with _lock:
        _global = None


@contextlib.contextmanager
def use_pipeline(pipeline: Optional[PipelineLike]) -> Iterator[Optional[Pipeline]]:
    """Use ``pipeline`` in this thread or asyncio task inside the block (``None`` means stock Triton)."""
    resolved = resolve_pipeline(pipeline)
    with _pushed(resolved):
        yield resolved


def active_pipeline(kernel: Any = None) -> Optional[Pipeline]:
    """The pipeline bound to ``kernel``, else this context's innermost ``use_pipeline``, else the global one."""
    if kernel is not None:
        bound = getattr(kernel, "tritium_pipeline", None)
        if bound is not None:
            return bound
    items = _stack.get()
    return items[-1] if items else _global


def effective_pipelines(kernel: Any = None) -> tuple[Pipeline, ...]:
    """Plugins' automatic pipelines, then the active one."""
    active = active_pipeline(kernel)
    auto = auto_pipelines()
    return auto if active is None else (*auto, active)


_keys: dict[Optional[Pipeline], tuple[int, tuple[str, str]]] = {}
_EMPTY = ("", "")


def pipelines_key(kernel: Any = None) -> tuple[str, str]:
    """``(key, hash)`` of the pipelines in effect for ``kernel``; empty when none, so keys match bare Triton.

    Runs on every kernel launch, so results are cached per active pipeline until any pipeline or
    plugin changes (both bump :class:`Generation`).
    """
    active = getattr(kernel, "tritium_pipeline", None)  # active_pipeline(), inlined: once per launch
    if active is None:
        items = _stack.get()
        active = items[-1] if items else _global
    hit = _keys.get(active)
    if hit is not None and hit[0] == Generation.value:
        return hit[1]
    pipelines = effective_pipelines(kernel)
    result = _EMPTY
    if pipelines:
        key = "+".join(f"{p.origin()}#{p.digest()}" for p in pipelines)
        result = (key, hashlib.sha256(key.encode()).hexdigest()[:16])
    if len(_keys) > 256:  # pipelines made on the fly must not pile up
        _keys.clear()
    _keys[active] = (Generation.value, result)
    return result


def bind(pipeline: Optional[PipelineLike], kernel: Any = None) -> Any:
    """Bind a pipeline to one ``@triton.jit`` kernel: as ``@bind(p)`` above ``@triton.jit``, or
    ``bind(p, kernel)``.  ``bind(None, kernel)`` removes the binding.  A binding wins over
    :func:`use_pipeline` and :func:`activate` for that kernel.
    """
    resolved = resolve_pipeline(pipeline)

    def apply(fn: Any) -> Any:
        run = getattr(type(fn), "run", None)
        if run is None or not hasattr(fn, "device_caches"):
            raise PipelineError(f"bind: {fn!r} is not a @triton.jit kernel")
        fn.__dict__.pop("run", None)
        if resolved is None:
            fn.__dict__.pop("tritium_pipeline", None)
            return fn
        fn.tritium_pipeline = resolved
        if not compat.track_kernel_keys(fn):
            def bound_run(*args: Any, **kwargs: Any) -> Any:
                with _pushed(resolved):  # Triton asks for keys without naming the kernel: make it active
                    return run(fn, *args, **kwargs)

            fn.run = bound_run
        return fn

    return apply if kernel is None else apply(kernel)


def bound_pipeline(kernel: Any) -> Optional[Pipeline]:
    return getattr(kernel, "tritium_pipeline", None)
