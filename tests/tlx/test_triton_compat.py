"""The Triton internals ``tritium.tlx.triton_compat`` relies on. If Triton changes under it, these fail
first and loudly (tests/test_compat.py does the same for the plugin core's ``tritium.compat``)."""
from __future__ import annotations

import ast
import inspect
import re
import types

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.language.core import builtin

from aggregate_kernels import running_sum_kernel
from kernels import KERNELS  # tests/ is on the path (conftest.py)
from tritium.plugins.inspection import compile_kernel
from tritium.tlx import triton_compat as tc

SM90 = GPUTarget("cuda", 90, 32)


# --------------------------------------------------------------------------------------------
# Each private name, with the shape the shim assumes
# --------------------------------------------------------------------------------------------
def test_bindings():
    from triton._C.libtriton import gluon_ir, ir
    assert tc.ir is ir and tc.gluon_ir is gluon_ir
    for name in ("get_distributed_ty", "get_shared_mem_desc_ty"):
        assert hasattr(gluon_ir.GluonOpBuilder, name), name


def test_unwrap_if_constexpr():
    assert tc.unwrap_if_constexpr(tl.constexpr(3)) == 3
    assert tc.unwrap_if_constexpr([tl.constexpr(1), 2]) == [1, 2]
    assert tc.unwrap_if_constexpr((tl.constexpr(1), tl.constexpr("a"))) == (1, "a")
    assert list(tc.unwrap_if_constexpr(tl.tuple([tl.constexpr(4)]))) == [4]
    t = object()
    assert tc.unwrap_if_constexpr(t) is t


def test_code_generator():
    """``cur_node`` is the statement being visited; ``visit_With`` enters, visits the body once, exits;
    ``enter_sub_region`` saves the insertion point on entry and restores the scope on exit."""
    from triton.compiler.code_generator import CodeGenerator, enter_sub_region
    assert "self.cur_node = node" in inspect.getsource(CodeGenerator.visit)
    with_src = inspect.getsource(CodeGenerator.visit_With)
    assert with_src.index("cm.__enter__()") < with_src.index("visit_compound_statement(node.body)") \
        < with_src.index("__exit__(")
    init = inspect.getsource(CodeGenerator.__init__)
    for attr in ("self.builder", "self.module", "self.context", "self.file_name", "self.begin_line"):
        assert attr in init, attr
    assert list(inspect.signature(enter_sub_region).parameters) == ["generator"]
    enter = inspect.getsource(enter_sub_region.__enter__)
    assert "self.insert_point = self.generator.builder.get_insertion_point()" in enter
    assert "lscope" in inspect.getsource(enter_sub_region.__exit__)


def test_fork_aggregates_compile():
    """accept_fork_aggregates: stock _aggregate, wrapped; a fork-style aggregate (no __init__, jit methods)."""
    import triton.language.core as core
    source = inspect.getsource(core._aggregate.__wrapped__)
    assert core._aggregate.tritium_fork_aggregates and "for (name, member) in inspect.getmembers(cls):" in source
    k = compile_kernel(running_sum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, "sm90", constexprs={"N": 8})
    assert "st.global" in k.asm["ptx"]


def test_semantic():
    from triton.language.semantic import TritonSemantic
    assert list(inspect.signature(TritonSemantic._str_to_dot_input_precision).parameters) == ["self", "input_precision"]
    # accept_fork_load_cache_modifier wraps the load parser (the wrapper is installed by importing tritium.tlx)
    parse = TritonSemantic._str_to_load_cache_modifier
    assert parse.tritium_cs and list(inspect.signature(parse.__wrapped__).parameters) == ["self", "cache_modifier"]
    assert parse(None, ".cs") == tc.ir.CACHE_MODIFIER.CS and parse(None, ".cg") == tc.ir.CACHE_MODIFIER.CG


def test_interpreter():
    from triton.runtime import interpreter
    # accept_bf16_interpreted_dots wraps the builder's dot (installed by importing tritium.tlx)
    dot = interpreter.InterpreterBuilder.create_dot
    assert dot.tritium_bf16 and list(inspect.signature(dot.__wrapped__).parameters)[:4] == ["self", "a", "b", "d"]
    assert "np.matmul(a_data, b_data" in inspect.getsource(dot.__wrapped__)
    call = interpreter.GridExecutor.__call__  # accept_constexpr_launch_args
    assert call.tritium_constexpr_args
    assert "self._init_args_hst(args_dev, kwargs)" in inspect.getsource(call.__wrapped__)
    cast = interpreter.InterpreterBuilder.cast_impl  # round_interpreted_bf16_casts
    assert cast.tritium_bf16_rounding and list(inspect.signature(cast.__wrapped__).parameters) == ["self", "src",
                                                                                                   "dst_type"]
    rewrite = interpreter.FunctionRewriter._compile_and_exec  # accept_interpreted_closures
    assert rewrite.tritium_closures
    assert "exec(compiled_code, fn_globals, local_namespace)" in inspect.getsource(rewrite.__wrapped__)
    assert callable(getattr(interpreter.InterpretedFunction, "fn", None)) or "self.fn = fn" in \
        inspect.getsource(interpreter.InterpretedFunction.__init__)
    assert isinstance(tc.interpreter_builder(), interpreter.InterpreterBuilder)
    assert tc.interpreter_semantic() is interpreter.interpreter_semantic
    assert "self.grid_idx = (x, y, z)" in inspect.getsource(interpreter.InterpreterBuilder.set_grid_idx)
    assert list(inspect.signature(tc.TensorHandle).parameters)[:2] == ["data", "dtype"]
    assert issubclass(tc.ASTTransformer, ast.NodeTransformer)
    assert tc.np_dtype(tl.float16) == np.float16 and tc.np_dtype(tl.int32) == np.int32


