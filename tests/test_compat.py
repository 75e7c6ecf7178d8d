"""The Triton internals tritium relies on.  If Triton changes under us, these fail first and loudly."""
import inspect

import pytest
import triton.compiler.compiler as compiler
import triton.runtime.jit as jit
from triton import knobs
from triton._C.libtriton import ir

from tritium import compat
from kernels import KERNELS
from tritium.plugins.inspection import compile_kernel


def test_version_and_protocol():
    assert compat.TRITON_VERSION >= (3, 6)
    assert compat.NATIVE_HOOK_PROTOCOL == (compat.TRITON_VERSION >= (3, 7))


def test_key_functions_have_the_shape_we_wrap():
    assert list(inspect.signature(compat._orig_get_cache_key).parameters) == [
        "src", "backend", "backend_options", "env_vars"]
    assert list(inspect.signature(compat._orig_compute_cache_key).parameters) == [
        "kernel_key_cache", "specialization", "options"]
    assert "compute_cache_key(" in inspect.getsource(jit.JITFunction.run)
    assert "get_cache_key(" in inspect.getsource(compiler.compile)


@pytest.mark.parametrize("target", ["sm90", "gfx950"])
def test_backends_call_the_stages_hook_with_five_arguments(target):
    seen = []
    tritium_hook = knobs.runtime.add_stages_inspection_hook
    knobs.runtime.add_stages_inspection_hook = lambda *args: seen.append(args)
    try:
        fn, sig, const = KERNELS["add"]
        compile_kernel(fn, sig, target, constexprs=const, options={"num_warps": 2})
    finally:
        knobs.runtime.add_stages_inspection_hook = tritium_hook
    backend, stages, options, language, capability = seen[0]
    expected = ["ttir", "ttgir", "llir", "ptx", "cubin"] if target == "sm90" else ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    assert list(stages) == expected


def test_known_pass_builders_are_discovered():
    for name in ["ttgpuir.coalesce", "common.canonicalizer", "ttir.convert_to_ttgpuir",
                 "nvidia.ttnvgpuir.plan_cta", "amd.ttgpuir.accelerate_matmul", "ttgpuir.pipeline"]:
        assert name in compat.PASS_BUILDERS, name


def test_hook_install_uninstall_restores_everything():
    assert compat.stages_hook_installed()
    compat.uninstall_stages_hook()
    try:
        assert knobs.runtime.add_stages_inspection_hook is None
        assert compiler.get_cache_key is compat._orig_get_cache_key
        assert jit.compute_cache_key is compat._orig_compute_cache_key
    finally:
        import tritium.plugins as tp
        tp.enable()
    if not compat.NATIVE_HOOK_PROTOCOL:
        assert compiler.get_cache_key is compat._keyed_get_cache_key


def test_existing_hook_is_chained_not_clobbered():
    import tritium.plugins as tp
    calls = []
    tp.disable()
    knobs.runtime.add_stages_inspection_hook = lambda *args: calls.append(list(args[1]))
    tp.enable()
    try:
        fn, sig, const = KERNELS["add"]
        compile_kernel(fn, sig, "sm90", constexprs=const, options={"num_warps": 1})
        assert calls and calls[0][0] == "ttir"
    finally:
        tp.disable()
        knobs.runtime.add_stages_inspection_hook = None
        tp.enable()


def test_interception_is_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with compat.intercept_pass_managers(lambda *a: None):
            assert ir.pass_manager is compat.RecordingPassManager
            raise RuntimeError("boom")
    assert compat.pass_builders_pristine()


def test_replace_module_body_round_trip():
    from triton._C.libtriton import nvidia
    fn, sig, const = KERNELS["add"]
    text = compile_kernel(fn, sig, "sm90", constexprs=const, options={"num_warps": 4}).asm["ttgir"]
    ctx = ir.context()
    ir.load_dialects(ctx)
    nvidia.load_dialects(ctx)
    mod = compat.parse_module(text, ctx)
    marked = text.replace('"ttg.num-warps" = 4 : i32', '"ttg.num-warps" = 4 : i32, tritium.mark = 7 : i32')
    compat.replace_module_body(mod, compat.parse_module(marked.replace("arith.addf", "arith.mulf"), ctx))
    assert "arith.mulf" in mod.str() and "arith.addf" not in mod.str()
    assert mod.get_int_attr("tritium.mark") == 7
    assert mod.verify()
