"""Run the TLX fork's unit tests, ported by import, on tritium; measure their pass rates (issue 21).

The fork's ``python/test/unit/language/test_tlx_*.py`` are not in the fbtriton wheel (nor in any sdist on
the registry), so they come from a git copy of the fork's repository: ``$TRITIUM_FORK_GIT`` (default
``/work/.mirror/facebookexperimental+triton/repo``), at :data:`COMMIT`. ``extract`` writes them, with
``triton.language.extra.tlx`` renamed ``tritium.tlx`` in their imports (the only change), and the
tutorials they import from the same commit, into ``.fork-cache/unit-tests-<commit>/``. Nothing of the
fork is committed. Without a git copy (CI: a fresh clone, no network but the registry) there is nothing
to run, and tests/tlx/test_fork_unit_tests.py skips, saying so.

``run`` runs every file in four modes, each a pytest process with tests/tlx/fork_unit_plugin.py:
compile for sm_90, compile for gfx950 (the stand-in driver: kernels compile, nothing launches), and
``TRITON_INTERPRET=1`` with the tests' hardware gates answering for sm_90, then gfx950. Rates:

* compile: a test that is not skipped counts as compiled when it passed, or when at least one kernel
  compiled (or launched from the JIT's cache) and none failed to (a test that checks computed values fails in this mode by construction);
* interpreter: a test that is not skipped counts when it passed.

Skipped tests (the test's own hardware gate: Blackwell, gfx1250, ...) and excluded ones (the plugin's
rule, :func:`fork_unit_plugin.exclusion`, a reason each) are not counted. ``--write`` stores the results
in tests/data/fork_unit_tests.json and regenerates docs/tlx-coverage.md (scripts/tlx_coverage.py renders
that file's section from them).

    python scripts/fork_unit_tests.py extract
    python scripts/fork_unit_tests.py run [--write] [--jobs N] [--files test_tlx_misc.py ...] [--modes ...]
    python scripts/fork_unit_tests.py report [--write]      # the last run's results, from the cache
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "tlx"))
import fork_conformance as fc  # noqa: E402
import fork_unit_plugin  # noqa: E402

#: The fork's commit the tests are taken from (main of 2026-08-22, newer than the 3.7.4 wheel).
COMMIT = "db4666f22c1f8b206584c3f06e3b4a0ff035989e"
TESTS_DIR = "python/test/unit/language"
TUTORIALS_DIR = "third_party/tlx/tutorials"
CACHE = REPO / ".fork-cache" / f"fork-tests-{COMMIT[:12]}"
RESULTS = REPO / "tests" / "data" / "fork_unit_tests.json"
PLUGIN_DIR = REPO / "tests" / "tlx"
#: (mode name, target, interpreted)
MODES = [("compile sm_90", "sm90", False), ("compile gfx950", "gfx950", False),
         ("interp sm_90", "sm90", True), ("interp gfx950", "gfx950", True)]


def git_dir() -> Path:
    return Path(os.environ.get(fc.MIRROR_ENV) or fc._DEFAULT_MIRROR)


def find_tests() -> tuple[Optional[Path], str]:
    """The extracted copy (the fork's own layout: tests find tutorials by path), extracting it once from the
    git copy; or ``None`` and why not."""
    if (CACHE / TESTS_DIR / "test_tlx_misc.py").is_file():
        return CACHE, ""
    git = git_dir()
    if not git.exists():
        return None, (f"the fork's unit tests are in no wheel or sdist: they need a git copy of the fork at "
                      f"{COMMIT[:12]} ({fc.MIRROR_ENV}, looked in {git})")
    def wanted(name: str) -> bool:
        return (not name.startswith(TESTS_DIR + "/") or Path(name).name.startswith("test_tlx_")
                or Path(name).name == "conftest.py")

    def port(tmp: Path) -> None:
        # the fork's language conftest holds helpers the tests import (`from conftest import ...`): ported too
        for f in (tmp / TESTS_DIR).glob("*.py"):
            f.write_text(fc.port_source(f.read_text()))

    try:
        fc.export_git_paths(git, COMMIT, [TESTS_DIR, TUTORIALS_DIR], CACHE, keep=wanted, edit=port)
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as e:
        return None, f"could not extract the fork's unit tests at {COMMIT[:12]} from {git}: {e}"
    return CACHE, ""


def run_file(cache: Path, file: str, target: str, interpret: bool, timeout: int = 3000,
             select: Optional[list[str]] = None) -> list[dict]:
    """One pytest process on one ported file; the plugin's JSON records."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        env.update(TRITIUM_FORK_UNIT_TARGET=target, TRITIUM_FORK_UNIT_RESULTS=str(out),
                   TRITIUM_FORK_UNIT_TUTORIALS=str(cache / TUTORIALS_DIR), TRITON_CACHE_DIR=str(Path(tmp) / "cache"),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), str(PLUGIN_DIR),
                                                            env.get("PYTHONPATH")])))
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fork_unit_plugin",
                "--rootdir", str(cache / TESTS_DIR), "-o", "addopts=", "-W", "ignore",
                str(cache / TESTS_DIR / file)]
        if select:
            args += ["-k", " or ".join(select)]
        proc = subprocess.run(args, cwd=cache / TESTS_DIR, env=env, capture_output=True, text=True, timeout=timeout)
        records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        if not records:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            records = [{"test": file, "outcome": "collection error", "detail": " | ".join(tail)[-300:], "compiled": 0,
                        "launched": 0, "compile_errors": []}]
        return records


