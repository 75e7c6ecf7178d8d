"""Runs the interpreter tests in a process started with TRITON_INTERPRET=1 (see interp_shim)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interp_shim import interpret_mode
from tritium.tlx import interpreter


def test_interpreter_suite_in_own_process():
    if interpret_mode():
        pytest.skip("this process is interpreted: the interpreter test modules run directly")
    here = Path(__file__).resolve().parent
    files = sorted(str(p) for p in here.glob("test_interpreter_*.py") if p.name != Path(__file__).name)
    src = str(Path(interpreter.__file__).resolve().parents[2])
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                          cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
