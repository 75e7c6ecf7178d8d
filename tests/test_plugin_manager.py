"""PluginManager: managers keep their own plugins and pipelines, the module functions act on the default one,
one manager at a time holds Triton's stages hook, and a manager's recorder traces its compilations."""
import sys
import threading
import time

import pytest
import triton
import triton.compiler.compiler as compiler
import triton.runtime.jit as jit
from triton import knobs

import tritium.plugins as tp
from tritium import compat
from tritium.plugins import CompileReport, DeferredPlugin, Pipeline, Plugin, PluginManager, TritiumError, mlir_pass
from tritium.plugins.inspection import compile_kernel, make_source, parse_target
from kernels import KERNELS


def tagging(value: str) -> Pipeline:
    """A pipeline that marks the TTGIR module it compiles, so a binary says which pipeline built it."""
    @mlir_pass(name=f"tag_{value}")
    def tag(mod, ctx):
        from triton._C.libtriton import ir
        mod.set_attr("tritium.tag", ir.builder(mod.context).get_string_attr(value))
    return Pipeline(f"tag-{value}").insert("ttgir", tag, at="end")


def compile_add(fresh: bool = False):
    """Compile the add kernel; ``fresh`` bypasses the cache, so that every stage really runs."""
    fn, sig, const = KERNELS["add"]
    with knobs.compilation.scope():
        knobs.compilation.always_compile = fresh
        return triton.compile(make_source(fn, sig, const), target=parse_target("sm90"))


def tag_of(compiled) -> str:
    ttgir = compiled.asm["ttgir"]
    return ttgir.split('tritium.tag = "', 1)[1].split('"', 1)[0] if "tritium.tag" in ttgir else ""


def test_two_managers_do_not_see_each_others_state():
    one, two = PluginManager("one"), PluginManager("two")
    a, b = tagging("a"), tagging("b")
    one.register(Plugin("pa", "1", pipelines={"p": a}, auto_pipelines=[Pipeline("auto-a")]))
    two.register(Plugin("pb", "1", pipelines={"p": b}))
    assert [lp.plugin.name for lp in one.loaded_plugins()] == ["pa"]
    assert [lp.plugin.name for lp in two.loaded_plugins()] == ["pb"]
    assert one.resolve_pipeline("p") is a and two.resolve_pipeline("p") is b
    with pytest.raises(tp.PluginLoadError, match="no plugin named 'pb'"):
        one.get_plugin("pb")
    assert "pa" not in [lp.plugin.name for lp in tp.loaded_plugins()]

    one.activate("p")
    with two.use_pipeline("p"):
        assert one.active_pipeline() is a and two.active_pipeline() is b
        assert tp.active_pipeline() is None  # the default manager saw none of it
        key_one, key_two = one.pipelines_key()[0], two.pipelines_key()[0]
    assert key_one.split("+") == [f"pa:auto-a#{one.auto_pipelines()[0].digest()}", f"pa:tag-a#{a.digest()}"]
    assert key_two == f"pb:tag-b#{b.digest()}"
    assert two.active_pipeline() is None and two.pipelines_key() == ("", "")

    seen = []  # a thread sees each manager's global pipeline, and its own use_pipeline only in its own manager
    worker = threading.Thread(target=lambda: seen.append((one.active_pipeline(), two.active_pipeline())))
    worker.start()
    worker.join()
    assert seen == [(a, None)]

    one.unload_plugin("pa")
    assert one.auto_pipelines() == () and one.pipelines_key()[0] == f"pa:tag-a#{a.digest()}"
    assert two.loaded_plugins()[0].plugin.name == "pb"


def test_a_pipeline_edit_reaches_every_managers_key():
    one, two = PluginManager("one"), PluginManager("two")
    p = Pipeline("shared")
    one.activate(p)
    two.activate(p)
    before = one.pipelines_key(), two.pipelines_key()
    p.disable("ttgir", "ttgpuir.coalesce")
    after = one.pipelines_key(), two.pipelines_key()
    assert before[0] == before[1] and after[0] == after[1] and after[0] != before[0]


def test_module_functions_act_on_the_default_manager():
    default = tp.default_manager()
    assert tp.enabled_manager() is default and default.is_enabled()
    p = Pipeline("module-level")
    tp.activate(p)
    assert default.active_pipeline() is p
    plugin = tp.register(Plugin("via-module", "1", pipelines={"x": p}))
    assert default.get_plugin("via-module") is plugin and default.resolve_pipeline("via-module:x") is p
    with default.use_pipeline(None):
        assert tp.active_pipeline() is None
    tp.unload_plugin("via-module")
    assert "via-module" not in [lp.plugin.name for lp in default.loaded_plugins()]
    report = CompileReport()
    with tp.recording(report):
        compile_add(fresh=True)
    assert [s.name for s in report.stages][:2] == ["ttir", "ttgir"]


