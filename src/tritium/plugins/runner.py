"""Applies the effective pipelines to a backend's stages, and records what really runs.

The stages hook wraps each stage in a :class:`StageRunner`.  Inside a stage, pass managers record
the passes the backend adds; at ``pm.run`` the edits are applied to that list and the result is run
in order, stock passes in real pass managers and Python passes in between.  With no edits the same
passes run in the same order in the same pass manager, so the output is byte-identical.
"""
from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .. import compat, knobs, log
from .errors import PassError, PipelineError, StageError, TritiumError
from .passes import Pass, PythonPass, StockPass
from .pipeline import STAGE_INPUT, STAGE_OUTPUT, Anchor, Edit, Pipeline


# --------------------------------------------------------------------------------------------
# What a compilation ran, for `tritium pipeline` and the tests
# --------------------------------------------------------------------------------------------
@dataclass
class PassRecord:
    name: str  # stable name, e.g. ttgpuir.coalesce or common.canonicalizer@2
    status: str  # stock | inserted | disabled | replaced | replacement
    origin: str = ""  # the pipeline (plugin:pipeline) behind an edit
    args: tuple = ()
    pass_manager: str = ""


@dataclass
class StageRecord:
    name: str
    status: str = "stock"  # stock | overridden | added
    origin: str = ""
    passes: list[PassRecord] = field(default_factory=list)
    pass_manager_runs: list[tuple[str, int]] = field(default_factory=list)  # (pm name, stock passes)
    snapshots: dict[str, str] = field(default_factory=dict)  # "before NAME"/"after NAME" -> IR


@dataclass
class CompileReport:
    """Every stage and pass of one compilation, in order, with plugin edits marked."""
    stages: list[StageRecord] = field(default_factory=list)
    snapshot: frozenset = frozenset()  # pass names whose IR before/after should be captured

    def stage(self, name: str) -> StageRecord:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; stages: {', '.join(s.name for s in self.stages)}")


def pass_names(label: str) -> set[str]:
    """The names that pick a pass run labelled ``label`` (``python:tlx.lower@2``): the label, the label without
    its run number, and both without the ``python:`` that marks a Python pass."""
    names = {label, label.split("@")[0]}
    return names | {n[len("python:"):] for n in names if n.startswith("python:")}


# --------------------------------------------------------------------------------------------
# Contexts handed to passes and stage functions
# --------------------------------------------------------------------------------------------
@dataclass
class StageContext:
    """What a Python pass or stage override may want to know about the compilation."""
    stage: str
    backend: Any
    options: Any
    language: Any
    capability: Any
    metadata: dict = field(default_factory=dict)
    #: The last text a pipeline wrote in this compilation: ``(author, stage, text)``, the author a Python text
    #: pass or the pipeline whose stage function returned it, so the stage that consumes that text can name
    #: its author when it rejects it. Shared by all stages.
    text_edit: list = field(default_factory=list)

    @property
    def target(self) -> Any:
        return self.backend.target


def _dump_dir() -> str:
    path = knobs.runtime.dump_dir or os.path.join(tempfile.gettempdir(), "tritium-dumps")
    os.makedirs(path, exist_ok=True)
    return path


def _dump(ir_or_text: Any, stage: str, pass_name: str) -> str:
    text = ir_or_text.str() if compat.is_mlir_module(ir_or_text) else str(ir_or_text)
    fd, path = tempfile.mkstemp(prefix=f"{stage}-{pass_name.replace('/', '_')}-", suffix=".ir", dir=_dump_dir())
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def pass_error(message: str, p: Pass, stage: str, ir: Any) -> PassError:
    """A :class:`PassError` naming pass ``p``, with ``ir`` dumped; a dump folder that cannot be written is
    said in the message instead of hiding the pass's own error."""
    try:
        return PassError(message, plugin=p.plugin, pass_name=p.name, stage=stage, dump=_dump(ir, stage, p.name))
    except OSError as e:
        return PassError(f"{message} (the IR could not be dumped: {type(e).__name__}: {e}; set TRITIUM_DUMP_DIR "
                         "to a folder that can be written)", plugin=p.plugin, pass_name=p.name, stage=stage, dump=None)


