#!/usr/bin/env bash
# The test command: the whole suite on the pinned triton 3.6.0, the codegen comparison with uTLX on
# triton 3.8.0 (scripts/ci_codegen_parity.sh), then the compile-only suite on a newer Triton
# (scripts/ci_newer_triton.sh). GPU tests skip themselves without a GPU. The TLX fork's tutorials
# are fetched once into .fork-cache/ for the conformance tests (a 250 MB wheel; skipped when cached).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/fetch_fork_tlx.sh
.venv/bin/python -m pytest -q
bash scripts/ci_codegen_parity.sh
bash scripts/ci_newer_triton.sh
