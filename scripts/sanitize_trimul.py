"""Small TriMul calls, for compute-sanitizer (memcheck, racecheck) on the GPU machine.

Usage: python scripts/sanitize_trimul.py [fused|separate]   (default: fused)

N = 48 (rows of the 128-row blocks cross batches' ends: 2 x 48 x 48 rows), C = 128 and 384, masked, both
directions, on the projection path named (``tritium.knobs.ops.trimul_fused_centering``), each output checked
against the fp32 reference. Prints one line per call.
"""
import sys

import torch

import tritium
from tritium.kernels.trimul_reference import HIDDEN, Case, check_close, make_inputs, reference_model
from tritium.ops import TriMul

tritium.knobs.ops.trimul_fused_centering = (sys.argv[1:] or ["fused"])[0] == "fused"
for dim in (128, 384):
    for direction in ("outgoing", "incoming"):
        case = Case(seqlen=48, bs=2, dim=dim, nomask=False, distribution="normal")
        weights = reference_model(case, 0, "cuda")
        ref = type(weights)(dim, HIDDEN, direction).cuda()
        ref.load_state_dict(weights.state_dict())
        mod = TriMul(dim, HIDDEN, direction).cuda()
        mod.load_state_dict(ref.state_dict())
        x, mask = make_inputs(case, 0, "cuda")
        with torch.no_grad():
            problem = check_close(mod(x, mask), ref(x, mask))
        torch.cuda.synchronize()
        print(f"C={dim} {direction}: {'ok' if problem is None else problem}", flush=True)
