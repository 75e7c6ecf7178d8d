"""With every shipped plugin loaded but no pipeline active, codegen is byte-identical to bare Triton."""
import os

import pytest
import triton

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


def _bare(fn, sig, const, target, fresh=False):
    tp.disable()
    try:
        with triton.knobs.compilation.scope():
            triton.knobs.compilation.always_compile = fresh
            return compile_kernel(fn, sig, target, constexprs=const, pipeline=None)
    finally:
        tp.enable()


def assert_identical(kernel, target, exts):
    """Plugin-loaded output equals bare Triton's.  If it does not, recompile bare Triton from scratch:
    where Triton itself varies between compiles in one process (seen once, on Triton 3.9 for gfx942:
    instruction order), matching any bare output counts, and a bare Triton that never repeats itself
    cannot be compared against, which is reported as a skip rather than a pass."""
    with_plugins = compile_kernel(*kernel[:2], target, constexprs=kernel[2], pipeline=None)
    bare = _bare(*kernel, target)
    for ext in exts:
        if with_plugins.asm[ext] == bare.asm[ext]:
            continue
        outputs = {bare.asm[ext], *(_bare(*kernel, target, fresh=True).asm[ext] for _ in range(3))}
        if with_plugins.asm[ext] in outputs:
            continue
        if len(outputs) > 1:
            pytest.skip(f"bare Triton gives {len(outputs)} different {ext} outputs for this kernel")
        raise AssertionError(f"{ext} differs from bare Triton's")


@pytest.mark.parametrize("target", sorted(BINARY))
@pytest.mark.parametrize("kernel", KERNEL_CORPUS, ids=[k[0].__name__.strip("_") for k in KERNEL_CORPUS])
def test_triton_kernels_compile_identically(kernel, target, example_plugins):
    assert len(example_plugins) >= 2
    assert_identical(kernel, target, BINARY[target])


def test_gluon_kernel_compiles_identically():
    assert_identical(GLUON_KERNEL, "sm90", ("ptx", "cubin"))
