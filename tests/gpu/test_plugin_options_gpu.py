"""Plugin launch options on real launches (tests/test_plugin_options.py covers the same path through warmup on
the CPU): kernel[grid](..., NAME=value) and an autotuner whose configs differ only in a plugin option."""
import pytest

torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import tritium.plugins as tp  # noqa: E402
from tritium.plugins import Pipeline, Plugin, PluginOption, mlir_pass  # noqa: E402

pytestmark = pytest.mark.gpu

LEVEL = PluginOption("gpu_test_level", int, default=0, targets=("cuda",))
SEEN = tp.PassStats()


@mlir_pass(name="note_level")
def note_level(mod, ctx):
    SEEN[LEVEL.value(ctx.options)] += 1


@pytest.fixture
def plugin(monkeypatch, tmp_path):
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    SEEN.clear()
    tp.register(Plugin("gpu_levels", "1.0", options=[LEVEL],
                       auto_pipelines=[Pipeline("note").insert("ttgir", note_level, at="start")]))


@triton.jit
def add_one(x, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x + offs, tl.load(x + offs) + 1)


def test_launch_and_autotune_with_a_plugin_option(plugin):
    x = torch.zeros(128, device="cuda")
    kernel = triton.jit(add_one.fn)
    kernel[(1,)](x, N=128, gpu_test_level=1)
    kernel[(1,)](x, N=128, gpu_test_level=1)  # same value: the cached binary
    kernel[(1,)](x, N=128, gpu_test_level=2)
    assert dict(SEEN) == {1: 1, 2: 1} and torch.equal(x, torch.full_like(x, 3))
    tuned = triton.autotune([triton.Config({}, gpu_test_level=3), triton.Config({}, gpu_test_level=4)], key=[],
                            reset_to_zero=["x"])(triton.jit(add_one.fn))
    tuned[(1,)](x, N=128)
    assert dict(SEEN) == {1: 1, 2: 1, 3: 1, 4: 1} and tuned.best_config.kwargs["gpu_test_level"] in (3, 4)
