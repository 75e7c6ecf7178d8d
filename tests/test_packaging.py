"""Fitting a user's environment: dependency ranges, the Triton check at import, what `import tritium`
loads (entry points, TRITIUM_PLUGIN_PATHS, deferred plugins such as TLX), and the CI scripts' promises."""
import os
import re
import subprocess
import sys
import textwrap
import tomllib
import warnings
from importlib import metadata
from pathlib import Path

import pytest

import tritium
import tritium.plugins as tp
from tritium import bundled
from tritium.plugins import DeferredPlugin, PluginLoadError

ROOT = Path(__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """A fresh interpreter: what `import tritium` does cannot be seen in this already-imported process."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRITIUM_")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full,
                          timeout=300)


# --------------------------------------------------------------------------------------------
# Dependencies and the version check
# --------------------------------------------------------------------------------------------
def test_dependencies_are_ranges_and_match_the_import_check():
    deps = {d.split(">")[0].split("<")[0].split("=")[0].strip(): d for d in PYPROJECT["project"]["dependencies"]}
    assert deps["triton"].replace(" ", "") == "triton>=3.6,<3.10"
    assert deps["numpy"] == "numpy", "numpy is needed (TLX interpreter) but must not be pinned"
    (low, high) = tritium.SUPPORTED_TRITON
    assert deps["triton"].endswith(f">={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}")
    assert not any(d.startswith("torch") for d in PYPROJECT["project"]["optional-dependencies"]["test"])


@pytest.mark.parametrize("version", ["3.6.0", "3.7.4", "3.8.0", "3.9.0", "3.9.1+git0123abc"])
def test_supported_triton_versions_pass(version):
    tritium._check_triton(version)


@pytest.mark.parametrize("version", ["3.5.1", "3.10.0", "4.0.0", "2.3.1"])
def test_unsupported_triton_fails_naming_both_versions(version):
    with pytest.raises(ImportError) as e:
        tritium._check_triton(version)
    assert f"Triton {version}" in str(e.value) and "3.6 to 3.9" in str(e.value)
    assert "triton>=3.6,<3.10" in str(e.value)


def test_import_fails_clearly_on_an_unsupported_triton():
    r = run_python("""
        import triton
        triton.__version__ = "3.10.0"
        import tritium
    """)
    assert r.returncode != 0
    assert "ImportError: tritium 0.1.0 supports Triton 3.6 to 3.9" in r.stderr and "Triton 3.10.0" in r.stderr


@pytest.mark.parametrize("triton_version,numpy_version,interpret,warns", [
    ("3.6.0", "2.4.1", True, True), ("3.6.0", "2.3.5", True, False), ("3.6.0", "2.4.1", False, False),
    ("3.7.0", "2.4.1", True, False)])
def test_numpy_warning_only_for_the_broken_pair(monkeypatch, triton_version, numpy_version, interpret, warns):
    monkeypatch.setattr(metadata, "version", lambda name: numpy_version if name == "numpy" else "0")
    monkeypatch.setenv("TRITON_INTERPRET", "1" if interpret else "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tritium._check_numpy_for_interpreter(triton_version)
    assert bool([w for w in caught if "numpy<2.4" in str(w.message)]) == warns


# --------------------------------------------------------------------------------------------
# Entry points: TLX and the examples, deferred
# --------------------------------------------------------------------------------------------
def test_entry_points_name_the_bundled_deferred_plugins():
    declared = PYPROJECT["project"]["entry-points"]["tritium.plugins"]
    assert set(declared) == {"tlx", "analysis", "instrumentation", "policy"}
    for name, value in declared.items():
        spec = getattr(bundled, value.split(":")[1])
        assert isinstance(spec, DeferredPlugin) and spec.name == name
    installed = {ep.name: ep.value for ep in metadata.entry_points(group="tritium.plugins")}
    assert {k: v for k, v in installed.items() if k in declared} == declared, \
        "the installed metadata is stale: reinstall tritium (pip install -e .)"


def test_import_announces_entry_points_without_importing_tlx_and_loads_env_paths(tmp_path):
    plugin = tmp_path / "envplug.py"
    plugin.write_text("from tritium.plugins import Plugin\ntritium_plugin = Plugin('envplug', '1.0')\n")
    r = run_python("""
        import sys, tritium
        import tritium.plugins as tp
        print(sorted(lp.plugin.name for lp in tp.loaded_plugins()))
        print(sorted(d.name for d, _ in tp.deferred_plugins()))
        print('tritium.tlx' in sys.modules, 'tritium.examples.analysis' in sys.modules)
        import tritium.tlx
        print([lp.origin for lp in tp.loaded_plugins() if lp.plugin.name == 'tlx'])
    """, TRITIUM_PLUGIN_PATHS=str(plugin))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "['envplug']"
    assert lines[1] == "['analysis', 'instrumentation', 'policy', 'tlx']"
    assert lines[2] == "False False"
    assert lines[3] == "['entry point tlx = tritium.bundled:tlx (registered by importing tritium.tlx)']"


def test_autoload_can_be_disabled_and_broken_plugins_only_warn(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    r = run_python("import tritium.plugins as tp; print(len(tp.loaded_plugins()), len(tp.deferred_plugins()))",
                   TRITIUM_PLUGIN_PATHS=str(broken), TRITIUM_DISABLE_PLUGIN_AUTOLOAD="1")
    assert (r.returncode, r.stdout.strip()) == (0, "0 0"), r.stderr
    r = run_python("import tritium.plugins as tp; print(len(tp.deferred_plugins()))", TRITIUM_PLUGIN_PATHS=str(broken))
    assert r.returncode == 0 and r.stdout.strip() == "4", r.stderr
    assert "importing" in r.stderr and "RuntimeError: boom" in r.stderr


def test_cli_lists_tlx_and_the_examples():
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "plugins"], capture_output=True, text=True,
                       timeout=300, env={k: v for k, v in os.environ.items() if not k.startswith("TRITIUM_")})
    assert r.returncode == 0, r.stderr
    listed = [line.split()[0] for line in r.stdout.splitlines() if not line.startswith(" ")]
    assert set(listed) >= {"tlx", "analysis", "instrumentation", "policy"}
    assert "ops: alloc_barriers" in r.stdout and "pipelines: report" in r.stdout


@pytest.fixture
def deferred_module(tmp_path, monkeypatch):
    """A module `lazyplug` offering plugin 'lazy', announced as a deferred entry point."""
    (tmp_path / "lazyplug.py").write_text(textwrap.dedent("""
        from tritium.plugins import Pipeline, Plugin
        IMPORTS = [1]
        tritium_plugin = Plugin("lazy", "1.0", pipelines={"nocoalesce": Pipeline("nocoalesce").disable(
            "ttgir", "ttgpuir.coalesce")})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = DeferredPlugin("lazy", "lazyplug")
    manager = tp.default_manager()
    manager.announce(spec, "entry point lazy = test:spec")
    yield spec
    if any(lp.plugin.name == "lazy" for lp in tp.loaded_plugins()):
        tp.unload_plugin("lazy")
    with manager._lock:
        manager._deferred.pop("lazy", None)
        manager._from_deferred.pop("lazy", None)
    sys.modules.pop("lazyplug", None)


def test_deferred_plugin_loads_on_first_use_and_returns_after_unload(deferred_module):
    assert "lazyplug" not in sys.modules
    assert "lazy" in [d.name for d, _ in tp.deferred_plugins()]
    assert tp.resolve_pipeline("lazy:nocoalesce").name == "nocoalesce"  # asking by name loads it
    assert "lazyplug" in sys.modules and "lazy" not in [d.name for d, _ in tp.deferred_plugins()]
    plugin = tp.get_plugin("lazy")
    (lp,) = [lp for lp in tp.loaded_plugins() if lp.plugin is plugin]
    assert lp.origin == "entry point lazy = test:spec"
    tp.unload_plugin("lazy")
    assert "lazy" in [d.name for d, _ in tp.deferred_plugins()]
    assert tp.get_plugin("lazy") is plugin


def test_a_same_named_plugin_stands_in_for_a_deferred_one(deferred_module, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("from tritium.plugins import Plugin\ntritium_plugin = Plugin('lazy', '9.9')\n")
    stand_in = tp.load_plugin(other)
    assert tp.get_plugin("lazy") is stand_in and "lazyplug" not in sys.modules
    tp.unload_plugin("lazy")
    assert tp.get_plugin("lazy").version == "1.0"  # the entry point's own plugin, not the stand-in


def test_deferred_module_giving_another_name_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "misnamed.py").write_text("from tritium.plugins import Plugin\ntritium_plugin = Plugin('x', '1')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    manager = tp.default_manager()
    manager.announce(DeferredPlugin("misnamed", "misnamed"), "entry point misnamed")
    try:
        with pytest.raises(PluginLoadError, match="gives a plugin named 'x', the entry point announced 'misnamed'"):
            tp.get_plugin("misnamed")
    finally:
        manager._deferred.pop("misnamed", None)
        manager._from_deferred.pop("misnamed", None)


# --------------------------------------------------------------------------------------------
# CI scripts
# --------------------------------------------------------------------------------------------
def test_ci_installs_each_triton_with_plain_pip_install():
    script = (ROOT / "scripts" / "ci_triton.sh").read_text()
    assert "--no-deps" not in script.split("set -euo pipefail")[1]
    assert 'pip install -q ".[bench]"' in script and '"triton==$VERSION"' in script
    assert not any(d.startswith("torch") for d in PYPROJECT["project"]["dependencies"])


def test_ci_runs_every_supported_triton_in_a_fresh_venv():
    """scripts/test.sh gives every minor version the dependency range admits a ci_triton.sh run: the
    compile-only suite, or the whole non-GPU suite, or (for the version of .venv, whose whole suite runs
    there) the tests of a plain install."""
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    loop = re.search(r'^for version in ([\d. ]+); do\n +bash scripts/ci_triton\.sh "\$version" --compile-only\n', test_sh,
                     re.M)
    compile_only = loop[1].split() if loop else []
    full = re.findall(r"^bash scripts/ci_triton\.sh (\d+\.\d+\.\d+)$", test_sh, re.M)
    installed = re.findall(r"^bash scripts/ci_triton\.sh (\d+\.\d+\.\d+) --installed$", test_sh, re.M)
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert installed == re.findall(r'"triton==(\d+\.\d+\.\d+)"', setup), (installed, "the version of .venv")
    assert re.search(r"^\.venv/bin/python -m pytest .*$", test_sh, re.M), "the whole suite runs in .venv"
    (low, high) = tritium.SUPPORTED_TRITON
    minors = sorted(tuple(map(int, v.split(".")[:2])) for v in compile_only + full + installed)
    assert minors == [(low[0], m) for m in range(low[1], high[1] + 1)], (compile_only, full, installed)


def test_a_source_tree_without_an_install_still_offers_the_bundled_plugins():
    """``PYTHONPATH=src`` with no install (how the GPU machine runs tritium) has no entry points:
    simulated here by an entry-point lookup that finds none."""
    import subprocess
    import sys

    code = ("import importlib.metadata as m; real = m.entry_points; "
            "m.entry_points = lambda **kw: [] if kw.get('group') == 'tritium.plugins' else real(**kw); "
            "import tritium.plugins as tp; print(sorted(o for _, o in tp.deferred_plugins())); "
            "print(tp.get_plugin('instrumentation').name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "bundled instrumentation = tritium.bundled:instrumentation (source tree)" in out.stdout
    assert out.stdout.strip().endswith("instrumentation")
