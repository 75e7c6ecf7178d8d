#!/usr/bin/env bash
# The test command: the whole suite on the pinned triton 3.6.0, then the compile-only suite on a
# newer Triton (scripts/ci_newer_triton.sh). GPU tests skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q
bash scripts/ci_newer_triton.sh
