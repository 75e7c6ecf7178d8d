"""The Triton internals tritium relies on.  If Triton changes under us, these fail first and loudly."""
import inspect
import re

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
    expected = {(3, 6): "none", (3, 7): "import", (3, 8): "import"}.get(compat.TRITON_VERSION[:2], "api")
    assert compat.NATIVE_PLUGIN_LOADER == expected


def test_key_functions_have_the_shape_we_wrap():
    """3.6: we wrap the two key functions; 3.7+: Triton asks the hook itself, in both places."""
    if compat.NATIVE_HOOK_PROTOCOL:
        for fn in (compiler.compile, jit.JITFunction.run):
            assert "knobs.runtime.add_stages_inspection_hook()" in inspect.getsource(fn), fn
        assert "specialization.append(" in inspect.getsource(jit.JITFunction.run)
        return
    assert list(inspect.signature(compat._orig_get_cache_key).parameters) == [
        "src", "backend", "backend_options", "env_vars"]
    assert list(inspect.signature(compat._orig_compute_cache_key).parameters) == [
        "kernel_key_cache", "specialization", "options"]
    assert "compute_cache_key(" in inspect.getsource(jit.JITFunction.run)
    assert "get_cache_key(" in inspect.getsource(compiler.compile)
    assert "add_stages_inspection_hook()" not in inspect.getsource(compiler.compile)


def test_each_compile_makes_its_own_backend():
    """A compile's snapshot (compat.CompileSnapshot) rides on the backend object compile() makes and hands to
    get_cache_key, then to add_stages: one per compile, never shared."""
    source = inspect.getsource(compiler.compile)
    assert "backend = make_backend(target)" in source and "get_cache_key(src, backend," in source
    assert "backend.add_stages(stages, options, src.language" in source
    assert not hasattr(compiler.make_backend, "cache_info")


@pytest.mark.parametrize("target", ["sm90", "gfx950"])
def test_backends_call_the_stages_hook_with_the_shapes_we_expect(target, no_auto_pipelines):
    """Every version: ``hook(backend, stages, options, language, capability)`` from add_stages.
    3.7+ also: ``hook()`` for ``(key, hash)`` before that; 3.6 never calls it bare. (With no pipeline in
    effect: otherwise replacing tritium's hook is refused, see test_errors.py.)"""
    seen = []

    def hook(*args):
        seen.append(args)
        return ("", "") if not args else None

    tritium_hook = knobs.runtime.add_stages_inspection_hook
    knobs.runtime.add_stages_inspection_hook = hook
    try:
        fn, sig, const = KERNELS["add"]
        compile_kernel(fn, sig, target, constexprs=const, options={"num_warps": 2})
    finally:
        knobs.runtime.add_stages_inspection_hook = tritium_hook
    bare_calls = [args for args in seen if not args]
    assert len(bare_calls) == (1 if compat.NATIVE_HOOK_PROTOCOL else 0)
    (full,) = [args for args in seen if args]
    backend, stages, options, language, capability = full
    expected = ["ttir", "ttgir", "llir", "ptx", "cubin"] if target == "sm90" else ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    assert list(stages) == expected
    assert (capability is None) == (target == "gfx950")
    assert compat.stage_capability(backend, options) == capability  # what a compile snapshot applies with


def test_pass_builders_take_a_pass_manager_first():
    """intercept_pass_managers relies on ``builder(pm, *args)``: the pm is always the first argument."""
    for name, (_, _, builder) in compat.PASS_BUILDERS.items():
        doc = builder.fn.__doc__
        # an overloaded builder (3.8+: allocate_warp_groups) lists each overload as "N. add_x(arg0: ...)"
        signatures = re.findall(r"^\d+\. \w+\((.*)\)", doc, re.M) if "Overloaded function" in doc \
            else [doc.split("(", 1)[1]]
        for params in signatures:
            assert "ir.pass_manager" in params.split(",")[0].split(")")[0], name


def test_pass_manager_subclass_runs_like_the_base():
    ctx = ir.context()
    ir.load_dialects(ctx)
    pm = compat.RecordingPassManager(ctx)
    assert isinstance(pm, ir.pass_manager) and pm.recorded is None  # not inside a tritium stage
    fn, sig, const = KERNELS["add"]
    mod = compat.parse_module(compile_kernel(fn, sig, "sm90", constexprs=const).asm["ttir"], ctx)
    compat.stock_pass_builder("common.canonicalizer").fn(pm)
    pm.run(mod, "tritium.test")
    assert mod.verify()


