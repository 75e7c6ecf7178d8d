#!/usr/bin/env bash
# One GPU call for a TriMul kernel change (issue 22): a smoke call under a time limit (a hang costs only it),
# the ranked cases' A/B of this tree against the trees given (each in its own process; --extra cases after
# them), the GPU tests and memcheck of both projection paths. Usage (device tool):
# bash scripts/gpu_trimul_call.sh TREE [TREE ...]; logs under $OUT.
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-results}
mkdir -p "$OUT"
nvidia-smi -L
echo "== smoke $(date +%T)"
timeout 120 python3 -c "
import torch
from tritium.ops import TriMul
from tritium.kernels.trimul_reference import RANKED_CASES, check_close, make_inputs, reference_model
problems = 0
for case in (RANKED_CASES[0], RANKED_CASES[2]):
    ref = reference_model(case, 1, 'cuda'); m = TriMul(case.dim).cuda(); m.load_state_dict(ref.state_dict())
    with torch.no_grad():
        x, mask = make_inputs(case, 2, 'cuda'); problem = check_close(m(x, mask), ref(x, mask))
    print(case.label, problem or 'ok', flush=True)
    problems += problem is not None
raise SystemExit(problems)
" || { echo "smoke failed (a hang, an error or a wrong result): stop"; exit 1; }
echo "== ab $(date +%T)"
timeout 330 python3 scripts/gpu_trimul_ab.py --out "$OUT/ab.json" . "$@" --extra 256:1:448 512:1:768 2>&1 | grep -v "^  "
echo "== tests $(date +%T)"
timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_trimul_gpu.py 2>&1 | tail -4
for path in fused separate; do
  echo "== memcheck $path $(date +%T)"
  timeout 90 compute-sanitizer --tool memcheck --print-limit 10 python3 scripts/sanitize_trimul.py $path 2>&1 | tail -6
done
echo "== done $(date +%T)"
