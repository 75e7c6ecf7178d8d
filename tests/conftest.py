import os
import sys
import tempfile

# Compile into a private cache so tests never reuse binaries from another run or another venv. Each
# pytest-xdist worker (scripts/test.sh runs two) gets its own folder in it: the workers inherit the
# controller's variable, and a shared cache would let one worker's compilation stand in for the other's in
# an order that changes from run to run (a test that watches a pass run would see a cache hit).
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="tritium-test-cache-"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TRITON_CACHE_DIR"] = os.path.join(os.environ["TRITON_CACHE_DIR"], os.environ["PYTEST_XDIST_WORKER"])
sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

import tritium.plugins as tp  # noqa: E402
from tritium import compat  # noqa: E402

import bare_triton  # noqa: E402

if not bare_triton.INTERPRETED:  # an interpreted process compiles nothing
    bare_triton.REFERENCE = bare_triton.compile_reference()  # before any test can disturb anything
    bare_triton.REFERENCE_PTXAS = bare_triton.ptxas_in_effect()
    bare_triton.count_caught_errors()


def pytest_collection_modifyitems(config, items):
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def compiles_as_bare_triton_after_errors():
    """After a test that caught an error, an unrelated kernel compiles as bare Triton's, in this process.
    Set up before (so checked after) ``clean_plugin_state``: a pipeline a test activated is not a leftover."""
    before = bare_triton.ErrorCount.caught
    yield
    if bare_triton.ErrorCount.caught != before:
        bare_triton.check_bare(after=bare_triton.ErrorCount.last)


@pytest.fixture(autouse=True)
def clean_plugin_state():
    """Each test starts and ends with no active pipeline and pristine Triton bindings."""
    tp.deactivate()
    before = {lp.plugin.name for lp in tp.loaded_plugins()}
    yield
    tp.deactivate()
    for lp in tp.loaded_plugins():
        # Entry-point plugins loaded on first use (TLX by `import tritium.tlx`) stay: they are the environment's. In a
        # source tree without an install (PYTHONPATH=src, as on the GPU machine) TLX's origin is "bundled ...": it
        # registers itself once per process, at import, so unloading it would leave later tests without TLX.
        if lp.plugin.name not in before and not lp.origin.startswith(("entry point", "bundled")):
            tp.unload_plugin(lp.plugin.name)
    assert compat.pass_builders_pristine(), "a test left Triton's pass builders patched"
    assert compat.stages_hook_installed(), "a test left tritium's stages hook removed"


@pytest.fixture
def no_auto_pipelines():
    """Unload plugins with automatic pipelines (TLX, once imported) for the test, so nothing is in effect."""
    unloaded = [lp for lp in tp.loaded_plugins() if lp.plugin.auto_pipelines]
    for lp in unloaded:
        tp.unload_plugin(lp.plugin.name)
    yield
    for lp in unloaded:
        tp.register(lp.plugin, lp.origin)
