"""tritium.ops.matmul on the CPU without the interpreter: the per-shape heuristic, the autotune cache,
argument errors, the fake implementation (meta tensors, torch.compile tracing), the compat pieces of
the direct launch; and test_ops_matmul_interp.py run in a TRITON_INTERPRET=1 process."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import triton

torch = pytest.importorskip("torch")

import tritium.plugins as tp  # noqa: E402
from tritium import compat  # noqa: E402
from tritium.ops import gemm, plans  # noqa: E402
from tritium.ops import matmul  # noqa: E402
from tritium.plugins import Pipeline  # noqa: E402

H200_SMS = 132


@pytest.mark.parametrize("shape,kernel,config", [
    ((256, 256, 256), "small", plans.TINY_TILE),
    ((512, 512, 512), "small", plans.TINY_TILE),
    ((1024, 1024, 1024), "pingpong", plans.pingpong.SMALL),  # 64 tiles of 128x128: 128 of 64x128
    ((2048, 2048, 2048), "pingpong", plans.pingpong.LARGE),  # 256 tiles: about two per program
    ((4096, 4096, 4096), "cooperative", plans.LARGE_PLAN.config),
    ((8192, 53248, 8192), "cooperative", plans.LARGE_PLAN.config),
    ((128, 13312, 16384), "cooperative", plans.coop.SMALL),  # 104 tiles: no split-K at 79% of the SMs
    ((128, 4096, 16384), "splitk", replace(plans.splitk.DEFAULT, SPLIT_K=4)),  # 32 tiles: 128 units
])
def test_heuristic_on_the_h200(shape, kernel, config):
    assert plans.choose(*shape, H200_SMS) == plans.Plan(kernel, config)


def test_heuristic_edges():
    # An odd K keeps small problems off the cp.async path.
    assert plans.choose(256, 256, 255, H200_SMS, even=False).kernel != "small"
    # Few tiles but little work: not worth the zero-fill and the reduction.
    assert plans.split_k_slices(128, 1024, 4096, H200_SMS) == 1
    # Enough tiles: no split.
    assert plans.split_k_slices(8192, 8192, 8192, H200_SMS) == 1
    # Every K slice keeps at least SPLIT_K_MIN_STEPS steps.
    s = plans.split_k_slices(256, 256, 65536, H200_SMS)
    assert s > 1 and 65536 // 64 // s >= plans.SPLIT_K_MIN_STEPS
    assert plans.even_layout(64, 64, 64, 64) and not plans.even_layout(63, 64, 64, 64)


def test_effective_split_never_leaves_a_slice_empty():
    from tritium.kernels.gemm_splitk_hopper import effective_split
    for k_steps in range(1, 40):
        for asked in range(1, 12):
            s = effective_split(k_steps * 64, 64, asked)
            per = -(-k_steps // s)
            assert s <= asked and (s - 1) * per < k_steps, (k_steps, asked, s)


def test_candidates_start_with_the_heuristic_and_are_distinct():
    c = plans.candidates(1024, 1024, 1024, H200_SMS)
    assert c[0] == plans.choose(1024, 1024, 1024, H200_SMS) and len(c) == len(set(c))
    assert {p.kernel for p in c} == {"small", "pingpong", "cooperative", "splitk", "dualk"}
    assert "dualk" not in {p.kernel for p in plans.candidates(4096, 4096, 4096, H200_SMS)}


def test_autotune_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(tmp_path / "tune.json"))
    assert not plans.autotune_enabled() or os.environ.get("TRITIUM_GEMM_AUTOTUNE") == "1"
    key = plans.cache_key("H200", "torch.float16", "torch.float16", 1, 2, 3)
    assert plans.cached_plan(key) is None
    times = {plans.Plan("pingpong", plans.pingpong.LARGE): 2.0, plans.Plan("cooperative", plans.coop.SMALL): 1.0}

    def run(plan):
        if plan.kernel == "splitk":
            raise RuntimeError("out of resources")
        return plan

    split = plans.Plan("splitk", plans.splitk.DEFAULT)
    best = plans.tune(run, [*times, split], lambda fn: times[fn()])
    assert best == plans.Plan("cooperative", plans.coop.SMALL)
    plans.record_plan(key, best)
    plans.AUTOTUNE.forget()  # as a new process would: read the file
    assert plans.cached_plan(key) == best and type(plans.cached_plan(key).config) is plans.WSConfig
    with pytest.raises(RuntimeError, match="out of resources"):
        plans.tune(run, [split], lambda fn: fn())
    plans.set_autotune(True)
    assert plans.autotune_enabled()
    plans.set_autotune(None)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"k": 3}', '{"k": {"plan": ["pingpong", {"BM": 1}]}}'])
def test_unreadable_autotune_cache_is_set_aside_with_a_warning(tmp_path, monkeypatch, text):
    path = tmp_path / "tune.json"
    path.write_text(text)
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(path))
    plans.AUTOTUNE.forget()
    with pytest.warns(RuntimeWarning, match=f"autotune cache {re.escape(str(path))} is not a plan cache"):
        assert plans.cached_plan("k") is None
    plan = plans.Plan("cooperative", plans.coop.SMALL)
    plans.record_plan("k", plan)  # rewrites the file as a cache
    plans.AUTOTUNE.forget()
    assert plans.cached_plan("k") == plan


@pytest.mark.parametrize("where", ["folder", "under a file"])
def test_unwritable_autotune_cache_warns_once_and_tunes_in_memory(tmp_path, monkeypatch, where):
    path = tmp_path / "tune.json"
    if where == "folder":
        path.mkdir()
    else:
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "tune.json"
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(path))
    plans.AUTOTUNE.forget()
    one, two = plans.Plan("cooperative", plans.coop.SMALL), plans.Plan("pingpong", plans.pingpong.LARGE)
    with pytest.warns(RuntimeWarning, match=f"cannot write the autotune cache {re.escape(str(path))}") as seen:
        plans.record_plan("k1", one)
        plans.record_plan("k2", two)
    assert len([w for w in seen if "cannot write" in str(w.message)]) == 1
    assert (plans.cached_plan("k1"), plans.cached_plan("k2")) == (one, two)
    assert sorted(p.name for p in tmp_path.rglob("*")) == (["tune.json"] if where == "folder" else ["file"])


def test_configs_are_built_and_stored_by_field_name():
    """One keyword-only config type for every WS GEMM; the autotune cache stores it by field name."""
    assert {type(p.config) for p in plans.candidates(1024, 1024, 1024, H200_SMS) if p.kernel != "small"} == {
        plans.WSConfig}
    with pytest.raises(TypeError):
        plans.WSConfig(128, 128, 5, 2)
    assert plans.Plan("splitk", plans.splitk.DEFAULT).to_json() == ["splitk", {
        "BM": 128, "BN": 128, "NUM_STAGES": 4, "EPILOGUE_SUBTILES": 4, "BK": 64, "GROUP_SIZE_M": 8, "NUM_REGS": 232,
        "SPLIT_K": 4, "CLUSTER": 1}]
    assert plans.Plan.from_json(plans.Plan("small", plans.TINY_TILE).to_json()) == plans.Plan("small", plans.TINY_TILE)
    with pytest.raises(ValueError, match="SPLIT_K=4 needs the split-K kernel"):
        plans.coop.constexprs(plans.splitk.DEFAULT)


def test_stale_autotune_entries_are_tuned_again(tmp_path, monkeypatch):
    path = tmp_path / "tune.json"
    plan = plans.Plan("cooperative", plans.coop.SMALL)
    values = [128, 128, 64, 8, 5, 2, 232]  # coop.SMALL as tritium stored configs before named fields
    path.write_text(json.dumps({"old": ["cooperative", values],  # before stamps
                                "positional": {"plan": ["cooperative", values], "stamp": plans.tuning_stamp()},
                                "other": {"plan": plan.to_json(), "stamp": "triton 0.1, kernels 0"},
                                "same": {"plan": plan.to_json(), "stamp": plans.tuning_stamp()}}))
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(path))
    plans.AUTOTUNE.forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stale entries are no broken file
        assert [plans.cached_plan(k) for k in ("old", "positional", "other", "same")] == [None, None, None, plan]
    plans.record_plan("other", plan)
    assert json.loads(path.read_text())["other"]["stamp"] == plans.tuning_stamp()
    assert f"triton {triton.__version__}" in plans.tuning_stamp()


def test_two_processes_tuning_into_one_file_keep_every_entry(tmp_path):
    path, go = tmp_path / "tune.json", tmp_path / "go"
    script = textwrap.dedent("""
        import os, sys, time
        from tritium.ops import plans
        plan = plans.Plan("cooperative", plans.coop.SMALL)
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.01)
        for i in range(25):
            plans.record_plan(f"{sys.argv[1]}-{i}", plan)
    """)
    env = dict(os.environ, TRITIUM_GEMM_AUTOTUNE_CACHE=str(path))
    procs = [subprocess.Popen([sys.executable, "-c", script, name, str(go)], env=env) for name in "ab"]
    time.sleep(0.5)
    go.write_text("")
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(json.loads(path.read_text())) == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "tune.json", "tune.json.lock"]


def test_set_autotune_takes_a_bool_or_none():
    before = plans.autotune_enabled()
    with pytest.raises(TypeError, match="set_autotune: enabled must be True, False or None, not 'yes'"):
        plans.set_autotune("yes")
    assert plans.autotune_enabled() == before


def test_autotune_settings_are_knobs_read_on_every_call(monkeypatch, tmp_path):
    """``TRITIUM_GEMM_AUTOTUNE`` and its cache path go through ``tritium.knobs.ops``, read when used (the
    switch used to be frozen at import); ``set_autotune`` overrides the knob until it is given None."""
    from tritium import knobs
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE", "1")
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(tmp_path / "x.json"))
    assert plans.autotune_enabled() and plans.cache_path() == tmp_path / "x.json"
    with knobs.ops.scope():
        knobs.ops.gemm_autotune = False
        assert not plans.autotune_enabled()
        plans.set_autotune(True)
        assert plans.autotune_enabled()
        plans.set_autotune(None)
        assert not plans.autotune_enabled()
    assert plans.autotune_enabled()


def test_clear_caches_empties_every_call_cache():
    """One ``clear_caches()`` for the op's calls and the launch layer's (the op's used to survive it)."""
    from tritium.ops import launch
    gemm._calls[("probe", )] = launch._calls[("probe", )] = object()
    launch.clear_caches()
    assert ("probe", ) not in gemm._calls and ("probe", ) not in launch._calls


def _meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_fake_implementation_on_meta_tensors():
    c = matmul(_meta(5, 3), _meta(3, 7))
    assert c.shape == (5, 7) and c.dtype == torch.float16 and c.device.type == "meta" and c.is_contiguous()
    assert matmul(_meta(5, 3, dtype=torch.bfloat16), _meta(7, 3, dtype=torch.bfloat16).t(),
                  out_dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize("a,b,kwargs,exc,message", [
    (_meta(4, 3), _meta(4, 5), {}, ValueError, r"a is 4x3 and b is 4x5: a's columns \(K=3\) must equal b's rows"),
    (_meta(2, 4, 3), _meta(3, 5), {}, ValueError, r"a must be a 2-D matrix, got shape \(2, 4, 3\)"),
    (_meta(4, 3), _meta(3), {}, ValueError, r"b must be a 2-D matrix"),
    (_meta(4, 3, dtype=torch.float32), _meta(3, 5, dtype=torch.float32), {}, TypeError,
     r"a has dtype torch.float32; supported: float16, bfloat16"),
    (_meta(4, 3), _meta(3, 5, dtype=torch.bfloat16), {}, TypeError,
     r"b has dtype torch.bfloat16 but a has torch.float16"),
    (_meta(4, 3), _meta(3, 5), {"out_dtype": torch.int8}, TypeError, r"out_dtype torch.int8 is not supported"),
    (_meta(4, 3), _meta(3, 5), {"out_dtype": "float32"}, TypeError,
     r"out_dtype must be a torch.dtype \(torch.float16, torch.bfloat16 or torch.float32\) or None, got the str "
     r"'float32'"),
    (_meta(4, 3), _meta(3, 5), {"out_dtype": torch.float64}, TypeError,
     r"out_dtype torch.float64 is not supported with torch.float16 inputs"),
    (torch.zeros(4, 3, dtype=torch.float16), torch.zeros(3, 5, dtype=torch.float16), {}, ValueError,
     r"a is a CPU tensor; the kernels run on CUDA devices, or on the CPU only under TRITON_INTERPRET=1"),
    (torch.zeros(4, 3, dtype=torch.float16), _meta(3, 5), {}, ValueError, r"b is on meta but a is on cpu"),
])
def test_bad_input_names_the_argument(a, b, kwargs, exc, message):
    if os.environ.get("TRITON_INTERPRET") == "1" and "CPU tensor" in message:
        pytest.skip("the interpreter runs CPU tensors")
    with pytest.raises(exc, match=r"tritium\.ops\.matmul: " + message):
        matmul(a, b, **kwargs)


def test_torch_compile_fullgraph_traces_the_op():
    """Dynamo traces the op through its fake implementation with no graph break (meta tensors, so no
    kernel runs); a shape error surfaces while tracing."""
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    def f(x, y):
        return (matmul(x, y, out_dtype=torch.float32) * 2).sum(dim=1)

    torch._dynamo.reset()
    out = torch.compile(f, fullgraph=True, backend=backend)(_meta(6, 4), _meta(4, 5))
    assert out.shape == (6, ) and out.dtype == torch.float32
    assert len(calls) == 1
    targets = [n.target for n in calls[0].graph.nodes if n.op == "call_function"]
    assert torch.ops.tritium.matmul in targets or torch.ops.tritium.matmul.default in targets
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"a's columns \(K=4\) must equal b's rows"):
        torch.compile(f, fullgraph=True, backend=backend)(_meta(6, 4), _meta(3, 5))
    torch._dynamo.reset()


def test_a_type_error_while_tracing_is_not_logged_with_a_torch_traceback():
    """Torch logs every TypeError a fake implementation raises (28 lines of its own frames on stderr) before
    raising it again; the error itself is the report."""
    import logging
    records = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    logger.addHandler(handler)
    torch._dynamo.reset()
    try:
        with pytest.raises(Exception, match=r"tritium.ops.matmul: a has dtype torch.float32"):
            torch.compile(lambda x, y: matmul(x, y), fullgraph=True, backend="eager")(
                _meta(8, 8, dtype=torch.float32), _meta(8, 8, dtype=torch.float32))
    finally:
        logger.removeHandler(handler)
        torch._dynamo.reset()
    assert not [r for r in records if "TypeError" in r.getMessage()], [r.getMessage() for r in records]


def test_opcheck_schema_and_fake():
    torch.library.opcheck(torch.ops.tritium.matmul.default, (_meta(6, 4), _meta(4, 5)),
                          test_utils=("test_schema", "test_faketensor"))


# ------------------------------------------------------------------------------------------------
# compat: the pieces of a direct launch, on the installed Triton's own launcher wrapper

def test_direct_launch_unwraps_the_tensordesc_launcher():
    from types import SimpleNamespace

    from triton.backends.nvidia.driver import wrap_handle_tensordesc

    seen = []

    def raw_launch(*args):
        seen.append(args)

    signature = {"a_desc": "tensordesc<fp16[64, 64]>", "M": "i32", "BM": "constexpr"}
    meta = [{"swizzle": 3}]
    launcher = SimpleNamespace(launch=wrap_handle_tensordesc(raw_launch, signature, meta))
    compiled = SimpleNamespace(run=launcher, src=SimpleNamespace(signature=signature),
                               metadata=SimpleNamespace(tensordesc_meta=meta), function="fn", packed_metadata="pm")
    direct = compat.direct_launch(compiled)
    assert direct is not None and direct.descriptor_meta == meta and direct.function == "fn"
    assert direct.launcher.launch is raw_launch and launcher.launch is not raw_launch  # a copy was changed


def test_direct_launch_refuses_an_unknown_launcher_shape():
    from types import SimpleNamespace
    signature = {"a_desc": "tensordesc<fp16[64, 64]>"}
    compiled = SimpleNamespace(run=SimpleNamespace(launch=lambda *a: None), src=SimpleNamespace(signature=signature),
                               metadata=SimpleNamespace(tensordesc_meta=None), function=None, packed_metadata=None)
    assert compat.direct_launch(compiled) is None


def test_descriptor_args_without_tma_metadata():
    from triton.tools.tensor_descriptor import TensorDescriptor
    t = torch.zeros(32, 16, dtype=torch.float16)
    args = compat.descriptor_args(TensorDescriptor.from_tensor(t, [16, 16]), None)
    # shape, strides, padding="nan", (3.7+: round_f32_to_tf32,) shape and strides again
    tf32 = [False] if compat.TRITON_VERSION >= (3, 7) else []
    assert args[1:] == [32, 16, 16, 1, False, *tf32, 32, 16, 16, 1]


def test_pipeline_digest_follows_the_pipelines_in_effect():
    kernel = plans.VARIANTS["pingpong"].kernel
    base = compat.pipeline_digest(kernel)
    with tp.use_pipeline(Pipeline("ops-test").disable("ttgir", "ttgpuir.coalesce")):
        other = compat.pipeline_digest(kernel)
    assert other != base and compat.pipeline_digest(kernel) == base


def test_launch_hooks_are_seen():
    from triton import knobs

    def hook(*args):
        pass

    assert not compat.launch_hooks_active()
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert compat.launch_hooks_active()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert not compat.launch_hooks_active()


def test_interpreted_suite_in_own_process():
    """test_ops_matmul_interp.py needs TRITON_INTERPRET=1 before triton is imported."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process is interpreted: the module runs directly")
    here = Path(__file__).resolve().parent
    src = str(Path(gemm.__file__).resolve().parents[2])
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(here / "test_ops_matmul_interp.py")], cwd=here.parent, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]


class _FakeJit:
    """Stands in for a @triton.jit kernel on the CPU: ``kernel[grid](...)`` binds the arguments as
    JITFunction.run does (every parameter in order, descriptors as TensorDescriptors) and launches
    them through Triton's real CudaLauncher and tensor-descriptor wrapper around a recording launch."""

    def __init__(self, real):
        self.arg_names = real.arg_names
        self.received = []  # what the raw C launch got, per launch

    def record(self, *args):
        """What the raw launch got, flat: 3.8+ passes the kernel's arguments as one last sequence."""
        if isinstance(args[-1], (list, tuple)):
            args = args[:-1] + tuple(args[-1])
        self.received.append(args)

    def __getitem__(self, grid):
        from types import SimpleNamespace

        from triton.backends.nvidia.driver import CudaLauncher, wrap_handle_tensordesc
        from triton.tools.tensor_descriptor import TensorDescriptor

        def run(*args, **kwargs):
            bound = list(args) + [kwargs[n] for n in self.arg_names[len(args):]]
            signature = {n: ("tensordesc<fp16[1, 1]>" if isinstance(v, TensorDescriptor) else
                             "constexpr" if i >= len(args) else "i32") for i, (n, v) in
                         enumerate(zip(self.arg_names, bound))}
            launcher = CudaLauncher.__new__(CudaLauncher)
            launcher.__dict__.update(num_ctas=1, global_scratch_size=0, global_scratch_align=1,
                                     profile_scratch_size=0, profile_scratch_align=1,
                                     launch_cooperative_grid=False, launch_pdl=False,
                                     # 3.8+: also these (and __call__ reads the active driver, see the test)
                                     gsan_enabled=False, arg_annotations=None, kernel_signature=None,
                                     launch=wrap_handle_tensordesc(self.record, signature,
                                                                   [None] * sum(t != "i32" and t != "constexpr"
                                                                                for t in signature.values())))
            launcher(*grid, 0, "fn", "packed", None, None, None, *bound)
            return SimpleNamespace(run=launcher, function="fn", packed_metadata="packed",
                                   src=SimpleNamespace(signature=signature),
                                   metadata=SimpleNamespace(tensordesc_meta=None))
        return run


def _same(x, y):
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.data_ptr() == y.data_ptr()
    return x == y


@pytest.mark.parametrize("kernel", ["pingpong", "splitk", "small"])
def test_direct_launch_passes_what_the_jit_passes(kernel, monkeypatch):
    """The second call of a shape skips the JIT: its raw launch arguments equal the first call's, and a
    third call with new tensors gets their addresses (new descriptors) through the same cached entry."""
    from tritium.ops import launch
    variant = plans.VARIANTS[kernel]
    fake = _FakeJit(variant.kernel)
    monkeypatch.setitem(plans.VARIANTS, kernel, variant.__class__(**{**variant.__dict__, "kernel": fake}))
    monkeypatch.setattr(launch, "interpreting", lambda: False)
    monkeypatch.setattr(compat, "current_stream", lambda device: 0)
    # Triton 3.8+'s CudaLauncher.__call__ looks up the active driver (no GPU here); with no scratch to
    # allocate it uses nothing of it
    import triton
    monkeypatch.setattr(triton.runtime.driver, "_active", object())
    launch.clear_caches()
    plan = {"pingpong": plans.Plan("pingpong", plans.pingpong.SMALL), "small": plans.Plan("small", plans.SMALL_TILE),
            "splitk": plans.Plan("splitk", replace(plans.splitk.DEFAULT, SPLIT_K=2))}[kernel]

    def call(seed):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(40, 256, generator=g).half(), torch.randn(256, 24, generator=g).half()
        run = launch.call_for(plan, a, b, torch.float16)
        pa, pb, c = run.prepare(a, b)
        run.launch(pa, pb, c)
        return run, (pa, pb, c)

    run, first = call(0)
    run.launch(*run.prepare(*first[:2])[:2], first[2])
    assert len(fake.received) == 2 and len(launch._calls) == 1 and len(run.compiled) == 1
    jit_args, direct_args = fake.received
    assert len(jit_args) == len(direct_args) and all(_same(x, y) for x, y in zip(jit_args, direct_args))
    again, other = call(1)
    assert again is run and len(fake.received) == 3
    ptrs = {t.data_ptr() for t in fake.received[2] if isinstance(t, torch.Tensor)}
    assert {t.data_ptr() for t in other} <= ptrs and not {t.data_ptr() for t in first} & ptrs
    launch.clear_caches()


def test_shipped_configs_fit_shared_memory_and_fp32_outputs_get_a_shallower_ring():
    shipped = [plans.Plan("pingpong", plans.pingpong.LARGE), plans.Plan("pingpong", plans.pingpong.SMALL),
               plans.Plan("cooperative", plans.coop.LARGE), plans.Plan("cooperative", plans.coop.SMALL),
               plans.Plan("splitk", plans.splitk.DEFAULT), plans.LARGE_PLAN, plans.Plan("dualk", plans.dualk.DEFAULT)]
    # The kernels' own accounting: ping-pong 128x128 "6 x 32 KiB + 4 x 8 KiB", cooperative 128x256 "4 x 48 KiB
    # + 4 x 8 KiB", both 224 KiB.
    assert plans.shared_bytes(shipped[0], 2, 2) == plans.shared_bytes(shipped[2], 2, 2) == 224 * 1024
    for plan in shipped:
        assert plans.fit(plan, 2, 2) == plan
        wide = plans.fit(plan, 2, 4)
        assert plans.shared_bytes(wide, 2, 4) <= plans.SHARED_LIMIT and wide.kernel == plan.kernel
    assert plans.fit(shipped[0], 2, 4).config == replace(plans.pingpong.LARGE, NUM_STAGES=5)
    assert plans.fit(shipped[2], 2, 4).config == replace(plans.coop.LARGE, NUM_STAGES=3)
    assert plans.fit(shipped[3], 2, 4) == shipped[3]  # 5 x 32 KiB + 4 x 16 KiB fits
    # dual-K 64x128: "6 x 24 KiB of operands + 32 KiB of fp32 partial + 2 x 8 KiB of staging = 192 KiB"
    assert plans.shared_bytes(shipped[6], 2, 2) == 192 * 1024 and plans.fit(shipped[6], 2, 4) == shipped[6]
    assert plans.fit(plans.Plan("small", plans.SMALL_TILE), 2, 4) == plans.Plan("small", plans.SMALL_TILE)


def test_adapt_leaves_no_split_k_slice_empty():
    from tritium.kernels.gemm_splitk_hopper import DEFAULT
    for K in (1, 2, 64, 200, 25 * 64, 16384):
        for s in (2, 3, 5, 6, 8):
            plan = plans.adapt(plans.Plan("splitk", replace(DEFAULT, SPLIT_K=s)), K, 2, 2)
            steps = -(-K // DEFAULT.BK)
            if steps == 1:  # one slice: the cooperative kernel with the same tiles (no workspace to zero)
                assert plan == plans.Plan("cooperative", replace(DEFAULT, SPLIT_K=1)), (K, s)
                continue
            cfg = plan.config
            per = -(-steps // cfg.SPLIT_K)
            assert plan.kernel == "splitk" and 2 <= cfg.SPLIT_K <= s and (cfg.SPLIT_K - 1) * per < steps, (K, s)
    assert plans.adapt(plans.Plan("splitk", replace(DEFAULT, SPLIT_K=6)), 25 * 64, 2, 2).config.SPLIT_K == 5
    assert plans.adapt(plans.Plan("pingpong", plans.pingpong.LARGE), 1, 2, 2).config == plans.pingpong.LARGE


def test_layout_gives_size_one_dimensions_a_dense_stride():
    """K = 1 with B a transposed view: B is [1, N] with strides (1, 1); no row stride is ever used, so TMA
    reads it in place (its row stride must be a multiple of 16 bytes)."""
    from tritium.ops import launch
    b = torch.randn(200, 1, dtype=torch.float16).t()
    assert b.stride() == (1, 1) and launch.layout(b) == (200, 1) and launch.tma_in_place(b)
    b = torch.randn(13, 1, dtype=torch.bfloat16).t()
    assert launch.layout(b) == (16, 1) and launch.kernel_row_stride(b, True) == 16
    a = torch.randn(300, 1, dtype=torch.float16)  # [M, 1]: unit column stride, 2-byte rows: copied for TMA
    assert launch.layout(a) == (1, 1) and not launch.tma_in_place(a) and launch.kernel_row_stride(a, True) == 8
    assert not launch.tma_in_place(torch.randn(8, 16, dtype=torch.float16).t())  # a real transposed view


def test_sweep_space_respects_the_kernels_limits():
    """Every config the GPU sweep times can exist: it fits shared memory, a cooperative or split-K
    consumer owns at least 64 rows, a ping-pong consumer's accumulator is at most 128x128 fp32, a dual-K
    one 64x256 (compiled without spills in tests/tlx/test_codegen_ws_persistent.py), on a ring of at
    least 3 stages."""
    seen = {p for v in plans.SWEEP_SPACE.values() for p in v}
    for plan in seen:
        cfg = plan.config
        if plan.kernel == "small":
            assert cfg.BLOCK_SIZE_M >= 16 * cfg.num_warps
            continue
        assert plans.shared_bytes(plan, 2, 2) <= plans.SHARED_LIMIT, plan
        if plan.kernel == "pingpong":
            assert cfg.BM >= 64 and cfg.BM * cfg.BN <= 128 * 128, plan
        elif plan.kernel == "dualk":
            assert cfg.BM == 64 and cfg.BN <= 256 and cfg.NUM_STAGES >= 4 and cfg.NUM_STAGES % 2 == 0, plan
        else:
            assert cfg.BM >= 128, plan
    for shape in [(128, 13312, 16384), (8192, 8192, 8192), (2048, 2048, 2048), (1024, 1024, 1024), (256, 256, 256)]:
        c = plans.sweep_candidates(*shape, H200_SMS)
        assert c[0] == plans.choose(*shape, H200_SMS) and len(c) == len(set(c)) and 6 <= len(c) <= 20
        assert all(p.kernel != "splitk" or -(-shape[2] // 64) // p.config.SPLIT_K >= 4 for p in c)


def test_gpu_sweep_jobs():
    """scripts/gpu_gemm_sweep.py's phase 1: a check job per variant and dtype (the op, each shipped config,
    a forced split-K) over ragged shapes with both layouts of B; compile jobs on small problems that
    specialize like the real ones, each (plan, specialization) once."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "gpu_gemm_sweep.py"
    spec = importlib.util.spec_from_file_location("gpu_gemm_sweep", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    assert sweep._representative(8192, 53248, 8192) == (4096, 4096, 8192)
    assert sweep._representative(128, 5001, 513) == (128, 4105, 513)
    shapes = [(128, 13312, 16384), (4096, 4096, 4096), (8192, 8192, 8192)]
    jobs = sweep.phase1_jobs(shapes, ["fp16", "bf16"], H200_SMS)
    checks = [j for j in jobs if j["kind"] == "check"]
    assert len(checks) == 2 * 9 and {j["plan"] is None for j in checks} == {True, False}
    op = next(j for j in checks if j["plan"] is None)
    assert (300, 200, 1, True, None) in op["problems"] and (1, 1, 2, False, None) in op["problems"]
    small = next(j for j in checks if j["plan"] and j["plan"][0] == "small")
    assert all(K % 2 == 0 and N % 2 == 0 for M, N, K, _, _ in small["problems"][:-1])
    compiles = [j for j in jobs if j["kind"] == "compile" and j["dtype"] == "fp16"]
    planned = {plans.Plan.from_json(j["plan"]) for j in compiles}
    # 4096^3 and 8192^3 are one class with one specialization: their candidates compile once
    wanted = {p for s in shapes for p in plans.sweep_candidates(*s, H200_SMS)}
    assert len(compiles) == len(wanted) and len(planned) == len(wanted)


def test_a_cached_call_keeps_no_operand_alive():
    """The descriptors a Call keeps for later calls hold no tensor: the first call's operands are freed."""
    import gc
    import weakref

    from tritium.ops import launch
    plan = plans.Plan("pingpong", plans.pingpong.SMALL)
    a, b = torch.randn(40, 256).half(), torch.randn(256, 24).half()
    call = launch.Call(plan, a, b, torch.float16)
    pa, pb, c = call.prepare(a, b)
    descs = [call._host_descriptor(i, t) for i, t in enumerate((pa, pb, c))]
    assert [d.base is t for d, t in zip(descs, (pa, pb, c))] == [True] * 3
    again = call._host_descriptor(0, pa)
    assert again is not descs[0] and again.base is pa and again.strides == descs[0].strides
    refs = [weakref.ref(t) for t in (a, b, pa, pb, c)]
    del a, b, pa, pb, c, descs, again
    gc.collect()
    assert all(r() is None for r in refs)


def test_gpu_sweep_best_plan_per_class():
    """The sweep's per-class pick: the plan with the best geometric mean over every shape of the class."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "gpu_gemm_sweep.py"
    spec = importlib.util.spec_from_file_location("gpu_gemm_sweep", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    p, q = '["pingpong", [1]]', '["cooperative", [2]]'
    rows = [{"class": "large", "shape": "4096x4096x4096", "dtype": "fp16",
             "eager_ms": {"cuBLAS": 1.0, "tritium.ops.matmul": 1.1, p: 0.5, q: 0.9}},
            {"class": "large", "shape": "8192x8192x8192", "dtype": "fp16",
             "eager_ms": {"cuBLAS": 1.0, "tritium.ops.matmul": 1.0, p: 2.0, q: 0.9}},
            {"class": "small", "shape": "256x256x256", "dtype": "fp16",
             "eager_ms": {"cuBLAS": 1.0, "tritium.ops.matmul": 2.0, p: 4.0}}]
    best = sweep.best_per_class(rows)
    # p: 2x then 0.5x (geomean 1.0); q: 1.11x on both
    assert best["large"]["best_plan"] == ["cooperative", [2]] and abs(best["large"]["best_geomean"] - 1 / 0.9) < 1e-9
    assert abs(best["large"]["op_geomean"] - (1 / 1.1) ** 0.5) < 1e-9
    assert best["small"]["best_plan"] == ["pingpong", [1]] and best["small"]["shapes"] == ["256x256x256 fp16"]


def test_programmatic_dependent_launch_up_to_2048_cubed(monkeypatch):
    """Problems up to PDL_MAX_WORK launch with ``launch_pdl`` and the kernels' PDL branch together (one
    without the other would read before the previous kernel's writes are visible, or not overlap); larger
    ones and the interpreter (which cannot run griddepcontrol) without."""
    from tritium.kernels import launch as kernel_launch
    from tritium.ops import launch

    def consts(M, N, K, plan):
        a, b = torch.empty((M, K), dtype=torch.float16), torch.empty((K, N), dtype=torch.float16)
        call = launch.Call(plan, a, b, torch.float16)
        got = call._jit_args(*call.prepare(a, b))[1]
        assert got["PDL"] is got["launch_pdl"] is call.pdl
        return call.pdl

    monkeypatch.setattr(kernel_launch, "_INTERPRET", False)
    assert consts(64, 24, 256, plans.Plan("small", plans.TINY_TILE))
    assert consts(2048, 2048, 2048, plans.Plan("pingpong", plans.pingpong.LARGE))
    assert not consts(4096, 2048, 2048, plans.LARGE_PLAN)
    monkeypatch.setattr(kernel_launch, "_INTERPRET", True)
    assert not consts(64, 24, 256, plans.Plan("small", plans.TINY_TILE))
