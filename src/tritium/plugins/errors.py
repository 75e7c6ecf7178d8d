"""Errors that name the plugin, pass, stage or argument at fault."""
from __future__ import annotations

from typing import Optional

from triton.compiler.errors import CompilationError


class TritiumError(Exception):
    """Base class of every error tritium raises on purpose."""


class PluginLoadError(TritiumError):
    """A plugin could not be found, imported or registered."""


class PipelineError(TritiumError):
    """A pipeline edit does not fit the pipeline Triton really runs."""


class StageError(PipelineError):
    """A stage that pipelines edit failed in Triton's own code; ``error`` is what Triton raised."""

    def __init__(self, message: str, error: BaseException) -> None:
        super().__init__(message)
        self.error = error


class ArgumentError(TritiumError, ValueError):
    """An argument of an ahead-of-time compile (the kernel, a signature entry, a constexpr, an option) that does
    not fit the kernel or the backend. ``what`` and ``name`` say which, so that ``tritium pipeline`` can name
    its flag (``-D NAME``) where Python callers read ``constexpr NAME``."""

    def __init__(self, what: str, name: str, problem: str) -> None:
        super().__init__(f"{what} {name}: {problem}")
        self.what, self.name, self.problem = what, name, problem


class PassError(TritiumError):
    """A pass raised, or left IR that fails verification."""

    def __init__(self, message: str, *, plugin: Optional[str], pass_name: str, stage: str,
                 dump: Optional[str]) -> None:
        where = f"pass {pass_name!r}" + (f" of plugin {plugin!r}" if plugin else "") + f" in stage {stage!r}"
        text = f"{where}: {message}"
        if dump:
            text += f" (IR dumped to {dump})"
        super().__init__(text)
        self.plugin, self.pass_name, self.stage, self.dump = plugin, pass_name, stage, dump


class PassFingerprintWarning(UserWarning):
    """A pass's fingerprint changed between two compiles of one kernel, so the kernel was compiled again."""


class KernelCompileError(TritiumError, CompilationError):
    """Triton's :class:`CompilationError` for a kernel, said in one short paragraph: where (Triton's
    ``at LINE:COL``, in the kernel or the helper that failed), what, and the source line with a caret.
    Triton's own message quotes up to 12 lines of source before the message, which a one-line report cuts
    off, losing the place. The original is the ``__cause__``; ``src``, ``node`` and ``error_message`` are the
    innermost error's, so code that reads them as Triton's keeps working."""

    def __init__(self, kernel: str, error: CompilationError) -> None:
        inner = error
        while isinstance(inner.__cause__, CompilationError):
            inner = inner.__cause__
        self.kernel, self.error = kernel, error
        self.src, self.node, self.error_message = inner.src, inner.node, inner.error_message
        what = inner.error_message or _last_line(inner)
        lineno, col = getattr(inner.node, "lineno", None), getattr(inner.node, "col_offset", 0)
        lines = (inner.src or "").split("\n")
        where = ""
        if lineno is not None:
            name = lines[0].split("def ", 1)[1].split("(", 1)[0].strip() if lines[0].startswith("def ") else ""
            where = f" at {lineno}:{col}" + (f" (in {name})" if name and name != kernel else "")
        self.message = f"kernel {kernel!r} does not compile{where}: {what}"
        if lineno is not None and 0 < lineno <= len(lines):
            self.message += f"\n    {lines[lineno - 1]}\n    {' ' * col}^"
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple:
        return type(self), (self.kernel, self.error)


def _last_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else type(e).__name__
