"""How TLX builtins reach the kernel being built: dispatch to the interpreter, or emit placeholders.

A ``@triton.jit`` kernel is built with a plain ``ir.builder`` as TTIR. TLX ops are emitted as
placeholders (:mod:`.placeholders`) whose payload names the TritonGPU op and the exact types it
needs; those types are built with a ``GluonOpBuilder`` on the kernel's context and kept as text.
"""
from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Optional, Sequence

import triton.language as tl

from . import placeholders
from .triton_compat import interpreted, interpreter_running, kernel_module, kernel_state, type_builder


#: Every TLX op's semantics under ``TRITON_INTERPRET=1``, by name, recorded by :func:`interprets` in
#: tlx/interpreter.py (imported on the first interpreted op).
INTERPRETERS: dict[str, Callable[..., Any]] = {}


def interprets(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Record ``fn`` as the interpreter's version of the TLX op of the same name."""
    if fn.__name__ in INTERPRETERS:
        raise AssertionError(f"tlx.{fn.__name__} is interpreted twice")
    INTERPRETERS[fn.__name__] = fn
    return fn


def _interpreter_op(name: str) -> Callable[..., Any]:
    try:
        importlib.import_module("tritium.tlx.interpreter")  # its ops register themselves
    except ImportError as e:
        raise NotImplementedError(f"tlx.{name}: the TLX interpreter is not available ({e})") from e
    fn = INTERPRETERS.get(name)
    if fn is None:
        raise NotImplementedError(f"tlx.{name} is not implemented in the TLX interpreter")
    return fn


#: Every TLX op by name, recorded by :func:`tlx_builtin` where the op is written; ``tritium.tlx`` publishes
#: them (its namespace and the plugin's ops) once its op families are imported.
BUILTINS: dict[str, Callable[..., Any]] = {}


def tlx_builtin(fn: Optional[Callable[..., Any]] = None, *,
                checks: Optional[Callable[..., Any]] = None) -> Callable[..., Any]:
    """Make ``fn(..., _semantic)`` a Triton builtin that runs the interpreter's version when interpreted, and
    record it in :data:`BUILTINS`. ``checks(*args, **kwargs)``, when given, validates the arguments even when
    the op is called outside a kernel, before that is refused (the fork checks ``async_task``'s there).

    Marked by hand: Triton's ``builtin`` wrapper rejects the ``_semantic=None`` the interpreter passes.
    """
    if fn is None:
        return functools.partial(tlx_builtin, checks=checks)
    if fn.__name__ in BUILTINS:
        raise AssertionError(f"tlx.{fn.__name__} is defined twice")

    @functools.wraps(fn)
    def op(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        if interpreted(_semantic):
            if _semantic is None and not interpreter_running():
                if checks is not None:
                    checks(*args, **kwargs)
                raise RuntimeError(f"tlx.{fn.__name__} was called outside a kernel: TLX ops work only inside a "
                                   "@triton.jit function, compiled or run by TRITON_INTERPRET=1")
            return _interpreter_op(fn.__name__)(*args, **kwargs)
        return fn(*args, _semantic=_semantic, **kwargs)

    op.__triton_builtin__ = True
    BUILTINS[fn.__name__] = op
    return op


def tensor_type(_semantic: Any, dtype: tl.dtype, shape: Sequence[int], layout: Any) -> str:
    """Printed type of a ``shape`` tensor of ``dtype`` in ``layout`` (a :mod:`.layouts` value)."""
    g = type_builder(_semantic)
    return str(g.get_distributed_ty(dtype.to_ir(g), list(shape), layout.to_ir(g)))


def emit(_semantic: Any, op: str, *, operands: Sequence[tl.tensor] = (), result: Optional[tl.dtype] = None,
         shape: Sequence[int] = (), scalar: Optional[tl.dtype] = None, **attrs: Any) -> tuple[int, Any]:
    """Emit the placeholder of ``op``; ``result`` (with ``shape``) is its layout-free result tensor,
    ``scalar`` the type of a scalar result (a placeholder has one or the other, or a dummy ``i32``)."""
    b = _semantic.builder
    kinds = {x.type.is_block() for x in operands}
    if len(kinds) > 1:
        raise AssertionError(f"tlx.{op}: a placeholder takes tensors or scalars, not both")
    if result is None and kinds == {True}:  # the verifier wants a tensor result too: a dummy one
        result, shape = tl.int8, operands[0].shape
    if scalar is not None:
        res_ty, res_shape = scalar.to_ir(b), None
    else:
        res_ty = tl.block_type(result, list(shape)).to_ir(b) if result is not None else None
        res_shape = shape
    ids = kernel_state(_semantic).setdefault("placeholder_ids", placeholders.Ids())
    return placeholders.emit(b, kernel_module(_semantic), ids, op, operands=[x.handle for x in operands],
                             tensor_operands=kinds == {True}, result=res_ty, result_shape=res_shape, **attrs)
