"""Every Triton internal that TLX relies on, in one place (the plugin core's are in ``tritium.compat``).

TLX ops are Triton builtins: Triton hands them ``_semantic``, whose builder emits TTIR. Beyond that
public contract TLX needs a few things Triton keeps to itself:

* the ``CodeGenerator`` compiling the kernel (found by walking up the stack, since builtins only get
  the builder): its module (shared by the kernel and the ``@triton.jit`` helpers inlined into it),
  its MLIR context (to build TritonGPU types with a ``GluonOpBuilder``), the statement being
  compiled (``cur_node``: error locations, and ``async_task``'s ``with`` statement) and its scopes
  (``enter_sub_region``, ``visit_compound_statement``) to generate one copy of a task per replica;
* state kept per function being built (on the builder) and per kernel (on the module);
* the compile options Triton stores on the builder, and ``_semantic``'s precision parser;
* the MLIR bindings (``triton._C.libtriton``) and ``triton.language.core._unwrap_if_constexpr``;
* the interpreter's globals, tensor handles and AST rewrite (``triton.runtime.interpreter``);
* how this Triton spells what TLX emits: binding enums, load cache hints, the TMA store wait, cluster
  barriers, TMA loads in PTX, the AMD pass TLX anchors on (:func:`enum_value`,
  :func:`async_copy_hints`, :func:`semantic_load`, :func:`tma_store_wait`, ...).

Nothing in Triton is patched: kernels without TLX ops are untouched. tests/tlx/test_triton_compat.py
checks each of these against the installed Triton, and tests/test_private_names.py that no other
TLX module reaches past this one.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any, Optional, Sequence

import numpy as np
import triton.language as tl
import triton.language.semantic as _tl_semantic
import triton.language.core as _tl_core
from triton._C.libtriton import gluon_ir, ir
from triton.compiler.code_generator import CodeGenerator, enter_sub_region
from triton.language.core import _unwrap_if_constexpr
from triton.runtime import interpreter as _interpreter
from triton.runtime.interpreter import ASTTransformer, InterpreterBuilder, TensorHandle

from ..compat import TRITON_VERSION, new_pass_manager, parse_module, run_plain, stock_pass_builder

__all__ = ["ir", "gluon_ir", "unwrap_if_constexpr", "interpreted", "interpreter_running", "compile_options",
           "dot_input_precision", "builder_state", "kernel_state", "kernel_module", "type_builder", "unflattening_loop_carry",
           "statement_location", "with_statement", "visit_body", "SubRegion", "interpreter_semantic",
           "interpreter_builder", "interpreter_program", "np_dtype", "TensorHandle", "ASTTransformer",
           "enum_value", "CACHE_POLICY", "async_copy_hints", "async_copy", "semantic_load", "semantic_descriptor_load",
           "interpreter_masked_load", "interpreter_launch_option", "interpreter_num_warps", "VALUE_SET_NAME", "name_value_handles",
           "TMA_STORE_WAIT_READ_ONLY", "tma_store_wait", "cluster_barrier_ops", "ptx_tma_load",
           "AMD_LAST_LAYOUT_PASS", "SCHED_BARRIER", "run_amd_coalesce_async_copy", "module_ops", "op_builder",
           "parse_types", "mark_dead", "keep_argument_locations", "restore_argument_locations", "copy_argument_locations",
           "mbarrier_arrive",
           "warpgroup_mma"]

#: A ``tl.constexpr`` (also inside lists and tuples) as its plain value; anything else as is.
unwrap_if_constexpr = _unwrap_if_constexpr

_STATE = "_tlx_state"  # attribute of the builder / module holding TLX's dict of state


# --------------------------------------------------------------------------------------------
# The semantic object and its builder
# --------------------------------------------------------------------------------------------
def interpreted(semantic: Any) -> bool:
    """Whether a builtin runs under ``TRITON_INTERPRET=1`` (the interpreter passes no semantic, or its own)."""
    return semantic is None or isinstance(semantic.builder, InterpreterBuilder)


def interpreter_running() -> bool:
    """Whether the interpreter is running a kernel now (so a builtin called without a semantic is inside
    it): for each program it swaps Triton's builtins, a tensor descriptor's ``load`` among them, for its
    own, and puts them back after."""
    return not getattr(tl.core.tensor_descriptor_base.load, "__triton_builtin__", False)


def compile_options(semantic: Any) -> Any:
    """The backend options the kernel is compiled with (``arch``, ``num_warps``, ...); the code
    generator stores them on its builder."""
    return semantic.builder.options


def dot_input_precision(semantic: Any, precision: str) -> Any:
    """``tl.dot``'s ``input_precision`` string as the binding enum, as ``tl.dot`` itself parses it."""
    return semantic._str_to_dot_input_precision(precision)


