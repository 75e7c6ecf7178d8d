"""Issue 19's GPU run in one command: FP8 numerics, FP8 timing with a sweep of the FP8 tiles, host cost per entry point.

Usage (Hopper GPU, repository root):
    PYTHONPATH=src python scripts/gpu_gemm19.py --out $OUT [--budget-s 480] [--rep-ms 60] [--shapes MxNxK,...]
        [--stream-k]

1. Numerics, on fresh random data: ``tritium.ops.scaled_matmul`` on ragged shapes with per-tensor and
   per-row/column scales, B column-major (read in place) and row-major (copied), bf16 and fp16 out, a
   second call of each (the direct launch), against the fp32 product of the dequantised inputs (relative
   Frobenius error at most 2e-2); then every plan of ``tritium.ops.plans.FP8_SWEEP`` on two ragged shapes.
   A plan that fails is reported and not timed.
2. Host cost of every entry point (:func:`tritium.bench.gemm.entry_point_wall_us`: wall clock per call at
   256^3 over 3000 calls synchronised at the end; :func:`tritium.bench.gemm.host_cost_us`: the host alone).
3. Per shape (the six seed shapes and 256^3..4096^3), per-tensor scales, B column-major:
   ``torch._scaled_mm`` (bf16 out), the op as shipped (eager and CUDA-graph replay of 20 calls) and every
   FP8_SWEEP plan (eager), each checked first on 64 sampled rows; interleaved rounds, the best
   ``do_bench`` median counts. With ``--stream-k``, first the bf16 stream-K candidate
   (:mod:`tritium.kernels.gemm_streamk_hopper`, launched as the op launches its kernels): checked on ragged
   shapes with both layouts of B against float64 (1e-2), then timed eager and in graph replay against
   cuBLAS and ``tritium.ops.matmul`` as shipped at 1024^3 and 2048^3.
4. Tables on stdout and in ``$OUT/gemm19.md``, everything in ``$OUT/gemm19.json`` (rewritten after every
   shape, so a run cut short keeps what it measured): TFLOPS, ratios to ``torch._scaled_mm``, the
   geometric mean over the seed shapes, and per FP8 shape class the plan with the best geometric mean
   (what ``tritium.ops.plans.FP8_PLANS`` should hold).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

import torch
from triton.testing import do_bench

from tritium.bench import gemm as bench
from tritium.ops import launch, plans, scaled_matmul

SEEDS = bench.SEED_SHAPES
SQUARES = bench.SQUARE_SHAPES
RAGGED = [(1, 1, 1), (300, 200, 16), (77, 5000, 3000), (1000, 1000, 1000), (4097, 4095, 513), (128, 13312, 2048)]
PLAN_CHECKS = [(1000, 1000, 1000), (4097, 4095, 513)]
TOL = 2e-2
SAMPLED_ROWS = 64
T0 = time.perf_counter()
#: Where the operands live: a smoke run of this script's logic on the CPU sets "cpu" (under TRITON_INTERPRET=1).
DEVICE = os.environ.get("TRITIUM_GEMM19_DEVICE", "cuda")


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def operands(M, N, K, vectors: bool, b_column_major: bool, seed: int):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    a = torch.randn(M, K, device=DEVICE, generator=gen).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=DEVICE, generator=gen).to(torch.float8_e4m3fn).t() if b_column_major
         else torch.randn(K, N, device=DEVICE, generator=gen).to(torch.float8_e4m3fn))
    if vectors:
        return a, b, torch.rand(M, 1, device=DEVICE, generator=gen) + 0.5, torch.rand(1, N, device=DEVICE,
                                                                                    generator=gen) + 0.5
    return a, b, torch.tensor(0.5, device=DEVICE), torch.tensor(2.0, device=DEVICE)


def rel_err(c, a, b, sa, sb, rows=None) -> float:
    """Against the fp64 product of the dequantised inputs, on ``rows`` of A (all without)."""
    if rows is not None:
        a, c = a[rows], c[rows]
        sa = sa[rows] if sa.numel() > 1 else sa
    ref = (a.double() @ b.double()) * sa.double() * sb.double()
    return ((c.double() - ref).norm() / ref.norm()).item()


def plan_call(plan, a, b, vectors: bool):
    """The FP8 kernel with a forced plan, as the op launches it: ``fn()`` -> C."""
    bt = b.t()
    call = launch.Call(plan, a, bt, torch.bfloat16, {"ROW_SCALES": vectors, "COL_SCALES": vectors})
    return call, bt


def check_numerics() -> tuple[list[dict], set[str]]:
    results, broken = [], set()
    for M, N, K in RAGGED:
        for vectors in (False, True):
            for col in (True, False):
                a, b, sa, sb = operands(M, N, K, vectors, col, M * 7 + N * 3 + K + vectors)
                for out_dtype in (torch.bfloat16, torch.float16, torch.bfloat16):
                    c = scaled_matmul(a, b, sa, sb, out_dtype=out_dtype)
                    err = rel_err(c, a, b, sa, sb)
                    ok = err <= TOL and c.dtype == out_dtype and c.shape == (M, N) and bool(torch.isfinite(c).all())
                    results.append({"what": "op", "shape": f"{M}x{N}x{K}", "vectors": vectors, "b_column_major": col,
                                    "out": str(out_dtype), "err": err, "ok": ok})
    for plan in plans.FP8_SWEEP:
        name = json.dumps(plan.to_json())
        for M, N, K in PLAN_CHECKS:
            for vectors in (False, True):
                a, b, sa, sb = operands(M, N, K, vectors, True, M + N + K)
                try:
                    call, bt = plan_call(plan, a, b, vectors)
                    errs = [rel_err(call(a, bt, sa, sb), a, b, sa, sb) for _ in range(2)]  # JIT, then direct
                    ok, err = max(errs) <= TOL, max(errs)
                except Exception as e:  # noqa: BLE001  (a plan that cannot run is reported, not timed)
                    ok, err = False, repr(e)
                results.append({"what": name, "shape": f"{M}x{N}x{K}", "vectors": vectors, "err": err, "ok": ok})
                if not ok:
                    broken.add(name)
    bad = [r for r in results if not r["ok"]]
    log(f"numerics: {len(results) - len(bad)}/{len(results)} ok" + "".join(f"\n  FAIL {r}" for r in bad))
    return results, broken


def time_shape(M, N, K, broken: set[str], rep_ms: int, rounds: int) -> dict:
    a, b, sa, sb = operands(M, N, K, False, True, M + 3 * N + 7 * K)
    rows = torch.randperm(M, device=DEVICE)[:SAMPLED_ROWS]
    impls = {bench.FP8_BASELINE: lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
             "tritium.ops.scaled_matmul": lambda: scaled_matmul(a, b, sa, sb)}
    for plan in plans.FP8_SWEEP:
        name = json.dumps(plan.to_json())
        if name not in broken:
            call, bt = plan_call(plan, a, b, False)
            impls[name] = lambda call=call, bt=bt: call(a, bt, sa, sb)
    checks = {}
    for name in list(impls):
        err = rel_err(impls[name](), a, b, sa, sb, rows)
        checks[name] = err
        if not err <= TOL:
            log(f"  {M}x{N}x{K} {name}: relative error {err:.2e}, not timed")
            del impls[name]
    flops = 2 * M * N * K
    eager = dict.fromkeys(impls, 0.0)
    for _ in range(rounds):
        for name, fn in impls.items():
            eager[name] = max(eager[name], flops / do_bench(fn, warmup=10, rep=rep_ms, return_mode="median") * 1e-9)
    graph = {n: flops / bench.graph_ms(impls[n], rep_ms) * 1e-9 for n in (bench.FP8_BASELINE, "tritium.ops.scaled_matmul")
             if n in impls}
    base = eager.get(bench.FP8_BASELINE, float("nan"))
    sweep = {n: t for n, t in eager.items() if n.startswith("[")}
    best = max(sweep, key=sweep.get) if sweep else None
    row = {"shape": f"{M}x{N}x{K}", "class": plans.fp8_shape_class(M, N, launch.sm_count(a.device)),
           "plan": plans.choose_fp8(M, N, K, launch.sm_count(a.device)).to_json(), "checks": checks,
           "eager_tflops": eager, "graph_tflops": graph,
           "op_eager_ratio": eager.get("tritium.ops.scaled_matmul", float("nan")) / base,
           "op_graph_ratio": graph.get("tritium.ops.scaled_matmul", float("nan")) / graph.get(bench.FP8_BASELINE,
                                                                                             float("nan")),
           "best_plan": json.loads(best) if best else None, "best_ratio": sweep[best] / base if best else float("nan")}
    log(f"{row['shape']}: _scaled_mm {base:.0f} TFLOPS, op {row['op_eager_ratio']:.3f}x eager "
        f"{row['op_graph_ratio']:.3f}x graph, best plan {row['best_ratio']:.3f}x {short(row['best_plan'])}")
    return row


def short(plan_json) -> str:
    """A sweep plan as ``BMxBNxBK sSTAGES eSLICES gGROUP``."""
    if plan_json is None:
        return "-"
    cfg = plan_json[1]
    return f"{cfg['BM']}x{cfg['BN']}x{cfg['BK']} s{cfg['NUM_STAGES']} e{cfg['EPILOGUE_SUBTILES']} g{cfg['GROUP_SIZE_M']}"


def geomean(values) -> float:
    values = [v for v in values if v == v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def best_per_class(rows: list[dict]) -> dict:
    """Per FP8 shape class: the sweep plan with the best geometric mean of ratios over the class's shapes."""
    out = {}
    for cls in sorted({r["class"] for r in rows}):
        mine = [r for r in rows if r["class"] == cls]
        names = {n for r in mine for n in r["eager_tflops"] if n.startswith("[")}
        score = {n: geomean(r["eager_tflops"].get(n, float("nan")) / r["eager_tflops"][bench.FP8_BASELINE]
                            for r in mine) for n in names}
        best = max(score, key=score.get) if score else None
        out[cls] = {"shapes": [r["shape"] for r in mine], "best_plan": json.loads(best) if best else None,
                    "best_geomean": score.get(best), "op_geomean": geomean(r["op_eager_ratio"] for r in mine)}
    return out