def run_python_pass(p: PythonPass, value: Any, ctx: StageContext) -> Any:
    """Run a Python pass, turning any failure into a :class:`PassError` with the IR dumped."""
    kernel = compat.entry_function_name(value) if p.kind == "mlir" else None
    try:
        out = p(value, ctx)
    except Exception as e:
        raise pass_error(f"raised {type(e).__name__}: {e}", p, ctx.stage, value) from e
    if p.kind != "mlir":
        if not isinstance(out, str):
            raise pass_error(f"returned {type(out).__name__}, expected the new {p.kind} text", p, ctx.stage, value)
        if out != value:
            try:
                why = compat.llvm_ir_parse_error(out, knobs.runtime.llvm_check_timeout) if p.kind == "llir" else None
            except compat.LLVMCheckError as e:
                raise pass_error(f"returned LLVM IR that could not be checked: {e}", p, ctx.stage, out) from e
            if why is not None:
                raise pass_error(f"returned LLVM IR that does not parse: {why}", p, ctx.stage, out)
            ctx.text_edit[:] = [p, ctx.stage, out]
        return out
    if out is not None and not compat.is_mlir_module(out):
        raise pass_error(f"returned {type(out).__name__}, expected None or an MLIR module", p, ctx.stage, value)
    if out is not None and out is not value and getattr(out, "context", None) is not getattr(value, "context", None):
        raise pass_error("returned a module that is not in the compilation's MLIR context (or does not say which "
                         "context it is in); edit the module in place and return None, or build the new one with "
                         "tritium.plugins.parse_module(text, module.context)", p, ctx.stage, value)
    result = value if out is None else out
    if not result.verify():
        raise pass_error("produced IR that fails verification", p, ctx.stage, result)
    if kernel and compat.entry_function_name(result) != kernel:
        raise pass_error(f"returned a module without the kernel function @{kernel} (the backend reads the kernel "
                         "from it by that name)", p, ctx.stage, result)
    return result


# --------------------------------------------------------------------------------------------
# One stage
# --------------------------------------------------------------------------------------------
@dataclass
class _Step:
    """One entry of an edited pass list: a stock pass the backend asked for, or an inserted pass."""
    label: str
    recorded: Optional[compat.RecordedPass] = None
    inserted: Optional[Pass] = None
    status: str = "stock"
    origin: str = ""


def _anchor_matches(anchor: Anchor, base: str, occurrence: int) -> bool:
    if base != anchor.name and base.split(".", 1)[-1] != anchor.name:
        return False
    return occurrence == (anchor.index or 1)


