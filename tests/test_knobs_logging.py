"""tritium.knobs (environment variables with typed defaults, scoped overrides) and logging per kernel."""
import logging
import os

import pytest
from triton import knobs as triton_knobs

import tritium
import tritium.plugins as tp
from tritium import knobs, log
from tritium.plugins import Pipeline, mlir_pass
from tritium.plugins.inspection import compile_kernel
from kernels import KERNELS


def test_knobs_read_the_environment_with_typed_defaults(monkeypatch):
    monkeypatch.delenv("TRITIUM_PLUGIN_PATHS", raising=False)
    monkeypatch.delenv("TRITIUM_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("TRITIUM_DUMP_DIR", raising=False)
    assert (knobs.plugins.paths, knobs.plugins.disable_autoload, knobs.runtime.dump_dir) == ("", False, None)
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", "a.py:b")
    monkeypatch.setenv("TRITIUM_DISABLE_PLUGIN_AUTOLOAD", "true")
    monkeypatch.setenv("TRITIUM_DUMP_DIR", "/tmp/x")
    assert (knobs.plugins.paths, knobs.plugins.disable_autoload, knobs.runtime.dump_dir) == ("a.py:b", True, "/tmp/x")


def test_layer_knobs_read_the_environment(monkeypatch):
    """The TLX, ops and benchmark settings: typed, read when used."""
    for name in ("TRITIUM_TLX_DUMP_IR", "MLIR_ENABLE_DUMP", "TRITIUM_BENCH_COMPILE_BUDGET_S"):
        monkeypatch.delenv(name, raising=False)
    from tritium.tlx.diagnostics import dump_requested
    assert (knobs.tlx.dump_ir, knobs.bench.compile_budget_s, dump_requested()) == (False, 240.0, False)
    monkeypatch.setenv("TRITIUM_BENCH_COMPILE_BUDGET_S", "12.5")
    monkeypatch.setenv("MLIR_ENABLE_DUMP", "my_kernel")
    assert (knobs.bench.compile_budget_s, knobs.tlx.mlir_dump, dump_requested()) == (12.5, "my_kernel", True)


def test_scope_restores_attributes_and_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_DUMP_DIR", "/outer")
    with knobs.runtime.scope():
        knobs.runtime.dump_dir = str(tmp_path)
        assert os.environ["TRITIUM_DUMP_DIR"] == str(tmp_path)  # child processes see the override
        assert knobs.runtime.dump_dir == str(tmp_path)
    assert knobs.runtime.dump_dir == "/outer" and os.environ["TRITIUM_DUMP_DIR"] == "/outer"


def test_plugin_paths_knob_drives_discovery(tmp_path):
    plugin = tmp_path / "knobbed.py"
    plugin.write_text("from tritium.plugins import Plugin\ntritium_plugin = Plugin('knobbed', '1')\n")
    with knobs.plugins.scope():
        knobs.plugins.paths = str(plugin)
        assert [p.name for p in tp.discover()] == ["knobbed"]


def test_dump_dir_knob_receives_a_failing_pass_input(tmp_path):
    @mlir_pass
    def explode(mod, ctx):
        raise ValueError("no")

    fn, sig, const = KERNELS["add"]
    with knobs.runtime.scope():
        knobs.runtime.dump_dir = str(tmp_path)
        with pytest.raises(tp.PassError) as e:
            compile_kernel(fn, sig, "sm90", constexprs=const,
                           pipeline=Pipeline("boom").insert("ttgir", explode, after="ttgpuir.coalesce"))
    assert e.value.dump.startswith(str(tmp_path)) and os.listdir(tmp_path)


def test_info_log_names_kernel_pipeline_and_passes(caplog, no_auto_pipelines):
    @mlir_pass
    def mark(mod, ctx):
        pass

    pipeline = Pipeline("logged").disable("ttgir", "ttgpuir.coalesce").insert("ttir", mark, at="start")
    fn, sig, const = KERNELS["add"]
    with caplog.at_level(logging.INFO, logger="tritium"), triton_knobs.compilation.scope():
        triton_knobs.compilation.always_compile = True
        compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=pipeline)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "tritium" and "logged" in r.getMessage()]
    assert line.startswith(f"kernel {fn.__name__} (cuda:90): ")
    assert "ttir [logged]: inserted python:mark" in line and "ttgir [logged]: disabled ttgpuir.coalesce" in line


