"""Pipelines reach the Triton kernels that torch.compile (Inductor) generates, in its compile workers too.

Inductor compiles its Triton kernels in worker processes (``torch._inductor.config.compile_threads`` > 1)
where nothing imports tritium, and it caches compiled graphs on disk under keys that know nothing of
tritium. :func:`install` changes three things, all in Inductor's parent process:

* each job sent to the compile worker pool runs as ``run_in_worker(spec, job, ...)``: unpickling it
  imports tritium in the worker, and the job runs under the parent's pipeline state
  (:func:`tritium.handoff.spec`, taken when the job is submitted, in the submitting thread: the
  loaded plugins, the active pipeline, the key they give). So ``activate()``, ``use_pipeline()`` and
  a change of pipeline after the pool started all reach the workers, and a worker whose plugins
  differ raises instead of compiling something else;
* Inductor's FX graph cache key (and AOTAutograd's, which extends it) includes tritium's pipelines
  key, through ``torch._inductor.config.post_grad_custom_post_pass``: a ``CustomGraphPass`` whose
  ``uuid()`` is that key, running the pass that was in the slot before, if any; with
  ``tritium.ops.inductor.use_kernels`` on, the same pass also puts tritium's ops in the graph where they
  are faster, and its ``uuid()`` says so;
* a process that compiles Triton kernels (the parent with ``compile_threads=1``, or a worker) drops
  Inductor's in-memory kernel modules when the pipelines key changed since its last compilation,
  so a kernel loaded under one pipeline is not reused under another.

Triton's own cache needs nothing: its key includes tritium's pipelines key wherever the pipeline is in
effect. ``import tritium`` installs all this when Inductor's ``async_compile`` module is first imported
(or at once if it already is), so no call is needed; :func:`uninstall` undoes it.

Every torch-private name used is in the compat section at the end (``tests/test_torch_integration.py``
checks them against the installed torch).
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from typing import Any, Callable, Optional

from . import handoff, plugins

_installed = False
#: The pipelines key of this process's last Triton compilation through Inductor (None: none yet).
_last_key: Optional[str] = None


def install() -> None:
    """Make Inductor's compilations follow tritium's pipelines (idempotent; imports Inductor)."""
    global _installed
    from torch._inductor import config

    _compat_wrap_process_pool(_instrument_pool)
    _compat_wrap_triton(_before_triton_compile)
    if not isinstance(config.post_grad_custom_post_pass, _key_pass_type()):
        config.post_grad_custom_post_pass = _key_pass_type()(config.post_grad_custom_post_pass)
    _installed = True


def uninstall() -> None:
    """Undo :func:`install`: Inductor as it was (a pool already made keeps its wrapped ``submit``)."""
    global _installed
    from torch._inductor import config

    _compat_unwrap()
    current = config.post_grad_custom_post_pass
    if isinstance(current, _key_pass_type()):
        config.post_grad_custom_post_pass = current.inner
    _installed = False


def installed() -> bool:
    return _installed


# ------------------------------------------------------------------------------------------------
# The compile workers
# ------------------------------------------------------------------------------------------------
def _submit(original: Callable[..., Any], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return original(run_in_worker, handoff.spec(), fn, *args, **kwargs)


def _instrument_pool(pool: Any) -> None:
    """Route ``pool``'s jobs through :func:`run_in_worker` (once per pool)."""
    if not getattr(pool, "_tritium_instrumented", False):
        pool.submit = functools.partial(_submit, pool.submit)
        pool._tritium_instrumented = True