class StageRunner:
    """A stage function with the effective pipelines' edits for that stage applied."""

    def __init__(self, name: str, fn: Callable[[Any, dict], Any], pipelines: tuple[Pipeline, ...],
                 ctx: StageContext, report: Optional[CompileReport], added_by: Optional[Pipeline] = None) -> None:
        self.name, self.fn, self.pipelines, self.ctx, self.added_by = name, fn, pipelines, ctx, added_by
        self.report = report

    def __call__(self, src: Any, metadata: dict) -> Any:
        active = [p for p in self.pipelines if p.applies(src, metadata)]
        edits = [(p, e) for p in active for e in p.for_stage(self.name)]
        report = self.report
        if not edits and report is None and self.added_by is None and not self.ctx.text_edit:
            return self.fn(src, metadata)
        ctx = StageContext(self.name, self.ctx.backend, self.ctx.options, self.ctx.language,
                           self.ctx.capability, metadata, self.ctx.text_edit)
        record = StageRecord(self.name, "added" if self.added_by else "stock",
                             self.added_by.origin() if self.added_by else "")
        if report is not None:
            report.stages.append(record)
        run = _StageRun(self, edits, ctx, record, report)
        try:
            out = run.run(src, metadata)
        except TritiumError:  # already names its cause (a pass, a pipeline, a plugin's own diagnosis)
            raise
        except Exception as e:
            blamed = self._blame(e, run, [p for p, _ in edits])
            if blamed is None:
                raise
            raise blamed from e
        if edits or self.added_by is not None:
            changes = [f"{r.status} {r.name}" for r in record.passes if r.status != "stock"]
            if record.status != "stock":
                changes.insert(0, f"stage {record.status}")
            log.note_stage(self.name, [p.origin() for p in active] or [self.added_by.origin()], changes)
        return out

    def _blame(self, e: Exception, run: "_StageRun", editing: list[Pipeline]) -> Optional[Exception]:
        """The error naming who made this stage fail: the author of the text it was consuming when it failed,
        else the pipelines that edit it. None keeps Triton's own error, with a note naming those pipelines,
        for the error types Triton's autotuner catches by type (a config that does not fit is skipped)."""
        first = str(e).strip().splitlines()
        what = f"{type(e).__name__}: {first[0] if first else ''}"
        if run.consumed is not None:
            author, stage, text = run.consumed
            if isinstance(author, PythonPass):
                return pass_error(f"stage {self.name!r} rejected the {author.kind} this pass returned: {what}",
                                  author, stage, text)
            return StageError(f"pipeline {author.origin()!r}: stage {self.name!r} rejected the output of the "
                              f"stage function it gave stage {stage!r}: {what}", e)
        editing = list(dict.fromkeys([*editing, *([self.added_by] if self.added_by else [])]))
        if not editing:
            return None
        names = ", ".join(repr(p.origin()) for p in editing)
        changes = [f"{r.status} {r.name}" for r in run.record.passes if r.status != "stock"]
        if run.record.status != "stock":
            changes.insert(0, f"stage {run.record.status}")
        message = (f"stage {self.name!r} failed under the edits of pipeline {names} "
                   f"({'; '.join(changes) or 'no edit applied yet'}): {what}")
        if type(e).__module__.startswith("triton."):
            if hasattr(e, "add_note"):  # Python 3.11+
                e.add_note(f"tritium: {message}")
            return None
        return StageError(message, e)


