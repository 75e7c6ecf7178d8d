"""Compile one kernel ahead of time and report the stages and passes that ran (no GPU needed)."""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import re
import typing
from typing import Any, Iterable, Iterator, Mapping, Optional

import triton
import triton.language as tl
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
from triton.compiler.errors import CompilationError
from triton.runtime import JITFunction

from .. import compat
from .errors import ArgumentError, KernelCompileError, PipelineError, TritiumError
from .manager import PipelineLike, bound_pipeline, default_manager, enabled_manager
from .runner import CompileReport, pass_names

#: How a target is written: Triton's ``backend:arch[:warp_size]`` (``cuda:90``, ``hip:gfx942:64``), or the
#: short ``sm90``/``sm_90a`` and ``gfx942``.
TARGET_FORMS = "cuda:ARCH[:WARPS] (e.g. cuda:90), hip:GFX[:WARPS] (e.g. hip:gfx942), smNN (sm90, sm_90a) or gfxNNN"


def parse_target(name: str) -> GPUTarget:
    """A :class:`GPUTarget` from the forms in :data:`TARGET_FORMS`. Warp size defaults to 32 on CUDA and on
    RDNA (gfx10-gfx12), 64 on CDNA (gfx9: MI200/MI300/MI350), as the hardware runs them."""
    text = name.strip().lower()
    short = re.fullmatch(r"sm_?(\d+)a?", text)
    if short:
        text = f"cuda:{short.group(1)}"
    elif re.fullmatch(r"gfx[0-9a-f]+", text):
        text = f"hip:{text}"
    parts = text.split(":")
    if len(parts) in (2, 3) and parts[0] == "cuda" and parts[1].isdigit():
        arch: Any = int(parts[1])
    elif len(parts) in (2, 3) and parts[0] == "hip" and re.fullmatch(r"gfx[0-9a-f]+", parts[1]):
        arch = parts[1]
    else:
        raise ValueError(f"unknown target {name!r}; write {TARGET_FORMS}")
    if len(parts) == 3:
        if not parts[2].isdigit() or int(parts[2]) not in (32, 64):
            raise ValueError(f"target {name!r}: warp size {parts[2]!r} must be 32 or 64")
        warps = int(parts[2])
    else:
        warps = 64 if parts[0] == "hip" and re.fullmatch(r"gfx9[0-9a-f]+", arch) else 32
    return GPUTarget(parts[0], arch, warps)


def check_kernel(fn: Any, shown: str = "") -> None:
    """Refuse anything but a ``@triton.jit`` function (a Gluon kernel is one too)."""
    if not isinstance(fn, JITFunction):
        got = f"class {fn.__name__}" if isinstance(fn, type) else f"a {type(fn).__name__} object"
        raise ArgumentError("kernel", shown or getattr(fn, "__name__", repr(fn)),
                            f"not a @triton.jit function (it is {got})")


def triton_type(text: str) -> Any:
    """The type a signature entry names, by Triton's own parser (``*fp16``, ``i32``, ``tensordesc<...>``), or None."""
    try:
        return tl.str_to_ty(text, None)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return None


def scalar_types() -> list[str]:
    """The scalar type names Triton's parser takes (``i32``, ``fp16``, ...), to list when an entry names none."""
    return [name for name in compat.signature_type_names() if triton_type(name) is not None]


def option_fields(target: GPUTarget) -> dict[str, Any]:
    """The backend's compile options and their types: the fields of the dataclass its ``parse_options`` returns,
    then the options the enabled manager's plugins declare for this target (their first type, for the CLI)."""
    options_type = type(make_backend(target).parse_options({}))
    hints = typing.get_type_hints(options_type)
    fields = {f.name: hints.get(f.name, type(f.default)) for f in dataclasses.fields(options_type)}
    manager = enabled_manager()
    for name, (_, opt) in (manager.launch_options().by_name.items() if manager is not None else ()):
        if name not in fields and (not opt.targets or target.backend in opt.targets):
            fields[name] = opt.type[0] if isinstance(opt.type, tuple) else opt.type
    return fields


