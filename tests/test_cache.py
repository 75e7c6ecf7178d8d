"""Cache keys follow the effective pipeline: A, B, back to A reuses A; editing pass code recompiles."""
import os
import subprocess
import sys
import textwrap

import pytest
import triton
from triton._C.libtriton import ir

import tritium.plugins as tp
from tritium.plugins import Pipeline, mlir_pass
from tritium.plugins.inspection import compile_kernel
from kernels import KERNELS, FakeDriver

ADD = KERNELS["add"]


def mark(value):
    @mlir_pass(name=f"mark_{value}")
    def set_mark(mod, ctx):
        mod.set_attr("tritium.mark", ir.builder(mod.context).get_int32_attr(value))
    return Pipeline(f"mark{value}").insert("ttgir", set_mark, at="end")


class Listener:
    def __init__(self):
        self.events = []

    def __call__(self, *, src, metadata, metadata_group, times, cache_hit):
        self.events.append(cache_hit)


@pytest.fixture
def listener(monkeypatch, tmp_path):
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    lst = Listener()
    monkeypatch.setattr(triton.knobs.compilation, "listener", lst)
    return lst


def compile_add():
    fn, sig, const = ADD
    return compile_kernel(fn, sig, "sm90", constexprs=const)


def test_switching_pipelines_reuses_the_right_binary(listener):
    a, b = mark(1), mark(2)
    tp.activate(a)
    ka = compile_add()
    tp.activate(b)
    kb = compile_add()
    tp.activate(a)
    ka2 = compile_add()
    assert listener.events == [False, False, True]
    assert ka2.hash == ka.hash != kb.hash
    assert "tritium.mark = 1" in ka2.asm["ttgir"] and "tritium.mark = 2" in kb.asm["ttgir"]
    tp.deactivate()
    bare = compile_add()
    assert bare.hash not in (ka.hash, kb.hash) and listener.events[-1] is False


def test_changing_pass_code_recompiles(listener):
    tp.activate(mark(1))
    first = compile_add()
    tp.activate(mark(1))  # same code, new objects: same key
    assert compile_add().hash == first.hash and listener.events == [False, True]
    tp.activate(mark(3))  # the pass's closure differs
    assert compile_add().hash != first.hash


def test_plugin_version_is_part_of_the_key(listener):
    def hashed(version):
        plugin = tp.Plugin("versioned", version, pipelines={"p": Pipeline("p").disable("ttgir", "ttgpuir.coalesce")})
        tp.register(plugin)
        try:
            with tp.use_pipeline("versioned:p"):
                return compile_add().hash
        finally:
            tp.unload_plugin("versioned")
    assert hashed("1.0") != hashed("1.1")


def test_fresh_process_reuses_the_on_disk_binary(tmp_path):
    script = textwrap.dedent(f"""
        import sys, triton
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_cache import mark, compile_add, Listener
        import tritium.plugins as tp
        lst = Listener()
        triton.knobs.compilation.listener = lst
        tp.activate(mark(int(sys.argv[1])))
        k = compile_add()
        print(lst.events[0], k.hash)
    """)
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path))
    run = lambda v: subprocess.run([sys.executable, "-c", script, v], env=env, capture_output=True, text=True,
                                   check=True).stdout.split()
    first, second, other = run("1"), run("1"), run("2")
    assert first == ["False", first[1]] and second == ["True", first[1]]
    assert other[0] == "False" and other[1] != first[1]


@pytest.fixture
def fake_driver(monkeypatch):
    from triton.runtime.driver import driver
    monkeypatch.setattr(driver, "_active", FakeDriver())
    yield


def fresh_add_kernel():
    return triton.jit(ADD[0].fn)


def warm(kernel):
    import torch
    return kernel.warmup(torch.float32, torch.float32, torch.float32, 1024, BLOCK=256, grid=(1,))


def test_jit_in_memory_cache_follows_the_pipeline(fake_driver, listener):
    kernel = fresh_add_kernel()
    a, b = mark(1), mark(2)
    tp.activate(a)
    ka = warm(kernel)
    tp.activate(b)
    kb = warm(kernel)
    tp.activate(a)
    ka2 = warm(kernel)
    assert ka2 is ka and kb is not ka  # the in-memory hit returned A's kernel object
    assert listener.events == [False, False]  # and nothing was compiled or even looked up on disk
    tp.deactivate()
    assert "tritium.mark" not in warm(kernel).asm["ttgir"]


