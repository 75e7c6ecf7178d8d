"""tritium's plugin system: load plugins, edit any stage's passes, per kernel, with correct caching.

Nothing here knows about TLX or any other plugin; see ``docs/plugins.md`` for a tour.
"""
from __future__ import annotations

from .. import compat
from ..compat import parse_module
from .activation import activate, active_pipeline, bind, bound_pipeline, deactivate, effective_pipelines, \
    pipelines_key, resolve_pipeline, use_pipeline
from .errors import PassError, PipelineError, PluginLoadError, TritiumError
from .passes import PythonPass, StockPass, mlir_pass, text_pass
from .pipeline import Pipeline
from .registry import DeferredPlugin, Plugin, deferred_plugins, discover, get_plugin, load_deferred, load_plugin, \
    loaded_plugins, register, unload_plugin
from .runner import CompileReport, StageContext, apply_pipelines


def enable() -> None:
    """Install tritium's stages hook (idempotent).  With no pipeline in effect it changes nothing."""
    compat.install_stages_hook(apply_pipelines, pipelines_key)


def disable() -> None:
    """Remove tritium's hook and restore Triton's key functions and any hook that was there before."""
    compat.uninstall_stages_hook()


enable()

__all__ = [
    "Plugin", "Pipeline", "StockPass", "PythonPass", "mlir_pass", "text_pass", "StageContext", "CompileReport",
    "load_plugin", "register", "unload_plugin", "discover", "loaded_plugins", "get_plugin",
    "DeferredPlugin", "deferred_plugins", "load_deferred",
    "activate", "deactivate", "use_pipeline", "bind", "bound_pipeline", "active_pipeline", "effective_pipelines",
    "pipelines_key", "resolve_pipeline", "enable", "disable",
    "TritiumError", "PluginLoadError", "PipelineError", "PassError", "parse_module",
]