def builder_state(semantic: Any) -> dict:
    """TLX state of the function being built (each ``@triton.jit`` function gets its own builder)."""
    return semantic.builder.__dict__.setdefault(_STATE, {})


def _code_generator(builder: Any) -> CodeGenerator:
    """The CodeGenerator driving ``builder`` (builtins only receive the builder; TLX needs its module)."""
    state = builder.__dict__.setdefault(_STATE, {})
    gen = state.get("codegen")
    if gen is not None:
        return gen
    frame = sys._getframe(1)
    while frame is not None:
        gen = frame.f_locals.get("self")
        if isinstance(gen, CodeGenerator) and gen.builder is builder:
            state["codegen"] = gen
            return gen
        frame = frame.f_back
    raise RuntimeError("TLX ops can only be used inside a @triton.jit kernel being compiled")


#: The CodeGenerator methods that hand a loop's carried values to the loop body and past the loop.
_LOOP_VISITORS = ("visit_For", "visit_While")


def unflattening_loop_carry() -> bool:
    """Whether the value a type's ``_unflatten_ir`` is building is a loop's carry: a block argument of its
    body (or before-region) or a result of the loop. The first frame above the unflattening ones
    (``unflatten_ir_values``, nested ``_unflatten_ir``) says who asked: ``visit_For``/``visit_While`` for a
    carry; a helper call's results, an ``if``'s results and a scope cloned for a sub-region come from
    elsewhere."""
    frame = sys._getframe(2)  # the caller's caller: the _unflatten_ir asking is frame 1
    while frame is not None and "unflatten" in frame.f_code.co_name:
        frame = frame.f_back
    return (frame is not None and frame.f_code.co_name in _LOOP_VISITORS
            and isinstance(frame.f_locals.get("self"), CodeGenerator))


#: The CodeGenerator methods that give an ``if``'s results their values (``scf.if``, or branches to a block).
_IF_VISITORS = ("visit_if_scf", "visit_if_top_level")


def if_result() -> Optional[tuple[Any, str]]:
    """``(semantic, "file:line" of the if)`` when the value a type's ``_unflatten_ir`` is building is a result of
    an ``if`` (found as in :func:`unflattening_loop_carry`), else ``None``. The builder then inserts after the
    ``if``, where the variable gets its new value."""
    frame = sys._getframe(2)
    while frame is not None and "unflatten" in frame.f_code.co_name:
        frame = frame.f_back
    gen = frame.f_locals.get("self") if frame is not None and frame.f_code.co_name in _IF_VISITORS else None
    if not isinstance(gen, CodeGenerator):
        return None
    return gen.semantic, f"{gen.file_name}:{gen.begin_line + frame.f_locals['node'].lineno}"


def comparing_if_branches() -> bool:
    """Whether a type's ``__eq__`` is Triton's check that an ``if``'s branches (or a branch and the value
    before the ``if``) give a variable the same type: the caller of ``__eq__``."""
    frame = sys._getframe(2)
    return frame.f_code.co_name == "visit_then_else_blocks" and isinstance(frame.f_locals.get("self"), CodeGenerator)


def kernel_module(semantic: Any) -> Any:
    """The ``ir.module`` being built: the kernel's, shared with the helpers inlined into it."""
    return _code_generator(semantic.builder).module


def kernel_state(semantic: Any) -> dict:
    """TLX state of the whole kernel (kept on its module, so its helpers see it too)."""
    return kernel_module(semantic).__dict__.setdefault(_STATE, {})


def type_builder(semantic: Any) -> gluon_ir.GluonOpBuilder:
    """A builder for TritonGPU types and layouts on the kernel's context (it inserts nothing)."""
    state = builder_state(semantic)
    g = state.get("types")
    if g is None:
        g = state["types"] = gluon_ir.GluonOpBuilder(_code_generator(semantic.builder).context)
    return g


def statement_location(semantic: Any) -> str:
    """``file:line`` of the kernel statement being compiled."""
    gen = _code_generator(semantic.builder)
    return f"{gen.file_name}:{gen.begin_line + gen.cur_node.lineno}"


