"""Plugin-declared launch options: accepted by launches and triton.Config, seen by passes, part of the keys,
checked with errors that name the option and its plugin (compiled for sm_90 through a fake driver)."""
import pytest
import torch
import triton
import triton.language as tl

import tritium.plugins as tp
from tritium import compat
from tritium.plugins import OptionError, Pipeline, Plugin, PluginLoadError, PluginManager, PluginOption, mlir_pass
from kernels import FakeDriver

seen = []


@mlir_pass(name="see_opt")
def see_opt(mod, ctx):
    seen.append(UNROLL.value(ctx.options))


UNROLL = PluginOption("my_unroll", int, default=1, targets=("cuda",), help="how far to unroll")
FAR = PluginOption("far_only", str, default="off", targets=("hip",))


@pytest.fixture
def plugin(monkeypatch, tmp_path):
    from triton.runtime.driver import driver
    monkeypatch.setattr(driver, "_active", FakeDriver())
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    seen.clear()
    tp.register(Plugin("unroller", "1.0", options=[UNROLL, FAR], content="v1",
                       auto_pipelines=[Pipeline("see").insert("ttgir", see_opt, at="start")]))
    yield


@triton.jit
def store(x, N: tl.constexpr):
    tl.store(x + tl.arange(0, N), tl.arange(0, N).to(tl.float32))


def warm(kernel, **options):
    return kernel.warmup(torch.float32, N=64, grid=(1,), **options)


def test_launch_option_reaches_the_passes_and_the_keys(plugin):
    kernel = triton.jit(store.fn)
    two, three, bare = warm(kernel, my_unroll=2), warm(kernel, my_unroll=3), warm(kernel)
    assert seen == [2, 3, 1]  # the default where the launch leaves it out
    assert len({two.hash, three.hash, bare.hash}) == 3 and two.metadata.my_unroll == 2
    assert warm(kernel, my_unroll=2) is two and seen == [2, 3, 1]  # the JIT's in-memory key holds it too
    assert "my_unroll" not in bare.metadata._asdict()  # left out: bare Triton's options, key and metadata


def test_autotuner_configs_take_plugin_options(plugin):
    tuned = triton.autotune([triton.Config({}, my_unroll=4), triton.Config({}, my_unroll=5)], key=[])(
        triton.jit(store.fn))
    tuned.warmup(torch.float32, N=64, grid=(1,))
    assert seen == [4, 5]


def test_bad_options_name_the_option_and_plugin(plugin):
    kernel = triton.jit(store.fn)
    with pytest.raises(KeyError, match=r"bogus was specified but unrecognised; known: kernel parameters x, N; "
                                       r"options of the cuda backend .*num_warps.*; plugin options (.*, )?my_unroll'$"):
        warm(kernel, bogus=1)
    with pytest.raises(OptionError, match="option 'my_unroll' of plugin 'unroller' expects int, got str '2'"):
        warm(kernel, my_unroll="2")
    with pytest.raises(OptionError, match="option 'far_only' of plugin 'unroller' applies to hip targets only; "
                                          "this compile targets cuda"):
        warm(kernel, far_only="x")
    with pytest.raises(TypeError):
        triton.Config({}, bogus=1)
    assert seen == [] and warm(kernel, my_unroll=2).metadata.my_unroll == 2
    assert warm(kernel, far_only="off").metadata.far_only == "off"  # its default is accepted on any target


def test_declarations_are_checked_at_registration(plugin):
    with pytest.raises(PluginLoadError, match="option 'my_unroll' is declared by plugin 'unroller' already"):
        tp.register(Plugin("other", "1.0", options=[PluginOption("my_unroll", int)]))
    with pytest.raises(PluginLoadError, match="field 'options': option name 'not-a-kw' is not a Python identifier"):
        Plugin("bad", "1.0", options=[PluginOption("not-a-kw", int)])
    assert [lp.plugin.name for lp in tp.loaded_plugins()].count("other") == 0


def test_options_follow_the_enabled_manager(plugin):
    with PluginManager("empty").enabled():  # its plugins declare no option: the keyword is refused again
        with pytest.raises(KeyError, match="my_unroll was specified but unrecognised"):
            warm(triton.jit(store.fn), my_unroll=2)
    tp.unload_plugin("unroller")
    tp.disable()
    try:
        assert compat.launch_options_pristine()
    finally:
        tp.enable()