# --------------------------------------------------------------------------------------------
# The shim on a kernel being compiled
# --------------------------------------------------------------------------------------------
_seen: list = []


@builtin
def _probe(tag, _semantic=None):
    """Record what the shim sees from inside a builtin."""
    state = tc.builder_state(_semantic)
    state["calls"] = state.get("calls", 0) + 1
    kernel = tc.kernel_state(_semantic)
    kernel["calls"] = kernel.get("calls", 0) + 1
    _seen.append(types.SimpleNamespace(
        tag=tc.unwrap_if_constexpr(tag), interpreted=tc.interpreted(_semantic),
        num_warps=tc.compile_options(_semantic).num_warps, module=tc.kernel_module(_semantic),
        where=tc.statement_location(_semantic), types=tc.type_builder(_semantic), builder_calls=state["calls"],
        kernel_calls=kernel["calls"], precision=tc.dot_input_precision(_semantic, "tf32")))


@builtin
def _not_in_with(_semantic=None):
    tc.with_statement(_semantic, "tlx.probe")


@triton.jit
def _helper(x):
    _probe("helper")  # line: HELPER_LINE
    return x


@triton.jit
def _kernel(out_ptr):
    _probe("kernel")  # line: KERNEL_LINE
    _probe("kernel")
    tl.store(out_ptr, _helper(1))


@triton.jit
def _bad_kernel(out_ptr):
    _not_in_with()


def _ttir(fn, num_warps=8):
    backend = make_backend(SM90)
    opts = backend.parse_options({"num_warps": num_warps})
    ctx = tc.ir.context()
    tc.ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    src = ASTSource(fn, {"out_ptr": "*i32"}, {})
    return src.make_ir(SM90, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)


def _line(tag: str) -> int:
    lines = inspect.getsource(inspect.getmodule(_ttir)).splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.endswith(f"# line: {tag}"))


def test_state_options_and_locations_while_compiling():
    _seen.clear()
    _ttir(_kernel, num_warps=8)
    kernel1, kernel2, helper = _seen
    assert [s.tag for s in _seen] == ["kernel", "kernel", "helper"]
    assert not any(s.interpreted for s in _seen) and {s.num_warps for s in _seen} == {8}
    assert kernel1.module is helper.module and isinstance(kernel1.module, tc.ir.module)  # the helper shares it
    assert [s.kernel_calls for s in _seen] == [1, 2, 3]  # one kernel state, the helper's calls included
    assert [s.builder_calls for s in _seen] == [1, 2, 1]  # the helper is a function of its own
    assert kernel1.types is kernel2.types and isinstance(kernel1.types, tc.gluon_ir.GluonOpBuilder)
    assert kernel1.where == f"{__file__}:{_line('KERNEL_LINE')}"
    assert helper.where == f"{__file__}:{_line('HELPER_LINE')}"
    assert kernel1.precision == tc.ir.INPUT_PRECISION.TF32


def test_with_statement_checks_its_statement():
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        _ttir(_bad_kernel)
    assert "must be used as a context manager: `with tlx.probe(...):`" in str(e.value.__cause__ or e.value)


def test_a_code_generator_without_cur_node_fails_saying_so():
    """A Triton whose code generator stopped exposing the statement being compiled."""
    semantic = types.SimpleNamespace(builder=types.SimpleNamespace())
    tc.builder_state(semantic)["codegen"] = types.SimpleNamespace()
    with pytest.raises(RuntimeError, match="does not expose the statement being compiled"):
        tc.with_statement(semantic, "tlx.async_task")


def test_builtins_outside_a_kernel_being_compiled():
    semantic = types.SimpleNamespace(builder=types.SimpleNamespace())
    with pytest.raises(RuntimeError, match="only be used inside a @triton.jit kernel being compiled"):
        tc.kernel_module(semantic)
    assert tc.interpreted(None)