# --------------------------------------------------------------------------------------------
# Generating a ``with`` body again (one copy of a replicated ``async_task`` per replica)
# --------------------------------------------------------------------------------------------
def with_statement(semantic: Any, op: str) -> ast.With:
    """The one-item ``with`` statement whose context manager ``op`` is being built.

    Stock ``visit_With`` builds the context manager, calls ``__enter__``, visits the body once and
    calls ``__exit__``; ``CodeGenerator.cur_node`` is the statement ``visit`` is dispatching.
    """
    gen = _code_generator(semantic.builder)
    node = getattr(gen, "cur_node", None)
    if node is None or not hasattr(gen, "visit_compound_statement"):
        raise RuntimeError(f"{op}: this Triton's code generator does not expose the statement being compiled "
                           "(CodeGenerator.cur_node / visit_compound_statement); tritium.tlx needs them to "
                           "generate one copy of a task per replica")
    if not isinstance(node, ast.With):
        raise ValueError(f"{op}(...) must be used as a context manager: `with {op}(...):`")
    if len(node.items) != 1:
        raise ValueError(f"`with {op}(...)` must be the only context manager of its `with` statement")
    return node


def visit_body(semantic: Any, stmts: Sequence[ast.stmt]) -> None:
    """Generate code for ``stmts`` at the current insertion point, as ``visit_With`` does for a body."""
    _code_generator(semantic.builder).visit_compound_statement(list(stmts))


class SubRegion:
    """A scope whose names vanish on :meth:`close` (Triton's own, used for ``if`` and loop bodies),
    opened at the current insertion point."""

    def __init__(self, semantic: Any) -> None:
        self._scope = enter_sub_region(_code_generator(semantic.builder))
        self._scope.__enter__()

    def restore_insertion_point(self) -> None:
        """Insert where the region was opened again."""
        self._scope.generator.builder.restore_insertion_point(self._scope.insert_point)

    def close(self) -> None:
        self._scope.__exit__()


# --------------------------------------------------------------------------------------------
# The interpreter (TRITON_INTERPRET=1)
# --------------------------------------------------------------------------------------------
def interpreter_semantic() -> Any:
    """The semantic object the interpreter runs ``tl`` builtins with."""
    return _interpreter.interpreter_semantic


def interpreter_builder() -> InterpreterBuilder:
    return _interpreter.interpreter_builder


def interpreter_program() -> Any:
    """The program being interpreted: ``set_grid_idx`` stores a new tuple per program, so its identity
    tells programs apart even when two launches reuse a grid index (``None`` before any launch)."""
    return getattr(_interpreter.interpreter_builder, "grid_idx", None)


def np_dtype(dtype: tl.dtype) -> np.dtype:
    """The numpy dtype the interpreter stores ``dtype`` values in."""
    return _interpreter._get_np_dtype(dtype)


# --------------------------------------------------------------------------------------------
# Building TTGIR in place of the placeholders (tlx/lowering.py)
# --------------------------------------------------------------------------------------------
def module_ops(mod: ir.module) -> list[ir.operation]:
    """Every operation of ``mod`` in the binding's walk order: post-order, so ops of one block come in program
    order and an op with regions after the ops inside them."""
    ops: list[ir.operation] = []
    mod.walk(ops.append)
    return ops


def op_builder(context: Any) -> gluon_ir.GluonOpBuilder:
    """A builder of TritonGPU ops on ``context`` (Gluon's, which binds the ``ttg``/``ttng`` ops)."""
    return gluon_ir.GluonOpBuilder(context)


def parse_types(context: Any, types: Sequence[str]) -> dict[str, ir.type]:
    """Printed types as ``ir.type``s of ``context``: the bindings build a memdesc or tensor type only from its
    parts, which a placeholder's payload carries printed, so they are read back through one stub function
    whose arguments have those types (the bindings parse whole modules only)."""
    if not types:
        return {}
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    stub = parse_module(f"module {{\n  tt.func private @tlx_types({args}) {{\n    tt.return\n  }}\n}}\n", context)
    fn = stub.get_function("tlx_types")
    return {t: fn.args(i).get_type() for i, t in enumerate(types)}


def mark_dead(builder: Any, placeholder: ir.operation) -> None:
    """Leave a placeholder whose ops were built for CSE to remove: the bindings cannot erase an op, and a pure
    inline asm whose result nothing uses is dead."""
    placeholder.get_result(0).set_attr("pure", builder.get_bool_attr(True))


#: Attribute of the constants that carry a block argument's location through the printed module (its index).
_ARG_LOC = "tlx.arg_loc"


def _blocks_with_arguments(ops: Sequence[Any]) -> list[Any]:
    """The blocks with arguments that hold ``ops`` (:func:`module_ops`), ordered by their region's op among the
    ops with regions, then by their first op: an order that adding or moving ops without regions keeps."""
    with_regions = [op for op in ops if op.get_num_regions()]
    rank = {op.get_region(i).id(): n for n, op in enumerate(with_regions) for i in range(op.get_num_regions())}
    blocks: dict[int, Any] = {}
    for op in ops:
        block = op.get_block()
        if block is not None and block.get_num_arguments():
            blocks.setdefault(block.id(), block)
    return sorted(blocks.values(), key=lambda block: rank[block.get_parent().id()])


