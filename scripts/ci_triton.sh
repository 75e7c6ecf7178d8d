#!/usr/bin/env bash
# CI, one more Triton: `bash scripts/ci_triton.sh VERSION [--compile-only|--installed] [pytest args...]`.
# A fresh venv (.venv-triton-VERSION) holding triton==VERSION, the CPU torch 2.13.0 and pytest gets
# tritium by a plain `pip install .` (no --no-deps, not editable), as a user's environment would: pip
# must accept the Triton already there (pyproject: triton>=3.6,<3.10), the installed package (entry
# points, bundled example plugins) is what the tests import, and the Triton must still be VERSION after.
# torch: the builds that pin a Triton are PyPI's CUDA wheels (torch 2.10 and 2.11 pin triton==3.6.0, 2.12
# 3.7.0, 2.13 3.7.1, 2.14 ~=3.8.0), which pull several GB of nvidia-* wheels; CPU builds declare no triton
# dependency, and the one CI can fetch (download.pytorch.org is out of reach) is 2.13.0+cpu, so each
# Triton is paired with that (tritium uses torch's Python API only). Triton 3.6 also gets numpy<2.4: its
# interpreter breaks with numpy 2.4 (README).
# Then the suite runs without tests/gpu (needs a GPU), the TLX-vs-Gluon equivalence test (written
# against 3.6's Gluon API and TTGIR) and the fork-tutorial conformance (its expected failures are
# recorded for 3.6; minutes of compiling). --compile-only also leaves out the interpreter modules
# (tests/tlx/test_interpreter_*.py, tests/test_demo.py): the interpreter is Triton's Python code, and
# CI time on 2 cores is short, so 3.7 and 3.8 check compilation, 3.9 everything. --installed runs only
# the tests of what a plain install changes against the editable .venv (entry points, the bundled plugins,
# the command, the docs as a user runs them): for 3.6, whose whole suite runs in .venv (scripts/test.sh).
# pytest runs two workers (pytest-xdist). Extra arguments go to pytest. --prepare only makes the venv and
# installs its requirements (scripts/test.sh does that for every version while the 3.6 suite runs); a later
# run finds them installed and only checks them.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:?usage: ci_triton.sh VERSION [--prepare|--compile-only|--installed] [pytest args...]}
shift
tests=(tests)
ignore=(--ignore=tests/gpu --ignore=tests/tlx/test_gluon_equivalence.py --ignore=tests/tlx/test_fork_conformance.py)
if [ "${1:-}" = --compile-only ]; then
  shift
  # and what does not depend on Triton's version: the benchmark report on made-up timings, and the Inductor
  # pass (its end-to-end test runs the interpreter)
  ignore+=(--ignore-glob='tests/tlx/test_interpreter_*.py' --ignore=tests/test_demo.py
           --ignore=tests/test_bench_gemm.py --ignore=tests/test_inductor_kernels.py)
elif [ "${1:-}" = --installed ]; then
  shift
  tests=(tests/test_packaging.py tests/test_plugins_loading.py tests/test_cli.py tests/test_docs.py)
fi
PY=${PYTHON:-python3}
VENV=.venv-triton-$VERSION
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
pins=(); case $VERSION in 3.6.*) pins=("numpy<2.4");; esac
# tritium's own requirements but Triton (pyproject.toml), installed first: --prepare stops there, since
# `pip install .` builds in the source tree (its egg-info), where the 3.6 suite may be running.
deps=$("$PY" -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']
print(' '.join(d for d in p['dependencies'] + p['optional-dependencies']['bench'] if not d.startswith('triton')))")
"$VENV/bin/python" -m pip install -q "torch==2.13.0" "triton==$VERSION" pytest pytest-xdist $deps \
  ${pins[@]+"${pins[@]}"}
[ "${1:-}" = --prepare ] && exit 0
"$VENV/bin/python" -m pip install -q ".[bench]"  # the bench extra: tests/test_bench_gemm.py renders reports
"$VENV/bin/python" -c "import sys, triton; v = triton.__version__
sys.exit(v != '$VERSION' and f'pip install . replaced triton $VERSION with {v}')"
# From the tests folder's parent but with the installed tritium: src/ is not on the path.
"$VENV/bin/python" -m pytest -q -n 2 --dist loadfile "${tests[@]}" -p no:cacheprovider "${ignore[@]}" "$@"