def run_in_worker(spec: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A compile job in a worker: ``fn(*args, **kwargs)`` under the pipeline state ``spec`` of the parent."""
    with handoff.applied(spec):
        _before_triton_compile()
        return fn(*args, **kwargs)


def _before_triton_compile() -> None:
    """Forget Inductor's loaded kernel modules if the pipelines key changed since the last compilation here:
    a loaded module keeps its compiled kernel, and its source (the cache key) does not name the pipeline."""
    global _last_key
    key = plugins.pipelines_key()[0]
    if _last_key is not None and key != _last_key:
        _compat_forget_loaded_kernels()
    _last_key = key


# ------------------------------------------------------------------------------------------------
# The FX graph cache key
# ------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _key_pass_type() -> type:
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class PipelinesKeyPass(CustomGraphPass):
        """Puts tritium's pipelines key into Inductor's cache key; runs the pass(es) it took the place of."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def _inner(self) -> list:
            if self.inner is None:
                return []
            return list(self.inner) if isinstance(self.inner, (list, tuple)) else [self.inner]

        def __call__(self, graph: Any) -> None:
            for p in self._inner():
                p(graph)
            choice = _kernel_choice()
            if choice is not None:
                choice.rewrite(graph)

        def uuid(self) -> Optional[Any]:
            inner = []
            for p in self._inner():
                # A pass with no uuid makes Inductor skip its cache; it still must.
                u = p.uuid() if isinstance(p, CustomGraphPass) else None
                if u is None:
                    return None
                inner.append(u)
            choice = _kernel_choice()
            return ("tritium.pipelines", plugins.pipelines_key()[0], tuple(inner),
                    choice.cache_key() if choice is not None else "")

    return PipelinesKeyPass


def _kernel_choice() -> Optional[Any]:
    """:mod:`tritium.ops.inductor` while its switch is on (``use_kernels``), else None; never imported here,
    since importing the ops compiles nothing but loads TLX and the kernels."""
    module = sys.modules.get("tritium.ops.inductor")
    return module if module is not None and module.cache_key() else None


# ------------------------------------------------------------------------------------------------
# Installing when Inductor is imported
# ------------------------------------------------------------------------------------------------
_ASYNC_COMPILE = "torch._inductor.async_compile"


class _InstallAfter(importlib.abc.Loader):
    """Runs the real loader of ``torch._inductor.async_compile``, then :func:`install`."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        install()

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... for tracebacks and inspect
        return getattr(self.loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _ASYNC_COMPILE:
            return None
        sys.meta_path.remove(self)  # once, and not for the lookup below
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _InstallAfter(spec.loader)
        return spec


def install_on_inductor_import() -> None:
    """Called by ``import tritium``: :func:`install` now if Inductor's async_compile is imported, else when it is."""
    if _ASYNC_COMPILE in sys.modules:
        install()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


# ------------------------------------------------------------------------------------------------
# compat: every torch-private name this module uses (torch 2.11 to 2.13)
# ------------------------------------------------------------------------------------------------
#: What :func:`_compat_unwrap` restores: (class, attribute, original descriptor).
_originals: list[tuple[Any, str, Any]] = []


def _compat_wrap_process_pool(instrument: Callable[[Any], None]) -> None:
    """``AsyncCompile.process_pool`` (a staticmethod over an ``lru_cache``, whose ``cache_clear`` Inductor calls
    at shutdown) makes the one worker pool; wrap it so every pool it returns goes through ``instrument``."""
    from torch._inductor.async_compile import AsyncCompile

    original = AsyncCompile.__dict__["process_pool"]
    if getattr(original.__func__, "_tritium_wrapped", False):
        return
    make = original.__func__

    @functools.wraps(make)
    def process_pool() -> Any:
        pool = make()
        instrument(pool)
        return pool

    process_pool.cache_clear = make.cache_clear  # type: ignore[attr-defined]
    process_pool._tritium_wrapped = True  # type: ignore[attr-defined]
    _originals.append((AsyncCompile, "process_pool", original))
    AsyncCompile.process_pool = staticmethod(process_pool)


def _compat_wrap_triton(before: Callable[[], None]) -> None:
    """``AsyncCompile.triton(self, kernel_name, source_code, ...)`` is where the parent compiles or submits each
    Triton kernel; call ``before`` first."""
    from torch._inductor.async_compile import AsyncCompile

    original = AsyncCompile.__dict__["triton"]
    if getattr(original, "_tritium_wrapped", False):
        return

    @functools.wraps(original)
    def triton(self: Any, *args: Any, **kwargs: Any) -> Any:
        before()
        return original(self, *args, **kwargs)

    triton._tritium_wrapped = True  # type: ignore[attr-defined]
    _originals.append((AsyncCompile, "triton", original))
    AsyncCompile.triton = triton


def _compat_unwrap() -> None:
    while _originals:
        owner, name, original = _originals.pop()
        setattr(owner, name, original)


def _compat_forget_loaded_kernels() -> None:
    """``PyCodeCache`` holds the modules Inductor loaded from kernel source (each with its compiled
    ``CachingAutotuner``); ``cache_clear()`` drops them from memory, not from disk."""
    from torch._inductor.codecache import PyCodeCache

    PyCodeCache.cache_clear()
