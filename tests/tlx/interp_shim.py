"""The `tlx` namespace the interpreter tests use: `tritium.tlx` where it has the op, else a stand-in.

The stand-in mirrors how the real ops reach the interpreter: a function marked as a Triton builtin
that, under `TRITON_INTERPRET=1`, forwards its arguments to `tritium.tlx.interpreter.<op>`. It sets
the builtin marker itself instead of using `triton.language.core.builtin`, because that wrapper
raises when `_semantic` is missing, and the interpreter calls builtins of modules other than
`triton.language` without one.
"""
import os
from types import SimpleNamespace
from typing import Callable

import pytest
import triton.language as tl
from triton.language.core import TRITON_BUILTIN
from triton.runtime.interpreter import InterpretedFunction, InterpreterBuilder

from tritium.tlx import interpreter  # noqa: F401  (imported, its ops register themselves)
from tritium.tlx.emit import INTERPRETERS

OPS = sorted(INTERPRETERS)  # every op the interpreter implements (it registers them as it is imported)


def _forward_to_interpreter(name: str) -> Callable:
    impl = INTERPRETERS[name]

    def op(*args, _semantic=None, **kwargs):
        if _semantic is not None and not isinstance(_semantic.builder, InterpreterBuilder):
            raise NotImplementedError(f"tlx.{name}: this test stand-in only runs under TRITON_INTERPRET=1")
        return impl(*args, **kwargs)

    op.__name__ = name
    setattr(op, TRITON_BUILTIN, True)
    return op


def _resolve() -> SimpleNamespace:
    """Set TRITIUM_TLX_TEST_SHIM=1 to test the interpreter alone, without the real ops' forwarding."""
    try:
        import tritium.tlx as real
    except ImportError:
        real = None
    if os.environ.get("TRITIUM_TLX_TEST_SHIM") == "1":
        real = None
    return SimpleNamespace(**{name: getattr(real, name, None) or _forward_to_interpreter(name) for name in OPS})


tlx = _resolve()


def interpret_mode() -> bool:
    """Whether this process runs `@triton.jit` kernels in the interpreter.

    TRITON_INTERPRET=1 must be set before the process first imports triton: `triton.language` helpers
    such as `tl.zeros` are themselves `@triton.jit` functions decorated at import, and a compiled
    helper cannot be called from an interpreted kernel. So interpreter tests cannot share a process
    with compile-path tests; test_interpreter_run.py starts one for them when needed.
    """
    return isinstance(tl.zeros, InterpretedFunction)


def require_interpret_mode() -> None:
    if not interpret_mode():
        pytest.skip("needs TRITON_INTERPRET=1 before triton is imported; test_interpreter_run.py runs this "
                    "module in such a process", allow_module_level=True)