def test_known_pass_builders_are_discovered():
    for name in ["ttgpuir.coalesce", "common.canonicalizer", "ttir.convert_to_ttgpuir", "ttgpuir.assign_latencies",
                 "ttgpuir.schedule_loops", "nvidia.ttnvgpuir.fence_insertion", "amd.ttgpuir.accelerate_matmul",
                 "ttgpuir.pipeline"]:
        assert name in compat.PASS_BUILDERS, name
    # passes that come and go between versions: if these fail, Triton moved under us
    assert ("nvidia.ttnvgpuir.plan_cta" in compat.PASS_BUILDERS) == (compat.TRITON_VERSION < (3, 9))
    assert ("ttir.rewrite_tensor_pointer" in compat.PASS_BUILDERS) == (compat.TRITON_VERSION < (3, 8))
    assert ("nvidia.ttnvgpuir.assign_cga_layouts" in compat.PASS_BUILDERS) == (compat.TRITON_VERSION >= (3, 9))


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


def test_existing_hook_is_chained_not_clobbered(no_auto_pipelines):
    """The earlier hook still sees every stage dict; on 3.7+ its ``(key, hash)`` is folded in with ours."""
    import tritium.plugins as tp
    calls = []

    def earlier(*args):
        if not args:
            return "earlier-key", "earlier-hash"
        calls.append(list(args[1]))

    tp.disable()
    knobs.runtime.add_stages_inspection_hook = earlier
    tp.enable()
    try:
        fn, sig, const = KERNELS["add"]
        compile_kernel(fn, sig, "sm90", constexprs=const, options={"num_warps": 1})
        assert calls and calls[0][0] == "ttir"
        if compat.NATIVE_HOOK_PROTOCOL:
            assert knobs.runtime.add_stages_inspection_hook() == ("earlier-key", "earlier-hash")
            with tp.use_pipeline(tp.Pipeline("chained")):
                key, digest = knobs.runtime.add_stages_inspection_hook()
            assert key.startswith("earlier-key|chained#") and digest.startswith("earlier-hash") and len(digest) > 12
    finally:
        tp.disable()
        knobs.runtime.add_stages_inspection_hook = None
        tp.enable()


def test_no_pipeline_keeps_bare_tritons_on_disk_key(no_auto_pipelines):
    import tritium.plugins as tp
    fn, sig, const = KERNELS["add"]
    tp.disable()
    try:
        bare = compile_kernel(fn, sig, "sm90", constexprs=const).hash
    finally:
        tp.enable()
    assert compile_kernel(fn, sig, "sm90", constexprs=const).hash == bare
    with tp.use_pipeline(tp.Pipeline("keyed")):
        assert compile_kernel(fn, sig, "sm90", constexprs=const).hash != bare


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
    marked = text.replace('"ttg.num-warps" = 4 : i32', '"ttg.num-warps" = 4 : i32, tritium.mark = 7 : i32, '
                          'tritium.name = "seven", tritium.flag = true')
    compat.replace_module_body(mod, compat.parse_module(marked.replace("arith.addf", "arith.mulf"), ctx))
    assert "arith.mulf" in mod.str() and "arith.addf" not in mod.str()
    assert mod.get_int_attr("tritium.mark") == 7
    assert mod.get_operation().get_str_attr("tritium.name") == "seven"
    assert mod.get_operation().get_bool_attr("tritium.flag") is True
    assert mod.verify()


def test_signature_type_names_and_entry_function_name_read_this_triton():
    """The CLI lists the signature types from Triton's table; the pass runner checks a pass kept the kernel."""
    import triton.language as tl
    from triton._C.libtriton import ir
    names = compat.signature_type_names()
    assert {"i32", "fp16", "bf16", "fp32"} <= set(names)
    assert all(tl.str_to_ty(n, None) is not None for n in ("i32", "fp16"))
    ctx = ir.context()
    ir.load_dialects(ctx)
    kernel = compat.parse_module("module {\n  tt.func public @k() {\n    tt.return\n  }\n}\n", ctx)
    assert compat.entry_function_name(kernel) == "k"
    assert compat.entry_function_name(compat.parse_module("module {\n}\n", ctx)) == ""


