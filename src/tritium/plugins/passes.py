"""The three kinds of pass a pipeline can hold, and how each is fingerprinted for cache keys."""
from __future__ import annotations

import collections
import contextlib
import contextvars
import enum
import functools
import hashlib
import logging
import os
import re
import site
import sys
import sysconfig
import threading
import types
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Callable, Iterator, Optional, Union

from .. import compat
from .errors import PipelineError

#: IR kinds a text pass can work on, and the stage whose output has that kind, per backend.
TEXT_KINDS = ("llir", "ptx", "amdgcn")


#: Attribute that gives an object an explicit cache key, in place of its fingerprint.
CACHE_KEY_ATTR = "__tritium_cache_key__"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_PLAIN = (type(None), bool, int, float, complex, str, bytes, enum.Enum)
class PassStats(collections.Counter):
    """Statistics a pass keeps about its own runs (counts, sizes, timings), left out of its fingerprint, so
    that updating them does not give the pass a new cache key and recompile every kernel it touches.
    Only for what never decides the pass's output: nothing in it is part of any cache key.

    ``RUNS = tritium.plugins.PassStats()`` at module level, then ``RUNS[ctx.stage] += 1`` in the pass."""


#: Objects a pass may reach that never decide its output (synchronization, logging, its statistics).
_STATELESS = (type(threading.Lock()), type(threading.RLock()), threading.Condition, threading.Event,
              logging.Logger, PassStats)


class Unfingerprintable(PipelineError):
    """A pass depends on something whose state cannot be hashed stably: it needs an explicit cache key."""


