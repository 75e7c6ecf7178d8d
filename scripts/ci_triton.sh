#!/usr/bin/env bash
# CI, second Triton: the compile-only suite on triton 3.9.0 in its own venv (.venv-triton-new), next
# to the 3.6.0 that pyproject pins.  The project goes in with --no-deps: its triton==3.6.0 pin would
# otherwise replace 3.9.0.  torch is pinned like scripts/setup.sh does (CPU build, no CUDA wheels).
# Everything but tests/gpu (needs a GPU) runs, TLX included (tests/tlx, tests/test_demo.py): the
# Triton-version differences TLX meets live in src/tritium/compat.py.  Not run yet: the TLX-vs-Gluon
# equivalence test (tests/tlx/test_gluon_equivalence.py), written against 3.6's Gluon API and 3.6's
# TTGIR, not ported to 3.9; and the fork-tutorial conformance (tests/tlx/test_fork_conformance.py),
# whose expected failures are recorded for 3.6 and which takes minutes of compiling.  About 1.5
# minutes on 2 cores once the venv exists.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv-triton-new
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "torch==2.13.0" "triton==3.9.0" "numpy<2.4" pytest
"$VENV/bin/python" -m pip install -q -e . --no-deps
"$VENV/bin/python" -c 'import triton, sys; sys.exit(triton.__version__ != "3.9.0" and f"triton {triton.__version__}, expected 3.9.0")'
"$VENV/bin/python" -m pytest -q tests --ignore=tests/gpu --ignore=tests/tlx/test_gluon_equivalence.py \
  --ignore=tests/tlx/test_fork_conformance.py "$@"