def classify(record: dict, interpret: bool) -> str:
    """``ok``, ``fail``, ``skipped`` or ``excluded`` for a rate (see the module's docstring)."""
    outcome = record["outcome"]
    if outcome in ("skipped", "excluded"):
        return outcome
    if outcome in ("passed", "xfailed"):
        return "ok"
    if interpret:
        return "fail"
    compiled = record["compiled"] or record["launched"]
    return "ok" if compiled and not record["compile_errors"] else "fail"


def summarize(results: dict) -> dict:
    """Per mode and file: how many tests are ok, fail, skipped and excluded."""
    return {mode: {file: dict(Counter(r["counts"] for r in records)) for file, records in files.items()}
            for mode, files in results.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["extract", "run", "report"])
    parser.add_argument("--write", action="store_true", help="store the results and regenerate the doc")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--files", nargs="*")
    parser.add_argument("--modes", nargs="*", help="a subset of: " + ", ".join(m for m, _, _ in MODES))
    args = parser.parse_args(argv)
    cache, why = find_tests()
    if cache is None:
        print(why, file=sys.stderr)
        return 1
    if args.command == "extract":
        print(f"the fork's unit tests at {COMMIT[:12]}, ported, in {cache}")
        return 0
    if args.command == "report":  # the last run's results again (with --write: stored, and the doc regenerated)
        data = json.loads((cache / "results.json").read_text())
        for mode, by_file in data["results"].items():
            for file, records in by_file.items():
                print(f"{mode:15} {file:40} {dict(Counter(r['counts'] for r in records))}")
        return _write(data) if args.write else 0
    files = args.files or sorted(p.name for p in (cache / TESTS_DIR).glob("test_tlx_*.py"))
    modes = [m for m in MODES if not args.modes or m[0] in args.modes]
    from concurrent.futures import ThreadPoolExecutor, as_completed
    # the longest files first, so that two workers finish together
    jobs = sorted(((mode, file) for mode in modes for file in files),
                  key=lambda job: -(cache / TESTS_DIR / job[1]).stat().st_size)
    results: dict = defaultdict(dict)
    if args.files and (cache / "results.json").exists():  # a re-run of some files: the others' results stay
        for name, by_file in json.loads((cache / "results.json").read_text())["results"].items():
            results[name].update(by_file)
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_file, cache, file, mode[1], mode[2]): (mode, file) for mode, file in jobs}
        for future in as_completed(futures):
            (name, _, interpret), file = futures[future]
            results[name][file] = future.result()
            for record in results[name][file]:
                record["counts"] = classify(record, interpret)
            partial = cache / "runs" / name.replace(" ", "-") / (file + ".json")
            partial.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(results[name][file], indent=1))
            counts = Counter(r["counts"] for r in results[name][file])
            print(f"{name:15} {file:40} {dict(counts)}", flush=True)
    results = {name: dict(sorted(results[name].items())) for name, _, _ in MODES if name in results}
    data = {"commit": COMMIT, "date": datetime.date.today().isoformat(), "table": summarize(results),
            "results": results}
    (cache / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return _write(data) if args.write else 0


def _failure(record: dict) -> str:
    """A failing test's error in one line: the compile error's message (Triton puts the kernel's source
    first), else the first line of pytest's."""
    errors = record["compile_errors"]
    lines = (errors[0] if errors else record["detail"]).strip().splitlines() or [record["outcome"]]
    return (lines[-1] if errors else lines[0])[:160]


def _stored(record: dict) -> dict:
    """What the doc needs of a record: the test, how it counts, and why it failed or was excluded."""
    out = {"test": record["test"].split("::", 1)[-1], "counts": record["counts"]}
    if record["counts"] == "fail":
        out["error"] = _failure(record)
    elif record["counts"] == "excluded":
        out["reason"] = record["detail"].split(fork_unit_plugin.EXCLUDED, 1)[-1]
    return out


def _write(data: dict) -> int:
    """Store the results in tests/data (the doc's part of them) and regenerate docs/tlx-coverage.md."""
    stored = {"commit": data["commit"], "date": data["date"], "table": summarize(data["results"]),
              "results": {mode: {file: [_stored(r) for r in records] for file, records in by_file.items()}
                          for mode, by_file in data["results"].items()}}
    RESULTS.write_text(json.dumps(stored, indent=0, sort_keys=True) + "\n")
    subprocess.run([sys.executable, str(REPO / "scripts" / "tlx_coverage.py"), "--write"], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
