"""Plugins: what one is, how they are found, and the list of those loaded.

Discovery follows pytest/pluggy: Python entry points in the group ``tritium.plugins``, the
colon-separated ``TRITIUM_PLUGIN_PATHS`` (``.py`` files, package folders or module names), and
:func:`load_plugin` for an object, module or path given in code.  A module offers its plugin as a
module attribute ``tritium_plugin`` (a :class:`Plugin`, or a function returning one).

An entry point may also name a :class:`DeferredPlugin`: the plugin is listed as available but its
module is imported only when the plugin is asked for by name (:func:`get_plugin`, a pipeline named
``plugin:pipeline``, ``tritium plugins``), or when that module registers it itself on import.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Optional, Sequence

from .. import compat, knobs
from .errors import PluginLoadError
from .passes import PythonPass, fingerprint
from .pipeline import Generation, Pipeline

ENTRY_POINT_GROUP = "tritium.plugins"
PATHS_ENV = "TRITIUM_PLUGIN_PATHS"
NATIVE_PATHS_ENV = "TRITON_PLUGIN_PATHS"


@dataclass(eq=False)
class Plugin:
    """A named, versioned bundle of pipelines, passes and DSL ops.

    ``auto_pipelines`` apply to every compilation while the plugin is loaded (each gated by its own
    ``when``).  ``content`` is what the plugin declares for cache keys; by default the code of its
    Python passes.  ``native_passes`` are the stock pass names a native ``.so`` plugin added.
    """
    name: str
    version: str
    pipelines: Mapping[str, Pipeline] = field(default_factory=dict)
    passes: Mapping[str, PythonPass] = field(default_factory=dict)
    ops: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    auto_pipelines: Sequence[Pipeline] = ()
    content: Optional[str] = None
    description: str = ""
    native_passes: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PluginLoadError(f"plugin name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.version, str) or not self.version:
            raise PluginLoadError(f"plugin {self.name!r}: version must be a non-empty string")
        self._check_fields()
        for p in [*self.pipelines.values(), *self.auto_pipelines]:
            p.plugin = self
        for pass_ in self.passes.values():
            object.__setattr__(pass_, "plugin", self.name)
        for pipeline in self.all_pipelines():
            for pass_ in pipeline.python_passes():
                object.__setattr__(pass_, "plugin", self.name)

    def _check_fields(self) -> None:
        """Every field has the shape the plugin core relies on; a bad one fails here, alone, by name."""

        def fail(field_name: str, why: str) -> None:
            raise PluginLoadError(f"plugin {self.name!r}: field {field_name!r}: {why}")

        def mapping(field_name: str, ok: Callable[[Any], bool], expected: str) -> None:
            value = getattr(self, field_name)
            if not isinstance(value, Mapping):
                fail(field_name, f"expected a mapping of name -> {expected}, got {type(value).__name__}")
            for key, item in value.items():
                if not isinstance(key, str) or not key:
                    fail(field_name, f"keys must be non-empty strings, got {key!r}")
                if not ok(item):
                    hint = (" (decorate the function with @mlir_pass or @text_pass)"
                            if field_name == "passes" and callable(item) else "")
                    fail(field_name, f"{key!r} is a {type(item).__name__}, expected {expected}{hint}")

        mapping("pipelines", lambda v: isinstance(v, Pipeline), "a Pipeline")
        mapping("passes", lambda v: isinstance(v, PythonPass), "a PythonPass")
        mapping("ops", callable, "a callable")
        if isinstance(self.auto_pipelines, (str, Mapping)) or not isinstance(self.auto_pipelines, Sequence):
            fail("auto_pipelines", f"expected a sequence of Pipelines, got {type(self.auto_pipelines).__name__}")
        for p in self.auto_pipelines:
            if not isinstance(p, Pipeline):
                fail("auto_pipelines", f"{p!r} is a {type(p).__name__}, expected a Pipeline")
        if self.content is not None and not isinstance(self.content, str):
            fail("content", f"expected a string or None, got {type(self.content).__name__}")
        if not isinstance(self.description, str):
            fail("description", f"expected a string, got {type(self.description).__name__}")
        if isinstance(self.native_passes, str) or not all(isinstance(n, str) for n in self.native_passes):
            fail("native_passes", "expected a sequence of stock pass names")

    def all_pipelines(self) -> list[Pipeline]:
        seen: dict[int, Pipeline] = {}
        for p in [*self.pipelines.values(), *self.auto_pipelines]:
            seen.setdefault(id(p), p)
        return list(seen.values())

    def content_digest(self) -> str:
        h = hashlib.sha256(f"{self.name}=={self.version}".encode())
        if self.content is not None:
            h.update(self.content.encode())
        else:
            codes = [fingerprint(p.fn) for p in self.passes.values()]
            codes += [fingerprint(p.fn) for pl in self.all_pipelines() for p in pl.python_passes()]
            h.update("".join(sorted(codes)).encode())
        return h.hexdigest()[:16]

    def contributes(self) -> dict[str, list[str]]:
        return {"pipelines": sorted({*self.pipelines, *(p.name for p in self.auto_pipelines)}),
                "passes": sorted(self.passes), "ops": sorted(self.ops), "native passes": sorted(self.native_passes)}


@dataclass(frozen=True)
class DeferredPlugin:
    """A plugin named by an entry point whose module is imported on first use, not at discovery.

    ``module`` either defines ``tritium_plugin`` or registers a plugin called ``name`` when imported.
    Use it for plugins whose module is costly to import and that do nothing until asked for.
    """
    name: str
    module: str
    description: str = ""


@dataclass
class LoadedPlugin:
    plugin: Plugin
    origin: str


_lock = threading.RLock()
_loaded: dict[str, LoadedPlugin] = {}
#: Deferred entry points not loaded yet, by plugin name, with their origin.
_deferred: dict[str, tuple[DeferredPlugin, str]] = {}
#: Every deferred entry point, with the plugin it gave once loaded (None before, or while a same-named plugin
#: from elsewhere stands in its place): unloading makes it available again, and a module registers on its
#: first import only, so a reload reuses the plugin object.
_from_deferred: dict[str, tuple[DeferredPlugin, str, Optional[Plugin]]] = {}


def _remember_deferred(spec: DeferredPlugin, origin: str, plugin: Optional[Plugin]) -> None:
    previous = _from_deferred.get(spec.name)
    _from_deferred[spec.name] = (spec, origin, plugin or (previous[2] if previous else None))
#: Rebuilt on every change: read on each kernel launch, so it must be a plain attribute read.
_auto: tuple[Pipeline, ...] = ()


def _notify() -> None:
    global _auto
    _auto = tuple(p for lp in _loaded.values() for p in lp.plugin.auto_pipelines)
    Generation.bump()


def register(plugin: Plugin, origin: str = "explicit") -> Plugin:
    """Add a plugin object; its name must be new (loading the very same object again is a no-op)."""
    if not isinstance(plugin, Plugin):
        raise PluginLoadError(f"{origin}: expected a tritium Plugin, got {type(plugin).__name__}")
    with _lock:
        existing = _loaded.get(plugin.name)
        if existing is not None:
            if existing.plugin is plugin:
                return plugin
            raise PluginLoadError(f"duplicate plugin name {plugin.name!r}: already loaded from "
                                  f"{existing.origin}, again from {origin}")
        deferred = _deferred.pop(plugin.name, None)
        if deferred is not None:  # a loaded plugin takes the place of the entry point that announced its name
            spec, announced = deferred
            if origin == "explicit" and spec.module in sys.modules:  # registered by its module's own import
                origin = f"{announced} (registered by importing {spec.module})"
            _remember_deferred(spec, announced, plugin if origin.startswith(announced) else None)
        _loaded[plugin.name] = LoadedPlugin(plugin, origin)
        _notify()
    return plugin


def unload_plugin(name: str) -> None:
    with _lock:
        if _loaded.pop(name, None) is None:
            raise PluginLoadError(f"no plugin named {name!r} is loaded; loaded: {', '.join(_loaded) or 'none'}")
        if name in _from_deferred:
            _deferred[name] = _from_deferred[name][:2]
        _notify()


def loaded_plugins() -> list[LoadedPlugin]:
    with _lock:
        return list(_loaded.values())


def deferred_plugins() -> list[tuple[DeferredPlugin, str]]:
    """Entry points announced but not loaded yet, with their origins."""
    with _lock:
        return list(_deferred.values())


def load_deferred(name: Optional[str] = None) -> list[Plugin]:
    """Load the deferred plugin ``name`` (all of them with None); unknown names are ignored."""
    with _lock:
        names = [name] if name is not None else list(_deferred)
        return [_load_deferred(n) for n in names if n in _deferred]


def _load_deferred(name: str) -> Plugin:
    spec, origin = _deferred[name]
    before = _from_deferred.get(name)
    if before is not None and before[2] is not None:  # loaded before and unloaded since
        return register(before[2], origin)
    module = _import_name(spec.module, origin)
    if name in _loaded:  # the module registered it on import
        return _loaded[name].plugin
    plugin = _plugin_from_module(module, origin)
    if plugin.name != name:
        raise PluginLoadError(f"{origin}: module {spec.module!r} gives a plugin named {plugin.name!r}, "
                              f"the entry point announced {name!r}")
    return register(plugin, origin)


def get_plugin(name: str) -> Plugin:
    load_deferred(name)
    with _lock:
        if name not in _loaded:
            raise PluginLoadError(f"no plugin named {name!r} is loaded; loaded: {', '.join(_loaded) or 'none'}")
        return _loaded[name].plugin


def auto_pipelines() -> tuple[Pipeline, ...]:
    return _auto


def find_pipeline(name: str) -> Pipeline:
    """A pipeline contributed by a loaded plugin, as ``name`` or ``plugin:name``.

    Deferred plugins load first: the one named by ``plugin:``, or all of them for a bare name."""
    load_deferred(name.split(":", 1)[0] if ":" in name else None)
    with _lock:
        matches = [p for lp in _loaded.values() for key, p in lp.plugin.pipelines.items()
                   if name in (key, f"{lp.plugin.name}:{key}")]
        known = [f"{lp.plugin.name}:{key}" for lp in _loaded.values() for key in lp.plugin.pipelines]
    if len(matches) != 1:
        why = "is ambiguous" if matches else "is not contributed by any loaded plugin"
        raise PluginLoadError(f"pipeline {name!r} {why}; known: {', '.join(known) or 'none'}")
    return matches[0]


# --------------------------------------------------------------------------------------------
# Loading from modules, files, entry points and environment variables
# --------------------------------------------------------------------------------------------
def _plugin_from_module(module: ModuleType, origin: str) -> Plugin:
    obj = getattr(module, "tritium_plugin", None)
    if obj is None:
        raise PluginLoadError(f"{origin}: module {module.__name__!r} defines no `tritium_plugin` "
                              "(a tritium.plugins.Plugin or a function returning one)")
    return _plugin_from_object(obj, origin)


def _plugin_from_object(obj: Any, origin: str) -> Plugin:
    if isinstance(obj, ModuleType):
        return _plugin_from_module(obj, origin)
    if callable(obj) and not isinstance(obj, Plugin):
        try:
            obj = obj()
        except Exception as e:
            raise PluginLoadError(f"{origin}: the plugin factory raised {type(e).__name__}: {e}") from e
    if not isinstance(obj, Plugin):
        raise PluginLoadError(f"{origin}: expected a tritium Plugin, got {type(obj).__name__}")
    return obj


def _import_file(path: Path, origin: str) -> ModuleType:
    target = path / "__init__.py" if path.is_dir() else path
    if not target.is_file():
        raise PluginLoadError(f"{origin}: {path} is neither a .py file nor a package folder")
    mod_name = f"tritium_plugin_{path.stem}_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(
        mod_name, target, submodule_search_locations=[str(path)] if path.is_dir() else None)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as e:
        del sys.modules[mod_name]
        raise PluginLoadError(f"{origin}: importing {path} raised {type(e).__name__}: {e}") from e
    return module


def _import_name(name: str, origin: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise PluginLoadError(f"{origin}: no file, folder or module named {name!r}") from e
        raise PluginLoadError(f"{origin}: importing {name!r} raised {type(e).__name__}: {e}") from e
    except Exception as e:
        raise PluginLoadError(f"{origin}: importing {name!r} raised {type(e).__name__}: {e}") from e


def load_plugin(spec: Any, origin: Optional[str] = None) -> Plugin:
    """Load a plugin from a Plugin object, a module, a ``.py`` path, a package folder, a module name or a
    native ``.so`` (Triton 3.9+)."""
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        origin = origin or f"path {text}"
        if text.endswith(".so"):
            return register(_native_plugin(text, origin), f"native {origin}")
        if os.sep in text or text.endswith(".py") or Path(text).exists():
            plugin = _plugin_from_module(_import_file(Path(text), origin), origin)
        else:
            plugin = _plugin_from_module(_import_name(text, origin), f"module {text}")
            origin = f"module {text}"
    else:
        origin = origin or "explicit"
        plugin = _plugin_from_object(spec, origin)
    return register(plugin, origin)


def _native_plugin(path: str, origin: str) -> Plugin:
    """A Triton ``.so`` plugin, loaded where this Triton lets a caller load one."""
    if compat.NATIVE_PLUGIN_LOADER == "none":
        raise PluginLoadError(f"{origin}: native .so plugins need Triton >= 3.7 (this is Triton "
                              f"{compat.triton.__version__}, which has no native plugin loader); use a Python "
                              "plugin (a .py file, package or module)")
    if compat.NATIVE_PLUGIN_LOADER == "import":
        raise PluginLoadError(f"{origin}: Triton {compat.triton.__version__} loads native .so plugins itself, "
                              f"from {NATIVE_PATHS_ENV} when triton is first imported, not through tritium")
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        added = compat.load_native_plugin(path)
    except (OSError, RuntimeError) as e:
        raise PluginLoadError(f"{origin}: loading the native plugin failed: {e}") from e
    return Plugin(Path(path).stem, digest, content=digest, native_passes=added,
                  description=f"native Triton plugin {path}")


def native_plugin_paths() -> list[str]:
    """``.so`` entries of ``TRITON_PLUGIN_PATHS`` (Triton 3.7/3.8 load them themselves, 3.9 through us)."""
    return [p for p in knobs.plugins.native_paths.split(":") if p.endswith(".so")]


def discover(*, strict: bool = True) -> list[Plugin]:
    """Load plugins from entry points, ``TRITIUM_PLUGIN_PATHS`` and, where Triton leaves it to the caller,
    the ``.so`` files in ``TRITON_PLUGIN_PATHS``; already loaded ones are skipped.

    With ``strict=False`` failures become warnings, so one broken plugin does not stop the rest.
    """
    found: list[Any] = []
    errors: list[PluginLoadError] = []

    def attempt(action: Callable[[], Plugin]) -> None:
        try:
            found.append(action())
        except PluginLoadError as e:
            errors.append(e)

    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        origin = f"entry point {ep.name} = {ep.value}"
        if any(lp.origin.split(" (")[0] == origin for lp in loaded_plugins()) or \
                any(o == origin for _, o in deferred_plugins()):
            continue

        def from_entry_point(ep=ep, origin=origin) -> Plugin:
            try:
                obj = ep.load()
            except Exception as e:
                raise PluginLoadError(f"{origin}: loading raised {type(e).__name__}: {e}") from e
            if isinstance(obj, DeferredPlugin):
                return _defer(obj, origin)
            return register(_plugin_from_object(obj, origin), origin)
        attempt(from_entry_point)

    for entry in filter(None, knobs.plugins.paths.split(":")):
        if any(lp.origin in (f"path {entry}", f"module {entry}") for lp in loaded_plugins()):
            continue
        attempt(lambda entry=entry: load_plugin(entry))
    if compat.NATIVE_PLUGIN_LOADER != "import":  # Triton 3.7/3.8 load these themselves
        for so in native_plugin_paths():
            if not any(lp.origin in (f"native path {so}", f"native {NATIVE_PATHS_ENV} {so}") for lp in loaded_plugins()):
                attempt(lambda so=so: load_plugin(so, f"{NATIVE_PATHS_ENV} {so}"))
    if errors and strict:
        raise errors[0] if len(errors) == 1 else PluginLoadError("; ".join(map(str, errors)))
    for e in errors:
        warnings.warn(str(e), stacklevel=2)
    return [p for p in found if isinstance(p, Plugin)]


def announce(spec: DeferredPlugin, origin: str) -> None:
    """Announce a deferred plugin found other than through an entry point (see :func:`_defer`)."""
    _defer(spec, origin)


def _defer(spec: DeferredPlugin, origin: str) -> Any:
    """Announce a deferred plugin (a no-op if a plugin of that name is loaded already, e.g. TLX imported
    before discovery); returns the spec, which :func:`discover` does not count as loaded."""
    with _lock:
        if spec.name in _loaded:  # it stands in the entry point's place; unloading it restores the entry point
            lp = _loaded[spec.name]
            own = lp.origin == "explicit" and spec.module in sys.modules  # e.g. TLX imported before discovery
            _remember_deferred(spec, origin, lp.plugin if own else None)
        elif spec.name not in _deferred:
            _deferred[spec.name] = (spec, origin)
    return spec