STREAMK_CHECKS = [(1, 1, 1), (300, 200, 1), (1000, 1000, 1000), (4097, 4095, 513), (77, 5000, 3000)]


def streamk_fn(a, b):
    """The stream-K candidate through a :class:`tritium.ops.launch.Call`, its workspace allocated per call."""
    from tritium.kernels import gemm_streamk_hopper as streamk
    plan = plans.Plan("streamk", streamk.DEFAULT)
    call = launch.Call(plan, a, b, a.dtype)
    return lambda: call(a, b, *streamk.workspace(call.grid[0], plan.config, a.device))


def streamk_rows(rep_ms: int) -> dict:
    """bf16: the stream-K candidate's numerics, then cuBLAS, the op as shipped and the candidate at 1024^3
    and 2048^3, eager and in graph replay (TFLOPS)."""
    from tritium.ops import matmul
    checks = []
    for M, N, K in STREAMK_CHECKS:
        for transposed in (False, True):
            gen = torch.Generator(device=DEVICE).manual_seed(M + N + K)
            a = torch.randn(M, K, device=DEVICE, dtype=torch.bfloat16, generator=gen)
            b = (torch.randn(N, K, device=DEVICE, dtype=torch.bfloat16, generator=gen).t() if transposed
                 else torch.randn(K, N, device=DEVICE, dtype=torch.bfloat16, generator=gen))
            ref = a.double() @ b.double()
            errs = [((c.double() - ref).norm() / ref.norm()).item() for c in (streamk_fn(a, b)() for _ in range(2))]
            checks.append({"shape": f"{M}x{N}x{K}", "b_transposed": transposed, "err": max(errs),
                           "ok": max(errs) < 1e-2})
    log("stream-K numerics: " + ", ".join(f"{c['shape']}{' B^T' if c['b_transposed'] else ''} {c['err']:.1e}"
                                          f"{'' if c['ok'] else ' FAIL'}" for c in checks))
    rows = []
    for n in (1024, 2048):
        a = torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16)
        impls = {"cuBLAS": lambda: torch.matmul(a, b), "tritium.ops.matmul": lambda: matmul(a, b),
                 "stream-K candidate": streamk_fn(a, b)}
        flops = 2 * n ** 3
        eager = dict.fromkeys(impls, 0.0)
        for _ in range(2):
            for k, f in impls.items():
                eager[k] = max(eager[k], flops / do_bench(f, warmup=10, rep=rep_ms, return_mode="median") * 1e-9)
        graph = {k: flops / bench.graph_ms(f, rep_ms) * 1e-9 for k, f in impls.items()}
        rows.append({"shape": f"{n}^3", "eager_tflops": eager, "graph_tflops": graph})
        log(f"stream-K {n}^3 bf16 (TFLOPS eager/graph): " + ", ".join(f"{k} {eager[k]:.0f}/{graph[k]:.0f}" for k in impls))
    return {"checks": checks, "shapes": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "results"))
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--rep-ms", type=int, default=60)
    parser.add_argument("--shapes", default="")
    parser.add_argument("--stream-k", action="store_true")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    shapes = ([tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")] if args.shapes
              else SEEDS + SQUARES)
    report = {"env": {"gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE, "torch": torch.__version__,
                      "triton": __import__("triton").__version__}, "tol": TOL}
    path = os.path.join(args.out, "gemm19.json")

    def save():
        with open(path, "w") as f:
            json.dump(report, f, indent=1)

    report["numerics"], broken = check_numerics()
    report["broken_plans"] = sorted(broken)
    save()
    report["entry_point_wall_us"] = bench.entry_point_wall_us()
    report["host_cost_us"] = bench.host_cost_us(256)  # the GPU kept busy: the host alone
    log("wall clock per call at 256^3 (us): " + ", ".join(f"{k} {v:.1f}" for k, v in report["entry_point_wall_us"].items()))
    save()
    if args.stream_k:
        report["stream_k"] = streamk_rows(args.rep_ms)
        save()
    rows, skipped = [], []
    for i, (M, N, K) in enumerate(shapes):
        left = args.budget_s - (time.perf_counter() - T0)
        if left < 10:
            skipped += [f"{m}x{n}x{k}" for m, n, k in shapes[i:]]
            break
        rows.append(time_shape(M, N, K, broken, args.rep_ms, 2 if left / (len(shapes) - i) > 25 else 1))
        report.update(shapes=rows, skipped=skipped, per_class=best_per_class(rows))
        save()
    report.update(shapes=rows, skipped=skipped, per_class=best_per_class(rows))
    seeds = [r for r in rows if tuple(map(int, r["shape"].split("x"))) in SEEDS]
    report["seed_geomean"] = {"op_eager": geomean(r["op_eager_ratio"] for r in seeds),
                              "best_plan_eager": geomean(r["best_ratio"] for r in seeds)}
    save()
    lines = ["| shape | class | _scaled_mm TFLOPS | op TFLOPS | op/_scaled_mm eager | op/_scaled_mm graph "
             "| best sweep plan | best/_scaled_mm |", "|" + "---|" * 8]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['class']} | {r['eager_tflops'].get(bench.FP8_BASELINE, float('nan')):.0f} "
                     f"| {r['eager_tflops'].get('tritium.ops.scaled_matmul', float('nan')):.0f} "
                     f"| {r['op_eager_ratio']:.3f} | {r['op_graph_ratio']:.3f} | {short(r['best_plan'])} "
                     f"| {r['best_ratio']:.3f} |")
    lines += ["", f"seed geomean, op/_scaled_mm eager: {report['seed_geomean']['op_eager']:.3f}; best sweep plan per "
              f"shape: {report['seed_geomean']['best_plan_eager']:.3f}", "",
              "| entry point | wall us per call at 256^3 |", "|---|---|",
              *(f"| {k} | {v:.2f} |" for k, v in report["entry_point_wall_us"].items()), "",
              "| FP8 class | best plan (geomean) | op geomean |", "|---|---|---|",
              *(f"| {c} | {short(v['best_plan'])} ({v['best_geomean'] or float('nan'):.3f}) | {v['op_geomean']:.3f} |"
                for c, v in report["per_class"].items())]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "gemm19.md"), "w") as f:
        f.write(text + "\n")
    log(f"json: {path}; skipped: {skipped}")
    failed = [r for r in report["numerics"] + report.get("stream_k", {}).get("checks", []) if not r["ok"]]
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