def keep_argument_locations(mod: Any) -> None:
    """Before the lowering prints a module to edit it as text and parse it back (tlx/pipeline.py; its text step
    outlines tasks into new blocks, so :func:`copy_argument_locations` cannot pair them): put, at the start of
    every block with arguments but a function's, a dead constant at each argument's location. The printer writes no location for the arguments of a loop body (``scf.for %k = ...``), so parsed
    back they would name the temporary file and lose their names; :func:`restore_argument_locations` reads
    them back from the constants."""
    ops = module_ops(mod)
    functions = {op.get_region(i).id() for op in ops if op.get_name() == "tt.func" for i in range(op.get_num_regions())}
    b = op_builder(mod.context)
    for block in _blocks_with_arguments(ops):
        if block.get_parent().id() in functions:
            continue
        b.set_insertion_point_to_start(block)
        for i in range(block.get_num_arguments()):
            b.set_loc(block.arg(i).get_loc())
            b.get_int32(0).set_attr(_ARG_LOC, b.get_string_attr(str(i)))


def restore_argument_locations(mod: Any) -> None:
    """After the edited text is parsed back: each block argument gets back the location its constant
    (:func:`keep_argument_locations`) carried; the constants are dead, left for the canonicalizer."""
    for op in module_ops(mod):
        if op.get_name() == "arith.constant" and op.get_str_attr(_ARG_LOC) is not None:
            op.get_block().arg(int(op.get_str_attr(_ARG_LOC))).set_loc(op.get_result(0).get_loc())


def copy_argument_locations(old: Any, new: Any) -> None:
    """After a text pass that adds, moves or retypes ops but makes and drops no block (tlx/copy_fallback.py,
    tlx/dot_operands.py, tlx/warp_pipeliner.py): each block argument of the parsed module ``new`` gets the location of the same
    argument in ``old``, the module that was printed, blocks paired in walk order. Unlike
    :func:`keep_argument_locations` this leaves nothing for a canonicalizer to remove (none runs after the warp
    pipeliner) and prints nothing more. If the blocks do not pair up, ``new`` is left as parsed."""
    before, after = _blocks_with_arguments(module_ops(old)), _blocks_with_arguments(module_ops(new))
    if [b.get_num_arguments() for b in before] != [b.get_num_arguments() for b in after]:
        return
    for a, b in zip(before, after):
        for i in range(a.get_num_arguments()):
            b.arg(i).set_loc(a.arg(i).get_loc())


def if_with_more_results(builder: Any, old: ir.operation, yields: Sequence[ir.operation], then_more: Sequence[Any],
                         else_more: Sequence[Any]) -> Any:
    """A copy of the ``scf.if`` ``old``, built at the builder's insertion point (before ``old``), that also yields
    ``then_more``/``else_more``; returns it (an ``ir.IfOp``). The bindings retype no op and erase none, so
    ``old``'s blocks (their ``yields``, then and else) move into the copy and get the operands appended; ``old``
    is left with blocks yielding the copy's results, which replace its own, dead for the canonicalizer."""
    n = old.get_num_results()
    types = [old.get_result(i).get_type() for i in range(n)] + [v.get_type() for v in then_more]
    new = builder.create_if_op(types, old.get_operand(0), True)
    for region, empty in ((0, new.get_then_block()), (1, new.get_else_block())):
        yields[region].get_block().move_before(empty)
        empty.erase()
    for more, yielded in ((then_more, new.get_then_yield()), (else_more, new.get_else_yield())):
        for value in more:
            yielded.append_operand(value)
    results = [new.get_result(i) for i in range(n)]
    for region in range(2):
        builder.create_block_with_parent(old.get_region(region), [])
        builder.create_yield_op(results)
    for i, value in enumerate(results):
        old.get_result(i).replace_all_uses_with(value)
    return new


def mbarrier_arrive(builder: Any, bar: Any, count: int, pred: Any) -> None:
    """``ttng.arrive_barrier`` on the CTA's own barrier: 3.8's binding takes a CTA mask before the predicate
    (0: this CTA), 3.6, 3.7 and 3.9's the predicate third (3.9's optional CTA arguments default to this CTA)."""
    if TRITON_VERSION[:2] == (3, 8):
        builder.create_mbarrier_arrive(bar, count, 0, pred)
    else:
        builder.create_mbarrier_arrive(bar, count, pred)


