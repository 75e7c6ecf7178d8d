"""Finding and loading plugins: entry points, TRITIUM_PLUGIN_PATHS, explicit calls, and the errors."""
import textwrap

import pytest

import tritium.plugins as tp
from tritium import compat
from tritium.plugins import PluginLoadError, registry
from tritium.plugins.inspection import compile_kernel
from kernels import KERNELS

PLUGIN_SOURCE = textwrap.dedent('''
    from tritium.plugins import Plugin, Pipeline, mlir_pass

    @mlir_pass
    def touch(mod, ctx):
        pass

    tritium_plugin = Plugin("{name}", "1.2.3", passes={{"touch": touch}},
                            pipelines={{"nocoalesce": Pipeline("nocoalesce").disable("ttgir", "ttgpuir.coalesce")}},
                            ops={{"my_op": len}})
''')


def write_plugin(folder, name, source=None):
    path = folder / f"{name}.py"
    path.write_text(source if source is not None else PLUGIN_SOURCE.format(name=name))
    return path


def compiles_normally():
    fn, sig, const = KERNELS["add"]
    assert compile_kernel(fn, sig, "sm90", constexprs=const).asm["cubin"]
    assert compat.pass_builders_pristine() and compat.stages_hook_installed()


def test_load_from_file_and_list(tmp_path):
    plugin = tp.load_plugin(write_plugin(tmp_path, "filed"))
    (lp,) = [lp for lp in tp.loaded_plugins() if lp.plugin is plugin]
    assert (plugin.name, plugin.version) == ("filed", "1.2.3")
    assert lp.origin == f"path {tmp_path / 'filed.py'}"
    assert plugin.contributes() == {"pipelines": ["nocoalesce"], "passes": ["touch"], "ops": ["my_op"]}
    assert plugin.passes["touch"].plugin == "filed"


def test_load_package_folder_and_module_name(tmp_path, monkeypatch):
    pkg = tmp_path / "pkgplugin"
    pkg.mkdir()
    write_plugin(pkg, "__init__", PLUGIN_SOURCE.format(name="pkg"))
    assert tp.load_plugin(str(pkg)).name == "pkg"
    write_plugin(tmp_path, "modplugin", PLUGIN_SOURCE.format(name="mod"))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert tp.load_plugin("modplugin").name == "mod"
    assert any(lp.origin == "module modplugin" for lp in tp.loaded_plugins())


def test_env_paths_are_discovered(tmp_path, monkeypatch):
    a, b = write_plugin(tmp_path, "envone"), write_plugin(tmp_path, "envtwo")
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", f"{a}:{b}")
    names = [p.name for p in tp.discover()]
    assert names == ["envone", "envtwo"]
    assert tp.discover() == []  # already loaded ones are skipped


def test_entry_points_are_discovered(tmp_path, monkeypatch):
    write_plugin(tmp_path, "epplugin", PLUGIN_SOURCE.format(name="ep"))
    dist = tmp_path / "epplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: epplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tritium.plugins]\nep = epplugin:tritium_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = tp.discover()
    assert [p.name for p in loaded] == ["ep"]
    assert any(lp.origin == "entry point ep = epplugin:tritium_plugin" for lp in tp.loaded_plugins())


def test_pipeline_of_a_plugin_by_name(tmp_path):
    tp.load_plugin(write_plugin(tmp_path, "named"))
    assert tp.resolve_pipeline("named:nocoalesce").plugin.name == "named"
    with pytest.raises(PluginLoadError, match="known: .*named:nocoalesce"):
        tp.resolve_pipeline("nope")


@pytest.mark.parametrize("make,match", [
    (lambda d: d / "missing.py", "neither a .py file nor a package folder"),
    (lambda d: "no_such_plugin_module_xyz", "no file, folder or module named 'no_such_plugin_module_xyz'"),
    (lambda d: write_plugin(d, "empty", "x = 1\n"), "defines no `tritium_plugin`"),
    (lambda d: write_plugin(d, "raising", "raise ValueError('broken on purpose')\n"),
     "importing .*raising.py raised ValueError: broken on purpose"),
    (lambda d: write_plugin(d, "wrongtype", "tritium_plugin = 42\n"), "expected a tritium Plugin, got int"),
    (lambda d: write_plugin(d, "factory", "def tritium_plugin():\n    raise RuntimeError('no')\n"),
     "plugin factory raised RuntimeError: no"),
    (lambda d: d / "native.so", "native .so plugins need Triton >= 3.7"),
])
def test_bad_plugins_give_clear_errors_and_triton_keeps_working(tmp_path, make, match):
    before = list(tp.loaded_plugins())
    with pytest.raises(PluginLoadError, match=match):
        tp.load_plugin(make(tmp_path))
    assert tp.loaded_plugins() == before
    compiles_normally()


def test_duplicate_plugin_names_are_refused(tmp_path):
    first = tp.load_plugin(write_plugin(tmp_path, "dup"))
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(PluginLoadError, match="duplicate plugin name 'dup': already loaded from path .*dup.py"):
        tp.load_plugin(write_plugin(other, "dup"))
    assert tp.get_plugin("dup") is first
    assert tp.load_plugin(first) is first  # the very same object again is fine


def test_discover_collects_errors_without_stopping(tmp_path, monkeypatch):
    good = write_plugin(tmp_path, "good")
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", f"{tmp_path / 'gone.py'}:{good}")
    with pytest.warns(UserWarning, match="gone.py"):
        loaded = tp.discover(strict=False)
    assert [p.name for p in loaded] == ["good"]


def test_native_plugin_paths_get_a_message_on_36(monkeypatch):
    monkeypatch.setenv("TRITON_PLUGIN_PATHS", "/opt/x/libutlx.so")
    if compat.NATIVE_HOOK_PROTOCOL:
        assert tp.discover() == []
    else:
        with pytest.raises(PluginLoadError, match="TRITON_PLUGIN_PATHS: /opt/x/libutlx.so: native .so plugins need"):
            tp.discover()
    assert registry.native_plugin_paths() == ["/opt/x/libutlx.so"]
