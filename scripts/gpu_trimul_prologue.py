"""The weight pack inside a small call's graph (``TriMul``'s default) against the pack launched on its own before
the call, in one process, alternating: mean ms per call as the task times it (fresh inputs, CUDA events) and the
median host time, on the three graph-replayed ranked cases. Usage: ``python scripts/gpu_trimul_prologue.py``."""
from __future__ import annotations

import torch

from tritium.bench.trimul import host_us, time_calls
from tritium.kernels.trimul_reference import RANKED_CASES, check_close, make_inputs, reference_model
from tritium.ops import TriMul
from tritium.ops.trimul import trimul


def eager_pack(module: TriMul):
    """``module``'s call with the pack launched before the op (the tree before the tenth session)."""
    def call(x, mask):
        proj_t, terms, out_t = module.packed_weights()
        return trimul(x, mask, proj_t, terms, module.to_out_norm.weight, module.to_out_norm.bias, out_t,
                      module.norm.eps, module.to_out_norm.eps, module.direction)
    return call


for case in RANKED_CASES[:4]:
    if case.bs * case.seqlen ** 2 > 1 << 18:
        continue
    ref = reference_model(case, 5, "cuda")
    mod = TriMul(case.dim).cuda()
    mod.load_state_dict(ref.state_dict())
    with torch.no_grad():
        x, mask = make_inputs(case, 6, "cuda")
        for fn in (mod, eager_pack(mod)):
            assert check_close(fn(x, mask), ref(x, mask)) is None
        for mode in ("graph", "eager", "graph", "eager"):
            fn = mod if mode == "graph" else eager_pack(mod)
            times = time_calls(fn, case, 7)
            ms = sum(times) / len(times)
            print(f"{case.label}: pack {mode}: {ms:.4f} ms per call, host {host_us(fn, case, 8):.1f} us", flush=True)