def warpgroup_mma(builder: Any, a: Any, b: Any, acc: Any, precision: int, imprecise: int) -> Any:
    """An async ``ttng.warp_group_dot`` that adds to ``acc``, with ``precision`` the integer of ``tl.dot``'s input
    precision; no ``useC`` operand (a null value)."""
    return builder.create_warpgroup_mma(a, b, acc, ir.value(), ir.INPUT_PRECISION(precision), imprecise, True)


# --------------------------------------------------------------------------------------------
# How this Triton spells what TLX emits
# --------------------------------------------------------------------------------------------
def enum_value(x: Any) -> int:
    """The integer of a binding enum (``ir.CACHE_MODIFIER``, ``ir.INPUT_PRECISION``, ...).

    3.6 binds them with pybind11 (``int(x)`` works), 3.9 with nanobind as Python ``Enum``s (it does not);
    both have ``.value``.
    """
    return int(getattr(x, "value", x))


#: Triton >= 3.9 carries load cache hints as one cache policy (``tl.core._CachePolicy``, printed
#: ``#tt.cache_policy<...>`` in a ``cachePolicy`` attribute) instead of two enums (3.6: ``cache``,
#: ``evict``); ``TritonSemantic.load``/``descriptor_load`` take the policy instead of the two strings.
CACHE_POLICY: bool = hasattr(_tl_core, "_CachePolicy")


def _cache_policy(cache_modifier: str, eviction_policy: str) -> Any:
    return _tl_core._normalize_cache_policy(None, cache_modifier or None, eviction_policy or None)


def async_copy_hints(semantic: Any, cache_modifier: str, eviction_policy: str) -> dict:
    """The load hints of a ``ttg.async_copy_global_to_local`` as payload entries for :func:`async_copy`: the two
    enums' integers through 3.8, the hint strings for 3.9's cache policy. Raises ``ValueError`` for hints Triton
    rejects."""
    cache = enum_value(semantic._str_to_load_cache_modifier(cache_modifier))  # validates, on every version
    evict = enum_value(semantic._str_to_eviction_policy(eviction_policy))
    if CACHE_POLICY:
        return {"cache_modifier": cache_modifier, "eviction_policy": eviction_policy}
    return {"cache": cache, "evict": evict}


def async_copy(builder: Any, dst: Any, src: Any, mask: Any, other: Any, hints: dict, volatile: bool) -> None:
    """``ttg.async_copy_global_to_local`` of the pointers ``src`` into ``dst`` (``mask``/``other`` ``None`` for
    none: the binding takes a null value), with the hints of :func:`async_copy_hints`."""
    mask, other = (ir.value() if v is None else v for v in (mask, other))
    if CACHE_POLICY:
        policy = _cache_policy(hints["cache_modifier"], hints["eviction_policy"])._to_ir(builder)
        builder.create_async_copy_global_to_local(dst, src, mask, other, policy, volatile)
    else:
        builder.create_async_copy_global_to_local(dst, src, mask, other, ir.CACHE_MODIFIER(hints["cache"]),
                                                  ir.EVICTION_POLICY(hints["evict"]), volatile)


def semantic_load(semantic: Any, ptr: Any, mask: Any, other: Any, cache_modifier: str, eviction_policy: str,
                  is_volatile: bool) -> Any:
    """``TritonSemantic.load`` of a tensor of pointers (no boundary check, no padding)."""
    if CACHE_POLICY:
        return semantic.load(ptr, mask, other, _cache_policy(cache_modifier, eviction_policy), is_volatile)
    return semantic.load(ptr, mask, other, (), "", cache_modifier, eviction_policy, is_volatile)


def semantic_descriptor_load(semantic: Any, desc: Any, offsets: list, cache_modifier: str,
                             eviction_policy: str) -> Any:
    """``TritonSemantic.descriptor_load``."""
    if CACHE_POLICY:
        return semantic.descriptor_load(desc, offsets, _cache_policy(cache_modifier, eviction_policy))
    return semantic.descriptor_load(desc, offsets, cache_modifier, eviction_policy)


def interpreter_masked_load(builder: Any, ptrs: Any, mask: Any) -> Any:
    """The interpreter builder's plain masked load (no other, no cache hints, not volatile): Triton 3.9
    merged its ``cache_modifier`` and ``eviction_policy`` parameters into one ``cache_policy``."""
    hints = len(inspect.signature(builder.create_masked_load).parameters) - 4  # ptrs, mask, other, is_volatile
    return builder.create_masked_load(ptrs, mask, None, *([None] * hints), False)