def test_launch_keywords_become_backend_options_where_we_hook():
    """compat.install_launch_options relies on: _pack_args parsing the launch keywords with parse_options and
    refusing those its result lacks; compile() parsing options.__dict__ again and hashing every field of it;
    the JIT's in-memory key holding the raw keywords; triton.Config passing its kwargs to the launch."""
    import triton
    pack = inspect.getsource(compat._orig_pack_args)
    assert "backend.parse_options(kwargs)" in pack and "if k not in options.__dict__ and k not in sigkeys" in pack
    assert compat._UNRECOGNISED.search(re.search(r'raise KeyError\("(.*)" % k\)', pack)[1].replace("%s", "x"))
    assert list(inspect.signature(compat._orig_pack_args).parameters)[:3] == ["self", "backend", "kwargs"]
    source = inspect.getsource(compiler.compile)
    assert "backend.parse_options(dict(options or dict(), **extra_options))" in source
    assert "get_cache_key(src, backend, options" in source and "**options.__dict__" in source
    assert "backend.add_stages(stages, options, src.language" in source  # the options object, as parsed
    assert "str(options)" in inspect.getsource(compat._orig_compute_cache_key)
    assert "**self.kwargs" in inspect.getsource(triton.Config.all_kwargs)
    assert list(inspect.signature(compat._orig_config_init).parameters)[:2] == ["self", "kwargs"]
    assert {cls.__name__ for cls in compat._orig_parse_options} >= {"CUDABackend", "HIPBackend"}
    for cls, parse in compat._orig_parse_options.items():
        assert list(inspect.signature(parse).parameters) == ["self", "opts"], cls
        assert "__dataclass_fields__" in inspect.getsource(parse), cls  # keeps only its dataclass's fields


@pytest.mark.parametrize("target", ["sm90", "gfx950"])
def test_options_with_plugin_fields_hash_and_print_them(target):
    """A backend options object with a plugin's field added keeps the backend's fields and puts the new one in
    ``__dict__`` and ``hash()``."""
    from tritium.plugins.inspection import parse_target
    from triton.compiler import make_backend
    backend = make_backend(parse_target(target))
    options = compat._orig_parse_options[type(backend)](backend, {"num_warps": 8})
    extended = compat._with_plugin_options(options, {"my_opt": ("a", "b")})
    assert extended.num_warps == 8 and extended.my_opt == ("a", "b") and type(extended).__name__ == type(options).__name__
    assert extended.__dict__ == {**options.__dict__, "my_opt": ("a", "b")}
    assert extended.hash() != options.hash() != compat._with_plugin_options(options, {"my_opt": ()}).hash()


def test_the_nvidia_launcher_takes_clusters_by_its_packed_metadata():
    """compat.install_cluster_launch relies on the launcher's call ``(gridX, gridY, gridZ, stream, function,
    kernel_metadata, ...)`` with ``kernel_metadata = (num_warps, num_ctas, shared)``, on ``num_ctas`` sizing the
    per-CTA scratch, and on its C launch multiplying gridX by num_ctas under a cluster dimension (checked on the
    H200: tests/gpu/test_tlx_clusters_gpu.py)."""
    import collections
    from triton.backends.nvidia import compiler as nv_compiler, driver as nv
    import tritium.tlx  # noqa: F401 - installs the cluster launch
    params = list(inspect.signature(inspect.unwrap(nv.CudaLauncher.__call__)).parameters)
    assert params[:6] == ["self", "gridX", "gridY", "gridZ", "stream", "function"]
    assert params[6] in ("kernel_metadata", "args")  # 3.6: (..., function, *args), args[0] the metadata
    assert "self.num_ctas" in inspect.getsource(inspect.unwrap(nv.CudaLauncher.__call__))
    meta = collections.namedtuple("M", "num_warps num_ctas shared")(4, 1, 1024)
    assert nv_compiler.CUDABackend.pack_metadata(None, meta) == (4, 1, 1024)
    from pathlib import Path
    launch = "".join(p.read_text() for p in Path(nv.__file__).parent.glob("driver.*") if p.suffix in (".py", ".c"))
    assert "gridDimX = gridX * num_ctas" in launch and "clusterDim.x = num_ctas" in launch
