"""tritium's plugin system: load plugins, edit any stage's passes, per kernel, with correct caching.

The functions here act on the default :class:`PluginManager` (:func:`default_manager`), which owns
the loaded plugins, the pipeline in effect and tritium's stages hook, installed at import.  Nothing
here knows about TLX or any other plugin; see ``docs/plugins.md`` for a tour.
"""
from __future__ import annotations

from ..compat import parse_module
from .errors import (ArgumentError, KernelCompileError, PassError, PassFingerprintWarning, PipelineError,
                     PluginLoadError, StageError, TritiumError)
from .manager import PipelineLike, PluginManager, bound_pipeline, default_manager, enabled_manager
from .passes import PassStats, PythonPass, StockPass, mlir_pass, text_pass
from .options import OptionError, PluginOption
from .pipeline import Pipeline
from .registry import DeferredPlugin, Plugin
from .runner import CompileReport, StageContext

_default = default_manager()
load_plugin = _default.load_plugin
register = _default.register
unload_plugin = _default.unload_plugin
discover = _default.discover
loaded_plugins = _default.loaded_plugins
get_plugin = _default.get_plugin
deferred_plugins = _default.deferred_plugins
load_deferred = _default.load_deferred
activate = _default.activate
deactivate = _default.deactivate
use_pipeline = _default.use_pipeline
bind = _default.bind
active_pipeline = _default.active_pipeline
effective_pipelines = _default.effective_pipelines
pipelines_key = _default.pipelines_key
refresh = _default.refresh
resolve_pipeline = _default.resolve_pipeline
recording = _default.recording
enable = _default.enable
disable = _default.disable

enable()

__all__ = [
    "Plugin", "Pipeline", "StockPass", "PythonPass", "mlir_pass", "text_pass", "StageContext", "CompileReport",
    "PluginManager", "default_manager", "enabled_manager", "PipelineLike",
    "load_plugin", "register", "unload_plugin", "discover", "loaded_plugins", "get_plugin",
    "DeferredPlugin", "deferred_plugins", "load_deferred",
    "activate", "deactivate", "use_pipeline", "bind", "bound_pipeline", "active_pipeline", "effective_pipelines",
    "pipelines_key", "refresh", "resolve_pipeline", "recording", "enable", "disable",
    "TritiumError", "PluginLoadError", "PipelineError", "StageError", "PassError", "KernelCompileError",
    "ArgumentError", "OptionError", "PluginOption", "parse_module", "PassStats", "PassFingerprintWarning",
]
