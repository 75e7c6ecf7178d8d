"""One object that owns the plugin core's state, modelled on pluggy's ``PluginManager``.

A :class:`PluginManager` holds the loaded plugins (found by entry point, path or object, see
:mod:`.registry`), which pipeline is in effect (global, per context, bound to a kernel), the cache of
pipeline keys, its stages hook for Triton (the hooks Triton already had chain behind it) and its
recorder, which traces compilations into a :class:`~.runner.CompileReport`.  The functions of
``tritium.plugins`` act on the default manager (:func:`default_manager`), enabled at import; tests
and embedders can make their own and use them side by side.

What is process-wide, and why: Triton has one stages-hook slot
(``knobs.runtime.add_stages_inspection_hook``) and, on 3.6, one pair of cache-key functions, so one
manager at a time is *enabled* (:func:`enabled_manager`): its plugins and pipelines are the ones
compilations see.  A manager that is not enabled keeps its state and changes nothing.  Enabling a
second manager is an error; ``with manager.enabled():`` hands the hook over for a block and gives
it back.  Pipelines are plain values that any manager may use, so their edit counter
(:class:`.pipeline.Generation`) is process-wide too, and so is the interception of Triton's pass
builders while a stage runs (``compat.intercept_pass_managers``): it belongs to one compilation, not
to a manager.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.metadata as importlib_metadata
import os
import sys
import threading
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

from .. import compat, knobs
from .errors import PassFingerprintWarning, PipelineError, PluginLoadError, TritiumError
from .passes import fingerprint_once
from .options import OptionTable
from .pipeline import Generation, Pipeline
from .registry import ENTRY_POINT_GROUP, NATIVE_PATHS_ENV, DeferredPlugin, LoadedPlugin, Plugin, import_file, \
    import_name, native_plugin, native_plugin_paths, plugin_from_module, plugin_from_object
from .runner import CompileReport, apply_pipelines

PipelineLike = Union[Pipeline, str]
_EMPTY = ("", "")


class _ReportSlot(threading.local):
    #: the report this thread's compilations are traced into, if any
    report: Optional[CompileReport] = None


class PluginManager:
    """Loaded plugins, the pipeline in effect, the key cache, the stages hook and the recorder.

    Args:
        name: shown in errors and ``repr``, so two managers can be told apart.
    """

    def __init__(self, name: str = "custom") -> None:
        self.name = name
        self._lock = threading.RLock()
        self._loaded: dict[str, LoadedPlugin] = {}
        #: Deferred entry points not loaded yet, by plugin name, with their origin.
        self._deferred: dict[str, tuple[DeferredPlugin, str]] = {}
        #: Every deferred entry point, with the plugin it gave once loaded (None before, or while a same-named
        #: plugin from elsewhere stands in its place): unloading makes it available again, and a module
        #: registers on its first import only, so a reload reuses the plugin object.
        self._from_deferred: dict[str, tuple[DeferredPlugin, str, Optional[Plugin]]] = {}
        #: The loaded plugins' automatic pipelines, rebuilt on every change: read on each kernel launch.
        self._auto: tuple[Pipeline, ...] = ()
        #: The loaded plugins' launch options, by name: read by Triton's option parsing while enabled.
        self._options = OptionTable()
        #: Bumped on every plugin (un)load, so cached keys know when to recompute.
        self._generation = 0
        self._global: Optional[Pipeline] = None
        #: This context's ``use_pipeline`` nesting, innermost last; a tuple, so each context owns its value.
        self._stack: contextvars.ContextVar[tuple[Optional[Pipeline], ...]] = contextvars.ContextVar(
            f"tritium_pipelines_{name}", default=())
        #: active pipeline -> (plugin generation, pipeline generation, (key, hash))
        self._keys: dict[Optional[Pipeline], tuple[int, int, tuple[str, str]]] = {}
        self._recorder = _ReportSlot()
        #: kernel function -> {(pipeline, pass name): (the pass's function, its identity) when the kernel last compiled}
        self._fingerprints: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[Any, str]]] = \
            weakref.WeakKeyDictionary()
        self._hook = compat.ChainedHook(self._apply_stages, self.pipelines_key, self._compile_snapshot, owner=self,
                                        error=PipelineError)

    def __repr__(self) -> str:
        state = "enabled" if self.is_enabled() else "not enabled"
        return f"PluginManager({self.name!r}, {len(self._loaded)} plugins, {state})"

    # ----------------------------------------------------------------------------------------
    # The stages hook: one manager at a time holds Triton's slot
    # ----------------------------------------------------------------------------------------
    def enable(self) -> None:
        """Install this manager's stages hook in Triton (idempotent; with no pipeline in effect it changes
        nothing).  Called again after another tool replaced the hook, it chains that tool's hook back in.

        Raises:
            TritiumError: another manager is enabled; Triton has one hook slot.
        """
        with _switching:
            other = enabled_manager()
            if other is not None and other is not self:
                raise TritiumError(f"cannot enable {self!r}: {other!r} holds Triton's stages hook, and Triton has "
                                   "one; call its disable() first, or use `with manager.enabled():` to hand the hook "
                                   "over for a block")
            compat.install_stages_hook(self._hook)
            compat.install_launch_options(self._options)

    def disable(self) -> None:
        """Remove this manager's hook, restoring Triton's key functions and any hook that was there before."""
        with _switching:
            if self.is_enabled():
                compat.uninstall_launch_options()
            compat.uninstall_stages_hook(self._hook)

    def is_enabled(self) -> bool:
        return compat.installed_stages_hook() is self._hook

    @contextlib.contextmanager
    def enabled(self) -> Iterator["PluginManager"]:
        """Enable this manager inside the block, taking the hook from the enabled one and giving it back after.

        The hook is process-wide: other threads compile under this manager during the block too, and a block
        in another thread waits until this thread's blocks have closed. Blocks nest, and must close innermost
        first: one closed before a block opened inside it (asyncio tasks, ExitStacks) is refused with a
        TritiumError, after giving the hook back to the manager that held it when that block opened.
        """
        with _blocks.lock:
            with _switching:  # a plain enable() or disable() in another thread waits for the hand-over
                previous = enabled_manager()
                if previous is not self:
                    if previous is not None:
                        previous.disable()
                    try:
                        self.enable()
                    except BaseException:
                        if previous is not None:
                            previous.enable()
                        raise
            block = _Block(self, previous)
            _blocks.open.append(block)
            try:
                yield self
            finally:
                _blocks.close(block)

    def _compile_snapshot(self, kernel: Any) -> tuple[str, tuple[Pipeline, ...]]:
        """One reading of what is in effect for a compile: the key it is stored under and the pipelines its
        stages run come from it together, whatever other threads change meanwhile."""
        generation, edits = self._generation, Generation.value  # read first: a change meanwhile invalidates
        active, auto = self.active_pipeline(kernel), self._auto
        pipelines = auto if active is None else (*auto, active)
        with fingerprint_once():
            key = self._key_of(active, pipelines, generation, edits, fresh=True)[0]
            if kernel is not None and key:
                self._note_fingerprints(kernel, pipelines)
        return key, pipelines

    def _note_fingerprints(self, kernel: Any, pipelines: tuple[Pipeline, ...]) -> None:
        """Warn when a Python pass (the same function) has another fingerprint than when ``kernel`` last
        compiled: the kernel compiles again, and a pass that changes state it reads (a run counter in a module
        dict) does so on every compile, with nothing saying why."""
        fn = getattr(kernel, "fn", kernel)
        try:
            seen = self._fingerprints.setdefault(fn, {})
        except TypeError:  # not weakly referenceable
            return
        for pipeline in pipelines:
            if pipeline.plugin is not None and pipeline.plugin.content is not None:
                continue  # the plugin's declared content stands for its code
            for p in pipeline.python_passes():
                if p.cache_key is not None:
                    continue
                try:
                    identity = p.identity()
                except PipelineError:  # unfingerprintable: the key computation has said so
                    continue
                before = seen.get((pipeline.origin(), p.name))
                seen[(pipeline.origin(), p.name)] = (p.fn, identity)
                if before is not None and before[0] is p.fn and before[1] != identity:  # the same pass, changed
                    owner = f" of plugin {p.plugin!r}" if p.plugin else ""
                    warnings.warn(
                        f"pass {p.name!r}{owner}: its fingerprint changed between two compiles of kernel "
                        f"{getattr(fn, '__name__', fn)!r}, so the kernel is compiled again under a new key. If the "
                        "pass was not edited, it changes state it reads (a run counter in a module-level dict, "
                        "say): keep statistics in a tritium.plugins.PassStats, which fingerprints leave out",
                        PassFingerprintWarning, stacklevel=2)

    def _apply_stages(self, pipelines: tuple[Pipeline, ...], backend: Any, stages: dict, options: Any,
                      language: Any, capability: Any = None) -> None:
        apply_pipelines(pipelines, self._recorder.report, backend, stages, options, language, capability)

    # ----------------------------------------------------------------------------------------
    # Tracing
    # ----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def recording(self, report: Optional[CompileReport]) -> Iterator[Optional[CompileReport]]:
        """Record every stage and pass this thread compiles inside the block into ``report``.

        Args:
            report: filled while this manager is enabled; None records nothing (e.g. in a nested block).
        """
        saved, self._recorder.report = self._recorder.report, report
        try:
            yield report
        finally:
            self._recorder.report = saved

    # ----------------------------------------------------------------------------------------
    # The registry
    # ----------------------------------------------------------------------------------------
    def _notify(self) -> None:
        self._auto = tuple(p for lp in self._loaded.values() for p in lp.plugin.auto_pipelines)
        self._options = self._option_table(self._loaded.values())
        if self.is_enabled():
            compat.install_launch_options(self._options)
        self._generation += 1

    def launch_options(self) -> OptionTable:
        """The launch and compile options the loaded plugins declare (in effect while this manager is enabled)."""
        return self._options

    @staticmethod
    def _option_table(loaded: Any) -> OptionTable:
        return OptionTable((lp.plugin.name, opt) for lp in loaded for opt in lp.plugin.options)

    def _remember_deferred(self, spec: DeferredPlugin, origin: str, plugin: Optional[Plugin]) -> None:
        previous = self._from_deferred.get(spec.name)
        self._from_deferred[spec.name] = (spec, origin, plugin or (previous[2] if previous else None))

    @contextlib.contextmanager
    def _undone_on_error(self) -> Iterator[None]:
        """Inside the block, an exception restores the plugins, deferred entries and global pipeline of this
        manager and of the default one (a plugin module registers itself with the default one), so a
        failed load or lookup leaves nothing half-done behind."""
        managers = {id(m): m for m in (self, _default)}.values()
        with self._lock:
            saved = [(m, dict(m._loaded), dict(m._deferred), m._global) for m in managers]
        try:
            yield
        except BaseException:
            # _from_deferred is kept: it remembers the plugin objects that entry points gave, and a module that
            # registered itself on its first import will not do so again
            for m, loaded, deferred, global_ in saved:
                with m._lock:
                    changed = m._loaded.keys() != loaded.keys() or any(
                        m._loaded[k].plugin is not v.plugin for k, v in loaded.items())
                    m._loaded, m._deferred, m._global = loaded, deferred, global_
                    if changed:
                        m._notify()
            raise

    def register(self, plugin: Plugin, origin: str = "explicit") -> Plugin:
        """Add a plugin object; its name must be new (loading the very same object again is a no-op).

        Args:
            plugin: the plugin; the same object may be registered with several managers.
            origin: where it came from, as ``tritium plugins`` lists it.
        """
        if not isinstance(plugin, Plugin):
            raise PluginLoadError(f"{origin}: expected a tritium Plugin, got {type(plugin).__name__}")
        with self._lock:
            existing = self._loaded.get(plugin.name)
            if existing is not None:
                if existing.plugin is plugin:
                    return plugin
                raise PluginLoadError(f"duplicate plugin name {plugin.name!r}: already loaded from "
                                      f"{existing.origin}, again from {origin}")
            self._option_table([*self._loaded.values(), LoadedPlugin(plugin, origin)])  # a clash refuses it here
            deferred = self._deferred.pop(plugin.name, None)
            if deferred is not None:  # a loaded plugin takes the place of the entry point that announced its name
                spec, announced = deferred
                if origin == "explicit" and spec.module in sys.modules:  # registered by its module's own import
                    origin = f"{announced} (registered by importing {spec.module})"
                self._remember_deferred(spec, announced, plugin if origin.startswith(announced) else None)
            self._loaded[plugin.name] = LoadedPlugin(plugin, origin)
            self._notify()
        return plugin

    def unload_plugin(self, name: str) -> None:
        """Remove a loaded plugin; one from a deferred entry point becomes available again."""
        with self._lock:
            if self._loaded.pop(name, None) is None:
                raise PluginLoadError(f"no plugin named {name!r} is loaded; loaded: "
                                      f"{', '.join(self._loaded) or 'none'}")
            if name in self._from_deferred:
                self._deferred[name] = self._from_deferred[name][:2]
            self._notify()

    def loaded_plugins(self) -> list[LoadedPlugin]:
        with self._lock:
            return list(self._loaded.values())

    def deferred_plugins(self) -> list[tuple[DeferredPlugin, str]]:
        """Entry points announced but not loaded yet, with their origins."""
        with self._lock:
            return list(self._deferred.values())

    def load_deferred(self, name: Optional[str] = None) -> list[Plugin]:
        """Load the deferred plugin ``name`` (all of them with None); unknown names are ignored. A plugin that
        fails to load leaves the manager as it was before this call."""
        with self._lock, self._undone_on_error():
            names = [name] if name is not None else list(self._deferred)
            return [self._load_deferred(n) for n in names if n in self._deferred]

    def _load_deferred(self, name: str) -> Plugin:
        spec, origin = self._deferred[name]
        before = self._from_deferred.get(name)
        if before is not None and before[2] is not None:  # loaded before and unloaded since
            return self.register(before[2], origin)
        module = import_name(spec.module, origin)
        if name in self._loaded:  # the module registered it on import
            return self._loaded[name].plugin
        if not hasattr(module, "tritium_plugin") and name in _default._loaded:
            # a module that registers itself does so through tritium.plugins, with the default manager
            return self.register(_default._loaded[name].plugin, origin)
        plugin = plugin_from_module(module, origin)
        if plugin.name != name:
            raise PluginLoadError(f"{origin}: module {spec.module!r} gives a plugin named {plugin.name!r}, "
                                  f"the entry point announced {name!r}")
        return self.register(plugin, origin)

    def get_plugin(self, name: str) -> Plugin:
        """The loaded plugin ``name``, loading a deferred one of that name first."""
        self.load_deferred(name)
        with self._lock:
            if name not in self._loaded:
                raise PluginLoadError(f"no plugin named {name!r} is loaded; loaded: "
                                      f"{', '.join(self._loaded) or 'none'}{self._deferred_note()}")
            return self._loaded[name].plugin

    def _deferred_note(self) -> str:
        """The deferred plugins, for an error listing what is known: their pipelines are not known until they
        load, and without them the list read "known: none" while pipelines were a name away."""
        if not self._deferred:
            return ""
        return (f"; plugins not loaded yet (name one as PLUGIN:PIPELINE to load it): "
                f"{', '.join(sorted(self._deferred))}")

    def auto_pipelines(self) -> tuple[Pipeline, ...]:
        return self._auto

    def find_pipeline(self, name: str) -> Pipeline:
        """A pipeline contributed by a loaded plugin, as ``name`` or ``plugin:name``.

        Deferred plugins load first: the one named by ``plugin:``, or all of them for a bare name; a name that
        is not found leaves them as they were."""
        if not isinstance(name, str) or not name:
            raise PipelineError(f"a pipeline name must be a non-empty string, got {name!r}")
        with self._undone_on_error():
            self.load_deferred(name.split(":", 1)[0] if ":" in name else None)
            with self._lock:
                matches = [p for lp in self._loaded.values() for key, p in lp.plugin.pipelines.items()
                           if name in (key, f"{lp.plugin.name}:{key}")]
                known = [f"{lp.plugin.name}:{key}" for lp in self._loaded.values() for key in lp.plugin.pipelines]
                deferred = self._deferred_note()
            if len(matches) != 1:
                why = "is ambiguous" if matches else "is not contributed by any loaded plugin"
                raise PluginLoadError(f"pipeline {name!r} {why}; known: {', '.join(known) or 'none'}{deferred}")
        return matches[0]

    def load_plugin(self, spec: Any, origin: Optional[str] = None) -> Plugin:
        """Load a plugin and register it.

        Args:
            spec: a Plugin object, a module, a ``.py`` path, a package folder, a module name or a native
                ``.so`` (Triton 3.9+).
            origin: where it came from, for listings and errors (derived from ``spec`` by default).

        Raises:
            PluginLoadError: the plugin cannot be loaded; whatever its module registered or activated while
                being imported is undone.
        """
        with self._undone_on_error():
            return self._load_plugin(spec, origin)

    def _load_plugin(self, spec: Any, origin: Optional[str]) -> Plugin:
        if isinstance(spec, (str, os.PathLike)):
            text = os.fspath(spec)
            if not text.strip():
                raise PluginLoadError("load_plugin: an empty name; give a Plugin, a module, a .py path, a package "
                                      "folder, a module name or a native .so")
            origin = origin or f"path {text}"
            if text.endswith(".so"):
                return self.register(native_plugin(text, origin), f"native {origin}")
            if os.sep in text or text.endswith(".py") or Path(text).exists():
                plugin = plugin_from_module(import_file(Path(text), origin), origin)
            else:
                plugin = plugin_from_module(import_name(text, origin), f"module {text}")
                origin = f"module {text}"
        else:
            origin = origin or "explicit"
            plugin = plugin_from_object(spec, origin)
        return self.register(plugin, origin)

    def discover(self, *, strict: bool = True) -> list[Plugin]:
        """Load plugins from entry points, ``TRITIUM_PLUGIN_PATHS`` and, where Triton leaves it to the caller,
        the ``.so`` files in ``TRITON_PLUGIN_PATHS``; already loaded ones are skipped.

        Args:
            strict: raise the failures; with False they become warnings, so one broken plugin does not
                stop the rest.
        """
        found: list[Any] = []
        errors: list[PluginLoadError] = []

        def attempt(action: Callable[[], Any]) -> None:
            try:
                found.append(action())
            except PluginLoadError as e:
                errors.append(e)

        for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
            origin = f"entry point {ep.name} = {ep.value}"
            if any(lp.origin.split(" (")[0] == origin for lp in self.loaded_plugins()) or \
                    any(o == origin for _, o in self.deferred_plugins()):
                continue

            def from_entry_point(ep=ep, origin=origin) -> Any:
                try:
                    obj = ep.load()
                except Exception as e:
                    raise PluginLoadError(f"{origin}: loading raised {type(e).__name__}: {e}") from e
                if isinstance(obj, DeferredPlugin):
                    return self.announce(obj, origin)
                return self.register(plugin_from_object(obj, origin), origin)
            attempt(from_entry_point)

        for entry in filter(None, knobs.plugins.paths.split(":")):
            if any(lp.origin in (f"path {entry}", f"module {entry}") for lp in self.loaded_plugins()):
                continue
            attempt(lambda entry=entry: self.load_plugin(entry))
        if compat.NATIVE_PLUGIN_LOADER != "import":  # Triton 3.7/3.8 load these themselves
            for so in native_plugin_paths():
                if not any(lp.origin in (f"native path {so}", f"native {NATIVE_PATHS_ENV} {so}")
                           for lp in self.loaded_plugins()):
                    attempt(lambda so=so: self.load_plugin(so, f"{NATIVE_PATHS_ENV} {so}"))
        if errors and strict:
            raise errors[0] if len(errors) == 1 else PluginLoadError("; ".join(map(str, errors)))
        for e in errors:
            warnings.warn(str(e), stacklevel=2)
        return [p for p in found if isinstance(p, Plugin)]

    def announce(self, spec: DeferredPlugin, origin: str) -> DeferredPlugin:
        """List a deferred plugin as available without importing its module (a no-op if a plugin of that
        name is loaded already, e.g. TLX imported before discovery).

        Args:
            spec: the plugin's name and module.
            origin: where it was found (an entry point, or the source tree's bundled list).
        """
        with self._lock:
            if spec.name in self._loaded:  # it stands in the entry point's place; unloading it restores the entry
                lp = self._loaded[spec.name]
                own = lp.origin == "explicit" and spec.module in sys.modules  # e.g. TLX imported before discovery
                self._remember_deferred(spec, origin, lp.plugin if own else None)
            elif spec.name not in self._deferred:
                self._deferred[spec.name] = (spec, origin)
        return spec

    # ----------------------------------------------------------------------------------------
    # Which pipeline applies
    # ----------------------------------------------------------------------------------------
    def resolve_pipeline(self, pipeline: Optional[PipelineLike]) -> Optional[Pipeline]:
        """``pipeline`` itself, or the loaded pipeline of that name (see :meth:`find_pipeline`)."""
        if pipeline is None or isinstance(pipeline, Pipeline):
            return pipeline
        if isinstance(pipeline, str):
            return self.find_pipeline(pipeline)
        raise PipelineError(f"expected a Pipeline or a pipeline name, got {type(pipeline).__name__}")

    def activate(self, pipeline: PipelineLike) -> Pipeline:
        """Use ``pipeline`` for every compilation, in every thread, from now until :meth:`deactivate`."""
        resolved = self.resolve_pipeline(pipeline)
        with self._lock:
            self._global = resolved
        return resolved  # type: ignore[return-value]

    def deactivate(self) -> None:
        with self._lock:
            self._global = None

    @contextlib.contextmanager
    def _pushed(self, pipeline: Optional[Pipeline]) -> Iterator[None]:
        pushed = (*self._stack.get(), pipeline)
        token = self._stack.set(pushed)
        try:
            yield
        finally:
            current = self._stack.get()
            if current is pushed or len(current) > len(pushed):  # in order, or an inner block left open: drop it too
                self._stack.reset(token)
            if current is not pushed:
                raise PipelineError(f"use_pipeline blocks of {self!r} were exited out of order (the block of "
                                    f"{pipeline.origin() if pipeline else 'no pipeline'!r} after one opened before "
                                    "it, or before one opened inside it); with blocks nested by hand (__enter__/"
                                    "__exit__, ExitStack), exit them innermost first")

    @contextlib.contextmanager
    def use_pipeline(self, pipeline: Optional[PipelineLike]) -> Iterator[Optional[Pipeline]]:
        """Use ``pipeline`` in this thread or asyncio task inside the block; it nests and wins over
        :meth:`activate`.

        Args:
            pipeline: a Pipeline, a loaded pipeline's name, or None for stock Triton.
        """
        resolved = self.resolve_pipeline(pipeline)
        with self._pushed(resolved):
            yield resolved

    def active_pipeline(self, kernel: Any = None) -> Optional[Pipeline]:
        """The pipeline bound to ``kernel``, else this context's innermost ``use_pipeline``, else the global one."""
        if kernel is not None:
            bound = getattr(kernel, "tritium_pipeline", None)
            if bound is not None:
                return bound
        items = self._stack.get()
        return items[-1] if items else self._global

    def effective_pipelines(self, kernel: Any = None) -> tuple[Pipeline, ...]:
        """Plugins' automatic pipelines, then the active one."""
        active = self.active_pipeline(kernel)
        return self._auto if active is None else (*self._auto, active)

    def pipelines_key(self, kernel: Any = None, fresh: bool = False) -> tuple[str, str]:
        """``(key, hash)`` of the pipelines in effect for ``kernel``; empty when none, so keys match bare Triton.

        ``key`` goes into the on-disk key, ``hash`` into the JIT's in-memory one. Launches ask on every
        call, so their result is cached per active pipeline until a plugin (un)loads, any pipeline is
        edited, or :meth:`refresh`. A compile asks with ``fresh`` and gets a key computed anew, as a
        pass's live state (its code, defaults, a module constant, a closure's dict, an object's
        attribute) may have changed in place; finding such a change also refreshes. ``hash`` counts
        refreshes, so no kernel a launch compiled under a key gone stale is served again.
        """
        generation, edits = self._generation, Generation.value  # read first: a change meanwhile invalidates
        active = getattr(kernel, "tritium_pipeline", None)  # active_pipeline(), inlined: once per launch
        if active is None:
            items = self._stack.get()
            active = items[-1] if items else self._global
        auto = self._auto
        return self._key_of(active, auto if active is None else (*auto, active), generation, edits, fresh)

    def _key_of(self, active: Optional[Pipeline], pipelines: tuple[Pipeline, ...], generation: int, edits: int,
                fresh: bool) -> tuple[str, str]:
        """The key of ``pipelines`` (``active`` after the automatic ones), read at ``generation`` and ``edits``."""
        hit = self._keys.get(active)
        current = hit is not None and hit[0] == generation and hit[1] == edits
        if current and not fresh:
            return hit[2]
        result = _EMPTY
        if pipelines:
            with fingerprint_once():
                key = "+".join(f"{p.origin()}#{p.digest()}" for p in pipelines)
            if current and key != hit[2][0]:  # changed in place since launches cached the key
                self.refresh()
                generation = self._generation
            result = (key, hashlib.sha256(f"{key}#{generation}".encode()).hexdigest()[:16])
        if len(self._keys) > 256:  # pipelines made on the fly must not pile up
            self._keys.clear()
        self._keys[active] = (generation, edits, result)
        return result

    def refresh(self) -> None:
        """Make launches see passes edited in place (a module constant, a closure's dict, an object's
        attribute, new ``__code__`` or ``__defaults__``): keys are computed anew, and kernels compiled
        before are looked up again. Compiles (``triton.compile``, a kernel's first launch) see such edits
        without it."""
        self._generation += 1

    def bind(self, pipeline: Optional[PipelineLike], kernel: Any = None) -> Any:
        """Bind a pipeline to one ``@triton.jit`` kernel; the binding wins over :meth:`use_pipeline` and
        :meth:`activate` for that kernel, under whichever manager is enabled when it launches.

        Args:
            pipeline: a Pipeline or a loaded pipeline's name; None removes the binding.
            kernel: the kernel; left out, ``bind(p)`` is a decorator to put above ``@triton.jit``.
        """
        resolved = self.resolve_pipeline(pipeline)

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
                    # Triton asks for keys without naming the kernel: make it active in the enabled manager
                    owner = enabled_manager()
                    with owner._pushed(resolved) if owner is not None else contextlib.nullcontext():
                        return run(fn, *args, **kwargs)

                fn.run = bound_run
            return fn

        return apply if kernel is None else apply(kernel)


def bound_pipeline(kernel: Any) -> Optional[Pipeline]:
    """The pipeline :meth:`PluginManager.bind` bound to ``kernel``, if any."""
    return getattr(kernel, "tritium_pipeline", None)


class _Block:
    """One open ``enabled()`` block: its manager and the one that held the hook when it opened."""

    def __init__(self, manager: PluginManager, previous: Optional[PluginManager]) -> None:
        self.manager, self.previous = manager, previous


class _OpenBlocks:
    """The open ``enabled()`` blocks, process-wide like the hook they hand over. The lock is held from a
    block's opening to its closing, so one thread at a time has blocks open; inside it, they form a stack."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.open: list[_Block] = []

    def close(self, block: _Block) -> None:
        if block not in self.open:
            raise TritiumError(f"the enabled() block of {block.manager!r} was closed after the block it was opened "
                               "in, which had already given the hook back; close enabled() blocks innermost first")
        dropped = self.open[self.open.index(block) + 1:]
        del self.open[self.open.index(block):]
        with _switching:
            holder = enabled_manager()
            if holder is not block.previous:
                if holder is not None:
                    holder.disable()
                if block.previous is not None:
                    block.previous.enable()
        if dropped:
            inner = ", ".join(repr(b.manager.name) for b in dropped)
            raise TritiumError(f"enabled() blocks were exited out of order: the block of {block.manager.name!r} "
                               f"closed while the block of {inner} opened inside it was still open; the hook "
                               f"went back to {block.previous!r}, as before the outer block. Close enabled() "
                               "blocks innermost first (with ExitStack or asyncio tasks too)")


_blocks = _OpenBlocks()
#: Held while a manager's hook goes in or out of Triton's slot, so that checking who holds it and changing
#: it are one step for every thread.
_switching = threading.RLock()
_default = PluginManager("default")


def default_manager() -> PluginManager:
    """The manager that the functions of ``tritium.plugins`` act on."""
    return _default


def enabled_manager() -> Optional[PluginManager]:
    """The manager whose hook holds Triton's stages-hook slot (None when tritium is disabled)."""
    hook = compat.installed_stages_hook()
    return None if hook is None else hook.owner