def test_jit_key_includes_the_pipeline_hash(fake_driver, no_auto_pipelines):
    """Whoever folds it in (our wrapper on 3.6, Triton on 3.7+), the pipeline hash is in the JIT key."""
    kernel = fresh_add_kernel()
    hashes = []
    for pipeline in (None, mark(1), mark(2), mark(1), None):
        with tp.use_pipeline(pipeline):
            warm(kernel)
            hashes.append(tp.pipelines_key()[1])
    keys = [str(k) for k in kernel.device_caches[0][0]]
    assert len(keys) == 3
    assert hashes[0] == "" and all(any(h in k for k in keys) for h in hashes[1:3])


def test_bound_pipeline_applies_to_that_kernel_only(fake_driver, listener):
    bound = tp.bind(mark(5))(fresh_add_kernel())
    other = fresh_add_kernel()
    assert "tritium.mark = 5" in warm(bound).asm["ttgir"]
    assert "tritium.mark" not in warm(other).asm["ttgir"]
    tp.bind(None, bound)
    assert "tritium.mark" not in warm(bound).asm["ttgir"]


def test_binding_wins_over_contexts_and_conflicts_are_errors(fake_driver, listener):
    from tritium.plugins import PipelineError
    bound = tp.bind(mark(5))(fresh_add_kernel())
    with tp.use_pipeline(mark(7)):
        assert "tritium.mark = 5" in warm(bound).asm["ttgir"]
        assert "tritium.mark = 7" in warm(fresh_add_kernel()).asm["ttgir"]
    fn, sig, const = ADD
    with pytest.raises(PipelineError, match="is bound to pipeline 'mark5'"):
        compile_kernel(bound, sig, "sm90", constexprs=const, pipeline=mark(6))
    assert "tritium.mark = 5" in compile_kernel(bound, sig, "sm90", constexprs=const).asm["ttgir"]


# --- what a Python pass's cache key follows (issue 11, item 1) ---------------------------------
SCALE = 1


def _helper(value):
    return value * SCALE


def _digest(fn):
    return Pipeline("p").insert("ttgir", mlir_pass(fn, name="p"), at="end").digest()


def test_key_follows_defaults_and_keyword_defaults():
    def with_default(mod, ctx, value=1, *, other=2):
        return value + other
    before = _digest(with_default)
    with_default.__defaults__ = (5, )
    after_default = _digest(with_default)
    with_default.__kwdefaults__ = {"other": 7}
    assert len({before, after_default, _digest(with_default)}) == 3


def test_key_follows_callable_object_state_and_partial_arguments():
    import functools

    class Scaled:
        def __init__(self, factor):
            self.factor = factor

        def __call__(self, mod, ctx):
            return self.factor
    assert _digest(Scaled(1)) == _digest(Scaled(1)) != _digest(Scaled(2))

    def set_value(mod, ctx, value):
        return value
    assert _digest(functools.partial(set_value, value=1)) != _digest(functools.partial(set_value, value=2))


def test_key_follows_globals_helpers_and_mutated_closures(monkeypatch):
    def uses_helper(mod, ctx):
        return _helper(3)
    before = _digest(uses_helper)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 2)  # a module constant the helper reads
    assert _digest(uses_helper) != before
    table = {"k": 1}

    def uses_table(mod, ctx):
        return table["k"]
    first = _digest(uses_table)
    table["k"] = 2
    assert _digest(uses_table) != first


class _Settings:
    VALUE = 1

    @staticmethod
    def get():
        return 10

    def scaled(self):
        return 100


class _Tagger(_Settings):
    def __call__(self, mod, ctx):
        return self.scaled()


