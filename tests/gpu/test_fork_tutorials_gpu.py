"""The TLX fork's own Hopper tutorials, ported by their import, run on the GPU against torch.

Same harness as tests/tlx/test_fork_conformance.py (tests/tlx/fork_conformance.py), in its ``gpu``
mode: Triton's real driver, CUDA tensors, each autotuner keeping its first eligible config. Cases
that fail to compile on the CPU today (KNOWN_FAILURES, compile) are expected to fail here too.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TLX_TESTS = Path(__file__).resolve().parents[1] / "tlx"
sys.path.insert(0, str(TLX_TESTS))
import fork_conformance as fc  # noqa: E402

pytestmark = pytest.mark.gpu
TUTORIALS, WHY = fc.find_tutorials()
HOPPER = [c for c in fc.CASES if c.target == fc.SM90]


@pytest.fixture(scope="module")
def results():
    if TUTORIALS is None:
        pytest.skip(WHY)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(fc.REPO / "src"), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(TLX_TESTS / "fork_conformance.py"), "gpu", *(c.name for c in HOPPER)],
                          cwd=fc.REPO, env=env, capture_output=True, text=True, timeout=3000)
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            out[r["case"]] = r
    return out, proc.stderr[-3000:]


@pytest.mark.parametrize("name", [
    pytest.param(c.name, marks=[pytest.mark.xfail(reason=fc.KNOWN_FAILURES[(c.name, "compile")], strict=True)]
                 if (c.name, "compile") in fc.KNOWN_FAILURES else []) for c in HOPPER])
def test_fork_tutorial_matches_torch_on_the_gpu(results, name):
    got, log = results
    r = got.get(name)
    assert r is not None, f"{name}: no result; stderr tail:\n{log}"
    assert r["status"] == "pass", f"{name}: {r.get('error')}\n{r.get('traceback', '')}"