def interpreter_launch_option(name: str, default: Any) -> Any:
    """Launch option ``name`` of the ``TRITON_INTERPRET=1`` launch running on this thread (``default`` if none).

    The interpreter ignores launch options, so they are read from the launching ``InterpretedFunction.run``
    frame: the TLX interpreter needs ``num_warps`` to count the threads of a named barrier, and refuses clusters
    of several CTAs (``ctas_per_cga``), which it does not model.
    """
    from triton.runtime.interpreter import InterpretedFunction
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is InterpretedFunction.run.__code__:
            return frame.f_locals.get("kwargs", {}).get(name, default)
        frame = frame.f_back
    return default


def interpreter_num_warps(default: int = 4) -> int:
    """``num_warps`` of the interpreted launch (:func:`interpreter_launch_option`)."""
    return int(interpreter_launch_option("num_warps", default))


#: Triton >= 3.8 names a variable's IR values (``create_name_loc``) through ``value._set_name(builder,
#: name)``, which ``base_value`` leaves unimplemented (a ``NotImplementedError`` at the first jit helper
#: that takes the value); 3.6/3.7 name the handles ``value._flatten_ir`` gives, for any value.
VALUE_SET_NAME: bool = hasattr(_tl_core.base_value, "_set_name")


def name_value_handles(value: Any, builder: Any, name: str) -> None:
    """Name ``value``'s IR handles after the variable ``name``, as Triton 3.6 does for any frontend value
    (for the ``_set_name`` of frontend values that 3.8+ requires)."""
    handles: list = []
    value._flatten_ir(handles)
    for handle in handles:
        handle.set_loc(builder.create_name_loc(name, handle.get_loc()))


def _gluon_tma_store_wait_has_read_only() -> bool:
    try:
        from triton.experimental.gluon.language.nvidia.hopper import tma
    except ImportError:
        return False
    return "read_only" in inspect.signature(tma.store_wait).parameters


#: Triton 3.8 gave ``ttng.async_tma_store_wait`` a ``read_only`` unit attribute (Gluon's
#: ``tma.store_wait(read_only=True)``): without it the op waits until the stores' writes are done
#: (PTX ``cp.async.bulk.wait_group``), with it only until they read their shared memory
#: (``cp.async.bulk.wait_group.read``), which is all 3.6's op does.
TMA_STORE_WAIT_READ_ONLY: bool = _gluon_tma_store_wait_has_read_only()


def tma_store_wait(builder: Any, pendings: int) -> None:
    """A ``ttng.async_tma_store_wait`` until at most ``pendings`` TMA stores still read their shared-memory
    source (3.9's binding takes ``read_only``, see :data:`TMA_STORE_WAIT_READ_ONLY`)."""
    if TMA_STORE_WAIT_READ_ONLY:
        builder.create_async_tma_store_wait(pendings, True)
    else:
        builder.create_async_tma_store_wait(pendings)


def cluster_barrier_ops(result: str, result_type: str) -> list[str]:
    """TTGIR of a barrier of the whole cluster (every thread arrives with release semantics, then waits
    with acquire) in a kernel of one CTA per program. 3.6: ``ttng.cluster_arrive`` and ``ttng.cluster_wait``,
    as the TLX fork emits (its verifiers are relaxed). 3.7 and 3.8 verify ``ttg.num-ctas > 1`` on both, and
    3.9 replaced them with ``ttng.cluster_barrier``, which verifies the same; from 3.7 on the PTX the two ops
    lower to is inline assembly defining ``result`` (of ``result_type``, a dummy 32-bit value nothing reads)."""
    if TRITON_VERSION < (3, 7):
        return ["ttng.cluster_arrive {relaxed = false}", "ttng.cluster_wait"]
    return [f'{result} = tt.elementwise_inline_asm "barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned; '
            f'mov.u32 $0, 0;" {{constraints = "=r", packed_element = 1 : i32, pure = false}} -> {result_type}']


def ptx_tma_load(rank: int) -> str:
    """How Triton's PTX spells a TMA tensor load into the CTA's shared memory completing on an mbarrier:
    3.6 names the destination ``shared::cluster``, 3.7+ ``shared::cta`` (checked on 3.6, 3.7, 3.8 and 3.9)."""
    space = "shared::cta" if TRITON_VERSION >= (3, 7) else "shared::cluster"
    return f"cp.async.bulk.tensor.{rank}d.{space}.global.mbarrier::complete_tx::bytes"


#: ``rocdl.sched.barrier`` with an empty mask (nothing may be scheduled across it), as this Triton's MLIR prints
#: it: an integer through 3.8, a mask keyword from 3.9 on.
SCHED_BARRIER = "rocdl.sched.barrier none" if TRITON_VERSION >= (3, 9) else "rocdl.sched.barrier 0"

