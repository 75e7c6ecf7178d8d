"""After every error in the suite, the next unrelated kernel compiles byte-identical to bare Triton (issue 11).

``conftest.py`` counts the errors tests expect (each ``pytest.raises`` that catches one) and, after a
test that caught any, compiles :func:`probe` afresh (no cache, nothing active) in the same process
and compares every stage's output with :data:`REFERENCE`, compiled once at session start with
tritium's hook out of Triton.
"""
from __future__ import annotations

import difflib
import functools
from typing import Any, Optional

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import tritium.plugins as tp

STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin")


@triton.jit
def probe(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2 + 1, mask=offs < n)


#: A process run under ``TRITON_INTERPRET=1`` (whole test files re-run so) compiles no kernel: nothing to check.
INTERPRETED = not isinstance(probe, JITFunction)


def compile_probe() -> dict[str, Any]:
    """The probe's stages, compiled for sm_90 whatever the cache holds."""
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        kernel = triton.compile(ASTSource(probe, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
                                target=GPUTarget("cuda", 90, 32), options={"num_warps": 1})
    return {stage: kernel.asm[stage] for stage in STAGES}


def compile_reference() -> dict[str, Any]:
    """The probe as bare Triton compiles it: tritium's hook (and every key wrapper) out of Triton."""
    tp.disable()
    try:
        return compile_probe()
    finally:
        tp.enable()


REFERENCE: Optional[dict[str, Any]] = None
#: The ptxas REFERENCE was compiled with.
REFERENCE_PTXAS: Optional[str] = None


def ptxas_in_effect() -> str:
    """The ptxas Triton compiles with now."""
    return triton.knobs.nvidia.ptxas.path


def check_bare(after: str) -> None:
    """Fail unless the probe compiles now exactly as bare Triton compiled it at session start, or, where the
    ptxas in effect changed since then, as bare Triton compiles it now: Inductor points Triton at torch's own
    ptxas (``TRITON_PTXAS_PATH``) when it first loads a kernel it generated, which changes the PTX version
    of every later compile in the process, tritium or not."""
    global REFERENCE, REFERENCE_PTXAS
    if ptxas_in_effect() != REFERENCE_PTXAS:
        REFERENCE, REFERENCE_PTXAS = compile_reference(), ptxas_in_effect()
    got = compile_probe()
    differing = [stage for stage in STAGES if got[stage] != REFERENCE[stage]]
    text = next((s for s in differing if isinstance(got[s], str)), None)
    diff = "" if text is None else "\n" + "\n".join(list(difflib.unified_diff(
        REFERENCE[text].splitlines(), got[text].splitlines(), "bare", "now", lineterm="", n=1))[:40])
    assert not differing, (f"after a test caught {after}, an unrelated kernel no longer compiles as bare Triton "
                           f"does: its {', '.join(differing)} differ{diff}")


class ErrorCount:
    """How many errors ``pytest.raises`` has caught in this session."""
    caught = 0
    last = ""


def _note(excinfo: Any) -> None:
    ErrorCount.caught += 1
    ErrorCount.last = f"{excinfo.typename}: {str(excinfo.value)[:200]}"


class _Counted:
    """``pytest.raises``'s context manager, noting each error it catches."""

    def __init__(self, context: Any) -> None:
        self._context = context

    def __enter__(self) -> Any:
        self._info = self._context.__enter__()
        return self._info

    def __exit__(self, *exc: Any) -> Any:
        caught = self._context.__exit__(*exc)
        if caught:
            _note(self._info)
        return caught

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def count_caught_errors() -> None:
    """Make ``pytest.raises`` note every error it catches (both its forms)."""
    raises = pytest.raises
    if getattr(raises, "tritium_counted", False):
        return

    @functools.wraps(raises)
    def counted(*args: Any, **kwargs: Any) -> Any:
        result = raises(*args, **kwargs)
        if hasattr(result, "__exit__"):
            return _Counted(result)
        _note(result)  # called with a function, which raised
        return result

    counted.tritium_counted = True  # type: ignore[attr-defined]
    pytest.raises = counted
