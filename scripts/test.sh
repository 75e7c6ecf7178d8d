#!/usr/bin/env bash
# The test command: the whole suite on triton 3.6.0 (.venv, scripts/setup.sh), the codegen comparison
# with uTLX on triton 3.8.0 (scripts/ci_codegen_parity.sh), then each supported Triton in a fresh venv
# with a plain `pip install .` (scripts/ci_triton.sh): on 3.6.0 the tests of what that install changes
# (the suite itself ran on 3.6.0 just before), the compile-only suite on 3.7.0 and 3.8.0, everything but
# GPU tests on 3.9.0. GPU tests skip themselves without a GPU. The TLX fork's tutorials are fetched once
# into .fork-cache/ for the conformance tests (a 250 MB wheel; skipped when cached). pytest runs two
# workers (pytest-xdist, a test file per worker at a time): compiling is single-threaded, CI has 2 cores.
# The venvs of the later stages are made while the first suite runs (log: .venv-prepare.log).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/fetch_fork_tlx.sh
# The other venvs install while the 3.6 suite runs: pip waits mostly on the disk and the network, so this
# takes minutes off the whole run; the stages below find them ready.
( bash scripts/ci_codegen_parity.sh --prepare
  for version in 3.6.0 3.7.0 3.8.0 3.9.0; do bash scripts/ci_triton.sh "$version" --prepare; done
) > .venv-prepare.log 2>&1 &
prepare=$!
trap 'kill "$prepare" 2>/dev/null || true' EXIT
.venv/bin/python -m pytest -q -n 2 --dist loadfile
wait "$prepare" || { echo "preparing the venvs failed:"; tail -30 .venv-prepare.log; exit 1; }
bash scripts/ci_codegen_parity.sh
bash scripts/ci_triton.sh 3.6.0 --installed
for version in 3.7.0 3.8.0; do
  bash scripts/ci_triton.sh "$version" --compile-only
done
bash scripts/ci_triton.sh 3.9.0
