"""tritium's settings, in the style of ``triton.knobs``: each one an environment variable with a typed default.

Read a setting as an attribute (``tritium.knobs.plugins.paths``); set it in code to override the
environment (``tritium.knobs.plugins.paths = "a.py"``, which also updates ``os.environ`` so child
processes see it, as Triton's knobs do); ``del`` it to fall back to the environment. Scoped overrides
use the group's context manager, which restores both the attributes and the environment::

    with tritium.knobs.runtime.scope():
        tritium.knobs.runtime.dump_dir = "/tmp/dumps"
        ...

The descriptors are Triton's own (``triton.knobs.env_str`` and friends, the same on Triton 3.6-3.9),
so values parse exactly as Triton's do (``1/true/on/yes`` for booleans).
"""
from __future__ import annotations

from triton.knobs import base_knobs, env_bool, env_int, env_opt_str, env_str

__all__ = ["plugins", "runtime", "logs", "base_knobs"]


class plugins_knobs(base_knobs):
    """How plugins are found at ``import tritium`` (docs/plugins.md)."""
    #: Colon-separated ``.py`` files, package folders or module names to load as plugins.
    paths: env_str = env_str("TRITIUM_PLUGIN_PATHS", "")
    #: Triton's own list of native ``.so`` plugins; tritium loads them where Triton leaves that to the caller (3.9+).
    native_paths: env_str = env_str("TRITON_PLUGIN_PATHS", "")
    #: Skip loading entry points and ``paths`` at ``import tritium`` (as ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``).
    disable_autoload: env_bool = env_bool("TRITIUM_DISABLE_PLUGIN_AUTOLOAD")
    #: A pipeline to activate at ``import tritium``: ``plugin:name``, or the state of another process as
    #: ``tritium.handoff.spec()`` writes it (plugins to load, pipeline, expected key; see tritium/handoff.py).
    pipeline: env_opt_str = env_opt_str("TRITIUM_PIPELINE")


class runtime_knobs(base_knobs):
    #: Where a failing Python pass's input IR is written (default: ``$TMPDIR/tritium-dumps``).
    dump_dir: env_opt_str = env_opt_str("TRITIUM_DUMP_DIR")
    #: Seconds to wait for the helper process that checks the LLVM IR a Python ``llir`` pass returns.
    llvm_check_timeout: env_int = env_int("TRITIUM_LLVM_CHECK_TIMEOUT", 120)


class logs_knobs(base_knobs):
    #: A ``logging`` level name (``info``, ``debug``...): at ``import tritium`` the ``tritium`` logger gets a
    #: stderr handler at that level. ``info`` logs, per compiled kernel, the pipelines and passes that applied.
    level: env_opt_str = env_opt_str("TRITIUM_LOG")


plugins = plugins_knobs()
runtime = runtime_knobs()
logs = logs_knobs()