def test_untouched_kernels_log_only_at_debug(caplog, no_auto_pipelines):
    fn, sig, const = KERNELS["add"]
    with caplog.at_level(logging.INFO, logger="tritium"), triton_knobs.compilation.scope():
        triton_knobs.compilation.always_compile = True
        compile_kernel(fn, sig, "sm90", constexprs=const)
    assert not [r for r in caplog.records if r.name == "tritium"]
    with caplog.at_level(logging.DEBUG, logger="tritium"):
        compile_kernel(fn, sig, "sm90", constexprs=const)  # a cache hit now
    assert any("cache hit" in r.getMessage() for r in caplog.records if r.name == "tritium")


def test_listener_chains_a_listener_set_before():
    seen = []
    with triton_knobs.compilation.scope():
        triton_knobs.compilation.listener = lambda **kw: seen.append(kw["cache_hit"])
        log.install_listener()
        assert isinstance(triton_knobs.compilation.listener, log._Listener)
        fn, sig, const = KERNELS["add"]
        compile_kernel(fn, sig, "sm90", constexprs=const)
    assert seen and isinstance(triton_knobs.compilation.listener, log._Listener)


def test_tritium_log_env_configures_a_handler(monkeypatch):
    handlers = list(log.logger.handlers)
    level = log.logger.level
    try:
        monkeypatch.setenv("TRITIUM_LOG", "debug")
        log.configure_logging()
        assert log.logger.level == logging.DEBUG
        assert any(getattr(h, "_tritium", False) for h in log.logger.handlers)
        monkeypatch.setenv("TRITIUM_LOG", "loud")
        with pytest.warns(UserWarning, match="TRITIUM_LOG='loud' is not a logging level"):
            log.configure_logging()
    finally:
        log.logger.handlers[:] = handlers
        log.logger.setLevel(level)


def test_import_installed_the_listener():
    assert isinstance(triton_knobs.compilation.listener, log._Listener)
    assert tritium.knobs is knobs


@pytest.mark.parametrize("group, name, value, says", [
    ("plugins", "paths", ["a.py"], r"tritium.knobs.plugins.paths \(TRITIUM_PLUGIN_PATHS\) must be a str, not list"),
    ("plugins", "disable_autoload", "yes", "plugins.disable_autoload .* must be a bool, not str"),
    ("plugins", "pipeline", 3, "plugins.pipeline .* must be a str or None, not int"),
    ("runtime", "dump_dir", 3, "runtime.dump_dir .* must be a str or None, not int"),
    ("runtime", "llvm_check_timeout", 0, "runtime.llvm_check_timeout .* must be a positive int, not int"),
    ("logs", "level", 10, "logs.level .* must be a str or None, not int"),
    ("tlx", "dump_ir", "1", r"tlx.dump_ir \(TRITIUM_TLX_DUMP_IR\) must be a bool, not str"),
    ("ops", "gemm_autotune", 1, r"ops.gemm_autotune \(TRITIUM_GEMM_AUTOTUNE\) must be a bool, not int"),
    ("bench", "compile_budget_s", 0, r"bench.compile_budget_s .* must be a positive number, not int"),
])
def test_knobs_check_their_type_when_set(group, name, value, says):
    from tritium import knobs
    section = getattr(knobs, group)
    before = getattr(section, name)
    with pytest.raises(TypeError, match=says):
        setattr(section, name, value)
    assert getattr(section, name) == before
