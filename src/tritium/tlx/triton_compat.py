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
* the interpreter's globals, tensor handles and AST rewrite (``triton.runtime.interpreter``).

Nothing in Triton is patched: kernels without TLX ops are untouched. tests/tlx/test_triton_compat.py
checks each of these against the installed Triton, and tests/test_private_names.py that no other
TLX module reaches past this one.
"""
from __future__ import annotations

import ast
import sys
from typing import Any, Sequence

import numpy as np
import triton.language as tl
from triton._C.libtriton import gluon_ir, ir
from triton.compiler.code_generator import CodeGenerator, enter_sub_region
from triton.language.core import _unwrap_if_constexpr
from triton.runtime import interpreter as _interpreter
from triton.runtime.interpreter import ASTTransformer, InterpreterBuilder, TensorHandle

__all__ = ["ir", "gluon_ir", "unwrap_if_constexpr", "interpreted", "interpreter_running", "compile_options",
           "dot_input_precision", "builder_state", "kernel_state", "kernel_module", "type_builder",
           "statement_location", "with_statement", "visit_body", "SubRegion", "interpreter_semantic",
           "interpreter_builder", "interpreter_program", "np_dtype", "TensorHandle", "ASTTransformer"]

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
