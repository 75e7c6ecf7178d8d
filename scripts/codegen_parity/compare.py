"""Compare two dumps (uTLX's and tritium's) and write the parity report; exit 1 if a rule fails.

Rules (issue 13): every kernel of :data:`kernels.MUST_MATCH` compiles on both sides with identical
assembly after normalization; every other difference is listed in :mod:`.justifications` with the
instruction counts it was justified for (so a changed difference needs a fresh look). The kernels from
the fork's git source have a section of their own: where neither dump has them (no git copy of the fork, as
in CI) it is kept from the existing report, and its rules were checked by the run that wrote it.
Usage::

    python -m codegen_parity.compare --utlx DIR --tritium DIR --out docs/codegen-parity.md [--check]
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import normalize
from .justifications import JUSTIFIED, KNOWN_GAPS
from .kernels import ALL, FORK_GIT_COMMIT, MUST_MATCH, TARGET_NAMES


@dataclass
class Case:
    name: str
    target: str
    utlx: dict
    tritium: dict
    asm_kind: str = ""
    ttgir_same: bool = False
    ttgir_ops_same: bool = False
    asm_same: bool = False
    counts: dict = field(default_factory=dict)  # key instruction -> (utlx, tritium)
    asm_diff: list = field(default_factory=list)
    ttgir_diff: list = field(default_factory=list)
    verdict: str = ""
    why: str = ""
    source: str = "wheel"  # the kernel's Spec.source

    @property
    def key(self) -> str:
        return f"{self.name}@{self.target}"

    @property
    def digest(self) -> str:
        """Names the assembly difference: its removed and added lines, in order."""
        changed = [d for d in self.asm_diff if d[:1] in "+-" and d[:3] not in ("---", "+++")]
        return hashlib.sha256("\n".join(changed).encode()).hexdigest()[:12]


def _diff(a: list[str], b: list[str]) -> list[str]:
    return [line for line in difflib.unified_diff(a, b, "uTLX", "tritium", n=1, lineterm="")]


def compare_case(case: Case, utlx_dir: Path, tritium_dir: Path) -> None:
    case.asm_kind = "ptx" if case.target == "sm90" else "amdgcn"
    read = lambda d, kind: (d / f"{case.key}.{kind}").read_text()  # noqa: E731
    u_ir, t_ir = normalize.ttgir(read(utlx_dir, "ttgir")), normalize.ttgir(read(tritium_dir, "ttgir"))
    norm = getattr(normalize, case.asm_kind)
    u_asm, t_asm = norm(read(utlx_dir, case.asm_kind)), norm(read(tritium_dir, case.asm_kind))
    case.ttgir_same = u_ir == t_ir
    case.ttgir_ops_same = normalize.ttgir_ops(u_ir) == normalize.ttgir_ops(t_ir)
    case.asm_same = u_asm == t_asm
    cu = normalize.count_key_instructions(case.asm_kind, u_asm)
    ct = normalize.count_key_instructions(case.asm_kind, t_asm)
    case.counts = {k: (cu[k], ct[k]) for k in cu if cu[k] or ct[k]}
    if not case.asm_same:
        case.asm_diff = _diff(u_asm, t_asm)
    if not case.ttgir_same:
        case.ttgir_diff = _diff(u_ir, t_ir)


def judge(case: Case) -> bool:
    """Set the case's verdict; False when it breaks a rule."""
    u_ok, t_ok = case.utlx.get("ok"), case.tritium.get("ok")
    must = case.name in MUST_MATCH
    if not (u_ok and t_ok):
        if t_ok:
            case.verdict = "uTLX fails, tritium compiles"
            return not must
        case.verdict = "tritium fails" if u_ok else "both fail"
        case.why = KNOWN_GAPS.get(case.key, "")
        return not must and bool(case.why)
    if case.asm_same:
        case.verdict = "identical" if case.ttgir_same else "identical assembly (TTGIR differs)"
        return True
    if must:
        case.verdict = "DIFFERS (must match)"
        return False
    j = JUSTIFIED.get(case.key)
    if j is None:
        case.verdict = f"DIFFERS, not justified (digest {case.digest})"
        return False
    if j.digest != case.digest:
        case.verdict = f"DIFFERS, justification out of date (digest {case.digest})"
        case.why = f"Justified for the difference {j.digest}: {j.why}"
        return False
    case.verdict, case.why = "differs, justified", j.why
    return True