def check_arguments(fn: Any, signature: Mapping[str, str], target: GPUTarget, *,
                    constexprs: Optional[Mapping[str, Any]] = None, options: Optional[Mapping[str, Any]] = None,
                    aligned: Iterable[str] = ()) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """What :func:`compile_kernel` and ``tritium pipeline`` check before compiling: each name is an argument
    of the kernel or an option of the target's backend, each type one Triton parses, every argument has a type
    or a value. Triton fails late on these, naming neither (``KeyError`` for ``*fp99``, ``'NOPE' is not in
    list``, a conversion error on None). Returns the signature with every argument (``constexpr`` for those with
    a value), the constexprs with the kernel's defaults filled in, and the options.

    Raises:
        ArgumentError: naming the argument, constexpr or option at fault.
    """
    check_kernel(fn)
    names, kernel = list(fn.arg_names), fn.__name__
    if not isinstance(signature, Mapping):
        raise ArgumentError("signature", repr(signature), "expected a mapping of argument name to type, "
                            "e.g. {'x_ptr': '*fp32', 'n': 'i32'}")
    constexprs, options, aligned = dict(constexprs or {}), dict(options or {}), list(aligned)
    for what, given in (("signature", signature), ("constexpr", constexprs), ("aligned", aligned)):
        for name in given:
            if name not in names:
                raise ArgumentError(what, str(name), f"not an argument of kernel {kernel}; its arguments: "
                                    f"{', '.join(names)}")
    sig: dict[str, str] = {}
    missing = []
    for i, name in enumerate(names):
        entry = signature.get(name)
        if name in constexprs:  # a value; a type may come with it (an integer argument specialized to a constant)
            entry = entry or "constexpr"
        elif i in fn.constexprs:
            if entry not in (None, "constexpr"):
                raise ArgumentError("signature", name, f"a constexpr of kernel {kernel}, not typed; give its value")
            param = fn.params[i]
            if not param.has_default:
                raise ArgumentError("constexpr", name, f"kernel {kernel} gives it no default; give its value")
            constexprs[name], entry = param.default, "constexpr"
        elif entry is None:
            missing.append(name)
            continue
        if entry != "constexpr" and (not isinstance(entry, str) or triton_type(entry) is None):
            raise ArgumentError("signature", name, f"{entry!r} is not a Triton type; use one of "
                                f"{', '.join(scalar_types())}, with * for a pointer (*fp16)")
        sig[name] = entry
    if missing:
        raise ArgumentError("signature", ", ".join(missing), f"no type given (kernel {kernel}'s arguments: "
                            f"{', '.join(names)})")
    fields = option_fields(target)
    for name in options:
        if name not in fields:
            raise ArgumentError("option", str(name), f"not a compile option of the {target.backend} backend; its "
                                f"options: {', '.join(fields)}")
    try:  # the backend's own checks (num_warps a power of 2, ...)
        make_backend(target).parse_options(dict(options))
    except Exception as e:
        shown = " ".join(f"{n}={v}" for n, v in options.items())
        raise ArgumentError("option", shown, _first_line(e)) from e
    return sig, constexprs, options


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def make_source(fn: Any, signature: Mapping[str, str], constexprs: Optional[Mapping[str, Any]] = None,
                aligned: Iterable[str] = ()) -> Any:
    """The right AST source for a Triton or a Gluon kernel.

    ``aligned`` names arguments to mark divisible by 16, as the JIT does for 16-byte aligned
    pointers and integers that are multiples of 16.
    """
    attrs = {(fn.arg_names.index(name), ): [["tt.divisibility", 16]] for name in aligned}
    return compat.ast_source(fn, dict(signature), dict(constexprs or {}), attrs)


_UNSET: Any = object()


@contextlib.contextmanager
def _always_compile() -> Iterator[None]:
    saved = knobs.compilation.always_compile
    knobs.compilation.always_compile = True
    try:
        yield
    finally:
        knobs.compilation.always_compile = saved


