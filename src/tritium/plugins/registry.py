"""Plugins: what one is, and how one is made from an object, a module, a path or a ``.so``.

Discovery follows pytest/pluggy: Python entry points in the group ``tritium.plugins``, the
colon-separated ``TRITIUM_PLUGIN_PATHS`` (``.py`` files, package folders or module names), and
``load_plugin`` for an object, module or path given in code; the list of loaded plugins belongs to a
:class:`~.manager.PluginManager`.  A module offers its plugin as a
module attribute ``tritium_plugin`` (a :class:`Plugin`, or a function returning one).

An entry point may also name a :class:`DeferredPlugin`: the plugin is listed as available but its
module is imported only when the plugin is asked for by name (``get_plugin``, a pipeline named
``plugin:pipeline``, ``tritium plugins``), or when that module registers it itself on import.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Optional, Sequence

from .. import compat, knobs
from .errors import PluginLoadError
from .options import PluginOption
from .passes import PythonPass, fingerprint
from .pipeline import Pipeline

ENTRY_POINT_GROUP = "tritium.plugins"
PATHS_ENV = "TRITIUM_PLUGIN_PATHS"
NATIVE_PATHS_ENV = "TRITON_PLUGIN_PATHS"


@dataclass(eq=False)
class Plugin:
    """A named, versioned bundle of pipelines, passes and DSL ops.

    ``auto_pipelines`` apply to every compilation while the plugin is loaded (each gated by its own
    ``when``).  ``content`` is what the plugin declares for cache keys (e.g. a digest of its
    source files); it then stands for the code of all its passes, ``when`` predicates and stage
    overrides, which are no longer fingerprinted one by one: what they reach at run time (caches,
    sets of warnings given) cannot change a key. By default the key follows the code of its Python
    passes.  ``native_passes`` are the stock pass names a native ``.so`` plugin added.  ``options`` are the
    launch and compile options it declares (:class:`~.options.PluginOption`).
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
    options: Sequence[PluginOption] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PluginLoadError(f"plugin name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.version, str) or not self.version:
            raise PluginLoadError(f"plugin {self.name!r}: version must be a non-empty string")
        self._check_fields()
        self._check_ownership()
        for p in [*self.pipelines.values(), *self.auto_pipelines]:
            p.plugin = self
        # a pass may serve several plugins (it names no key): errors name the first plugin built around it
        for pass_ in [*self.passes.values(), *(q for p in self.all_pipelines() for q in p.python_passes())]:
            if pass_.plugin is None:
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
        if isinstance(self.options, (str, Mapping)) or not isinstance(self.options, Sequence):
            fail("options", f"expected a sequence of PluginOptions, got {type(self.options).__name__}")
        for opt in self.options:
            if not isinstance(opt, PluginOption):
                fail("options", f"{opt!r} is a {type(opt).__name__}, expected a PluginOption")
            if not opt.name.isidentifier():
                fail("options", f"option name {opt.name!r} is not a Python identifier (a launch keyword)")

    def _check_ownership(self) -> None:
        """A pipeline's plugin is part of its cache key and names it in errors: taking over another plugin's
        pipeline would change that plugin's key and make its errors name this one."""
        for key, p in [*self.pipelines.items(), *(("auto_pipelines", p) for p in self.auto_pipelines)]:
            if p.plugin is not None and p.plugin is not self:
                raise PluginLoadError(f"plugin {self.name!r}: pipeline {p.name!r} ({key}) belongs to plugin "
                                      f"{p.plugin.name!r} already; a pipeline belongs to one plugin, so build "
                                      "another Pipeline for this one")

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
                "passes": sorted(self.passes), "ops": sorted(self.ops), "native passes": sorted(self.native_passes),
                "options": sorted(o.name for o in self.options)}


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


# --------------------------------------------------------------------------------------------
# Making a plugin from a module, a file, an object or a native library
# --------------------------------------------------------------------------------------------
def plugin_from_module(module: ModuleType, origin: str) -> Plugin:
    obj = getattr(module, "tritium_plugin", None)
    if obj is None:
        raise PluginLoadError(f"{origin}: module {module.__name__!r} defines no `tritium_plugin` "
                              "(a tritium.plugins.Plugin or a function returning one)")
    return plugin_from_object(obj, origin)


def plugin_from_object(obj: Any, origin: str) -> Plugin:
    if isinstance(obj, ModuleType):
        return plugin_from_module(obj, origin)
    if callable(obj) and not isinstance(obj, Plugin):
        try:
            obj = obj()
        except Exception as e:
            raise PluginLoadError(f"{origin}: the plugin factory raised {type(e).__name__}: {e}") from e
    if not isinstance(obj, Plugin):
        raise PluginLoadError(f"{origin}: expected a tritium Plugin, got {type(obj).__name__}")
    return obj


def import_file(path: Path, origin: str) -> ModuleType:
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


def import_name(name: str, origin: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise PluginLoadError(f"{origin}: no file, folder or module named {name!r}") from e
        raise PluginLoadError(f"{origin}: importing {name!r} raised {type(e).__name__}: {e}") from e
    except Exception as e:
        raise PluginLoadError(f"{origin}: importing {name!r} raised {type(e).__name__}: {e}") from e


def native_plugin(path: str, origin: str) -> Plugin:
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
