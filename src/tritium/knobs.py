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

from typing import Any

from triton import knobs as _triton_knobs
from triton.knobs import base_knobs

__all__ = ["plugins", "runtime", "logs", "tlx", "ops", "bench", "base_knobs"]


class _Checked:
    """Checks the type of a value set in code, naming the knob: a wrong one would fail later, far away
    (``paths = [file]`` used to fail in ``discover()`` with "'list' object has no attribute 'split'")."""
    expected = "a value"
    accepts: tuple = ()

    def check(self, value: Any) -> bool:
        return isinstance(value, self.accepts) and not (isinstance(value, bool) and bool not in self.accepts)

    def __set__(self, obj: object, value: Any) -> None:
        if not isinstance(value, _triton_knobs.Env) and not self.check(value):
            group = type(obj).__name__.removesuffix("_knobs")
            raise TypeError(f"tritium.knobs.{group}.{self.name} ({self.key}) must be {self.expected}, not "
                            f"{type(value).__name__} ({value!r})")
        super().__set__(obj, value)  # type: ignore[misc]


class env_str(_Checked, _triton_knobs.env_str):
    expected, accepts = "a str", (str,)


class env_opt_str(_Checked, _triton_knobs.env_opt_str):
    expected, accepts = "a str or None", (str, type(None))


class env_bool(_Checked, _triton_knobs.env_bool):
    expected, accepts = "a bool", (bool,)


class env_opt_bool(_Checked, _triton_knobs.env_opt_bool):
    expected, accepts = "a bool or None", (bool, type(None))


class env_positive_int(_Checked, _triton_knobs.env_int):
    expected, accepts = "a positive int", (int,)

    def check(self, value: Any) -> bool:
        return super().check(value) and value > 0


class env_positive_float(_Checked, _triton_knobs.env_base):
    """A float above 0 (Triton 3.6 has no float knob)."""
    expected, accepts = "a positive number", (int, float)

    def __init__(self, key: str, default: float) -> None:
        super().__init__(key)
        self.default = default

    def check(self, value: Any) -> bool:
        return super().check(value) and value > 0

    def get(self) -> float:
        import os
        value = os.environ.get(self.key)
        return self.default if value is None else float(value)

    def transform(self, val: Any) -> float:
        return float(val)


class plugins_knobs(base_knobs):
    """How plugins are found at ``import tritium`` (docs/plugins.md)."""
    #: Colon-separated ``.py`` files, package folders or module names to load as plugins (one string).
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
    llvm_check_timeout: env_positive_int = env_positive_int("TRITIUM_LLVM_CHECK_TIMEOUT", 120)


class logs_knobs(base_knobs):
    #: A ``logging`` level name (``info``, ``debug``...): at ``import tritium`` the ``tritium`` logger gets a
    #: stderr handler at that level. ``info`` logs, per compiled kernel, the pipelines and passes that applied.
    level: env_opt_str = env_opt_str("TRITIUM_LOG")


class tlx_knobs(base_knobs):
    """TLX compile diagnostics (docs/tlx-design.md)."""
    #: On a failing TLX compile, write the IR before and after the lowering next to the error.
    dump_ir: env_bool = env_bool("TRITIUM_TLX_DUMP_IR")
    #: Triton's ``MLIR_ENABLE_DUMP`` (``1`` or a kernel name), which Triton's C++ reads itself; a TLX
    #: compile error dumps its IR too when it is set.
    mlir_dump: env_opt_str = env_opt_str("MLIR_ENABLE_DUMP")


class ops_knobs(base_knobs):
    """The torch ops (``tritium/ops/plans.py``): read on every call that needs them, so a change takes effect
    at once."""
    #: Autotune ``tritium.ops.matmul``: time every candidate on a new problem and remember the fastest
    #: (``tritium.ops.plans.set_autotune`` overrides this for the process).
    gemm_autotune: env_bool = env_bool("TRITIUM_GEMM_AUTOTUNE")
    #: The autotune cache file (default ``~/.cache/tritium/gemm_autotune.json``).
    gemm_autotune_cache: env_opt_str = env_opt_str("TRITIUM_GEMM_AUTOTUNE_CACHE")
    #: TriMul's row centring inside the projection kernel (True) or as its own pass (False); unset, the
    #: rule ``tritium.kernels.trimul.fused_centering`` decides. Read when a call's plan is made.
    trimul_fused_centering: env_opt_bool = env_opt_bool("TRITIUM_TRIMUL_FUSED_CENTERING")


class bench_knobs(base_knobs):
    """The benchmarks (``tritium bench``)."""
    #: Seconds of torch.compile max-autotune compiles in the GEMM suite after which the remaining shapes
    #: run without it (the default keeps a run of a few shapes within 10 minutes).
    compile_budget_s: env_positive_float = env_positive_float("TRITIUM_BENCH_COMPILE_BUDGET_S", 240.0)


plugins = plugins_knobs()
runtime = runtime_knobs()
logs = logs_knobs()
tlx = tlx_knobs()
ops = ops_knobs()
bench = bench_knobs()