def test_enabling_a_second_manager_is_refused_and_a_hand_over_restores_the_hooks():
    default, mine = tp.default_manager(), PluginManager("mine")
    hook, get_key, compute_key = (knobs.runtime.add_stages_inspection_hook, compiler.get_cache_key,
                                  jit.compute_cache_key)
    with pytest.raises(TritiumError, match=r"cannot enable PluginManager\('mine'.*PluginManager\('default'.*holds "
                                           r"Triton's stages hook"):
        mine.enable()
    assert knobs.runtime.add_stages_inspection_hook is hook and not mine.is_enabled()
    with mine.enabled() as held:
        assert held is mine and tp.enabled_manager() is mine and not default.is_enabled()
        assert knobs.runtime.add_stages_inspection_hook is compat.installed_stages_hook() is not hook
        mine.activate(Pipeline("x"))
        assert compat.pipeline_digest(None) == mine.pipelines_key()[1] != ""  # the keys ask this manager
        tp.disable()  # the default manager is not enabled: nothing to remove
        assert mine.is_enabled()
        with mine.enabled():  # already enabled: stays so after the block
            pass
        assert mine.is_enabled()
    assert tp.enabled_manager() is default
    assert (knobs.runtime.add_stages_inspection_hook, compiler.get_cache_key, jit.compute_cache_key) == \
        (hook, get_key, compute_key)


def test_disabling_every_manager_gives_back_triton_and_a_foreign_hook(monkeypatch):
    calls = []

    def foreign(*args):
        if not args:  # Triton 3.7+ first asks the hook for its cache key
            return "foreign", "0"
        calls.append(args[0].target)

    mine = PluginManager("mine")
    tp.disable()
    try:
        assert tp.enabled_manager() is None and knobs.runtime.add_stages_inspection_hook is None
        assert compiler.get_cache_key is compat._orig_get_cache_key
        knobs.runtime.add_stages_inspection_hook = foreign
        mine.enable()
        assert compat.installed_stages_hook().previous is foreign  # chained, so the foreign tool still runs
        compile_add(fresh=True)
        assert calls
        mine.disable()
        assert knobs.runtime.add_stages_inspection_hook is foreign
        assert compiler.get_cache_key is compat._orig_get_cache_key
        assert jit.compute_cache_key is compat._orig_compute_cache_key
    finally:
        mine.disable()
        knobs.runtime.add_stages_inspection_hook = None
        tp.enable()


def test_only_the_enabled_managers_pipelines_and_recorder_apply(no_auto_pipelines):
    mine = PluginManager("mine")
    mine.activate(tagging("mine"))
    tp.activate(tagging("default"))
    default_report, my_report = CompileReport(), CompileReport()
    with tp.recording(default_report), mine.recording(my_report):
        assert tag_of(compile_add()) == "default"
        assert my_report.stages == []  # not enabled: its recorder saw nothing
        with mine.enabled():
            compiled = compile_add()
            with mine.use_pipeline(None):
                assert tag_of(compile_add()) == ""  # no pipeline in effect: bare Triton's binary
        stages = len(default_report.stages)
        assert tag_of(compiled) == "mine"  # same kernel, same options: its key names its pipeline
        (ttgir,) = [s for s in my_report.stages if s.name == "ttgir" and any(
            r.name == "python:tag_mine" for r in s.passes)]
        (tagged,) = [r for r in ttgir.passes if r.status == "inserted"]
        assert tagged.origin == "tag-mine"
        assert not any(r.name == "python:tag_default" for s in my_report.stages for r in s.passes)
        compile_add(fresh=True)  # the default manager is enabled again, and records again
        assert len(default_report.stages) > stages


