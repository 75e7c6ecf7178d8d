"""The TLX fork's own tutorial kernels, with only their TLX import changed, on tritium (issue 8).

fork_conformance.py finds the tutorials (fbtriton wheel, see scripts/fetch_fork_tlx.sh), loads each
with ``import tritium.tlx as tlx`` and runs its host code: compiled for its target here, and under
the interpreter (against torch) in a process started with TRITON_INTERPRET=1. Every case is expected
to pass unless fork_conformance.KNOWN_FAILURES lists it with its reason; those are strict xfails, so
a fix shows up as an unexpected pass to be removed from that list.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fork_conformance as fc

TUTORIALS, WHY = fc.find_tutorials()
pytestmark = pytest.mark.skipif(TUTORIALS is None, reason=WHY)
HERE = Path(__file__).resolve().parent


def _run_harness(mode: str) -> tuple[dict, str]:
    """Run every case of ``mode`` in fresh processes, one per core (compiling is CPU-bound)."""
    env = dict(os.environ)
    if mode == "interpret":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    src = str(fc.REPO / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    names = [c.name for c in fc.CASES if mode == "compile" or c.interpret]
    jobs = max(1, min(4, os.cpu_count() or 1, len(names)))
    with tempfile.TemporaryDirectory() as tmp:
        outs = [(Path(tmp) / f"{i}.out", Path(tmp) / f"{i}.err") for i in range(jobs)]
        procs = []
        for i, (out, err) in enumerate(outs):
            with open(out, "w") as o, open(err, "w") as e:  # files, not pipes: no process stalls on a full pipe
                procs.append(subprocess.Popen([sys.executable, str(HERE / "fork_conformance.py"), mode,
                                               *names[i::jobs]], cwd=fc.REPO, env=env, stdout=o, stderr=e))
        results, logs = {}, []
        for proc, (out, err) in zip(procs, outs):
            proc.wait(timeout=1800)
            logs.append(f"exit code {proc.returncode}; stderr tail:\n{err.read_text()[-2000:]}")
            for line in out.read_text().splitlines():
                if line.startswith("{"):
                    r = json.loads(line)
                    if "case" in r:
                        results[r["case"]] = r
    return results, "\n".join(logs)


@pytest.fixture(scope="module")
def harness():
    cache: dict = {}

    def get(mode: str) -> tuple[dict, str]:
        if mode not in cache:
            cache[mode] = _run_harness(mode)
        return cache[mode]

    return get


def _params(mode: str) -> list:
    out = []
    for case in fc.CASES:
        if mode == "interpret" and not case.interpret:
            continue
        reason = fc.KNOWN_FAILURES.get((case.name, mode))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        out.append(pytest.param(case.name, id=case.name, marks=marks))
    return out


def _check(harness, mode: str, name: str) -> None:
    results, log = harness(mode)
    r = results.get(name)
    assert r is not None, f"{name}: the harness gave no result ({log})"
    if r["status"] == "unavailable":
        pytest.skip(r["error"])
    assert r["status"] == "pass", f"{name} ({r['target']}, {mode}): {r.get('error')}\n{r.get('traceback', '')}"


@pytest.mark.parametrize("name", _params("compile"))
def test_tutorial_compiles_for_its_target(harness, name):
    _check(harness, "compile", name)


@pytest.mark.parametrize("name", _params("interpret"))
def test_tutorial_matches_torch_under_the_interpreter(harness, name):
    _check(harness, "interpret", name)


def test_known_failures_name_real_cases():
    modes = {"compile", "interpret"}
    for name, mode in fc.KNOWN_FAILURES:
        assert name in fc.BY_NAME and mode in modes, (name, mode)


def test_port_changes_only_the_tlx_import():
    text = ("import triton.language.extra.tlx as tlx\nfrom triton.language.extra.tlx.warp_spec import f\n"
            "x = 'triton.language.extra.tlx'\n")
    assert fc.port_source(text) == ("import tritium.tlx as tlx\nfrom tritium.tlx.warp_spec import f\n"
                                    "x = 'triton.language.extra.tlx'\n")
