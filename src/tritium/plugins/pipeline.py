"""A named list of edits to Triton's compilation pipeline.

Edits name their insertion points the way LLVM's pass manager names extension points: a stage
(``ttir``, ``ttgir``, ``llir``, ``ptx``/``amdgcn``, ``cubin``/``hsaco``) and, inside a stage, a pass
by its stable name (``ttgpuir.coalesce``; a pass that repeats in a stage is ``name@1``, ``name@2``).
Pass names are checked against the passes the backend really adds when the stage runs.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .errors import PipelineError
from .passes import Pass, PythonPass, StockPass, as_pass, fingerprint

#: What each stage takes in and gives out, on either backend.
STAGE_INPUT = {"ttir": "mlir", "ttgir": "mlir", "llir": "mlir", "ptx": "llir", "amdgcn": "llir",
               "cubin": "ptx", "hsaco": "amdgcn"}
STAGE_OUTPUT = {"ttir": "mlir", "ttgir": "mlir", "llir": "llir", "ptx": "ptx", "amdgcn": "amdgcn",
                "cubin": "binary", "hsaco": "binary"}
#: Stages whose body runs MLIR pass managers, so passes can be addressed by name inside them.
PASS_STAGES = ("ttir", "ttgir", "llir")

class Generation:
    """Bumped on every pipeline edit, so cached keys know when to recompute.  Process-wide: a pipeline is a
    value that any plugin manager may use (each manager counts its own plugin (un)loads)."""
    value = 0

    @classmethod
    def bump(cls) -> None:
        cls.value += 1


_ANCHOR = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?:@(?P<index>[1-9]\d*))?$")


@dataclass(frozen=True)
class Anchor:
    """A pass inside a stage: its stable name and, for a repeated pass, which occurrence."""
    name: str
    index: Optional[int]

    @classmethod
    def parse(cls, text: str, stage: str) -> "Anchor":
        m = _ANCHOR.match(text or "")
        if not m:
            raise PipelineError(f"stage {stage!r}: {text!r} is not a pass name (expected e.g. "
                                "'ttgpuir.coalesce' or 'common.canonicalizer@2')")
        return cls(m["name"], int(m["index"]) if m["index"] else None)

    def __str__(self) -> str:
        return self.name if self.index is None else f"{self.name}@{self.index}"


@dataclass(frozen=True)
class Edit:
    """One change to one stage (``stage`` is empty for whole-pipeline overrides)."""
    op: str  # insert | disable | replace | override_stage | add_stage | override_pipeline
    stage: str = ""
    where: str = ""  # insert: start | end | before | after
    anchor: Optional[Anchor] = None
    passes: tuple = ()
    fn: Optional[Callable[..., Any]] = None
    after: str = ""  # add_stage: the stage it follows

    def identity(self, code: bool = True) -> str:
        """What the edit does; with ``code=False`` its Python code is left out (a plugin's declared
        ``content`` stands for it)."""
        parts = [self.op, self.stage, self.where, str(self.anchor or ""), self.after]
        parts += [p.identity(code) for p in self.passes]
        if self.fn is not None and code:
            parts.append(fingerprint(self.fn))
        return "|".join(parts)


def _check_stage(stage: str, extra: tuple[str, ...] = ()) -> None:
    if stage not in STAGE_OUTPUT and stage not in extra:
        valid = ", ".join([*STAGE_OUTPUT, *extra])
        raise PipelineError(f"unknown stage {stage!r}; valid stages: {valid}")


@dataclass(eq=False)
class Pipeline:
    """A named, hashable set of pipeline edits.

    ``when(src, metadata)``, if given, is asked at each stage whether the pipeline applies to this
    compilation (a plugin that only concerns kernels using its ops answers from the IR).
    """
    name: str
    when: Optional[Callable[[Any, dict], bool]] = None
    edits: list[Edit] = field(default_factory=list)
    plugin: Any = field(default=None, repr=False)  # the Plugin that contributes it, once registered

    # -- edits ----------------------------------------------------------------------------------
    def _add(self, edit: Edit) -> None:
        self.edits.append(edit)
        Generation.bump()

    def _added_stages(self) -> tuple[str, ...]:
        return tuple(e.stage for e in self.edits if e.op == "add_stage")

    def insert(self, stage: str, *passes: Any, before: Optional[str] = None, after: Optional[str] = None,
               at: Optional[str] = None) -> "Pipeline":
        """Insert passes before/after a named pass, or ``at="start"``/``"end"`` of a stage."""
        _check_stage(stage, self._added_stages())
        if sum(x is not None for x in (before, after, at)) != 1:
            raise PipelineError(f"{self.name}: insert into {stage!r} needs exactly one of before=, after=, at=")
        if at is not None and at not in ("start", "end"):
            raise PipelineError(f"{self.name}: insert at={at!r}; use 'start' or 'end'")
        if not passes:
            raise PipelineError(f"{self.name}: insert into {stage!r} names no pass")
        resolved = tuple(as_pass(p) for p in passes)
        where = at or ("before" if before is not None else "after")
        anchor = Anchor.parse(before or after, stage) if at is None else None
        for p in resolved:
            self._check_placement(stage, where, p)
        self._add(Edit("insert", stage, where, anchor, resolved))
        return self

    def disable(self, stage: str, pass_name: str) -> "Pipeline":
        """Skip one pass of a stage."""
        self._check_pass_stage(stage)
        self._add(Edit("disable", stage, anchor=Anchor.parse(pass_name, stage)))
        return self

    def replace(self, stage: str, pass_name: str, *passes: Any) -> "Pipeline":
        """Run other passes (stock or Python MLIR passes) in place of one pass."""
        self._check_pass_stage(stage)
        resolved = tuple(as_pass(p) for p in passes)
        if not resolved:
            raise PipelineError(f"{self.name}: replace {pass_name!r} in {stage!r} with nothing; use disable()")
        for p in resolved:
            self._check_placement(stage, "before", p)
        self._add(Edit("replace", stage, anchor=Anchor.parse(pass_name, stage), passes=resolved))
        return self

    def override_stage(self, stage: str, fn: Callable[[Any, dict, Any], Any]) -> "Pipeline":
        """Run ``fn(src, metadata, ctx)`` instead of the stage; its result flows downstream."""
        _check_stage(stage, self._added_stages())
        self._add(Edit("override_stage", stage, fn=fn))
        return self

    def add_stage(self, name: str, fn: Callable[[Any, dict, Any], Any], *, after: str) -> "Pipeline":
        """Add a stage ``fn(src, metadata, ctx)`` right after stage ``after``."""
        _check_stage(after, self._added_stages())
        if name in STAGE_OUTPUT or name in self._added_stages():
            raise PipelineError(f"{self.name}: stage {name!r} already exists")
        self._add(Edit("add_stage", name, fn=fn, after=after))
        return self

    def override_pipeline(self, fn: Callable[[dict, Any], None]) -> "Pipeline":
        """Call ``fn(stages, ctx)`` to rewrite the whole ordered stage dict (runs at every compile)."""
        self._add(Edit("override_pipeline", fn=fn))
        return self

    # -- checks ---------------------------------------------------------------------------------
    def _check_pass_stage(self, stage: str) -> None:
        _check_stage(stage, self._added_stages())
        if stage not in PASS_STAGES:
            raise PipelineError(f"{self.name}: stage {stage!r} runs no named passes (those are in "
                                f"{', '.join(PASS_STAGES)}); insert a text pass at its start or end instead")

    def _check_placement(self, stage: str, where: str, p: Pass) -> None:
        if stage in self._added_stages():
            return
        if where in ("before", "after"):
            self._check_pass_stage(stage)
            if p.kind != "mlir":
                raise PipelineError(f"{self.name}: {p.kind} text pass {getattr(p, 'name', p)!r} cannot go "
                                    f"between MLIR passes of {stage!r}; insert it at='end' of a stage "
                                    f"that outputs {p.kind}")
            return
        kind = STAGE_INPUT[stage] if where == "start" else STAGE_OUTPUT[stage]
        if p.kind != kind:
            raise PipelineError(f"{self.name}: the {where} of stage {stage!r} holds {kind} IR, but pass "
                                f"{getattr(p, 'name', p)!r} works on {p.kind}")

    # -- queries --------------------------------------------------------------------------------
    def applies(self, src: Any, metadata: Optional[dict]) -> bool:
        if self.when is None:
            return True
        try:
            return bool(self.when(src, metadata))
        except Exception as e:
            raise PipelineError(f"pipeline {self.origin()!r}: its when= predicate raised {type(e).__name__}: {e}") \
                from e

    def for_stage(self, stage: str) -> list[Edit]:
        return [e for e in self.edits if e.stage == stage and e.op not in ("add_stage", "override_pipeline")]

    def python_passes(self) -> list[PythonPass]:
        return [p for e in self.edits for p in e.passes if isinstance(p, PythonPass)]

    def digest(self) -> str:
        """Hash of everything that decides the generated code: edits, pass code, owning plugin."""
        h = hashlib.sha256(self.name.encode())
        code = self.plugin is None or self.plugin.content is None
        if self.plugin is not None:
            h.update(self.plugin.content_digest().encode())
        if self.when is not None and code:
            h.update(fingerprint(self.when).encode())
        for e in self.edits:
            h.update(e.identity(code).encode())
        return h.hexdigest()[:16]

    def origin(self) -> str:
        return f"{self.plugin.name}:{self.name}" if self.plugin is not None else self.name


__all__ = ["Pipeline", "Edit", "Anchor", "StockPass", "PythonPass", "STAGE_INPUT", "STAGE_OUTPUT", "PASS_STAGES"]