def test_a_deferred_module_that_registers_itself_loads_into_any_manager(tmp_path, monkeypatch):
    (tmp_path / "selfreg.py").write_text("import tritium.plugins as tp\n"
                                         "tp.load_plugin(tp.Plugin('selfreg', '1.0'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mine = PluginManager("mine")
    mine.announce(DeferredPlugin("selfreg", "selfreg"), "entry point selfreg = test")
    try:
        plugin = mine.get_plugin("selfreg")  # the import registered it with the default manager
        assert plugin is tp.get_plugin("selfreg")
        (lp,) = mine.loaded_plugins()
        assert lp.origin == "entry point selfreg = test" and mine.deferred_plugins() == []
    finally:
        sys.modules.pop("selfreg", None)


def test_a_failed_plugin_import_undoes_what_the_module_registered_and_activated(tmp_path):
    path = tmp_path / "half_loaded.py"
    source = ("import tritium.plugins as tp\n"
              "p = tp.Pipeline('half').disable('ttgir', 'ttgpuir.coalesce')\n"
              "tp.register(tp.Plugin('half_loaded', '1.0', pipelines={'half': p}))\n"
              "tp.activate(p)\n")
    path.write_text(source + "raise RuntimeError('broken on purpose')\n")
    before = ([lp.plugin.name for lp in tp.loaded_plugins()], tp.active_pipeline(), tp.pipelines_key()[0])
    with pytest.raises(tp.PluginLoadError, match="half_loaded.py raised RuntimeError: broken on purpose"):
        tp.load_plugin(path)
    assert ([lp.plugin.name for lp in tp.loaded_plugins()], tp.active_pipeline(), tp.pipelines_key()[0]) == before
    path.write_text(source + "tritium_plugin = tp.get_plugin('half_loaded')\n")
    try:
        assert tp.load_plugin(path).name == "half_loaded"  # no leftover: not refused as a duplicate
    finally:
        tp.deactivate()
        tp.unload_plugin("half_loaded")


def test_an_unknown_pipeline_name_leaves_deferred_plugins_unloaded():
    mine = PluginManager("mine")
    mine.announce(DeferredPlugin("policy", "tritium.examples.pipeline_policy"), "test")
    with pytest.raises(tp.PluginLoadError, match="pipeline 'no-such' is not contributed by any loaded plugin; "
                                                 "known: policy:"):
        mine.find_pipeline("no-such")
    assert mine.loaded_plugins() == [] and [s.name for s, _ in mine.deferred_plugins()] == ["policy"]
    assert mine.pipelines_key() == ("", "")
    assert mine.find_pipeline("policy:no-swp").name == "no-swp"  # it still loads when asked for by name


def test_errors_listing_what_is_known_name_the_deferred_plugins():
    mine = PluginManager("mine")
    mine.announce(DeferredPlugin("policy", "tritium.examples.pipeline_policy"), "test")
    with pytest.raises(tp.PluginLoadError, match=r"pipeline 'memtag:tag' .*known: none; plugins not loaded yet "
                                                 r"\(name one as PLUGIN:PIPELINE to load it\): policy"):
        mine.activate("memtag:tag")
    with pytest.raises(tp.PluginLoadError, match="loaded: none; plugins not loaded yet .*: policy"):
        mine.get_plugin("memtag")
    assert mine.loaded_plugins() == []


def test_a_pipeline_belongs_to_one_plugin():
    shared = tagging("shared")
    owner = Plugin("owner", "1.0", pipelines={"shared": shared})
    digest = shared.digest()
    with pytest.raises(tp.PluginLoadError, match="plugin 'other': pipeline 'tag-shared' .* belongs to plugin "
                                                 "'owner' already"):
        Plugin("other", "1.0", pipelines={"shared": shared})
    assert shared.plugin is owner and shared.digest() == digest and shared.origin() == "owner:tag-shared"
    (pass_,) = shared.python_passes()
    Plugin("other", "1.0", passes={"tag": pass_})  # a pass may serve two plugins; its errors name the first
    assert pass_.plugin == "owner"


def test_compile_kernel_refuses_a_pipeline_or_report_no_manager_would_apply():
    fn, sig, const = KERNELS["add"]
    tp.disable()
    try:
        with pytest.raises(TritiumError, match="compile_kernel: pipeline .* no plugin manager is enabled"):
            compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=tagging("x"))
        with pytest.raises(TritiumError, match="compile_kernel: a report was asked for, but no plugin manager"):
            compile_kernel(fn, sig, "sm90", constexprs=const, report=CompileReport())
        assert compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=None).asm["ptx"]
    finally:
        tp.enable()
    with pytest.raises(TypeError, match="report must be a tritium.plugins.CompileReport or None, not str"):
        compile_kernel(fn, sig, "sm90", constexprs=const, report="report")


