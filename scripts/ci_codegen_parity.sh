#!/usr/bin/env bash
# CI, codegen parity (issue 13): the same TLX kernels compiled by uTLX (the C++ plugin, triton-utlx)
# and by tritium, both on stock triton 3.8.0, each in its own venv; compare TTGIR and PTX/AMDGCN and
# check docs/codegen-parity.md is what this run generates (scripts/codegen_parity/compare.py says which
# differences are allowed). The fork's tutorials come from the fbtriton wheel (scripts/fetch_fork_tlx.sh),
# the newer ones from a git copy of the fork ($TRITIUM_FORK_GIT, codegen_parity/kernels.py's FORK_GIT); without
# one (CI) those are skipped and the report keeps their section from the last run that had one.
# tritium runs from the source tree (PYTHONPATH=src): its package pins the Triton it is tested on.
# Pass --write to regenerate the report instead of checking it, --prepare to only make the two venvs. A few
# minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PINS=("torch==2.13.0" "triton==3.8.0" "numpy<2.4" pytest)
for side in utlx tritium; do
  venv=.venv-parity-$side
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
  extra=(); [ "$side" = utlx ] && extra=("triton-utlx==3.8.0.post16")
  "$venv/bin/python" -m pip install -q "${PINS[@]}" "${extra[@]}"
done
[ "${1:-}" = --prepare ] && exit 0
bash scripts/fetch_fork_tlx.sh
TUTORIALS=.fork-cache/fbtriton-3.7.4/triton/language/extra/tlx/tutorials
tutorials=(); [ -d "$TUTORIALS" ] && tutorials=(--tutorials "$TUTORIALS")
rm -rf .parity && mkdir -p .parity
for side in utlx tritium; do
  PYTHONPATH=src:scripts ".venv-parity-$side/bin/python" -m codegen_parity.dump --impl $side --out .parity/$side \
    "${tutorials[@]}" > .parity/$side.log 2>&1 || { tail -20 .parity/$side.log; exit 1; }
done
check=--check; [ "${1:-}" = --write ] && check=
PYTHONPATH=scripts "$PY" -m codegen_parity.compare --utlx .parity/utlx --tritium .parity/tritium \
  --out docs/codegen-parity.md $check