#: The last AMD ttgir pass before buffer-op conversion and block ping-pong (after the layout clean-ups).
AMD_LAST_LAYOUT_PASS = "amd.ttgpuir.reorder_instructions" if TRITON_VERSION < (3, 7) \
    else "amd.ttgpuir.move_up_prologue_loads"


def run_amd_coalesce_async_copy(mod: Any, arch: str) -> None:
    """Run AMD's ``coalesce_async_copy`` (clip each async copy's source vector to a width the CDNA
    direct-to-LDS loads support) on ``mod`` now, outside any recorded pipeline."""
    pm = new_pass_manager(mod.context, False)
    stock_pass_builder("amd.ttgpuir.coalesce_async_copy").fn(pm, arch)
    run_plain(pm, mod, "tlx-coalesce-async-copy")


def accept_fork_load_cache_modifier() -> None:
    """Let ``tl.load`` take the TLX fork's ``cache_modifier=".cs"`` (streaming; fork kernels use it), which stock
    Triton 3.6 allows on stores only: its IR has the modifier, and its AMD and NVIDIA lowerings read it on loads."""
    semantic = _tl_semantic.TritonSemantic
    parse = semantic._str_to_load_cache_modifier
    if getattr(parse, "tritium_cs", False):
        return

    @functools.wraps(parse)
    def _str_to_load_cache_modifier(self: Any, cache_modifier: Any) -> Any:
        if cache_modifier == ".cs":
            return ir.CACHE_MODIFIER.CS
        return parse(self, cache_modifier)

    _str_to_load_cache_modifier.tritium_cs = True
    semantic._str_to_load_cache_modifier = _str_to_load_cache_modifier


class _BoundInterpreted:
    """An interpreted ``@triton.jit`` method of an aggregate, read off an instance: the instance is ``self``."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self.fn if instance is None else functools.partial(self.fn, instance)


def _fieldwise_init(cls: type) -> Any:
    """The TLX fork's default ``__init__`` of an aggregate: its annotated fields, by position or keyword
    (Python values become constexprs); a Triton builtin, so that the JIT's dependency scan skips it."""
    names = tuple(getattr(cls, "__annotations__", {}))

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} fields ({', '.join(names)}), got {len(args)}")
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated field {name!r}")
            values[name] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"{cls.__name__}() is missing field(s) {', '.join(missing)}")
        for name in names:
            value = values[name]
            setattr(self, name, value if isinstance(value, _tl_core.base_value) else tl.constexpr(value))

    __init__.__triton_builtin__ = True
    return __init__


def accept_fork_aggregates() -> None:
    """Let ``triton.language.core._aggregate`` take the TLX fork's aggregates (``amd_fa_cluster``'s
    ``SoftmaxState``), as the fork's version of it does and stock Triton 3.6's does not:

    * a class without ``__init__`` gets one that sets its fields (stock 3.6 and 3.7 call ``object.__init__``: the
      JIT's dependency scan refuses it, and it takes no field values; 3.8 builds one itself);
    * under ``TRITON_INTERPRET=1``, ``@triton.jit`` methods are interpreted functions, which stock does not
      copy onto the aggregate (``SoftmaxState.create`` is missing); they are copied, bound like methods.

    Classes that stock Triton takes already are built exactly as before. Classes decorated before
    ``tritium.tlx`` is imported are not affected (a kernel module imports TLX first).
    """
    stock = _tl_core._aggregate
    if getattr(stock, "tritium_fork_aggregates", False):
        return
    builds_init = 'cls.__dict__.get("__init__"' in inspect.getsource(stock)  # Triton 3.8+ does, as the fork

    @functools.wraps(stock)
    def _aggregate(cls: type) -> Any:
        if "__init__" not in cls.__dict__ and not builds_init:
            cls.__init__ = _fieldwise_init(cls)
        value = stock(cls)
        for name, member in cls.__dict__.items():
            if isinstance(member, _interpreter.InterpretedFunction) and not hasattr(value, name):
                setattr(value, name, _BoundInterpreted(member) if _is_method(member) else member)
        return value

    _aggregate.tritium_fork_aggregates = True
    _tl_core._aggregate = _aggregate


def _is_method(fn: Any) -> bool:
    """Whether an interpreted function takes ``self`` (a method) rather than being called on the class."""
    params = list(inspect.signature(fn.fn).parameters)
    return bool(params) and params[0] == "self"


def _bf16_as_f32(handle: Any) -> Any:
    """A bfloat16 interpreter value (its raw 16 bits in a uint16 array) as float32, exactly."""
    return (handle.data.astype(np.uint32) << 16).view(np.float32)