def test_use_pipeline_blocks_exited_out_of_order_are_an_error_and_leave_none_active():
    outer, inner = tagging("outer"), tagging("inner")
    first, second = tp.use_pipeline(outer), tp.use_pipeline(inner)
    first.__enter__()
    second.__enter__()
    with pytest.raises(tp.PipelineError, match="exited out of order"):
        first.__exit__(None, None, None)
    with pytest.raises(tp.PipelineError, match="exited out of order"):
        second.__exit__(None, None, None)
    assert tp.active_pipeline() is None


def test_load_plugin_of_an_empty_name_says_so():
    with pytest.raises(tp.PluginLoadError, match="load_plugin: an empty name"):
        tp.load_plugin("")


def hook_state():
    """Everything an enabled() block hands over and must give back exactly."""
    return (knobs.runtime.add_stages_inspection_hook, compat.installed_stages_hook(), compiler.get_cache_key,
            jit.get_cache_key, jit.compute_cache_key, tp.enabled_manager())


def test_enabled_blocks_exited_out_of_order_are_refused_and_restore_what_was_there():
    import contextlib
    before = hook_state()
    one, two = PluginManager("one"), PluginManager("two")
    stack_one, stack_two = contextlib.ExitStack(), contextlib.ExitStack()
    stack_one.enter_context(one.enabled())
    stack_two.enter_context(two.enabled())
    with pytest.raises(TritiumError, match=r"enabled\(\) blocks were exited out of order.*'one'.*'two'"):
        stack_one.close()  # the outer block first
    assert hook_state() == before  # what was there before the outer block
    with pytest.raises(TritiumError, match=r"block of PluginManager\('two'.*closed after the block it was opened in"):
        stack_two.close()
    assert hook_state() == before
    tp.enable()  # the default manager holds the hook again: enabling it is a no-op, not an error


def test_enabled_blocks_fuzzed_across_threads_and_tasks_leave_the_hook_as_it_was():
    """Threads each run random nestings of managers' enabled() blocks; asyncio tasks in one thread interleave
    theirs (so some exit out of order, and are refused). Inside each block its manager holds the hook."""
    import asyncio
    import random
    managers = [PluginManager(f"m{i}") for i in range(3)] + [tp.default_manager()]
    before = hook_state()
    keys = [m.pipelines_key() for m in managers]
    wrong, errors = [], []

    def nest(rng, depth):
        manager = rng.choice(managers)
        with manager.enabled():
            time.sleep(rng.random() / 5000)  # let other threads run inside the block
            if tp.enabled_manager() is not manager:
                wrong.append(manager)
            if depth and rng.random() < 0.6:
                nest(rng, depth - 1)

    def thread_body(seed):
        rng = random.Random(seed)
        try:
            for _ in range(150):
                nest(rng, 3)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    async def task_body(rng):
        manager = rng.choice(managers)
        try:
            with manager.enabled():
                await asyncio.sleep(rng.random() / 1000)
        except TritiumError as e:
            assert "out of order" in str(e) or "closed after the block it was opened in" in str(e), e

    async def tasks(seed):
        rng = random.Random(seed)
        for _ in range(20):
            await asyncio.gather(*(task_body(rng) for _ in range(4)))

    def tasks_thread():
        try:
            asyncio.run(tasks(99))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=thread_body, args=(seed,)) for seed in range(3)]
    threads.append(threading.Thread(target=tasks_thread))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not wrong, f"{len(wrong)} blocks ran with another manager holding the hook"
    assert hook_state() == before
    assert [m.pipelines_key() for m in managers] == keys


def test_enable_in_another_thread_waits_for_a_hand_over(monkeypatch):
    """Mid-hand-over (the old manager disabled, the new one not yet in), no manager holds the hook: a plain
    enable() from another thread must not slip in there."""
    mine, outsider = PluginManager("mine"), PluginManager("outsider")
    install, entered, release = compat.install_stages_hook, threading.Event(), threading.Event()

    def slow_install(hook):
        if hook.owner is mine:
            entered.set()
            release.wait(10)
        install(hook)

    monkeypatch.setattr(compat, "install_stages_hook", slow_install)
    result = []

    def other_thread():
        entered.wait(10)
        threading.Timer(0.3, release.set).start()
        try:
            outsider.enable()
            result.append("enabled")
        except TritiumError:
            result.append("refused")

    worker = threading.Thread(target=other_thread)
    worker.start()
    try:
        with mine.enabled():
            assert tp.enabled_manager() is mine
            worker.join()
    finally:
        outsider.disable()
    assert result == ["refused"] and tp.enabled_manager() is tp.default_manager()
