"""Finding and loading plugins: entry points, TRITIUM_PLUGIN_PATHS, explicit calls, and the errors."""
import ctypes
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import tritium.plugins as tp
from tritium import compat
from tritium.plugins import PluginLoadError, registry
from tritium.plugins.inspection import compile_kernel, pipeline_report
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
    assert plugin.contributes() == {"pipelines": ["nocoalesce"], "passes": ["touch"], "ops": ["my_op"],
                                    "native passes": [], "options": []}
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
    try:
        assert [p.name for p in loaded] == ["ep"]
        assert any(lp.origin == "entry point ep = epplugin:tritium_plugin" for lp in tp.loaded_plugins())
    finally:  # its distribution leaves sys.path with this test; conftest keeps entry-point plugins loaded
        tp.unload_plugin("ep")


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
    (lambda d: d / "native.so", {"none": "native .so plugins need Triton >= 3.7",
                                 "import": "loads native .so plugins itself, from TRITON_PLUGIN_PATHS",
                                 "api": "loading the native plugin failed: .*No such file"}[compat.NATIVE_PLUGIN_LOADER]),
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


def test_native_plugin_paths_get_a_message_where_tritium_cannot_load_them(monkeypatch):
    monkeypatch.setenv("TRITON_PLUGIN_PATHS", "/opt/x/libutlx.so")
    assert registry.native_plugin_paths() == ["/opt/x/libutlx.so"]
    if compat.NATIVE_PLUGIN_LOADER == "import":
        assert tp.discover() == []  # Triton loaded (or refused) it when it was imported
        return
    why = "native .so plugins need" if compat.NATIVE_PLUGIN_LOADER == "none" else "No such file"
    with pytest.raises(PluginLoadError, match=f"TRITON_PLUGIN_PATHS /opt/x/libutlx.so: .*{why}"):
        tp.discover()


def build_library(tmp_path, name, source, *flags):
    """Build a shared library with the system C compiler, skipping where Triton or the machine cannot."""
    if compat.NATIVE_PLUGIN_LOADER != "api":
        pytest.skip(f"Triton {compat.triton.__version__} does not let tritium load native plugins")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to build the test plugin")
    lib = tmp_path / f"{name}.so"
    subprocess.run([cc, "-shared", "-fPIC", *flags, "-o", str(lib), str(source)], check=True)
    return lib


@pytest.fixture
def native_probe(tmp_path):
    """A real Triton plugin built from tests/data/native_plugin.c (its one pass counts its calls)."""
    return build_library(tmp_path, "libtritium_probe", Path(__file__).parent / "data" / "native_plugin.c",
                         "-DAPI_VERSION=2", f'-DTRITON_VERSION="{compat.triton.__version__}"')


def test_native_plugin_loads_through_tritons_api_and_its_pass_runs(native_probe):
    plugin = tp.load_plugin(str(native_probe))
    assert plugin.name == "libtritium_probe" and plugin.native_passes == ["plugin.tritium_probe"]
    assert plugin.contributes()["native passes"] == ["plugin.tritium_probe"]
    assert compat.pass_builders_pristine()
    counter = ctypes.CDLL(str(native_probe)).tritium_probe_added
    # (StockPass checks its arguments by adding the pass to a scratch pass manager: one call of its own)
    pipeline = tp.Pipeline("probe").insert("ttgir", tp.StockPass("plugin.tritium_probe"), after="ttgpuir.coalesce")
    before = counter()
    fn, sig, const = KERNELS["add"]
    _, report = pipeline_report(fn, sig, "sm90", constexprs=const, pipeline=pipeline)
    assert counter() == before + 1  # Triton called the plugin's add-pass callback for our pipeline
    assert "plugin.tritium_probe" in [p.name for p in report.stage("ttgir").passes]
    compiles_normally()


def test_native_plugin_paths_are_loaded_by_discover(native_probe, monkeypatch):
    monkeypatch.setenv("TRITON_PLUGIN_PATHS", str(native_probe))
    (plugin,) = tp.discover()
    assert plugin.native_passes == ["plugin.tritium_probe"]
    assert [lp.origin for lp in tp.loaded_plugins() if lp.plugin is plugin] == [f"native TRITON_PLUGIN_PATHS {native_probe}"]
    assert tp.discover() == []  # already loaded


def test_a_library_that_is_not_a_plugin_is_refused(tmp_path):
    source = tmp_path / "plain.c"
    source.write_text("int not_a_plugin;\n")
    with pytest.raises(PluginLoadError, match="loading the native plugin failed: Plugin entry point not found"):
        tp.load_plugin(str(build_library(tmp_path, "plain", source)))
    compiles_normally()


@pytest.mark.parametrize("field,source,says", [
    ("passes", 'passes={"f": lambda mod, ctx: None}', "decorate the function with @mlir_pass"),
    ("pipelines", 'pipelines=[Pipeline("p")]', "expected a mapping of name -> a Pipeline, got list"),
    ("ops", 'ops={"x": 42}', "'x' is a int, expected a callable"),
    ("auto_pipelines", 'auto_pipelines=Pipeline("p")', "expected a sequence of Pipelines"),
    ("content", "content=3", "expected a string or None"),
])
def test_malformed_plugin_fails_alone_naming_its_field(tmp_path, monkeypatch, field, source, says):
    bad = write_plugin(tmp_path, "malformed", "from tritium.plugins import Plugin, Pipeline\n"
                       f"tritium_plugin = Plugin('malformed', '1', {source})\n")
    good = write_plugin(tmp_path, "wellformed")
    monkeypatch.setenv(registry.PATHS_ENV, f"{bad}:{good}")
    with pytest.warns(UserWarning, match=f"plugin 'malformed': field '{field}': .*{says}") as caught:
        tp.discover(strict=False)
    assert len(caught) == 1
    names = {lp.plugin.name for lp in tp.loaded_plugins()}
    assert "wellformed" in names and "malformed" not in names
    compiles_normally()  # the bad plugin broke nothing else


@pytest.mark.parametrize("value, why", [
    ('{"plugins": [], "pipeline": null, "key": null}', "plugins must be an object"),
    ('{"plugins": {"a": 1}, "pipeline": null, "key": null}', "plugin 'a'.*a string or null"),
    ('{"plugins": null, "pipeline": 3, "key": null}', "pipeline must be a string or null"),
    ('{"plugins": null, "pipeline": ["x"], "key": null}', "pipeline must be a string or null"),
    ('{"plugins": null, "pipeline": null, "key": {}}', "key must be a string or null"),
    ('{"plugins": 1}', "has the keys plugins, pipeline and key"),
    ("[1]", "'\\[1\\]'"),
])
def test_tritium_pipeline_of_any_shape_warns_and_import_goes_on(value, why):
    """What ``import tritium`` runs with TRITIUM_PIPELINE set: a value of the wrong shape is a warning naming
    the field, never an exception out of the import."""
    from tritium import handoff, knobs
    with knobs.plugins.scope():
        knobs.plugins.pipeline = value
        with pytest.warns(UserWarning, match=f"TRITIUM_PIPELINE not applied, compiling with no pipeline: .*{why}"):
            assert handoff.bootstrap() is None
    assert tp.active_pipeline() is None