def test_key_follows_class_attributes_methods_and_helper_module_attributes(tmp_path, monkeypatch):
    def reads_class(mod, ctx):
        return _Settings.VALUE + _Settings.get()
    before = _digest(reads_class)
    monkeypatch.setattr(_Settings, "VALUE", 2)
    after_attribute = _digest(reads_class)
    monkeypatch.setattr(_Settings, "get", staticmethod(lambda: 11))
    assert len({before, after_attribute, _digest(reads_class)}) == 3

    tagger = _digest(_Tagger())  # a callable object whose __call__ calls an inherited method
    monkeypatch.setattr(_Settings, "scaled", lambda self: 200)
    assert _digest(_Tagger()) != tagger

    (tmp_path / "pass_helper_mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import pass_helper_mod

    def reads_module(mod, ctx):
        return pass_helper_mod.VALUE
    first = _digest(reads_module)
    monkeypatch.setattr(pass_helper_mod, "VALUE", 2)
    second = _digest(reads_module)
    monkeypatch.setattr(pass_helper_mod, "OTHER", 3, raising=False)  # a name the pass does not use
    assert first != second == _digest(reads_module)


def test_installed_packages_count_by_version_not_contents():
    import json

    def uses_json(mod, ctx):
        return json.dumps(json.JSONDecoder)
    digest = _digest(uses_json)
    json.JSONDecoder.tritium_probe = 1  # an installed class or function is taken as its package's release
    kwdefaults = json.dumps.__kwdefaults__
    json.dumps.__kwdefaults__ = {**kwdefaults, "indent": 4}
    try:
        assert _digest(uses_json) == digest
    finally:
        del json.JSONDecoder.tritium_probe
        json.dumps.__kwdefaults__ = kwdefaults


def test_state_tritium_cannot_see_needs_an_explicit_cache_key():
    from tritium.plugins.passes import PythonPass, Unfingerprintable
    opaque = object()

    def uses_opaque(mod, ctx):
        return opaque
    p = Pipeline("p").insert("ttgir", mlir_pass(uses_opaque, name="opaque"), at="end")
    with pytest.raises(Unfingerprintable, match="pass 'opaque'.*explicit cache key"):
        p.digest()
    keyed = Pipeline("p").insert("ttgir", PythonPass(uses_opaque, name="opaque", cache_key="v1"), at="end")
    assert keyed.digest() != Pipeline("p").insert("ttgir", PythonPass(uses_opaque, name="opaque",
                                                                      cache_key="v2"), at="end").digest()


def test_fingerprints_are_stable_across_processes(tmp_path):
    plugin = tmp_path / "stable_plugin.py"
    source = textwrap.dedent("""
        import functools
        from tritium.plugins import Pipeline, mlir_pass
        LIMITS = {{"a", "b", "c"}}
        SCALE = {scale}
        def helper(x):
            return x * SCALE
        def mark(mod, ctx, value=1):
            return helper(value) in LIMITS
        PIPELINE = Pipeline("stable").insert("ttgir", mlir_pass(functools.partial(mark, value=2), name="m"),
                                             at="end")
    """)
    script = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import stable_plugin; print(stable_plugin.PIPELINE.digest())"

    def digest(scale, seed):
        plugin.write_text(source.format(scale=scale))
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()
    assert digest(1, 1) == digest(1, 2)  # set order and partial reprs hold no per-process detail
    assert digest(2, 1) != digest(1, 1)  # editing a module constant between runs changes the key


def test_triton_binding_classes_count_as_installed():
    """Extension submodules have no file of their own (nanobind's triton._C.libtriton.ir on 3.9): the package
    above them decides, or a pass using ir.builder would be refused as unfingerprintable."""
    from triton._C.libtriton import ir
    from tritium.plugins import passes
    assert passes._installed_module(ir.builder.__module__) and passes._installed_module("json")
    assert not passes._installed_module(__name__) and not passes._installed_module("no_such_module_here")


# --- passes that keep statistics (issue 23) -----------------------------------------------------
RUNS = {}


def test_a_pass_whose_fingerprint_changes_between_compiles_of_a_kernel_is_warned_about(listener, no_auto_pipelines):
    @mlir_pass(name="counting")
    def counting(mod, ctx):
        RUNS[ctx.stage] = RUNS.get(ctx.stage, 0) + 1  # state its fingerprint follows: every compile is new

    tp.activate(Pipeline("count").insert("ttgir", counting, at="end"))
    compile_add()
    with pytest.warns(tp.PassFingerprintWarning, match=r"pass 'counting': its fingerprint changed between two "
                                                        r"compiles of kernel 'add_kernel'.*tritium.plugins.PassStats"):
        compile_add()
    assert listener.events == [False, False]


STATS = tp.PassStats()


def test_statistics_in_pass_stats_leave_the_fingerprint_alone(listener, no_auto_pipelines, recwarn):
    @mlir_pass(name="counting")
    def counting(mod, ctx):
        STATS[ctx.stage] += 1

    tp.activate(Pipeline("stats").insert("ttgir", counting, at="end"))
    compile_add()
    compile_add()
    assert listener.events == [False, True] and STATS["ttgir"] == 1
    assert not [w for w in recwarn if issubclass(w.category, tp.PassFingerprintWarning)]