def _error_summary(error: str) -> str:
    """A compile error as its type and its last line (the cause), without the source excerpt between them,
    whose line numbers move with every edit of the kernel."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return "?"
    kind = lines[0].split(":", 1)[0]
    return (lines[0] if len(lines) == 1 else f"{kind}: {lines[-1]}")[:300]


def _counts_text(case: Case) -> str:
    return ", ".join(f"{k} {u}/{t}" for k, (u, t) in case.counts.items()) or "-"


#: The heading of the git-sourced section (the rest of the report from it on).
GIT_HEADING = f"## From the fork's git source ({FORK_GIT_COMMIT[:12]})"


def _table(cases: list[Case]) -> list[str]:
    lines = ["| kernel | target | TTGIR | assembly | key instructions (uTLX/tritium) | verdict |",
             "|---|---|---|---|---|---|"]
    for c in cases:
        if c.utlx.get("ok") and c.tritium.get("ok"):
            ir = "same" if c.ttgir_same else ("same ops" if c.ttgir_ops_same else "differs")
            asm = "same" if c.asm_same else f"{sum(1 for d in c.asm_diff if d[:1] in '+-') - 2} lines differ"
        else:
            ir = asm = "-"
        lines.append(f"| {c.name} | {c.target} | {ir} | {asm} | {_counts_text(c)} | {c.verdict} |")
    return lines + [""]


def _details(cases: list[Case]) -> list[str]:
    lines = []
    for c in cases:
        if c.verdict in ("identical", "identical assembly (TTGIR differs)"):
            continue
        lines += [f"## {c.key}: {c.verdict}", ""]
        if c.why:
            lines += [c.why, ""]
        for side, st in (("uTLX", c.utlx), ("tritium", c.tritium)):
            if not st.get("ok"):
                lines += [f"{side} error:", "", "```", _error_summary(st.get("error", "?")), "```", ""]
        if c.asm_diff:
            shown = c.asm_diff[:60]
            lines += ["<details><summary>assembly diff (first 60 lines)</summary>", "", "```diff", *shown, "```",
                      "", "</details>", ""]
    return lines


def report(cases: list[Case], versions: str, git_section: str | None = None) -> str:
    """The report; ``git_section`` (the text from :data:`GIT_HEADING` on) stands for the git-sourced cases
    when ``cases`` has none."""
    wheel = [c for c in cases if c.source != "git"]
    git = [c for c in cases if c.source == "git"]
    lines = ["# Codegen parity: tritium against uTLX on the same Triton", "",
             f"Generated by `bash scripts/ci_codegen_parity.sh` ({versions}); do not edit by hand.",
             "Each kernel is compiled from one source by both implementations (tritium's kernels and",
             "op-level kernels with `tritium.tlx` bound to uTLX's TLX, the fork's tutorials with their TLX",
             "import bound to tritium's). Assembly is compared after renumbering registers and labels and",
             "dropping comments, debug info and AMD kernel descriptors; TTGIR after inlining layout aliases,",
             "dropping locations and renumbering SSA values. Counts are uTLX/tritium.", "",
             *_table(wheel), *_details(wheel)]
    if git:
        lines += [GIT_HEADING, "",
                  "Tutorials newer than the fbtriton wheel, from a git copy of the fork (`$TRITIUM_FORK_GIT`). CI has",
                  "none: a run without one keeps this section as the last run with one wrote it.", "",
                  *_table(git), *_details(git)]
    elif git_section:
        return "\n".join(lines) + "\n" + git_section
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utlx", type=Path, required=True)
    parser.add_argument("--tritium", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="also fail if --out differs from the new report")
    args = parser.parse_args(argv)
    su = json.loads((args.utlx / "status.json").read_text())
    st = json.loads((args.tritium / "status.json").read_text())
    cases, ok = [], True
    for spec in ALL:
        for t in spec.targets:
            key = f"{spec.name}@{TARGET_NAMES[t]}"
            if key not in su["cases"] and key not in st["cases"]:
                continue
            case = Case(spec.name, TARGET_NAMES[t], su["cases"].get(key, {"ok": False, "error": "not run"}),
                        st["cases"].get(key, {"ok": False, "error": "not run"}), source=spec.source)
            if case.utlx.get("ok") and case.tritium.get("ok"):
                compare_case(case, args.utlx, args.tritium)
            if not judge(case):
                ok = False
                print(f"RULE BROKEN: {case.key}: {case.verdict} {case.why}", file=sys.stderr)
            cases.append(case)
    old = args.out.read_text() if args.out.is_file() else ""
    kept = old[old.index(GIT_HEADING):] if GIT_HEADING in old and not (su.get("git") or st.get("git")) else None
    if kept is not None:
        print(f"no git copy of the fork: {GIT_HEADING[3:]} kept from {args.out}", file=sys.stderr)
    text = report(cases, f"uTLX on triton {su['triton']}, tritium on triton {st['triton']}", kept)
    if args.check and old != text:
        ok = False
        print(f"{args.out} is out of date: regenerate it with scripts/ci_codegen_parity.sh", file=sys.stderr)
    else:
        args.out.write_text(text)
    for c in cases:
        print(f"{c.key}: {c.verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
