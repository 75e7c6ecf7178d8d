"""tritium.torch_integration and tritium.handoff on the CPU: pipelines reach jobs in Inductor's real compile
worker pool (a subprocess sidecar and its workers), ``TRITIUM_PIPELINE`` activates a pipeline at ``import
tritium`` in a child process, Inductor's FX graph cache key follows the pipelines key, and the
torch-private names the integration uses still have the shape it expects (the GPU test,
tests/gpu/test_inductor_pipeline_gpu.py, compiles a model end to end)."""
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import torch._inductor.async_compile as async_compile  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402

import tritium.plugins as tp  # noqa: E402
from tritium import handoff, torch_integration  # noqa: E402
from tritium.plugins import Pipeline, PipelineError, PluginLoadError  # noqa: E402

HERE = Path(__file__).resolve().parent
SRC = str(Path(torch_integration.__file__).resolve().parents[1])
MARK_KEY_PREFIX = "torchmark:mark#"


@pytest.fixture
def mark_plugin():
    """The test plugin, loaded by module name (tests/ is on sys.path here, and so in Inductor's workers)."""
    plugin = tp.load_plugin("torch_mark_plugin")
    yield plugin


def _child_env(**extra):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, str(HERE)]), **extra}


# ------------------------------------------------------------------------------------------------
# compat: the torch-private names torch_integration uses

def test_torch_private_names_have_the_expected_shape():
    """Fails if torch changes what tritium/torch_integration.py's compat section relies on."""
    AsyncCompile = async_compile.AsyncCompile
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.compile_worker.subproc_pool import SubprocPool
    from torch._inductor.custom_graph_pass import CustomGraphPass

    torch_integration.uninstall()
    try:
        raw = AsyncCompile.__dict__["process_pool"]
        assert isinstance(raw, staticmethod) and callable(raw.__func__.cache_clear)
        assert list(inspect.signature(AsyncCompile.__dict__["triton"]).parameters)[:3] == ["self", "kernel_name",
                                                                                           "source_code"]
    finally:
        torch_integration.install()
    # the pool's submit takes the job and its arguments, as concurrent.futures does
    assert list(inspect.signature(SubprocPool.submit).parameters) == ["self", "job_fn", "args", "kwargs"]
    # Inductor submits its Triton jobs through AsyncCompile.process_pool(), and clears it at shutdown
    assert "self.process_pool().submit(" in inspect.getsource(AsyncCompile.triton)
    assert "AsyncCompile.process_pool.cache_clear()" in inspect.getsource(async_compile)
    assert "PyCodeCache.load(source_code)" in inspect.getsource(
        __import__("torch._inductor.codecache", fromlist=["x"])._load_triton_kernel_from_source)
    assert callable(PyCodeCache.cache_clear) and hasattr(PyCodeCache, "modules_no_attr")
    assert hasattr(inductor_config, "post_grad_custom_post_pass") and hasattr(CustomGraphPass, "uuid")


def test_installed_when_inductor_is_imported():
    """``import tritium`` ran before Inductor's async_compile was imported here (conftest imports tritium), and
    the import hook installed the integration then."""
    assert torch_integration.installed()
    assert getattr(async_compile.AsyncCompile.process_pool, "_tritium_wrapped", False)
    assert isinstance(inductor_config.post_grad_custom_post_pass, torch_integration._key_pass_type())


