"""Triton pass failures during a TLX compile, as one paragraph naming the kernel line and the TLX op.

When one of Triton's own passes fails (a TLX op lowered to something a later stock pass rejects),
MLIR prints its diagnostics, a reproducer and a page of IR on the process's stderr (file descriptor
2, from C++), and Python only sees ``RuntimeError("PassManager::run failed")``. For kernels that use
TLX ops, :func:`report_stage_errors` wraps each compilation stage: it captures what the stage writes
on fd 2 and, if the stage fails, raises :class:`TLXCompileError`, whose message gives the failing
pass, the first error with its kernel source line, and the TLX op called on that line. The original
exception is chained (``raise ... from``). The captured diagnostics are written back to stderr only
if asked for (``TRITIUM_TLX_DUMP_IR=1``, or Triton's ``MLIR_ENABLE_DUMP``), and always when the stage
succeeds (warnings are not swallowed). The redirect is per process: TLX compiles running in parallel
threads may mix their captured text, never their results.
"""
from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from tritium import knobs
from tritium.plugins.errors import PassError, StageError, TritiumError

#: ``file:line:col: error: message`` as MLIR's source-manager handler prints it.
_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|warning|note|remark): (?P<msg>.*)$")
_FAILED_PASS = re.compile(r"Pipeline failed while executing \[`(?P<pass>[^`]+)`")
_GENERIC = "Failures have been detected while processing an MLIR pass pipeline"
_TLX_CALL = re.compile(r"\btlx\.(?P<op>\w+)\s*\(")
_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)\)')


def dump_requested() -> bool:
    """Whether a failing TLX compile dumps its IR: ``tritium.knobs.tlx.dump_ir`` or Triton's ``MLIR_ENABLE_DUMP``."""
    return knobs.tlx.dump_ir or knobs.tlx.mlir_dump not in (None, "", "0")


class TLXCompileError(TritiumError):
    """A Triton pass failed on a kernel that uses TLX ops; the message says where in the kernel."""

    def __init__(self, message: str, *, stage: str, pass_name: Optional[str], file: Optional[str],
                 line: Optional[int], op: Optional[str], diagnostics: str) -> None:
        super().__init__(message)
        self.stage, self.pass_name, self.file, self.line, self.op = stage, pass_name, file, line, op
        self.diagnostics = diagnostics  # everything the failing stage printed, IR included


@dataclass
class _Where:
    file: str
    line: int
    col: int
    message: str


def _first_error(text: str) -> Optional[_Where]:
    """The first ``error:`` diagnostic that points into a Python source file, else the first one at all."""
    errors = [m for m in map(_DIAG.match, text.splitlines()) if m and m["kind"] == "error"]
    for m in errors:
        if m["file"].endswith(".py") and int(m["line"]) > 0 and not m["msg"].startswith(_GENERIC):
            return _Where(m["file"], int(m["line"]), int(m["col"]), m["msg"].strip())
    if errors:
        m = next((e for e in errors if e["file"].endswith(".py")), errors[0])
        return _Where(m["file"], int(m["line"]), int(m["col"]), m["msg"].strip())
    loc = _LOC.search(text)
    return _Where(loc["file"], int(loc["line"]), int(loc["col"]), "") if loc else None


def tlx_op_at(source_line: str, col: int) -> Optional[str]:
    """The TLX op called on ``source_line``: the last ``tlx.NAME(`` starting at or before ``col`` (1-based)."""
    calls = list(_TLX_CALL.finditer(source_line))
    before = [m for m in calls if m.start() < max(col, 1)]
    chosen = (before or calls or [None])[-1]
    return chosen["op"] if chosen else None


def describe(exc: BaseException, diagnostics: str, stage: str, kernel: Optional[str]) -> TLXCompileError:
    """One paragraph about a failed stage of a TLX compile, from the exception and the captured stderr."""
    failed = _FAILED_PASS.search(diagnostics)
    pass_name = failed["pass"] if failed else None
    where = _first_error(diagnostics)
    source = linecache.getline(where.file, where.line).strip() if where else ""
    op = None
    if where is not None and not where.message.startswith(_GENERIC):
        op = tlx_op_at(linecache.getline(where.file, where.line), where.col)
    if isinstance(exc, PassError):  # a tritium pass whose output MLIR rejected (e.g. IR that does not parse)
        pass_name = exc.pass_name
        what = f"tritium's {pass_name} pass"
    else:
        what = f"Triton's {pass_name} pass" if pass_name else f"Triton's {stage!r} stage"
    text = f"{what} failed on TLX kernel {kernel!r}" if kernel else f"{what} failed on a TLX kernel"
    if where is not None and where.message.startswith(_GENERIC):  # the pass gave no op, only the kernel
        text += (f"; the pass reported no source location, only the kernel at {where.file}:{where.line}"
                 + (f" (`{source}`)" if source else ""))
    elif where is not None:
        text += f" at {where.file}:{where.line}"
        if source:
            text += f" (`{source}`"
            text += f", tlx.{op})" if op else ")"
        text += f": {where.message or str(exc)}"
    else:
        text += f": {exc}"
    text += (f" [stage {stage!r}; the original error is chained below. Set TRITIUM_TLX_DUMP_IR=1 or "
             "MLIR_ENABLE_DUMP=1 to print the IR Triton dumped.]")
    return TLXCompileError(text, stage=stage, pass_name=pass_name, file=where.file if where else None,
                           line=where.line if where else None, op=op, diagnostics=diagnostics)


@contextlib.contextmanager
def captured_stderr() -> Iterator[Callable[[], str]]:
    """Redirect file descriptor 2 (C++ diagnostics too) to a temporary file; yields a reader of it."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)

        def read() -> str:
            sys.stderr.flush()
            tmp.seek(0)
            return tmp.read().decode(errors="replace")

        try:
            yield read
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _replay(text: str) -> None:
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()


def _kernel_name(src: Any) -> Optional[str]:
    m = re.search(r"tt\.func (?:public )?@(\w+)", src.str()) if hasattr(src, "str") else None
    return m.group(1) if m else None


def reporting_stage(stage: str, fn: Callable[[Any, dict], Any], is_tlx: Callable[[Any], bool],
                    state: dict) -> Callable[[Any, dict], Any]:
    """``fn`` (one compilation stage), rephrasing its failures once the compile is known to be TLX.

    ``state`` is shared by the stages of one compilation: the first stage that sees a TLX module
    marks it, so later stages, whose input is LLVM IR or assembly text, are covered too.
    """

    def run(src: Any, metadata: dict) -> Any:
        if not state.get("tlx"):
            state["tlx"] = is_tlx(src)
            if state["tlx"]:
                state["kernel"] = _kernel_name(src)
        if not state["tlx"]:
            return fn(src, metadata)
        error: Optional[Exception] = None
        with captured_stderr() as read:
            try:
                out = fn(src, metadata)
            except StageError as e:  # Triton's own failure, which the plugin core put in pipeline terms
                error = e.error
            except Exception as e:  # noqa: BLE001 - decided below, re-raised either way
                error = e
            text = read()
        if error is None:
            _replay(text)
            return out
        if isinstance(error, TLXCompileError) or (isinstance(error, TritiumError) and _first_error(text) is None):
            _replay(text)  # already clear (tritium's own message), or already rephrased by an inner stage
            raise error
        if dump_requested():
            _replay(text)
        raise describe(error, text, stage, state.get("kernel")) from error

    run.__wrapped__ = fn
    return run


__all__ = ["TLXCompileError", "reporting_stage", "describe", "tlx_op_at", "captured_stderr", "dump_requested"]
