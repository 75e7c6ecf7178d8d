"""Launching a compiled kernel straight through its launcher, for the kernels' host code and for ops/.

``kernel[grid](...)`` binds and specializes every argument and looks the kernel up on every call.
:func:`jit_launch` makes the first launch through the JIT (compiling, caching and the tritium pipelines
as always) and returns what later launches need to skip it (:func:`tritium.compat.direct_launch`).
Under ``TRITON_INTERPRET=1`` (read at import, as Triton reads it when the kernels are decorated) every
launch goes through the JIT (:func:`interpreting`).
"""
from __future__ import annotations

from typing import Any, Optional

import triton

from .. import compat
from .tiles import num_sms

#: Triton's ``TRITON_INTERPRET`` knob, read once, at import, not on every call: Triton decides interpreter
#: or compiler when a kernel is decorated (``@triton.jit`` reads the knob then), so tritium's answer must
#: be the one of that moment; setting it later does not turn decorated kernels into interpreted ones.
_INTERPRET = triton.knobs.runtime.interpret


def interpreting() -> bool:
    """Whether Triton runs kernels on the CPU interpreter (``TRITON_INTERPRET=1`` at import)."""
    return _INTERPRET


def jit_launch(kernel, grid: tuple, args: list, consts: dict) -> Optional[tuple[compat.DirectLaunch, list]]:
    """``kernel[grid](*args, **consts)`` through the JIT (compiling if needed), and what later launches of the
    compiled kernel straight through its launcher need: the :class:`tritium.compat.DirectLaunch` and the
    values of the constexpr parameters after ``args`` (the launcher takes every parameter in order,
    constexprs included, and skips their values). None where the call must keep going through the JIT: a
    defaulted constexpr the call did not name, or a launcher compat cannot drive."""
    compiled = kernel[grid](*args, **consts)
    rest = kernel.arg_names[len(args):]
    if compiled is None or any(n not in consts for n in rest):
        return None
    direct = compat.direct_launch(compiled)
    return None if direct is None else (direct, [consts[n] for n in rest])


_sms: dict[Any, int] = {}


def sm_count(device) -> int:
    """Streaming multiprocessors of ``device`` (cached; 4 stands in for the CPU interpreter)."""
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = num_sms(device)
    return n
