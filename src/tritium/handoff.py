"""Carry this process's pipeline state into another process: as an environment variable or a task argument.

A compilation in another process (Inductor's compile workers, a ``multiprocessing`` pool, a script run
by ``subprocess``) sees the pipelines of *that* process. A :func:`spec` names what is in effect here:
the loaded plugins (each with the file or module it was loaded from, or none where the other process
finds it by itself: entry points, ``TRITIUM_PLUGIN_PATHS``), the active pipeline as ``plugin:name``,
and the resulting pipelines key. :func:`applied` reproduces it for a block and checks that the key
came out the same, so a plugin whose version or code differs there is an error, not a silent
mismatch. ``TRITIUM_PIPELINE`` (``tritium.knobs.plugins.pipeline``) holds either such a spec or a plain
``plugin:name``; ``import tritium`` applies it (:func:`bootstrap`), and :func:`environment` gives the
variables to pass to a child process.

Pipelines travel by name: one built in code and activated without a plugin has no name another
process can resolve, and :func:`spec` says so.
"""
from __future__ import annotations

import contextlib
import json
import warnings
from typing import Iterator, Optional

from . import knobs, plugins
from .plugins import Pipeline, PipelineError, PluginLoadError, TritiumError

ENV = "TRITIUM_PIPELINE"


def _source(origin: str) -> Optional[str]:
    """What to pass to ``load_plugin`` in another process for a plugin loaded from ``origin``; None for
    entry points and plugins registered in code, which that process finds (or fails to find) by name."""
    for prefix in ("native path ", "path ", "module "):
        if origin.startswith(prefix):
            return origin[len(prefix):]
    return None


def spec() -> str:
    """The pipeline state in effect for the next compilation in this thread, as a JSON string."""
    active = plugins.active_pipeline()
    if active is not None and active.plugin is None:
        raise PipelineError(f"pipeline {active.name!r} belongs to no plugin, so another process (e.g. "
                            "Inductor's compile workers) cannot name it: ship it in a tritium.plugins.Plugin "
                            "loaded from a file, module or entry point, and activate it from there")
    return json.dumps({
        "plugins": {lp.plugin.name: _source(lp.origin) for lp in plugins.loaded_plugins()},
        "pipeline": active.origin() if active is not None else None,
        "key": plugins.pipelines_key()[0],
    }, sort_keys=True)


def _match_plugins(wanted: dict[str, Optional[str]]) -> None:
    """Load and unload plugins so that exactly ``wanted`` are loaded."""
    for lp in plugins.loaded_plugins():
        if lp.plugin.name not in wanted:
            plugins.unload_plugin(lp.plugin.name)
    loaded = {lp.plugin.name for lp in plugins.loaded_plugins()}
    for name, source in wanted.items():
        if name in loaded:
            continue
        try:
            plugin = plugins.load_plugin(source) if source else plugins.get_plugin(name)
        except PluginLoadError as e:
            raise PluginLoadError(f"plugin {name!r}, loaded where the pipeline state comes from, cannot be loaded "
                                  f"here: {e}. Load it from a file or module (load_plugin('x.py'), "
                                  "TRITIUM_PLUGIN_PATHS) or an entry point, so that every process finds it") from e
        if plugin.name != name:
            raise PluginLoadError(f"{source} gives a plugin named {plugin.name!r} here, {name!r} where the "
                                  "pipeline state comes from")


def _parse(text: str) -> dict:
    if not text.lstrip().startswith("{"):
        return {"plugins": None, "pipeline": text.strip(), "key": None}
    try:
        state = json.loads(text)
    except json.JSONDecodeError as e:
        raise PipelineError(f"{ENV}: not a pipeline spec (JSON from tritium.handoff.spec()): {e}") from e
    if not isinstance(state, dict) or set(state) != {"plugins", "pipeline", "key"}:
        raise PipelineError(f"{ENV}: a pipeline spec has the keys plugins, pipeline and key; got {text[:200]!r}")
    wanted = state["plugins"]
    if wanted is not None and not isinstance(wanted, dict):
        raise PipelineError(f"{ENV}: plugins must be an object (plugin name: file, module or null) or null, "
                            f"not {type(wanted).__name__}")
    for name, source in (wanted or {}).items():
        if source is not None and not isinstance(source, str):
            raise PipelineError(f"{ENV}: plugin {name!r} must name a file or module as a string or null, "
                                f"not {type(source).__name__}")
    for field in ("pipeline", "key"):
        if state[field] is not None and not isinstance(state[field], str):
            raise PipelineError(f"{ENV}: {field} must be a string or null, not {type(state[field]).__name__}")
    return state


def _resolve(text: str) -> tuple[Optional[Pipeline], Optional[str]]:
    """Load the plugins ``text`` names; return its pipeline and the key it expects (None: any)."""
    state = _parse(text)
    if state["plugins"] is not None:
        _match_plugins(state["plugins"])
    name = state["pipeline"]
    return (plugins.resolve_pipeline(name) if name else None), state["key"]


def _check_key(expected: Optional[str]) -> None:
    key = plugins.pipelines_key()[0]
    if expected is not None and key != expected:
        raise PipelineError(f"the pipelines in effect here ({key or 'none'}) differ from those where the pipeline "
                            f"state comes from ({expected or 'none'}): a plugin's version or code differs between "
                            "the two processes")


@contextlib.contextmanager
def applied(text: str) -> Iterator[Optional[Pipeline]]:
    """Within the block (this thread or task), the pipeline state ``text`` describes: a :func:`spec`, or a
    ``plugin:name``. Plugins it names are loaded and others unloaded, for good: they are process state."""
    pipeline, expected = _resolve(text)
    with plugins.use_pipeline(pipeline):
        _check_key(expected)
        yield pipeline


def environment() -> dict[str, str]:
    """The environment variables that give a child process this thread's pipeline state at ``import tritium``."""
    return {ENV: spec()}


def bootstrap() -> Optional[Pipeline]:
    """At ``import tritium``: apply ``TRITIUM_PIPELINE`` process-wide (activate its pipeline). A spec that cannot
    be applied gives a warning, as a plugin that fails to load does, so that it cannot break every import."""
    text = knobs.plugins.pipeline
    if not text:
        return None
    try:
        pipeline, expected = _resolve(text)
        if pipeline is not None:
            plugins.activate(pipeline)
        _check_key(expected)
    except TritiumError as e:  # PipelineError, PluginLoadError
        plugins.deactivate()
        warnings.warn(f"{ENV} not applied, compiling with no pipeline: {e}", stacklevel=2)
        return None
    return pipeline
