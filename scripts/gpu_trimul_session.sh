#!/usr/bin/env bash
# One GPU call for TriMul work (issue 22): A/B of the ranked cases against a baseline tree, the GPU tests,
# the output kernel's variant sweep, ncu of the output kernel and memcheck of the new paths.
# Usage (device tool): bash scripts/gpu_trimul_session.sh BASELINE_TREE [steps...]; steps: ab tests sweep ncu
# memcheck bench (default: all). Writes logs under $OUT.
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-results}
BASE=${1:-.ab/base}
shift || true
STEPS=${*:-ab tests sweep ncu memcheck bench}
mkdir -p "$OUT"
nvidia-smi -L
for step in $STEPS; do
  echo "== $step $(date +%T)"
  case $step in
    ab) timeout 300 python3 scripts/gpu_trimul_ab.py --out "$OUT/ab.json" "$BASE" . 2>&1 | tee "$OUT/ab.txt" | grep -v "^  " ;;
    tests) timeout 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_trimul_gpu.py 2>&1 | tail -15 ;;
    sweep) timeout 200 python3 scripts/gpu_trimul_out_sweep.py --out "$OUT/out_sweep.json" 2>&1 | tail -40 ;;
    ncu) timeout 150 ncu --clock-control none -k regex:trimul_out -c 1 --section SpeedOfLight --section Occupancy \
           --section WarpStateStats --section MemoryWorkloadAnalysis python3 scripts/gpu_trimul_out_sweep.py \
           --out /tmp/ncu_sweep.json --cases 1024x1x384 > "$OUT/ncu_out.txt" 2>&1
         grep -E "Throughput|Stall|Warp Cycles|Occupancy|Duration|Issued" "$OUT/ncu_out.txt" | head -40 ;;
    memcheck) timeout 150 compute-sanitizer --tool memcheck --print-limit 10 python3 -c "
import torch
from tritium.ops import TriMul
from tritium.kernels.trimul_reference import Case, make_inputs
for d in ('incoming', 'outgoing'):
    for case in (Case(64, 2, 128, False, 'normal'), Case(48, 1, 64, True, 'cauchy')):
        m = TriMul(case.dim, direction=d).cuda()
        with torch.no_grad():
            for i in range(3):
                x, mask = make_inputs(case, i, 'cuda'); m(x, mask)
torch.cuda.synchronize(); print('memcheck run done')
" 2>&1 | tail -6 ;;
    bench) timeout 300 python3 -m tritium.cli bench trimul --only fast --out "$OUT" 2>&1 | grep -v "it/s\]$" | tail -30 ;;
  esac
done
echo "== done $(date +%T)"