def compile_kernel(fn: Any, signature: Mapping[str, str], target: GPUTarget | str, *,
                   constexprs: Optional[Mapping[str, Any]] = None, options: Optional[dict] = None,
                   pipeline: Optional[PipelineLike] = _UNSET, report: Optional[CompileReport] = None,
                   aligned: Iterable[str] = ()) -> Any:
    """``triton.compile`` for a kernel under its bound pipeline, else the one given, else what is active.

    With ``report`` the compilation bypasses the cache, so that every stage really runs and is recorded.
    ``aligned`` names arguments known divisible by 16 (see :func:`make_source`). The arguments are checked first
    (:func:`check_arguments`); a kernel that does not compile raises :class:`KernelCompileError`, a
    ``CompilationError`` that gives its place and source line in a few lines. Pipelines are chosen and
    recorded by the enabled plugin manager (the one whose hook Triton calls), else the default one.
    """
    if isinstance(target, str):
        target = parse_target(target)
    signature, constexprs, options = check_arguments(fn, signature, target, constexprs=constexprs, options=options,
                                                     aligned=aligned)
    if report is not None and not isinstance(report, CompileReport):
        raise TypeError(f"compile_kernel: report must be a tritium.plugins.CompileReport or None, not "
                        f"{type(report).__name__}")
    manager = enabled_manager()
    bound = bound_pipeline(fn)
    if manager is None:
        if bound is None and (pipeline is _UNSET or pipeline is None) and report is None:
            manager = default_manager()  # nothing asked of tritium: a plain compile
        else:
            asked = "a report" if report is not None else f"pipeline {(bound or pipeline)!r}"
            raise TritiumError(f"compile_kernel: {asked} was asked for, but no plugin manager is enabled "
                               "(tritium.plugins.disable() was called), so Triton would compile without it; "
                               "call tritium.plugins.enable() first")
    if bound is not None and pipeline is not _UNSET and manager.resolve_pipeline(pipeline) is not bound:
        raise PipelineError(f"kernel {fn.__name__!r} is bound to pipeline {bound.origin()!r}; unbind it with "
                            "tritium.plugins.bind(None, kernel) to compile it under another pipeline")
    chosen = bound if bound is not None else pipeline
    scope = manager.use_pipeline(chosen) if chosen is not _UNSET else contextlib.nullcontext()
    fresh = _always_compile() if report is not None else contextlib.nullcontext()
    with scope, manager.recording(report), fresh:
        try:
            return triton.compile(make_source(fn, signature, constexprs, aligned), target=target, options=options)
        except CompilationError as e:
            raise KernelCompileError(fn.__name__, e) from e


def pipeline_report(fn: Any, signature: Mapping[str, str], target: GPUTarget | str, *,
                    constexprs: Optional[Mapping[str, Any]] = None, options: Optional[dict] = None,
                    pipeline: Optional[PipelineLike] = _UNSET, diff_around: tuple[str, ...] = (),
                    aligned: Iterable[str] = ()) -> tuple[Any, CompileReport]:
    """Compile and return ``(kernel, report)``; ``diff_around`` names passes whose IR to capture."""
    report = CompileReport(snapshot=frozenset(diff_around))
    kernel = compile_kernel(fn, signature, target, constexprs=constexprs, options=options, pipeline=pipeline,
                            report=report, aligned=aligned)
    return kernel, report


def format_report(report: CompileReport) -> str:
    """Stages and passes, one per line, with edits marked the way ``tritium pipeline`` prints them."""
    marks = {"stock": " ", "inserted": "+", "replacement": "+", "disabled": "-", "replaced": "~"}
    lines = []
    for stage in report.stages:
        head = f"[{stage.name}]"
        if stage.status != "stock":
            head += f"  ({stage.status} by {stage.origin})"
        lines.append(head)
        for p in stage.passes:
            note = f"   <- {p.status} by {p.origin}" if p.status != "stock" else ""
            lines.append(f"  {marks[p.status]} {p.name}{note}")
    return "\n".join(lines)


def diff_around(report: CompileReport, pass_name: str) -> str:
    """Unified diff of the IR just before and just after every run of ``pass_name``."""
    out = []
    for stage in report.stages:
        for key, before in stage.snapshots.items():
            if not key.startswith("before "):
                continue
            label = key[len("before "):]
            if pass_name not in pass_names(label):
                continue
            after = stage.snapshots.get(f"after {label}", "")
            diff = difflib.unified_diff(before.splitlines(), after.splitlines(), f"{stage.name}: before {label}",
                                        f"{stage.name}: after {label}", lineterm="", n=2)
            body = "\n".join(diff)
            out.append(body if body else f"--- {stage.name}: {label} changed nothing")
    if not out:
        raise KeyError(f"pass {pass_name!r} did not run in this compilation; passes that ran: "
                       f"{', '.join(passes_run(report))}")
    return "\n".join(out)


def edited_by(report: CompileReport) -> list[str]:
    """The pipelines whose edits show in the report (``plugin:pipeline``), in the order they first do."""
    origins = [o for s in report.stages for o in (s.origin, *(p.origin for p in s.passes)) if o]
    return list(dict.fromkeys(origins))


def passes_run(report: CompileReport) -> list[str]:
    """Names of the passes that ran, in order and once each (``name@2`` as ``name``): what
    :func:`diff_around` can show, listed when it is asked for another."""
    ran = (p.name.split("@")[0] for s in report.stages for p in s.passes if p.status not in ("disabled", "replaced"))
    return list(dict.fromkeys(ran))
