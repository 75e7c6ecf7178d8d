"""With every shipped plugin loaded but no pipeline active, codegen is byte-identical to bare Triton."""
import os

import pytest

import tritium.plugins as tp
import tritium.tlx  # noqa: F401  (loaded, and its automatic pipelines apply only to TLX kernels)
from tritium.bench.overhead import CORPUS
from tritium.plugins.inspection import compile_kernel
from kernels import GLUON_KERNEL, KERNELS

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples", "plugins")
KERNEL_CORPUS = [*CORPUS, *KERNELS.values()]
BINARY = {"sm90": ("ptx", "cubin"), "gfx942": ("amdgcn", "hsaco"), "gfx950": ("amdgcn", "hsaco")}


@pytest.fixture(scope="module", autouse=True)
def example_plugins():
    loaded = [tp.load_plugin(os.path.join(EXAMPLES, name)) for name in sorted(os.listdir(EXAMPLES))
              if name.endswith(".py")]
    yield loaded
    for plugin in loaded:
        tp.unload_plugin(plugin.name)


def _compile_both(fn, sig, const, target):
    with_plugins = compile_kernel(fn, sig, target, constexprs=const, pipeline=None)
    tp.disable()
    try:
        bare = compile_kernel(fn, sig, target, constexprs=const, pipeline=None)
    finally:
        tp.enable()
    return with_plugins, bare


@pytest.mark.parametrize("target", sorted(BINARY))
@pytest.mark.parametrize("kernel", KERNEL_CORPUS, ids=[k[0].__name__.strip("_") for k in KERNEL_CORPUS])
def test_triton_kernels_compile_identically(kernel, target, example_plugins):
    assert len(example_plugins) >= 2
    with_plugins, bare = _compile_both(*kernel, target)
    for ext in BINARY[target]:
        assert with_plugins.asm[ext] == bare.asm[ext], ext


def test_gluon_kernel_compiles_identically():
    with_plugins, bare = _compile_both(*GLUON_KERNEL, "sm90")
    assert with_plugins.asm["cubin"] == bare.asm["cubin"] and with_plugins.asm["ptx"] == bare.asm["ptx"]