class _Fingerprint:
    """Hashes everything a callable's behaviour depends on, the way Triton hashes a JIT function's
    dependencies: its code, defaults, closure contents, the globals and helper functions it reaches
    (transitively), a callable object's state, ``functools.partial`` arguments. Stable across
    processes: nothing that holds an address or a hash-seeded order goes in."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.seen: dict[int, int] = {}  # id -> position, so cycles hash as back-references
        self.h = hashlib.sha256()

    def feed(self, tag: str, text: str = "") -> None:
        self.h.update(f"{tag}:{len(text)}:{text};".encode())

    def value(self, obj: Any) -> None:
        explicit = getattr(obj, CACHE_KEY_ATTR, None) if not isinstance(obj, type) else None
        if isinstance(explicit, str):
            return self.feed("key", explicit)
        if isinstance(obj, _PLAIN):
            return self.feed(type(obj).__qualname__, repr(obj))
        if isinstance(obj, _STATELESS):
            return self.feed("stateless", type(obj).__qualname__)
        if id(obj) in self.seen:
            return self.feed("ref", str(self.seen[id(obj)]))
        self.seen[id(obj)] = len(self.seen)
        if isinstance(obj, (tuple, list)):
            self.feed(type(obj).__name__, str(len(obj)))
            for item in obj:
                self.value(item)
        elif isinstance(obj, dict):
            self.feed("dict", str(len(obj)))
            for key in sorted(obj, key=repr):
                self.value(key)
                self.value(obj[key])
        elif isinstance(obj, (set, frozenset)):
            self.feed("set", ",".join(sorted(_Fingerprint.of(item) for item in obj)))
        elif isinstance(obj, functools.partial):
            self.feed("partial")
            self.value(obj.func)
            self.value(obj.args)
            self.value(obj.keywords)
        elif isinstance(obj, types.FunctionType):
            self.function(obj)
        elif isinstance(obj, types.MethodType):
            self.feed("method")
            self.value(obj.__func__)
            self.value(obj.__self__)
        elif isinstance(obj, types.ModuleType):
            self.feed("module", f"{obj.__name__}=={_package_version(obj.__name__)}")
        elif isinstance(obj, type):
            self.cls(obj)
        elif isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            self.feed("builtin", f"{getattr(obj, '__module__', '')}.{obj.__qualname__}")
        elif isinstance(obj, CodeType):
            self.code(obj)
        elif hasattr(obj, "identity") and isinstance(obj, (StockPass, PythonPass)):
            self.feed("pass", obj.identity())
        else:
            self.instance(obj)

    def code(self, code: CodeType) -> None:
        self.feed("code", _code_digest(code)[0])

    def function(self, fn: types.FunctionType) -> None:
        self.feed("function", f"{fn.__module__}.{fn.__qualname__}")
        if fn.__module__ and _installed_module(fn.__module__):  # as installed classes: their release stands for them
            return self.feed("version", _package_version(fn.__module__))
        self.code(fn.__code__)
        self.value(fn.__defaults__)
        self.value(fn.__kwdefaults__)
        names = _code_digest(fn.__code__)[1]
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                self.feed("empty")
                continue
            self.value(contents)
            self.module_attributes(contents, names)
        for name in names:
            if name in fn.__globals__:
                self.feed("global", name)
                self.value(fn.__globals__[name])
                self.module_attributes(fn.__globals__[name], names)

    def module_attributes(self, helper: Any, names: tuple[str, ...]) -> None:
        """The attributes of a module outside the installed packages (a plugin's helper module) that code
        naming ``names`` may read: ``helper.VALUE`` reads VALUE, which the module's name does not cover."""
        if not isinstance(helper, types.ModuleType) or _installed_module(helper.__name__):
            return
        namespace = vars(helper)
        for name in names:
            if name in namespace:
                attr = namespace[name]
                self.feed("attribute", name)
                if isinstance(attr, types.ModuleType):
                    if id(attr) not in self.seen:
                        self.value(attr)
                        self.module_attributes(attr, names)
                else:
                    self.value(attr)

    def cls(self, cls: type) -> None:
        """A class by its package's version if installed, else by its bases and everything in its
        namespace: class attributes and methods decide what its instances and static calls do."""
        self.feed("class", f"{cls.__module__}.{cls.__qualname__}")
        if _installed_module(cls.__module__):
            return self.feed("version", _package_version(cls.__module__))
        for base in cls.__bases__:
            if base is not object:
                self.value(base)
        for name in sorted(cls.__dict__):
            attr = cls.__dict__[name]
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            elif isinstance(attr, property):
                attr = (attr.fget, attr.fset, attr.fdel)
            elif name.startswith("__") and name.endswith("__") and not isinstance(attr, types.FunctionType):
                continue  # the class machinery's own entries (__dict__, __weakref__, __module__, ...)
            self.feed("member", name)
            self.value(attr)

    def instance(self, obj: Any) -> None:
        cls = type(obj)
        self.feed("instance")
        self.value(cls)
        state = getattr(obj, "__dict__", None)
        slots = [n for k in cls.__mro__ for n in getattr(k, "__slots__", ()) if hasattr(obj, n)]
        if state is not None or slots:
            self.value(dict(state or {}))
            self.value({n: getattr(obj, n) for n in slots})
            return
        text = repr(obj)
        if _ADDRESS.search(text) or "..." in text:
            raise Unfingerprintable(
                f"cannot fingerprint {text[:80]!r} ({cls.__qualname__}), which {_describe(self.root)} depends on: "
                f"its state is not visible to tritium, so a cached binary could go stale. Give the pass an explicit "
                f"cache key (PythonPass(..., cache_key=...), or set {CACHE_KEY_ATTR} on the object) that changes "
                "whenever its behaviour does")
        self.feed("repr", text)

    @staticmethod
    def of(obj: Any) -> str:
        f = _Fingerprint(obj)
        f.value(obj)
        return f.h.hexdigest()[:16]


#: Code objects are immutable, so what they hash to is computed once (bounded: code made on the fly).
_CODE_DIGESTS: dict[CodeType, tuple[str, tuple[str, ...]]] = {}


def _code_digest(code: CodeType) -> tuple[str, tuple[str, ...]]:
    """``(digest, global names)`` of ``code`` and the code nested in it: its bytecode, names and constants."""
    hit = _CODE_DIGESTS.get(code)
    if hit is not None:
        return hit
    f = _Fingerprint(code)
    f.feed("code", code.co_name)
    f.h.update(code.co_code)
    f.feed("names", repr(code.co_names))
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            digest, inner = _code_digest(const)
            f.feed("code", digest)
            names.update(inner)
        else:
            f.value(const)
    if len(_CODE_DIGESTS) > 4096:
        _CODE_DIGESTS.clear()
    result = _CODE_DIGESTS[code] = (f.h.hexdigest(), tuple(sorted(names)))
    return result


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def _installed_module(name: str) -> bool:
    """Whether module ``name`` is the standard library's or an installed package's (its behaviour changes
    with its version), not code of the user's own (a plugin file, a package being developed, a notebook).
    A module with no file of its own (an extension's submodule, such as ``triton._C.libtriton.ir``) is
    judged by the nearest package above it that has one."""
    if name in sys.builtin_module_names:
        return True
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:end]))
        file = getattr(module, "__file__", None)
        if file:
            return _installed_file(file)
        if getattr(getattr(module, "__spec__", None), "origin", None) in ("built-in", "frozen"):
            return True
    return False  # code from no importable module (exec'd, a notebook's __main__): hash its code


@functools.lru_cache(maxsize=4096)
def _installed_file(file: str) -> bool:
    return os.path.realpath(file).startswith(_library_roots())


def _package_version(name: str) -> str:
    top = sys.modules.get(name.partition(".")[0])
    return str(getattr(top, "__version__", ""))