class _StageRun:
    def __init__(self, runner: StageRunner, edits: list[tuple[Pipeline, Edit]], ctx: StageContext,
                 record: StageRecord, report: Optional[CompileReport]) -> None:
        self.runner, self.edits, self.ctx, self.record = runner, edits, ctx, record
        self.snapshot = report.snapshot if report is not None else frozenset()
        self.counts: Counter = Counter()
        self.matched: set[int] = set()
        self.first_use: dict[int, str] = {}
        #: While the stage function runs: the ``text_edit`` it is consuming, if a pipeline wrote its input.
        self.consumed: Optional[list] = None

    # -- stage level ----------------------------------------------------------------------------
    def run(self, src: Any, metadata: dict) -> Any:
        src = self._run_at("start", src)
        overrides = [(p, e) for p, e in self.edits if e.op == "override_stage"]
        custom: Optional[tuple[str, Pipeline, Callable[..., Any]]] = None
        if self.runner.added_by is not None:
            custom = ("added", self.runner.added_by, self.runner.fn)
        elif overrides:
            pipeline, edit = overrides[-1]
            self.record.status, self.record.origin = "overridden", pipeline.origin()
            custom = ("override of", pipeline, edit.fn)
        edited = self.ctx.text_edit
        self.consumed = list(edited) if edited and edited[2] is src else None
        with compat.intercept_pass_managers(self._run_pass_manager):
            out = self.runner.fn(src, metadata) if custom is None else self._run_custom(custom, src, metadata)
        self.consumed = None
        out = self._run_at("end", out)
        self._check_anchors()
        return out

    def _run_custom(self, custom: tuple[str, Pipeline, Callable[..., Any]], src: Any, metadata: dict) -> Any:
        what, pipeline, fn = custom
        try:
            out = fn(src, metadata, self.ctx)
        except TritiumError:
            raise
        except Exception as e:
            raise PipelineError(f"pipeline {pipeline.origin()!r}: the {what} stage {self.runner.name!r} raised "
                                f"{type(e).__name__}: {e}") from e
        # a stock stage's output has its known kind; an added stage passes on the kind of IR it was given
        expected = _STAGE_OUTPUT.get(self.runner.name) or next(
            (kind for kind in _STAGE_OUTPUT.values() if kind[0](src)), None)
        if out is None or (expected is not None and not expected[0](out)):
            raise PipelineError(f"pipeline {pipeline.origin()!r}: the {what} stage {self.runner.name!r} returned "
                                f"{type(out).__name__}; it must return the stage's output"
                                + (f" ({expected[1]})" if expected else ""))
        if isinstance(out, (str, bytes)) and out is not src:
            self.ctx.text_edit[:] = [pipeline, self.runner.name, out]
        return out

    def _run_at(self, where: str, value: Any) -> Any:
        for pipeline, edit in self.edits:
            if edit.op != "insert" or edit.where != where:
                continue
            for p in edit.passes:
                self.record.passes.append(PassRecord(_pass_label(p), "inserted", pipeline.origin(),
                                                     pass_manager=f"<{where}>"))
                if isinstance(p, PythonPass):
                    value = run_python_pass(p, value, self.ctx)
                else:
                    pm = compat.new_pass_manager(value.context, False)
                    compat.stock_pass_builder(p.name).fn(pm, *p.args)
                    compat.run_plain(pm, value, f"tritium.{where}.{self.runner.name}")
        return value

    def _check_anchors(self) -> None:
        names = self._stage_names()
        for i, (pipeline, edit) in enumerate(self.edits):
            if edit.anchor is None:
                continue
            if i not in self.matched:
                raise PipelineError(f"pipeline {pipeline.origin()!r}: stage {self.runner.name!r} has no pass "
                                    f"{str(edit.anchor)!r}; its passes are: {', '.join(names) or 'none'}")
            if edit.anchor.index is None and self.counts[self.first_use[i]] > 1:
                base = self.first_use[i]
                raise PipelineError(f"pipeline {pipeline.origin()!r}: pass {edit.anchor.name!r} runs "
                                    f"{self.counts[base]} times in stage {self.runner.name!r}; name one of "
                                    + ", ".join(f"{base}@{k}" for k in range(1, self.counts[base] + 1)))

    def _stage_names(self) -> list[str]:
        """Recorded names with repeat indexes, as users write them; also fixes up the record."""
        seen: Counter = Counter()
        names = []
        for rec in self.record.passes:
            if rec.status in ("inserted", "replacement"):
                continue
            base = rec.name.split("@")[0]
            seen[base] += 1
            rec.name = f"{base}@{seen[base]}" if self.counts[base] > 1 else base
            names.append(rec.name)
        return names

    # -- inside a pass manager ------------------------------------------------------------------
    def _run_pass_manager(self, pm: Any, mod: Any, pm_name: str, recorded: list) -> None:
        steps: list[_Step] = []
        for rp in recorded:
            base = rp.builder.name
            self.counts[base] += 1
            occurrence = self.counts[base]
            steps.extend(self._edit_one(rp, base, occurrence, pm_name))
        self.record.pass_manager_runs.append((pm_name, len(recorded)))
        self._execute(steps, pm, mod, pm_name)

    def _edit_one(self, rp: compat.RecordedPass, base: str, occurrence: int, pm_name: str) -> list[_Step]:
        before: list[_Step] = []
        after: list[_Step] = []
        keep = True
        status, origin = "stock", ""
        replacement: list[_Step] = []
        for i, (pipeline, edit) in enumerate(self.edits):
            if edit.anchor is None or not _anchor_matches(edit.anchor, base, occurrence):
                continue
            self.matched.add(i)
            self.first_use.setdefault(i, base)
            step_status = "replacement" if edit.op == "replace" else "inserted"
            target = replacement if edit.op == "replace" else (before if edit.where == "before" else after)
            target.extend(_Step(_pass_label(p), inserted=p, status=step_status, origin=pipeline.origin())
                          for p in edit.passes)
            if edit.op in ("disable", "replace"):
                keep = False
                status, origin = ("disabled" if edit.op == "disable" else "replaced"), pipeline.origin()
        self._note_steps(before, pm_name)
        self.record.passes.append(PassRecord(base, status, origin, rp.args, pm_name))
        self._note_steps(replacement, pm_name)
        self._note_steps(after, pm_name)
        own = [_Step(f"{base}@{occurrence}", recorded=rp)] if keep else []
        return [*before, *own, *replacement, *after]

    def _note_steps(self, steps: list[_Step], pm_name: str) -> None:
        for step in steps:
            self.record.passes.append(PassRecord(step.label, step.status, step.origin, pass_manager=pm_name))

    def _execute(self, steps: list[_Step], pm: Any, mod: Any, pm_name: str) -> None:
        """Run the steps in order: stock passes batched into pass managers, Python passes between."""
        current, pending = pm, 0

        def flush() -> None:
            nonlocal current, pending
            if pending:
                compat.run_plain(current, mod, pm_name)
                current, pending = compat.new_pass_manager(pm.context, pm.debug), 0

        for step in steps:
            watched = not self.snapshot.isdisjoint(pass_names(step.label))
            if watched:
                flush()
                self.record.snapshots[f"before {step.label}"] = mod.str()
            if isinstance(step.inserted, PythonPass):
                flush()
                compat.replace_module_body(mod, run_python_pass(step.inserted, mod, self.ctx))
            else:
                if step.recorded is not None:
                    step.recorded.add_to(current)
                else:
                    compat.stock_pass_builder(step.inserted.name).fn(current, *step.inserted.args)
                pending += 1
            if watched:
                flush()
                self.record.snapshots[f"after {step.label}"] = mod.str()
        flush()