# --------------------------------------------------------------------------------------------
# How this Triton spells what TLX emits
# --------------------------------------------------------------------------------------------
def test_binding_enums_and_load_hints():
    """3.6 binds enums with pybind11, 3.9 with nanobind (no ``int()``); 3.9 folds load hints into a cache policy."""
    from triton.language.semantic import TritonSemantic
    ir = tc.ir
    assert tc.enum_value(ir.CACHE_MODIFIER.CG) == ir.CACHE_MODIFIER.CG.value
    assert tc.enum_value(ir.INPUT_PRECISION.TF32) == ir.INPUT_PRECISION.TF32.value
    load = list(inspect.signature(TritonSemantic.load).parameters)
    descriptor_load = list(inspect.signature(TritonSemantic.descriptor_load).parameters)
    if tc.CACHE_POLICY:
        assert load == ["self", "ptr", "mask", "other", "cache_policy", "is_volatile"]
        assert descriptor_load == ["self", "desc", "offsets", "cache_policy"]
    else:
        assert load == ["self", "ptr", "mask", "other", "boundary_check", "padding_option", "cache_modifier",
                        "eviction_policy", "is_volatile"]
        assert descriptor_load == ["self", "desc", "offsets", "cache_modifier", "eviction_policy"]
    assert tc.CACHE_POLICY == (tc.TRITON_VERSION >= (3, 9))
    assert tc.TMA_STORE_WAIT_READ_ONLY == (tc.TRITON_VERSION >= (3, 8))  # seen on 3.6, 3.7, 3.8, 3.9


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_amd_anchor_pass_runs_in_the_ttgir_stage(target):
    """TLX inserts AMD's async-copy coalescing after this pass; it must be in this Triton's AMD ttgir stage."""
    from tritium.plugins import CompileReport, Pipeline
    fn, sig, const = KERNELS["add"]
    report = CompileReport()
    compile_kernel(fn, sig, target, constexprs=const, pipeline=Pipeline("stock"), report=report)
    assert tc.AMD_LAST_LAYOUT_PASS in [p.name for p in report.stage("ttgir").passes]


def test_frontend_values_are_named_through_set_name():
    """3.8+ names variables through ``base_value._set_name`` (unimplemented there); 3.6/3.7 through
    ``_flatten_ir``. TLX values implement ``_set_name`` so a jit helper can take them on both."""
    from triton.compiler.code_generator import CodeGenerator
    from triton.language.core import base_value
    from tritium.tlx.types import tlx_value
    naming = inspect.getsource(CodeGenerator._maybe_set_loc_to_name)
    assert ("._set_name(" in naming) == tc.VALUE_SET_NAME, naming
    assert tc.VALUE_SET_NAME == (tc.TRITON_VERSION >= (3, 8))
    if tc.VALUE_SET_NAME:
        assert tlx_value._set_name is not base_value._set_name


# --------------------------------------------------------------------------------------------
# Building TTGIR in place of placeholders (tlx/lowering.py's ``build``)
# --------------------------------------------------------------------------------------------
_BUILD_TYPES = ("!ttg.memdesc<2x1xi64, #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, "
                "#ttg.shared_memory, mutable>",
                "!ttg.memdesc<1xi64, #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, "
                "#ttg.shared_memory, mutable>")


def _built_module():
    """A module of one function whose body has an ``i1`` constant, built with the shim's builder."""
    from triton._C.libtriton import ir
    ctx = ir.context()
    ir.load_dialects(ctx)
    make_backend(SM90).load_dialects(ctx)
    b = tc.op_builder(ctx)
    mod = b.create_module()
    fn = b.get_or_insert_function(mod, "f", b.get_function_ty([], []), "public", False)
    mod.push_back(fn)
    b.set_insertion_point_to_start(fn.add_entry_block())
    b.set_loc(b.create_loc("k.py", 7, 1))
    return ctx, b, mod


def test_in_place_building():
    """The bindings the lowering builds with: printed types read back, the barrier ops (with this version's
    ``mbarrier_arrive``), the walk in program order, and a placeholder left dead for CSE."""
    ctx, b, mod = _built_module()
    types = tc.parse_types(ctx, list(_BUILD_TYPES))
    assert [str(types[t]) for t in _BUILD_TYPES] == list(_BUILD_TYPES)
    true = b.get_int1(True)
    bars = b.create_local_alloc(types[_BUILD_TYPES[0]])
    bar = b.create_memdesc_index(types[_BUILD_TYPES[1]], bars, b.get_int32(1))
    b.create_mbarrier_init(bar, 1)
    b.create_mbarrier_expect(bar, 64, true)
    tc.mbarrier_arrive(b, bar, 1, true)
    b.create_mbarrier_wait(bar, b.get_int32(0), true, [])
    asm = b.create_inline_asm("tlx:x", "=r", [], [b.get_int32_ty()], False, 1)
    tc.mark_dead(b, asm.get_operation())
    b.create_local_dealloc(bars)
    b.ret([])
    names = [op.get_name() for op in tc.module_ops(mod)]
    assert names[-2:] == ["tt.func", "builtin.module"]  # post-order: the function after its body
    assert [n for n in names if n.startswith(("ttg.", "ttng."))] == [
        "ttg.local_alloc", "ttg.memdesc_index", "ttng.init_barrier", "ttng.barrier_expect", "ttng.arrive_barrier",
        "ttng.wait_barrier", "ttg.local_dealloc"]
    text = mod.str()
    assert re.search(r"ttng\.arrive_barrier %\w+, 1, %true : ", text)  # this CTA's barrier, count 1, predicated
    assert 'tt.elementwise_inline_asm "tlx:x" {constraints = "=r", packed_element = 1 : i32, pure = true}' in text
    assert mod.verify()
