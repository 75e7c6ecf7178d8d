#!/usr/bin/env bash
# Everything the GPU machine checks in one call: GPU tests, compute-sanitizer, benchmarks.
# Usage (device tool): bash scripts/gpu_session.sh   (writes logs and plots under $OUT)
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-results}
mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 -m pytest tests/gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.txt" | tail -5
for kernel in pipelined small ws coop pingpong splitk fp8 fp8-rows streamk; do
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --print-limit 20 python3 scripts/sanitize_gemm.py $kernel \
      > "$OUT/sanitizer_${kernel}_$tool.txt" 2>&1
    echo "compute-sanitizer $tool ($kernel): exit $?"; tail -3 "$OUT/sanitizer_${kernel}_$tool.txt"
  done
done
python3 -m tritium.cli bench gemm --out "$OUT" 2>&1 | tee "$OUT/bench_gemm.txt"
python3 -m tritium.cli bench overhead --only launch --out "$OUT" 2>&1 | tee "$OUT/bench_overhead.txt"
