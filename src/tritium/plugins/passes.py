"""The three kinds of pass a pipeline can hold, and how each is fingerprinted for cache keys."""
from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Callable, Optional, Union

from .. import compat
from .errors import PipelineError

#: IR kinds a text pass can work on, and the stage whose output has that kind, per backend.
TEXT_KINDS = ("llir", "ptx", "amdgcn")


def fingerprint(obj: Any) -> str:
    """A stable digest of a function's code (constants and nested code included), or of ``repr``.

    Pass code is hashed by default so that editing a pass recompiles every kernel it touched.
    """
    h = hashlib.sha256()

    def feed(code: CodeType) -> None:
        h.update(code.co_code)
        h.update(repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, CodeType):
                feed(const)
            else:
                h.update(repr(const).encode())

    fn = getattr(obj, "__func__", obj)
    code = getattr(fn, "__code__", None)
    if code is None and callable(obj) and hasattr(type(obj), "__call__"):
        code = getattr(type(obj).__call__, "__code__", None)
    if code is not None:
        h.update(getattr(fn, "__qualname__", type(obj).__qualname__).encode())
        feed(code)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            h.update(fingerprint(value).encode() if callable(value) else repr(value).encode())
    else:
        h.update(marshal.dumps(repr(obj)))
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class StockPass:
    """A pass Triton already has, by its stable name, with its builder's arguments."""
    name: str
    args: tuple = ()

    def __init__(self, name: str, *args: Any) -> None:
        if name not in compat.PASS_BUILDERS:
            close = sorted(n for n in compat.PASS_BUILDERS if name.split(".")[-1] in n)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise PipelineError(f"StockPass: Triton has no pass named {name!r}.{hint}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", tuple(args))

    @property
    def kind(self) -> str:
        return "mlir"

    def identity(self) -> str:
        return f"stock:{self.name}{self.args!r}"


@dataclass(frozen=True)
class PythonPass:
    """A pass written in Python: on an MLIR module, or on LLVM IR / PTX / AMDGCN text.

    MLIR passes get ``(module, ctx)`` and return ``None`` (edited in place) or a new module.
    Text passes get ``(text, ctx)`` and return the new text.
    """
    fn: Callable[..., Any]
    kind: str = "mlir"
    name: str = ""
    plugin: Optional[str] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind != "mlir" and self.kind not in TEXT_KINDS:
            raise PipelineError(f"pass {self.name or self.fn!r}: unknown IR kind {self.kind!r}; "
                                f"use 'mlir' or one of {', '.join(TEXT_KINDS)}")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.fn, "__name__", type(self.fn).__name__))

    def identity(self) -> str:
        return f"py:{self.kind}:{self.name}:{fingerprint(self.fn)}"

    def __call__(self, ir_or_text: Any, ctx: Any) -> Any:
        return self.fn(ir_or_text, ctx)


Pass = Union[StockPass, PythonPass]


def mlir_pass(fn: Optional[Callable] = None, *, name: str = "") -> Any:
    """Decorator: make ``fn(module, ctx)`` a Python MLIR pass."""
    if fn is None:
        return lambda f: PythonPass(f, "mlir", name)
    return PythonPass(fn, "mlir", name)


def text_pass(kind: str, *, name: str = "") -> Callable[[Callable], PythonPass]:
    """Decorator: make ``fn(text, ctx) -> text`` a pass on ``kind`` text (llir, ptx or amdgcn)."""
    if kind not in TEXT_KINDS:
        raise PipelineError(f"text_pass: unknown IR kind {kind!r}; use one of {', '.join(TEXT_KINDS)}")
    return lambda f: PythonPass(f, kind, name)


def as_pass(obj: Any) -> Pass:
    """Accept a pass, a stock pass name, or a bare function (taken as an MLIR pass)."""
    if isinstance(obj, (StockPass, PythonPass)):
        return obj
    if isinstance(obj, str):
        return StockPass(obj)
    if callable(obj):
        return PythonPass(obj, "mlir")
    raise PipelineError(f"not a pass: {obj!r} (expected StockPass, a @mlir_pass/@text_pass function, "
                        "or a stock pass name)")
