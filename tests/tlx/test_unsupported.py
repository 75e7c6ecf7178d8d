"""Fork names that cannot exist on stock Triton raise, in a compiled kernel, a clear error at the kernel line."""
from __future__ import annotations

import importlib.util
import sys

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx
from tritium.tlx import unsupported

TARGETS = {"sm90": GPUTarget("cuda", 90, 32), "gfx942": GPUTarget("hip", "gfx942", 64),
           "gfx950": GPUTarget("hip", "gfx950", 64)}


def kernels_module(tmp_path_factory) -> object:
    """One kernel per unsupported name, each calling it (Triton needs kernels in a real source file)."""
    path = tmp_path_factory.mktemp("unsupported") / "unsupported_kernels.py"
    body = ["import triton", "import tritium.tlx as tlx", ""]
    for name in unsupported.REASONS:
        body += ["@triton.jit", f"def use_{name.lstrip('_')}(x_ptr):", f"    tlx.{name}(x_ptr)", ""]
    path.write_text("\n".join(body))
    spec = importlib.util.spec_from_file_location("unsupported_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return kernels_module(tmp_path_factory)


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(unsupported.REASONS))
def test_unsupported_op_fails_at_the_kernel_line_saying_why(kernels, name, target):
    kernel = getattr(kernels, f"use_{name.lstrip('_')}")
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(kernel, {"x_ptr": "*fp32"}, {}), target=TARGETS[target])
    text = str(info.value)
    assert f"tlx.{name}(x_ptr)" in text  # Triton shows the kernel line
    assert f"tlx.{name} is not available in tritium: it {unsupported.REASONS[name]}" in text
    assert "stock Triton 3.6 has no path for it" in text


@pytest.mark.parametrize("name", sorted(unsupported.REASONS))
def test_unsupported_name_raises_from_host_code_too(name):
    obj = getattr(tlx, name)
    with pytest.raises(NotImplementedError, match=f"tlx.{name} is not available"):
        obj()
    with pytest.raises(NotImplementedError, match=f"tlx.{name} is not available"):
        obj.SOME_MEMBER  # enum-like use, e.g. tlx.TMemCTAMode.X
    assert name in tlx.__all__


def test_no_name_is_both_implemented_and_unsupported():
    """A name someone implements must leave unsupported.REASONS (the implementation wins on import)."""
    shadowed = [n for n in unsupported.REASONS if not isinstance(getattr(tlx, n), unsupported.UnsupportedOp)]
    assert not shadowed, f"implemented now, remove from tlx/unsupported.py REASONS: {shadowed}"


def test_ctas_per_cga_along_x_is_a_launch_option_other_shapes_are_skipped_by_the_autotuner_with_why():
    from triton.runtime.errors import OutOfResources

    assert triton.Config({"BM": 64}, num_warps=4, ctas_per_cga=(2, 1, 1)).all_kwargs()["ctas_per_cga"] == (2, 1, 1)
    cluster = triton.Config({"BM": 64}, ctas_per_cga=(1, 2, 1))  # a fork module's config list still imports
    assert cluster.ctas_per_cga == (1, 2, 1) and "ctas_per_cga" not in cluster.all_kwargs()
    # The autotuner calls pre_hook before launching a config and skips configs raising OutOfResources.
    with pytest.raises(OutOfResources, match=r"ctas_per_cga=\(1, 2, 1\)\) asks for a cluster along y or z: stock "
                       r"Triton's launcher forms clusters of CTAs along x only"):
        cluster.pre_hook({})


def test_ctas_per_cga_survives_the_manager_switching_off_and_on():
    """TLX's ctas_per_cga sits beneath the plugin options' patch of triton.Config (compat.wrap_config_init), so
    disabling and enabling the manager, which uninstalls and installs that patch, keeps it."""
    import tritium.plugins as tp
    tp.disable()
    try:
        assert triton.Config({"BM": 64}, ctas_per_cga=(1, 1, 2)).ctas_per_cga == (1, 1, 2)
    finally:
        tp.enable()
    assert triton.Config({"BM": 64}, num_warps=4, ctas_per_cga=(1, 1, 1)).all_kwargs()["num_warps"] == 4


def test_gpu_target_answers_the_forks_backend_query():
    from triton.backends.compiler import GPUTarget
    assert GPUTarget("cuda", 90, 32).is_cuda_backend() and not GPUTarget("hip", "gfx942", 64).is_cuda_backend()
