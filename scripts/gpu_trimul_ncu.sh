#!/usr/bin/env bash
# Nsight Compute of one TriMul kernel (default: the projection) on the GPU machine, for each source tree given,
# at one case: the full section set, then the SASS source page (warp stall samples per instruction).
# Usage: KERNEL=trimul_proj CASE=1024:1:384 bash scripts/gpu_trimul_ncu.sh TREE [TREE ...]; writes under $OUT.
set -u
OUT=${OUT:-results}
KERNEL=${KERNEL:-trimul_proj}
CASE=${CASE:-1024:1:384}
mkdir -p "$OUT"
for tree in "$@"; do
  name=$(echo "$tree" | tr '/.' '__')_${CASE//:/x}
  PYTHONPATH=$tree/src timeout 240 ncu --clock-control none --set full --import-source no -k "regex:$KERNEL" -c 1 \
    -f -o "$OUT/$name" python3 -c "
import sys, torch
from tritium.ops import TriMul
from tritium.kernels.trimul_reference import Case, make_inputs
n, b, c = (int(v) for v in sys.argv[1].split(':'))
case = Case(n, b, c, True, 'normal')
m = TriMul(c).cuda()
with torch.no_grad():
    x, mask = make_inputs(case, 0, 'cuda')
    m(x, mask); torch.cuda.synchronize()
" "$CASE" > "$OUT/$name.log" 2>&1
  tail -3 "$OUT/$name.log"
  ncu --import "$OUT/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
  ncu --import "$OUT/$name.ncu-rep" --page source --print-source sass --csv > "$OUT/$name.sass.csv" 2>&1
  echo "== $tree $CASE"
  grep -E -e "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput" \
    -e "Registers Per|Issued Ipc|No Eligible|Warp Cycles Per Issued" "$OUT/$name.details.txt" | head -20
done
