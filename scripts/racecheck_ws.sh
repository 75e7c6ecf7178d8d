#!/usr/bin/env bash
# compute-sanitizer racecheck on the minimal warp-specialized kernels (scripts/sanitize_ws_minimal.py)
# and on the WS GEMM (scripts/sanitize_gemm.py): one summary line each, the GEMM's hazard list in full.
# Expected: the kernels whose default partition has a barrier, and the GEMM, report RAW hazards on
# warp_specialize's state bytes; that is a racecheck false positive (docs/tlx-design.md,
# scripts/racecheck_bar0.py).
# Usage (device tool): bash scripts/racecheck_ws.sh [minimal kernels...]   (logs under $OUT)
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-results}
mkdir -p "$OUT"
compute-sanitizer --version | tail -1
kernels=${*:-tlx_bar4 tlx_arrive tlx_smem_worker gluon_arrive gluon_smem_worker}
for k in $kernels; do
  echo "### $k" >> "$OUT/racecheck_minimal.txt"
  compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100 \
    python3 scripts/sanitize_ws_minimal.py "$k" >> "$OUT/racecheck_minimal.txt" 2>&1
  echo "racecheck $k: exit $? | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_minimal.txt" | tail -1)"
done
for ws in ws; do
  compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100 \
    python3 scripts/sanitize_gemm.py $ws 1 > "$OUT/racecheck_gemm_$ws.txt" 2>&1
  echo "racecheck gemm $ws (1 program): exit $? | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_gemm_$ws.txt" | tail -1)"
done
