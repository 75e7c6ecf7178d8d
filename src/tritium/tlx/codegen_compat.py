"""The parts of Triton's ``CodeGenerator`` that warp specialization relies on, in one place.

A replicated ``async_task`` is code-generated once per replica, with its replica id a compile-time
constant in each copy (as the TLX fork does). Stock Triton's ``visit_With`` builds the context
manager, calls ``__enter__``, visits the body once and calls ``__exit__``. ``tlx.async_task`` reads
the ``with`` statement being compiled while it is constructed (``CodeGenerator.cur_node``: the
statement ``visit`` is dispatching) and re-visits its body from ``__exit__`` for replicas 1, 2, ...
Nothing in Triton is patched, so kernels without TLX are untouched. If a Triton release changes
these internals, :func:`with_statement` fails with a message that says so (tested in
tests/tlx/test_conformance_tasks.py).
"""
from __future__ import annotations

import ast
from typing import Any, Sequence

from triton.compiler.code_generator import CodeGenerator, enter_sub_region

__all__ = ["with_statement", "visit_body", "sub_region"]


def with_statement(gen: CodeGenerator, op: str) -> ast.With:
    """The one-item ``with`` statement whose context manager ``op`` is being built by ``gen``."""
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


def visit_body(gen: CodeGenerator, stmts: Sequence[ast.stmt]) -> None:
    """Generate code for ``stmts`` at the current insertion point, as ``visit_With`` does for a body."""
    gen.visit_compound_statement(list(stmts))


def sub_region(gen: CodeGenerator) -> Any:
    """A scope whose names vanish on exit (Triton's own, used for ``if`` and loop bodies)."""
    return enter_sub_region(gen)
