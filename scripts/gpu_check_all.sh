#!/usr/bin/env bash
# The whole GPU suite, twice in a row on one machine (six pytest processes side by side per round, each
# under a timeout), then the benchmarks named as arguments (trimul, inductor, ...: `tritium bench NAME`).
# Usage (device tool, carry .fork-cache/fbtriton-3.7.4 for the fork's tutorials):
#   [GROUP_TIMEOUT=S] bash scripts/gpu_check_all.sh [ROUNDS] [BENCH...]   (S: seconds per group, default 230)
# Logs under $OUT; a one-line summary per group and round.
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-results}
ROUNDS=${1:-2}
shift || true
mkdir -p "$OUT"
nvidia-smi -L
GROUPS_=("test_ops_matmul_gpu.py test_ops_scaled_matmul_gpu.py"
         "test_tlx_attention_gpu.py"
         "test_ops_attention_bwd_gpu.py test_ops_attention_launch_gpu.py"
         "test_tlx_gemm_ws_persistent_gpu.py test_tlx_gemm_gpu.py test_tlx_gemm_ws_gpu.py test_plugin_options_gpu.py"
         "test_trimul_gpu.py test_inductor_pipeline_gpu.py test_inductor_kernels_gpu.py test_instrumentation_gpu.py"
         "test_tlx_sync_gpu.py test_tlx_tma_gpu.py test_tlx_async_copy_gpu.py test_tlx_tasks_gpu.py test_tlx_mem_gpu.py test_fork_tutorials_gpu.py")
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round $(date +%T)"
  pids=()
  for i in "${!GROUPS_[@]}"; do
    files=""
    for f in ${GROUPS_[$i]}; do [ -f "tests/gpu/$f" ] && files="$files tests/gpu/$f"; done
    timeout "${GROUP_TIMEOUT:-230}" python3 -m pytest -q -p no:cacheprovider $files > "$OUT/r${round}_g$i.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; rc=$?
    echo "round $round group $i (${GROUPS_[$i]}): exit $rc: $(tail -1 "$OUT/r${round}_g$i.txt")"
  done
done
for bench in "$@"; do
  echo "== bench $bench $(date +%T)"
  timeout 150 python3 -m tritium.cli bench $bench --out "$OUT" 2>&1 | grep -v "it/s\]$\|s/it\]$" | tail -25
done
echo "== done $(date +%T)"
