"""Compile one kernel ahead of time and report the stages and passes that ran (no GPU needed)."""
from __future__ import annotations

import contextlib
import difflib
from typing import Any, Iterable, Iterator, Mapping, Optional

import triton
from triton import knobs
from triton.backends.compiler import GPUTarget

from .activation import PipelineLike, bound_pipeline, resolve_pipeline, use_pipeline
from .errors import PipelineError
from .runner import CompileReport, recording

#: Short target names accepted by the CLI and :func:`parse_target`.
TARGETS = {
    "sm90": GPUTarget("cuda", 90, 32),
    "sm80": GPUTarget("cuda", 80, 32),
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
}


def parse_target(name: str) -> GPUTarget:
    try:
        return TARGETS[name.replace("_", "")]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(TARGETS)}") from None


def make_source(fn: Any, signature: Mapping[str, str], constexprs: Optional[Mapping[str, Any]] = None,
                aligned: Iterable[str] = ()) -> Any:
    """The right AST source for a Triton or a Gluon kernel.

    ``aligned`` names arguments to mark divisible by 16, as the JIT does for 16-byte aligned
    pointers and integers that are multiples of 16.
    """
    attrs = {(fn.arg_names.index(name), ): [["tt.divisibility", 16]] for name in aligned}
    if getattr(fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource
        return GluonASTSource(fn, dict(signature), dict(constexprs or {}), attrs)
    return triton.compiler.ASTSource(fn, dict(signature), dict(constexprs or {}), attrs)


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
                   pipeline: Optional[PipelineLike] = _UNSET, report: Optional[CompileReport] = None) -> Any:
    """``triton.compile`` for a kernel under its bound pipeline, else the one given, else what is active.

    With ``report`` the compilation bypasses the cache, so that every stage really runs and is recorded.
    """
    if isinstance(target, str):
        target = parse_target(target)
    bound = bound_pipeline(fn)
    if bound is not None and pipeline is not _UNSET and resolve_pipeline(pipeline) is not bound:
        raise PipelineError(f"kernel {fn.__name__!r} is bound to pipeline {bound.origin()!r}; unbind it with "
                            "tritium.plugins.bind(None, kernel) to compile it under another pipeline")
    chosen = bound if bound is not None else pipeline
    scope = use_pipeline(chosen) if chosen is not _UNSET else contextlib.nullcontext()
    fresh = _always_compile() if report is not None else contextlib.nullcontext()
    with scope, recording(report), fresh:
        return triton.compile(make_source(fn, signature, constexprs), target=target, options=options)


def pipeline_report(fn: Any, signature: Mapping[str, str], target: GPUTarget | str, *,
                    constexprs: Optional[Mapping[str, Any]] = None, options: Optional[dict] = None,
                    pipeline: Optional[PipelineLike] = _UNSET, diff_around: tuple[str, ...] = ()) -> tuple[Any, CompileReport]:
    """Compile and return ``(kernel, report)``; ``diff_around`` names passes whose IR to capture."""
    report = CompileReport(snapshot=frozenset(diff_around))
    kernel = compile_kernel(fn, signature, target, constexprs=constexprs, options=options, pipeline=pipeline,
                            report=report)
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
            if pass_name not in (label, label.split("@")[0]):
                continue
            after = stage.snapshots.get(f"after {label}", "")
            diff = difflib.unified_diff(before.splitlines(), after.splitlines(), f"{stage.name}: before {label}",
                                        f"{stage.name}: after {label}", lineterm="", n=2)
            body = "\n".join(diff)
            out.append(body if body else f"--- {stage.name}: {label} changed nothing")
    if not out:
        raise KeyError(f"pass {pass_name!r} did not run in this compilation")
    return "\n".join(out)