#: What each stock stage returns: (check, description).
_STAGE_OUTPUT: dict[str, tuple[Callable[[Any], bool], str]] = {
    **{name: (compat.is_mlir_module, "an MLIR module") for name in ("ttir", "ttgir")},
    **{name: (lambda v: isinstance(v, str), "a str") for name in ("llir", "ptx", "amdgcn")},
    **{name: (lambda v: isinstance(v, bytes), "bytes") for name in ("cubin", "hsaco")},
}


def _pass_label(p: Pass) -> str:
    return p.name if isinstance(p, StockPass) else f"python:{p.name}"


# --------------------------------------------------------------------------------------------
# The stages hook
# --------------------------------------------------------------------------------------------
def apply_pipelines(pipelines: tuple[Pipeline, ...], report: Optional[CompileReport], backend: Any, stages: dict,
                    options: Any, language: Any, capability: Any) -> None:
    """The stages hook body: wrap each stage of this compilation in a :class:`StageRunner` that applies
    ``pipelines`` and records into ``report`` (a plugin manager says which)."""
    log.start_compilation()
    if not pipelines and report is None:
        return
    ctx = StageContext("", backend, options, language, capability)
    ordered = list(stages.items())
    added_by: dict[str, Pipeline] = {}
    for pipeline in pipelines:
        for edit in pipeline.edits:
            if edit.op == "add_stage":
                names = [n for n, _ in ordered]
                if edit.after in names:
                    ordered.insert(names.index(edit.after) + 1, (edit.stage, edit.fn))
                    added_by[edit.stage] = pipeline
    stages.clear()
    for name, fn in ordered:
        stages[name] = StageRunner(name, fn, pipelines, ctx, report, added_by.get(name))
    for pipeline in pipelines:
        for edit in pipeline.edits:
            if edit.op == "override_pipeline":
                before = list(stages)
                try:
                    edit.fn(stages, ctx)
                except Exception as e:
                    raise PipelineError(f"pipeline {pipeline.origin()!r}: override_pipeline raised "
                                        f"{type(e).__name__}: {e}") from e
                _check_stages(pipeline, before, stages)


def _check_stages(pipeline: Pipeline, before: list[str], stages: dict) -> None:
    """Triton runs every stage in the dict by name, from the source's own stage on: each must stay, and
    each entry must be a stage function."""
    missing = [name for name in before if name not in stages]
    if missing:
        raise PipelineError(f"pipeline {pipeline.origin()!r}: override_pipeline removed stage(s) "
                            f"{', '.join(map(repr, missing))}; Triton needs every stage it had (wrap a stage's "
                            "function, or use override_stage, instead)")
    for name, fn in stages.items():
        if not isinstance(name, str) or not callable(fn):
            raise PipelineError(f"pipeline {pipeline.origin()!r}: override_pipeline left {name!r} -> "
                                f"{type(fn).__name__} in the stages; each entry must be a stage name and a "
                                "function (src, metadata) -> output")


__all__ = ["apply_pipelines", "StageContext", "CompileReport", "StageRecord", "PassRecord",
           "STAGE_INPUT", "STAGE_OUTPUT"]
