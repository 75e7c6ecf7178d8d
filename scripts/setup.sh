#!/usr/bin/env bash
# Create .venv (once) and install tritium with its test and benchmark extras.
# torch is pinned to the CPU build: an unpinned torch would pull several GB of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The main environment is the oldest supported Triton; numpy<2.4 because Triton 3.6's interpreter breaks with 2.4.
.venv/bin/python -m pip install -q "torch==2.13.0" "triton==3.6.0" "numpy<2.4"
.venv/bin/python -m pip install -q -e ".[test,bench]"
