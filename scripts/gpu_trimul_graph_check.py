"""Whether TriMul's CUDA graphs engage in a task-style loop, and what they save: per call host time and event
time on N256 B2 C128, with graphs and with them switched off (``Plan.graphs = None``) in one process, and the
graph cache's state. Usage: ``python scripts/gpu_trimul_graph_check.py``."""
from __future__ import annotations

import statistics
import time

import torch

from tritium.ops import TriMul
from tritium.kernels import trimul as K
from tritium.kernels.trimul_reference import RANKED_CASES, make_inputs, reference_model


def loop(fused, case, graphs: bool, calls: int = 60) -> tuple[float, float]:
    for plan in K._plans.values():
        plan.graphs = K._graphs if graphs else None
    host, events = [], []
    with torch.no_grad():
        for i in range(calls):
            x, mask = make_inputs(case, 500 + i, "cuda")
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            fused(x, mask)
            host.append(time.perf_counter() - t0)
            end.record()
            torch.cuda.synchronize()
            events.append(start.elapsed_time(end))
            del x, mask
    return statistics.median(host[10:]) * 1e6, statistics.mean(events[10:])


for case in RANKED_CASES[:4]:
    ref = reference_model(case, 1, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    for graphs in (True, False, True):
        h, e = loop(fused, case, graphs)
        print(f"{case.label} graphs={graphs}: host {h:.1f} us, event {e * 1000:.1f} us; graphs held "
              f"{len(K._graphs.graphs)}, keys seen once {len(K._graphs.seen)}, "
              f"ready {[p.ready() for p in K._plans.values()]}", flush=True)