@pytest.mark.parametrize("order", ["tritium-first", "inductor-first"])
def test_installed_in_either_import_order(order):
    """tritium first: it imports no torch, and its hook installs when Inductor's async_compile is imported;
    Inductor first: ``import tritium`` installs at once."""
    code = {"tritium-first": "import sys, tritium; assert 'torch' not in sys.modules, 'torch imported'; "
                             "import torch._inductor.async_compile as a; ",
            "inductor-first": "import torch._inductor.async_compile as a, tritium; "}[order]
    code += ("from tritium import torch_integration as t; assert t.installed(); "
             "assert a.AsyncCompile.process_pool._tritium_wrapped")
    proc = subprocess.run([sys.executable, "-c", code], env=_child_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_uninstall_restores_inductor():
    before = inductor_config.post_grad_custom_post_pass
    torch_integration.uninstall()
    try:
        assert not torch_integration.installed()
        assert inductor_config.post_grad_custom_post_pass is before.inner
        assert not getattr(async_compile.AsyncCompile.process_pool, "_tritium_wrapped", False)
        assert not getattr(async_compile.AsyncCompile.triton, "_tritium_wrapped", False)
    finally:
        torch_integration.install()
    assert torch_integration.installed() and isinstance(inductor_config.post_grad_custom_post_pass,
                                                        torch_integration._key_pass_type())


# ------------------------------------------------------------------------------------------------
# the compile workers

def test_jobs_in_inductors_worker_pool_see_the_parent_pipeline(mark_plugin):
    """Jobs go through Inductor's own pool (SubprocPool: a sidecar process and its forked workers), which
    was started before any pipeline was active: each job sees the pipeline in effect when it was submitted,
    from activate() or use_pipeline(), and nothing once deactivated; a Triton compilation in a worker runs
    the pipeline's pass (its PTX carries the mark, with the worker's pid)."""
    import torch_mark_plugin as m

    with inductor_config.patch(compile_threads=2):
        pool = async_compile.AsyncCompile.process_pool()
        try:
            pid, key, active = pool.submit(m.worker_state).result(timeout=300)
            assert pid != os.getpid() and key == tp.pipelines_key()[0] and active is None
            tp.activate("torchmark:mark")
            pid, key, active = pool.submit(m.worker_state).result(timeout=300)
            assert MARK_KEY_PREFIX in key and key == tp.pipelines_key()[0] and active == "torchmark:mark"
            # a Triton compilation in the worker runs the pipeline's pass there
            marks = [line for line in pool.submit(m.compile_ptx).result(timeout=300).splitlines()
                     if line.startswith(m.MARK)]
            assert len(marks) == 1 and int(marks[0][len(m.MARK):]) != os.getpid()
            tp.deactivate()
            assert pool.submit(m.worker_state).result(timeout=300)[1:] == (tp.pipelines_key()[0], None)
            assert m.MARK not in pool.submit(m.compile_ptx).result(timeout=300)
            with tp.use_pipeline("torchmark:mark"):
                assert pool.submit(m.worker_state).result(timeout=300)[2] == "torchmark:mark"
            with tp.use_pipeline(Pipeline("adhoc")):  # no name a worker could resolve: refused when submitted
                with pytest.raises(PipelineError, match=r"pipeline 'adhoc' belongs to no plugin"):
                    pool.submit(m.worker_state)
        finally:
            async_compile.shutdown_compile_workers()


def test_a_pipeline_without_plugin_cannot_reach_a_worker():
    tp.activate(Pipeline("adhoc"))
    with pytest.raises(PipelineError, match=r"pipeline 'adhoc' belongs to no plugin, so another process"):
        handoff.spec()


def test_run_in_worker_checks_the_key(mark_plugin):
    """A worker whose plugin differs (here: a spec claiming another key) raises instead of compiling."""
    tp.activate("torchmark:mark")
    state = json.loads(handoff.spec())
    assert state["plugins"]["torchmark"] == "torch_mark_plugin" and state["pipeline"] == "torchmark:mark"
    tp.deactivate()
    assert torch_integration.run_in_worker(json.dumps(state), lambda: tp.pipelines_key()[0]) == state["key"]
    state["key"] = MARK_KEY_PREFIX + "0" * 16
    with pytest.raises(PipelineError, match=r"differ from those where the pipeline state comes from"):
        torch_integration.run_in_worker(json.dumps(state), lambda: None)


def test_a_plugin_the_worker_cannot_find_is_an_error():
    state = json.loads(handoff.spec())
    state["plugins"]["nowhere"] = None
    with pytest.raises(PluginLoadError, match=r"plugin 'nowhere', loaded where the pipeline state comes from, "
                                              r"cannot be loaded here"):
        with handoff.applied(json.dumps(state)):
            pass


def test_loaded_kernels_are_forgotten_when_the_key_changes(mark_plugin):
    from torch._inductor.codecache import PyCodeCache

    torch_integration._before_triton_compile()
    PyCodeCache.modules_no_attr["sentinel"] = object()
    torch_integration._before_triton_compile()  # same key: kept
    assert "sentinel" in PyCodeCache.modules_no_attr
    with tp.use_pipeline("torchmark:mark"):
        torch_integration._before_triton_compile()
    assert "sentinel" not in PyCodeCache.modules_no_attr


# ------------------------------------------------------------------------------------------------
# TRITIUM_PIPELINE at import

@pytest.mark.parametrize("how", ["spec", "name"])
def test_env_bootstrap_activates_the_pipeline_at_import(mark_plugin, how):
    tp.activate("torchmark:mark")
    env = (handoff.environment() if how == "spec"
           else {"TRITIUM_PIPELINE": "torchmark:mark", "TRITIUM_PLUGIN_PATHS": "torch_mark_plugin"})
    code = "import tritium.plugins as tp; print(tp.active_pipeline().origin(), tp.pipelines_key()[0])"
    proc = subprocess.run([sys.executable, "-c", code], env=_child_env(**env), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    origin, key = proc.stdout.split()
    # the child loads what the spec names (all of this process's plugins) or, by name, only torchmark
    assert origin == "torchmark:mark"
    assert key == tp.pipelines_key()[0] if how == "spec" else key == tp.pipelines_key()[0].split("+")[-1]


def test_env_bootstrap_warns_for_an_unknown_pipeline():
    code = "import tritium.plugins as tp; print(tp.active_pipeline())"
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code],
                          env=_child_env(TRITIUM_PIPELINE="nosuch:pipeline"), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "None", proc.stderr[-3000:]
    assert "TRITIUM_PIPELINE not applied, compiling with no pipeline" in proc.stderr
    assert "'nosuch:pipeline'" in proc.stderr


# ------------------------------------------------------------------------------------------------
# Inductor's cache key

def test_fx_graph_cache_key_follows_the_pipeline(mark_plugin):
    from torch._inductor.codecache import compiled_fx_graph_hash

    gm = torch.fx.symbolic_trace(lambda x: torch.nn.functional.gelu(x) + 1)
    inputs = [torch.randn(4, 4)]

    def key():
        return compiled_fx_graph_hash(gm, inputs, {}, [])[0]

    bare = key()
    assert key() == bare
    with tp.use_pipeline("torchmark:mark"):
        marked = key()
    assert marked != bare
    tp.activate("torchmark:mark")
    assert key() == marked


def test_key_pass_keeps_the_pass_it_replaced():
    """A pass that was in the slot still runs, its uuid joins the key, and one with no uuid still makes Inductor
    skip its cache (uuid None), as without tritium."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    seen = []

    class Mine(CustomGraphPass):
        def __call__(self, graph):
            seen.append(graph)

        def uuid(self):
            return "mine-1"

    key_pass = torch_integration._key_pass_type()(Mine())
    key_pass("graph")
    key = tp.pipelines_key()[0]
    assert seen == ["graph"] and key_pass.uuid() == ("tritium.pipelines", key, ("mine-1", ), "")
    assert torch_integration._key_pass_type()(lambda graph: None).uuid() is None
    assert torch_integration._key_pass_type()(None).uuid() == ("tritium.pipelines", key, (), "")


def test_the_mark_pipeline_marks_ptx(mark_plugin):
    """The pipeline the GPU test activates ends a kernel's PTX with its mark (compiled for sm_90 on the CPU)."""
    import torch_mark_plugin as m
    from kernels import add_kernel
    from tritium.plugins.inspection import compile_kernel

    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    marked = compile_kernel(add_kernel, sig, "cuda:90", constexprs={"BLOCK": 128}, pipeline="torchmark:mark")
    assert m.MARK in marked.asm["ptx"]  # with the pid of whichever process compiled it first: an earlier test's
    # compile workers share this process's Triton cache
    plain = compile_kernel(add_kernel, sig, "cuda:90", constexprs={"BLOCK": 128}, pipeline=None)
    assert m.MARK not in plain.asm["ptx"]


@pytest.mark.skipif(not __import__("shutil").which("g++"), reason="Inductor's CPU backend needs a C++ compiler")
def test_inductor_reuses_a_compiled_graph_only_under_its_own_pipeline(mark_plugin, tmp_path, monkeypatch):
    """End to end on the CPU backend: Inductor's FX graph cache hits under the pipeline a graph was compiled
    under, and misses under another."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32))
    x = torch.randn(4, 16)

    def compile_and_count():
        torch._dynamo.reset()
        counters.clear()
        with torch.no_grad():
            torch.testing.assert_close(torch.compile(model)(x), model(x))
        return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]

    try:
        tp.activate("torchmark:mark")
        assert compile_and_count() == (0, 1)
        assert compile_and_count() == (1, 0)
        tp.deactivate()
        assert compile_and_count() == (0, 1)
        tp.activate("torchmark:mark")
        assert compile_and_count() == (1, 0)
    finally:
        torch._dynamo.reset()