def accept_bf16_interpreted_dots() -> None:
    """Make the interpreter's ``tl.dot`` multiply bfloat16 operands as numbers: stock Triton 3.6 (and the TLX
    fork) multiplies their raw 16-bit patterns as integers (``tl.dot`` of two bf16 tiles of ``randn`` comes out
    ~1e10), so every bf16 attention and GEMM is wrong under ``TRITON_INTERPRET=1``. Other operand types keep
    the stock path."""
    stock = InterpreterBuilder.create_dot
    if getattr(stock, "tritium_bf16", False):
        return

    @functools.wraps(stock)
    def create_dot(self: Any, a: Any, b: Any, d: Any, *args: Any, **kwargs: Any) -> Any:
        if tl.bfloat16 not in (a.dtype, b.dtype):
            return stock(self, a, b, d, *args, **kwargs)
        a = TensorHandle(_bf16_as_f32(a) if a.dtype == tl.bfloat16 else a.data.astype(np.float32), tl.float32)
        b = TensorHandle(_bf16_as_f32(b) if b.dtype == tl.bfloat16 else b.data.astype(np.float32), tl.float32)
        return stock(self, a, b, d, *args, **kwargs)

    create_dot.tritium_bf16 = True
    InterpreterBuilder.create_dot = create_dot


def round_interpreted_bf16_casts() -> None:
    """Make the interpreter round float32 -> bfloat16 casts to nearest even, as compiled kernels and torch do:
    stock Triton 3.6 truncates them (``cast_impl`` passes no rounding mode), and every cast to bf16 from another
    type goes through float32, so fp16 -> bf16 is off by one ulp in about half the elements. Other casts keep
    the stock path."""
    stock = InterpreterBuilder.cast_impl
    if getattr(stock, "tritium_bf16_rounding", False):
        return

    @functools.wraps(stock)
    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        if not (src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16):
            return stock(self, src, dst_type)
        bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
        nan = np.isnan(src.data)
        rounded[nan] = ((bits[nan] >> 16) | np.uint32(0x40)).astype(np.uint16)  # a quiet NaN stays a NaN
        return TensorHandle(rounded, tl.bfloat16)

    cast_impl.tritium_bf16_rounding = True
    InterpreterBuilder.cast_impl = cast_impl


def accept_constexpr_launch_args() -> None:
    """Under ``TRITON_INTERPRET=1``, a kernel argument the host passes as a ``tl.constexpr`` object (the fork's
    ``amd_pa_decode`` passes ``BUFFER_DEPTH=tl.constexpr(2)``) reaches the kernel as its value, as when
    compiling: stock Triton 3.6's interpreter hands the object over, and ``int % constexpr`` then fails."""
    stock = _interpreter.GridExecutor.__call__
    if getattr(stock, "tritium_constexpr_args", False):
        return

    @functools.wraps(stock)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        args = tuple(a.value if isinstance(a, tl.constexpr) else a for a in args)
        kwargs = {k: v.value if isinstance(v, tl.constexpr) else v for k, v in kwargs.items()}
        return stock(self, *args, **kwargs)

    __call__.tritium_constexpr_args = True
    _interpreter.GridExecutor.__call__ = __call__


def accept_interpreted_closures() -> None:
    """Under ``TRITON_INTERPRET=1``, a kernel sees the variables of the function it was defined in (a local
    ``@triton.jit`` helper it calls), as when compiling: stock Triton 3.6's interpreter re-executes the
    kernel's rewritten source against the module's globals only, so such a call raises ``NameError``.

    The rewritten function is defined inside one that takes the closure's values (bound when the kernel is
    first interpreted), so it closes over them again. Kernels without free variables take the stock path.
    """
    stock = _interpreter.FunctionRewriter._compile_and_exec
    if getattr(stock, "tritium_closures", False):
        return

    @functools.wraps(stock)
    def _compile_and_exec(self: Any, transformed_ast: ast.Module) -> Any:
        closure = {}
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # not bound yet: looked up as a global, as stock does
                pass
        if not closure:
            return stock(self, transformed_ast)
        module = ast.parse(f"def _tritium_closure({', '.join(closure)}):\n    return {self.fn.__name__}")
        module.body[0].body[:0] = transformed_ast.body
        namespace: dict = {}
        fn_globals = self.fn.__globals__
        for key, value in vars(_interpreter).items():  # as stock: the interpreter's names, where not shadowed
            fn_globals.setdefault(key, value)
        exec(compile(module, filename=self.filename, mode="exec"), fn_globals, namespace)
        return namespace["_tritium_closure"](**closure)

    _compile_and_exec.tritium_closures = True
    _interpreter.FunctionRewriter._compile_and_exec = _compile_and_exec