def _describe(obj: Any) -> str:
    return f"{getattr(obj, '__qualname__', type(obj).__qualname__)!r}"


def fingerprint(obj: Any) -> str:
    """A digest of everything ``obj``'s behaviour depends on (see :class:`_Fingerprint`), so editing a
    pass, a default, a helper it calls or a module constant it reads recompiles every kernel it touched.

    Raises:
        Unfingerprintable: ``obj`` depends on state tritium cannot hash stably, and has no
            explicit cache key.
    """
    memo = _ONCE.get()
    if memo is None:
        return _Fingerprint.of(obj)
    hit = memo.get(id(obj))
    if hit is None:
        hit = memo[id(obj)] = (obj, _Fingerprint.of(obj))  # holds obj, so its id stays its own
    return hit[1]


_ONCE: contextvars.ContextVar[Optional[dict[int, tuple[Any, str]]]] = contextvars.ContextVar(
    "tritium_fingerprint_once", default=None)


@contextlib.contextmanager
def fingerprint_once() -> Iterator[None]:
    """Inside the block, :func:`fingerprint` hashes each object once: one cache key asks for a plugin's
    passes through each of its pipelines and the plugin's own digest, and nothing changes meanwhile."""
    if _ONCE.get() is not None:
        yield
        return
    token = _ONCE.set({})
    try:
        yield
    finally:
        _ONCE.reset(token)


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
        why = compat.check_pass_args(name, tuple(args))
        if why is not None:
            raise PipelineError(f"StockPass {name!r}: Triton's builder rejects the arguments {tuple(args)!r}: {why}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", tuple(args))

    @property
    def kind(self) -> str:
        return "mlir"

    def identity(self, code: bool = True) -> str:
        return f"stock:{self.name}{self.args!r}"


@dataclass(frozen=True)
class PythonPass:
    """A pass written in Python: on an MLIR module, or on LLVM IR / PTX / AMDGCN text.

    MLIR passes get ``(module, ctx)`` and return ``None`` (edited in place) or a new module.
    Text passes get ``(text, ctx)`` and return the new text. The cache key follows ``fn``'s
    fingerprint, or ``cache_key`` when given (for passes whose state tritium cannot see, e.g. a
    native object); change ``cache_key`` whenever the pass's output changes.
    """
    fn: Callable[..., Any]
    kind: str = "mlir"
    name: str = ""
    plugin: Optional[str] = field(default=None, compare=False)
    cache_key: Optional[str] = None

    def __post_init__(self) -> None:
        if self.kind != "mlir" and self.kind not in TEXT_KINDS:
            raise PipelineError(f"pass {self.name or self.fn!r}: unknown IR kind {self.kind!r}; "
                                f"use 'mlir' or one of {', '.join(TEXT_KINDS)}")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.fn, "__name__", type(self.fn).__name__))
        if self.cache_key is not None and not isinstance(self.cache_key, str):
            raise PipelineError(f"pass {self.name!r}: cache_key must be a string, got {type(self.cache_key).__name__}")

    def identity(self, code: bool = True) -> str:
        """The pass's part of a cache key; ``code=False`` leaves its code out (its plugin's declared
        content stands for it)."""
        if self.cache_key is not None:
            return f"py:{self.kind}:{self.name}:key:{self.cache_key}"
        if not code:
            return f"py:{self.kind}:{self.name}"
        try:
            return f"py:{self.kind}:{self.name}:{fingerprint(self.fn)}"
        except Unfingerprintable as e:
            owner = f" of plugin {self.plugin!r}" if self.plugin else ""
            raise Unfingerprintable(f"pass {self.name!r}{owner}: {e}") from None

    def __call__(self, ir_or_text: Any, ctx: Any) -> Any:
        return self.fn(ir_or_text, ctx)


Pass = Union[StockPass, PythonPass]


def mlir_pass(fn: Optional[Callable] = None, *, name: str = "", cache_key: Optional[str] = None) -> Any:
    """Decorator: make ``fn(module, ctx)`` a Python MLIR pass (``cache_key``: see :class:`PythonPass`)."""
    if fn is None:
        return lambda f: PythonPass(f, "mlir", name, cache_key=cache_key)
    return PythonPass(fn, "mlir", name, cache_key=cache_key)


def text_pass(kind: str, *, name: str = "", cache_key: Optional[str] = None) -> Callable[[Callable], PythonPass]:
    """Decorator: make ``fn(text, ctx) -> text`` a pass on ``kind`` text (llir, ptx or amdgcn)."""
    if kind not in TEXT_KINDS:
        raise PipelineError(f"text_pass: unknown IR kind {kind!r}; use one of {', '.join(TEXT_KINDS)}")
    return lambda f: PythonPass(f, kind, name, cache_key=cache_key)


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
