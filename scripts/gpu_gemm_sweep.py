"""One GPU run that checks every tritium.ops.matmul kernel variant and times the tuning space against cuBLAS.

Usage (Hopper GPU, repository root):
    PYTHONPATH=src python scripts/gpu_gemm_sweep.py --out OUT.json [--budget-s 400] [--dtypes fp16,bf16]
        [--workers 12] [--shapes 4096x4096x4096,...] [--rep-ms 80]

Phases, with a progress line each:
1. Compile and check, in parallel worker processes (spawned; they share Triton's on-disk cache with
   this process, so the timing phase loads kernels instead of compiling them):
   * every kernel variant tritium.ops can run (the shipped configs and a forced split-K) on ragged
     shapes (1x1x1, 1x1x2, 300x200x1 i.e. K=1, 77x5000x3000, 1000^3, 4097x4095x513, 128x1536x4096), with
     both layouts of B (row-major and a transposed view), fp16 and bf16, against a float64
     reference (relative Frobenius error at most 1e-2), and one float32-output case each;
   * every candidate config of the timing phase, on a problem with the same specialization (M and N
     cut to 4096, the same K), checked the same way, so that its compile happens here. A job that
     runs over 40 s + 20 s per problem (a kernel that hangs) has its worker killed; its plan is not
     timed, nor is one whose job did not run before phase 1's share of the budget (45%) ran out.
2. Per shape and dtype (the six seed shapes and 256^3..4096^3 by default): cuBLAS (``torch.matmul``),
   ``tritium.ops.matmul`` as shipped (the heuristic's plan) and every candidate of
   :func:`tritium.ops.plans.sweep_candidates` for the shape's class. Each is checked first against a
   float64 reference on 64 sampled rows (a config that fails is reported and not timed), and the op
   also with B as a transposed view. Then eager times (``do_bench`` median, launch included),
   interleaved rounds (best median counts); where cuBLAS takes under 1 ms, CUDA-graph replay (20
   calls) for cuBLAS, the op and the best three candidates.
   Before the shapes, the host cost per call (:func:`tritium.bench.gemm.host_cost_us`, 256^3 and 2048^3).
3. The JSON (rewritten after every shape, so a run cut short still leaves its results): per shape
   the times, the best plan eager and in graph replay, the ratios against cuBLAS; per shape class
   of the heuristic the plan with the best geometric mean over the class (:func:`best_per_class`,
   what ``tritium.ops.plans.choose`` should pick); and summary tables.

``--budget-s`` bounds the whole run: the timing phase gives each remaining shape an equal share of
what is left, drops to one round and fewer graph timings when short, and skips the shapes it has no
time for (listed in the JSON).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import replace
import time

SEEDS = [(128, 13312, 16384), (16384, 8192, 8192), (8192, 16384, 8192), (8192, 53248, 8192), (8192, 28672, 4096),
         (8192, 8192, 8192)]
SQUARES = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)]
RAGGED = [(1, 1, 1), (1, 1, 2), (300, 200, 1), (77, 5000, 3000), (1000, 1000, 1000), (4097, 4095, 513),
          (128, 1536, 4096)]
#: The problem each check job also runs with a float32 output.
FP32_OUT = (1000, 1000, 1000)
TOL = 1e-2
SAMPLED_ROWS = 64
#: CUDA-graph replay is timed only where cuBLAS takes less than this (ms): above, launch cost is noise.
GRAPH_BELOW_MS = 1.0

T0 = time.perf_counter()
#: Where the operands live; the CPU tests of this script use "cpu" (under TRITON_INTERPRET=1), also in
#: the worker processes, which read it from the environment.
DEVICE = os.environ.get("TRITIUM_SWEEP_DEVICE", "cuda")


#: Last sign of progress of the timing phase (see :func:`watchdog`).
HEARTBEAT = [time.perf_counter()]


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def beat() -> None:
    HEARTBEAT[0] = time.perf_counter()


def watchdog(stall_s: float, hard_stop: float, save) -> None:
    """Start a thread that ends the process when the timing phase makes no progress for ``stall_s``
    seconds (a hung kernel) or runs past ``hard_stop``; the JSON written so far stays."""
    import threading

    def watch():
        while True:
            time.sleep(2)
            now = time.perf_counter()
            if now - HEARTBEAT[0] > stall_s or now > hard_stop:
                why = "no progress for %.0f s (a hung kernel?)" % (now - HEARTBEAT[0]) if now < hard_stop else \
                    "past the hard stop"
                log(f"watchdog: {why}; ending the run with the results written so far")
                try:
                    save(note=f"ended by the watchdog: {why}")
                except Exception as e:  # noqa: BLE001  (the main thread may be writing it)
                    log(f"watchdog: could not save: {e}")
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def _dtype(name: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def _operands(M: int, N: int, K: int, dtype, b_transposed: bool, seed: int = 0):
    import torch
    gen = torch.Generator(device=DEVICE).manual_seed(seed + M * 7 + N * 3 + K)
    a = torch.randn(M, K, device=DEVICE, dtype=dtype, generator=gen)
    if b_transposed:
        return a, torch.randn(N, K, device=DEVICE, dtype=dtype, generator=gen).t()
    return a, torch.randn(K, N, device=DEVICE, dtype=dtype, generator=gen)


def _sync() -> None:
    import torch
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _rel_err(c, ref) -> float:
    """Relative Frobenius error of ``c`` against the float64 reference ``ref``."""
    den = ref.norm().item()
    num = (c.double() - ref).norm().item()
    return num / den if den else num


# ------------------------------------------------------------------------------------------------
# Phase 1: worker processes

def _plan(item):
    from tritium.ops import plans
    return None if item is None else plans.Plan.from_json(item)


def worker_job(job: dict) -> dict:
    """Run one plan on a list of problems in a worker; returns errors per problem (compiles on the way)."""
    import torch
    from tritium.ops import gemm
    plan = _plan(job["plan"])
    dtype = _dtype(job["dtype"])
    out = []
    t0 = time.perf_counter()
    poisoned = False  # a CUDA error is sticky: the context (this worker) is of no further use
    for M, N, K, b_t, out_name in job["problems"]:
        out_dtype = _dtype(out_name) if out_name else dtype
        if poisoned:
            out.append({"shape": f"{M}x{N}x{K}", "b": "transposed" if b_t else "row-major", "out": str(out_dtype),
                        "err": None, "ok": False, "error": "not run: an earlier problem raised a CUDA error"})
            continue
        try:
            a, b = _operands(M, N, K, dtype, b_t)
            c = gemm.run_plan(plan, a, b, out_dtype) if plan is not None else gemm.matmul(a, b, out_dtype)
            c = gemm.run_plan(plan, a, b, out_dtype) if plan is not None else gemm.matmul(a, b, out_dtype)  # direct
            _sync()
            ok_meta = c.shape == (M, N) and c.dtype == out_dtype and c.is_contiguous()
            err = _rel_err(c, a.double() @ b.double())
            out.append({"shape": f"{M}x{N}x{K}", "b": "transposed" if b_t else "row-major", "out": str(out_dtype),
                        "err": err, "ok": bool(ok_meta and err <= TOL)})
        except Exception as e:  # noqa: BLE001  (reported, not fatal: the sweep goes on)
            poisoned = "CUDA" in str(e) or "AcceleratorError" in type(e).__name__
            out.append({"shape": f"{M}x{N}x{K}", "b": "transposed" if b_t else "row-major", "out": str(out_dtype),
                        "err": None, "ok": False, "error": f"{type(e).__name__}: {str(e)[:500]}"})
    return {"plan": job["plan"], "dtype": job["dtype"], "kind": job["kind"], "results": out,
            "seconds": time.perf_counter() - t0, "poisoned": poisoned}


def _representative(M: int, N: int, K: int) -> tuple[int, int, int]:
    """A smaller problem compiled exactly like (M, N, K): Triton specializes integers on divisibility by
    16 and on 1, and the split-K slice count depends on K, so M and N are cut to 4096 (keeping their
    residue mod 16) and K is kept. 4096 keeps several tiles per persistent program, so ping-pong turns
    and ring phases wrap as they do on the real shape."""
    def cut(x):
        return x if x <= 4096 else 4096 + x % 16
    return cut(M), cut(N), K


def phase1_jobs(shapes, dtypes, sms: int) -> list[dict]:
    from tritium.kernels import gemm_splitk_hopper as splitk
    from tritium.ops import plans
    variants = [plans.Plan("small", plans.SMALL_TILE), plans.Plan("pingpong", plans.pingpong.LARGE),
                plans.Plan("pingpong", plans.pingpong.SMALL), plans.Plan("cooperative", plans.coop.LARGE),
                plans.Plan("cooperative", plans.coop.SMALL), plans.Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=3)),
                plans.LARGE_PLAN, plans.Plan("dualk", plans.dualk.DEFAULT)]
    jobs = []
    for dtype in dtypes:
        for plan in [None, *variants]:  # None: the op as shipped (heuristic plan)
            # the small (cp.async) path only where the op would pick it: even K, N and row strides
            problems = [(M, N, K, bt, None) for M, N, K in RAGGED for bt in (False, True)
                        if plan is None or plan.kernel != "small" or (K % 2 == 0 and N % 2 == 0)]
            problems.append((*FP32_OUT, False, "fp32"))
            jobs.append({"kind": "check", "plan": plan.to_json() if plan else None, "dtype": dtype,
                         "problems": problems})
        seen = set()
        for M, N, K in shapes:
            rM, rN, rK = _representative(M, N, K)
            for plan in plans.sweep_candidates(M, N, K, sms):
                key = (plan, rM % 16, rN % 16, plans.adapt(plan, K, 2, 2))
                if key in seen:
                    continue
                seen.add(key)
                jobs.append({"kind": "compile", "plan": plan.to_json(), "dtype": dtype,
                             "problems": [(rM, rN, rK, False, None)]})
    return jobs


def _worker_loop(jobs_q, results_q) -> None:
    """A phase-1 worker process: announce each job, run it, send its result; None ends it."""
    import torch  # noqa: F401  (imports before the first job: a job's time limit is for its kernels)
    from tritium.ops import gemm  # noqa: F401
    while True:
        item = jobs_q.get()
        if item is None:
            return
        idx, job = item
        results_q.put(("start", idx, os.getpid()))
        result = worker_job(job)
        results_q.put(("done", idx, result))
        if result["poisoned"]:
            return  # the main process starts a fresh worker in its place


NOT_RUN = "not run (phase 1 out of time)"


def _failed(job: dict, why: str) -> dict:
    return {"plan": job["plan"], "dtype": job["dtype"], "kind": job["kind"], "seconds": None,
            "results": [{"ok": False, "error": why}]}


def run_phase1(jobs: list[dict], workers: int, deadline: float, job_timeout: float = 40.0,
               per_problem: float = 20.0) -> tuple[list[dict], set]:
    """Run the jobs in ``workers`` spawned processes; returns (results, (plan, dtype) pairs not to time).

    A job running longer than ``job_timeout + per_problem * its problems`` (each problem may compile a
    kernel; a kernel that hangs runs forever) gets its worker killed (which ends
    the kernel with its CUDA context) and a fresh worker started; a worker that dies takes only its
    job down. A compile job that failed, hung or never ran marks its plan as not to be timed.
    """
    import multiprocessing as mp
    import queue
    ctx = mp.get_context("spawn")
    order = sorted(range(len(jobs)), key=lambda i: jobs[i]["kind"] != "check")  # checks first: they gate the report
    jobs_q, results_q = ctx.Queue(), ctx.Queue()
    for i in order:
        jobs_q.put((i, jobs[i]))
    procs: dict = {}

    def start() -> None:
        proc = ctx.Process(target=_worker_loop, args=(jobs_q, results_q), daemon=True)
        proc.start()
        procs[proc.pid] = proc

    for _ in range(min(workers, len(jobs))):
        start()
    running: dict = {}  # job index -> (worker pid, start time)
    done: dict = {}

    def finish(idx: int, result: dict) -> None:
        done[idx] = result
        bad = [x for x in result["results"] if not x["ok"]]
        if bad:  # failures in full; passing jobs as a progress line every 10
            log(f"phase 1 {len(done)}/{len(jobs)} {result['kind']} {result['dtype']} {result['plan']}: "
                f"{len(bad)} FAILED: " + "; ".join(f"{x.get('shape')} {x.get('b')} {x.get('out')} err={x.get('err')} "
                                                  f"{x.get('error', '')[:300]}" for x in bad[:4]))
        elif len(done) % 10 == 0 or len(done) == len(jobs):
            log(f"phase 1 {len(done)}/{len(jobs)} done")

    while len(done) < len(jobs) and time.perf_counter() < deadline:
        try:
            kind, idx, payload = results_q.get(timeout=1.0)
            if kind == "start":
                running[idx] = (payload, time.perf_counter())
            else:
                running.pop(idx, None)
                finish(idx, payload)
        except queue.Empty:
            pass
        now = time.perf_counter()
        for idx, (pid, t) in list(running.items()):
            limit = job_timeout + per_problem * len(jobs[idx]["problems"])
            if now - t > limit and pid in procs:
                procs.pop(pid).kill()
                running.pop(idx)
                finish(idx, _failed(jobs[idx], f"timeout: still running after {limit:.0f} s (killed)"))
                start()
        for pid, proc in list(procs.items()):
            if not proc.is_alive():
                procs.pop(pid)
                for idx, (rpid, _) in list(running.items()):
                    if rpid == pid:
                        running.pop(idx)
                        finish(idx, _failed(jobs[idx], f"worker died (exit code {proc.exitcode})"))
                if len(done) + len(running) < len(jobs):
                    start()
    for proc in procs.values():
        proc.kill()
    for proc in procs.values():
        proc.join(timeout=10)
    if len(done) < len(jobs):
        log(f"phase 1: {len(jobs) - len(done)} jobs did not finish in time")
    results = [done.get(i) or _failed(jobs[i], NOT_RUN) for i in range(len(jobs))]
    broken = {(json.dumps(r["plan"]), r["dtype"]) for r in results
              if r["kind"] == "compile" and not all(x["ok"] for x in r["results"])}
    return results, broken


# ------------------------------------------------------------------------------------------------
# Phase 2: timing in this process

def _do_bench(fn, rep_ms: int) -> float:
    from triton.testing import do_bench
    return do_bench(fn, warmup=max(10, rep_ms // 4), rep=rep_ms, return_mode="median")


def time_shape(M: int, N: int, K: int, dtype_name: str, sms: int, allowance_s: float, rep_ms: int,
               broken: set, bench=None, graph_bench=None) -> dict:
    """Check and time cuBLAS, the op and every sweep candidate on one shape (``bench``/``graph_bench``:
    ms per call of a callable, eager and CUDA-graph replay; default do_bench and
    :func:`tritium.bench.gemm.graph_ms`, as ``tritium bench gemm`` times them)."""
    import torch
    from tritium.bench.gemm import graph_ms
    from tritium.ops import gemm, plans
    bench, graph_bench = bench or _do_bench, graph_bench or graph_ms
    t_start = time.perf_counter()
    dtype = _dtype(dtype_name)
    a, b = _operands(M, N, K, dtype, False, seed=1)
    rows = torch.randperm(M, device=DEVICE)[:SAMPLED_ROWS]
    ref = a[rows].double() @ b.double()  # float64 reference on sampled rows, shared by every check
    cands = plans.sweep_candidates(M, N, K, sms)
    heuristic = plans.adapt(gemm.select_plan(a, b, dtype), K, a.element_size(), a.element_size())
    impls = {"cuBLAS": (None, lambda: torch.matmul(a, b)), "tritium.ops.matmul": (None, lambda: gemm.matmul(a, b))}
    checks = {}
    for plan in cands:
        name = json.dumps(plan.to_json())
        if (name, dtype_name) in broken:
            checks[name] = {"ok": False, "error": "failed in phase 1"}
            continue
        impls[name] = (plan, (lambda p: lambda: gemm.run_plan(p, a, b, dtype))(plan))

    def check(name, fn):
        beat()
        try:
            err = _rel_err(fn()[rows], ref)
            checks[name] = {"ok": err <= TOL, "err": err}
        except Exception as e:  # noqa: BLE001
            checks[name] = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        return checks[name]["ok"]

    for name in list(impls):
        if not check(name, impls[name][1]):
            log(f"  {dtype_name} {M}x{N}x{K} {name}: FAILED check {checks[name]}")
            if name not in ("cuBLAS", "tritium.ops.matmul"):
                del impls[name]
    bt = b.t().contiguous().t()  # the op with B as a transposed view (copied on purpose by the op)
    if not check("tritium.ops.matmul B-transposed", lambda: gemm.matmul(a, bt)):
        log(f"  {dtype_name} {M}x{N}x{K} op with B transposed: FAILED check {checks['tritium.ops.matmul B-transposed']}")
    del bt, ref
    _sync()
    spent = time.perf_counter() - t_start
    # two interleaved rounds when the allowance permits (a timing costs about 2.5 rep with warmup and
    # do_bench's estimate); graph replay only where a call is short enough for launch cost to matter
    rounds = 2 if spent + 2 * len(impls) * 2.5 * rep_ms / 1000 <= 0.8 * allowance_s else 1
    eager = {n: float("inf") for n in impls}
    for _ in range(rounds):
        for name, (_, fn) in impls.items():
            try:
                beat()
                eager[name] = min(eager[name], bench(fn, rep_ms))
            except Exception as e:  # noqa: BLE001
                log(f"  {name}: timing failed: {type(e).__name__}: {e}")
    ranked = sorted((n for n in impls if impls[n][0] is not None and math.isfinite(eager[n])), key=eager.get)
    graph = {}
    if eager["cuBLAS"] < GRAPH_BELOW_MS:
        spent = time.perf_counter() - t_start
        top = 3 if spent + 5 * rounds * 3 * rep_ms / 1000 <= allowance_s else 1
        for _ in range(rounds):
            for name in ["cuBLAS", "tritium.ops.matmul", *ranked[:top]]:
                try:
                    beat()
                    graph[name] = min(graph.get(name, float("inf")), graph_bench(impls[name][1], rep_ms))
                except Exception as e:  # noqa: BLE001
                    log(f"  {name}: graph timing failed: {type(e).__name__}: {e}")
    flops = 2 * M * N * K
    best_eager = ranked[0] if ranked else None
    tritium_graph = [n for n in graph if impls[n][0] is not None]
    best_graph = min(tritium_graph, key=graph.get) if tritium_graph else None
    cub, cub_g = eager["cuBLAS"], graph.get("cuBLAS")
    row = {
        "shape": f"{M}x{N}x{K}", "dtype": dtype_name, "class": plans.shape_class(M, N, K, sms),
        "heuristic_plan": heuristic.to_json(), "rounds": rounds, "rep_ms": rep_ms,
        "eager_ms": {n: eager[n] for n in impls}, "graph_ms": graph, "checks": checks,
        "tflops_eager": {n: flops / eager[n] * 1e-9 for n in impls if math.isfinite(eager[n])},
        "best_eager": json.loads(best_eager) if best_eager else None,
        "best_eager_ratio": cub / eager[best_eager] if best_eager else None,
        "op_eager_ratio": cub / eager["tritium.ops.matmul"],
        "best_graph": json.loads(best_graph) if best_graph else None,
        "best_graph_ratio": cub_g / graph[best_graph] if best_graph and cub_g else None,
        "op_graph_ratio": cub_g / graph["tritium.ops.matmul"] if cub_g and "tritium.ops.matmul" in graph else None,
        "seconds": time.perf_counter() - t_start,
    }
    del a, b
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return row


def _fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def summary(rows: list[dict]) -> str:
    lines = ["| shape | dtype | class | cuBLAS ms | op ms | op/cuBLAS eager | op/cuBLAS graph | best plan (eager) | "
             "best/cuBLAS eager | best/cuBLAS graph |", "|" + "---|" * 10]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['dtype']} | {r['class']} | {r['eager_ms']['cuBLAS']:.4f} | "
                     f"{r['eager_ms']['tritium.ops.matmul']:.4f} | {_fmt(r['op_eager_ratio'])} | "
                     f"{_fmt(r['op_graph_ratio'])} | {r['best_eager']} | {_fmt(r['best_eager_ratio'])} | "
                     f"{_fmt(r['best_graph_ratio'])} |")
    return "\n".join(lines)


def best_per_class(rows: list[dict]) -> dict:
    """Per shape class (the heuristic's rules), the plan timed on every shape of the class with the best
    geometric mean of cuBLAS time / its time (eager), next to the shipped op's: what the heuristic
    should pick for that class."""
    out = {}
    for kind in dict.fromkeys(r["class"] for r in rows):
        group = [r for r in rows if r["class"] == kind]
        common = set.intersection(*(set(r["eager_ms"]) for r in group)) - {"cuBLAS"}

        def geomean(name):
            vals = [r["eager_ms"]["cuBLAS"] / r["eager_ms"][name] for r in group]
            return math.exp(sum(map(math.log, vals)) / len(vals)) if all(v > 0 for v in vals) else 0.0

        scores = {n: geomean(n) for n in common if all(math.isfinite(r["eager_ms"][n]) for r in group)}
        plans_only = {n: v for n, v in scores.items() if n != "tritium.ops.matmul"}
        best = max(plans_only, key=plans_only.get) if plans_only else None
        out[kind] = {"shapes": [f"{r['shape']} {r['dtype']}" for r in group],
                     "best_plan": json.loads(best) if best else None, "best_geomean": plans_only.get(best),
                     "op_geomean": scores.get("tritium.ops.matmul"),
                     "ranking": sorted(([json.loads(n), v] for n, v in plans_only.items()), key=lambda x: -x[1])}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--budget-s", type=float, default=400.0, help="wall-clock bound of the whole run (seconds)")
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    p.add_argument("--shapes", default="", help="comma-separated MxNxK (default: the seeds and 256^3..4096^3)")
    p.add_argument("--rep-ms", type=int, default=80, help="do_bench rep per timing")
    p.add_argument("--skip-phase1", action="store_true", help="no checks and precompiles in worker processes")
    p.add_argument("--skip-host-cost", action="store_true", help="do not measure the host cost per call")
    p.add_argument("--stall-s", type=float, default=120.0,
                   help="end the run when the timing phase makes no progress this long (a hung kernel)")
    args = p.parse_args(argv)

    import torch
    import triton
    from tritium.ops import launch
    deadline = T0 + args.budget_s
    dtypes = [d for d in args.dtypes.split(",") if d]
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s] or \
        SQUARES[:3] + SEEDS + SQUARES[3:]
    # order: cheap shapes first within each dtype so a cut run still covers every class
    shapes = sorted(shapes, key=lambda s: s[0] * s[1] * s[2])
    cuda = DEVICE == "cuda"
    sms = launch.sm_count(torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device(DEVICE))
    report = {"env": {"gpu": torch.cuda.get_device_name() if cuda else DEVICE, "sms": sms, "torch": torch.__version__,
                      "triton": triton.__version__, "budget_s": args.budget_s, "argv": sys.argv[1:]},
              "phase1": [], "shapes": [], "skipped": []}

    def save(note: str | None = None):
        if note:
            report["note"] = note
        tmp = f"{args.out}.tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1, default=str)
        os.replace(tmp, args.out)

    log(f"{report['env']}; {len(shapes)} shapes x {dtypes}")
    broken: set = set()
    if not args.skip_phase1:
        jobs = phase1_jobs(shapes, dtypes, sms)
        log(f"phase 1: {len(jobs)} jobs on {args.workers} workers")
        # at most 45% of the budget for compiles and checks; a failure of the machinery itself is reported
        # and the timing phase compiles on first use instead
        try:
            report["phase1"], broken = run_phase1(jobs, args.workers, T0 + 0.45 * args.budget_s)
        except Exception as e:  # noqa: BLE001
            log(f"phase 1 failed: {type(e).__name__}: {e}")
            report["phase1_error"] = f"{type(e).__name__}: {e}"
        failed = [(r["kind"], r["dtype"], r["plan"], x) for r in report["phase1"] for x in r["results"]
                  if not x["ok"] and x.get("error") != NOT_RUN]
        report["phase1_failures"] = failed
        report["phase1_not_run"] = [(r["kind"], r["dtype"], r["plan"]) for r in report["phase1"]
                                    if r["results"][0].get("error") == NOT_RUN]
        log(f"phase 1 done: {len(failed)} failed checks, {len(report['phase1_not_run'])} jobs not run in time "
            "(their plans are not timed)")
        save()
    beat()
    watchdog(args.stall_s, deadline + 60, save)
    if cuda and not args.skip_host_cost:
        from tritium.bench.gemm import host_cost_us
        try:  # host microseconds per call, the GPU kept busy: the op's path against torch.matmul's
            report["host_cost_us"] = {f"{n}^3": host_cost_us(n, calls=300) for n in (256, 2048)}
            log(f"host cost per call (us): {json.dumps(report['host_cost_us'], indent=1)}")
        except Exception as e:  # noqa: BLE001
            log(f"host cost: FAILED {type(e).__name__}: {e}")
        save()
    todo = [(s, d) for s in shapes for d in dtypes]  # both dtypes of a shape together, cheap shapes first
    for i, ((M, N, K), dtype) in enumerate(todo):
        left = deadline - time.perf_counter() - 5
        allowance = left / (len(todo) - i)
        if left < 4:
            report["skipped"] = [f"{m}x{n}x{k} {d}" for (m, n, k), d in todo[i:]]
            log(f"out of time: skipped {report['skipped']}")
            break
        rep = args.rep_ms if allowance > 12 else max(20, args.rep_ms // 3)
        try:
            row = time_shape(M, N, K, dtype, sms, allowance, rep, broken)
        except Exception as e:  # noqa: BLE001  (one shape failing must not lose the others)
            log(f"{dtype} {M}x{N}x{K}: FAILED {type(e).__name__}: {e}")
            report["shapes"].append({"shape": f"{M}x{N}x{K}", "dtype": dtype, "error": f"{type(e).__name__}: {e}"})
            save()
            continue
        report["shapes"].append(row)
        save()
        log(f"{i + 1}/{len(todo)} {dtype} {M}x{N}x{K} [{row['class']}] {row['seconds']:.1f}s: cuBLAS "
            f"{row['eager_ms']['cuBLAS']:.4f} ms; op {_fmt(row['op_eager_ratio'])}x eager {_fmt(row['op_graph_ratio'])}x "
            f"graph; best {row['best_eager']} {_fmt(row['best_eager_ratio'])}x eager, graph best {row['best_graph']} "
            f"{_fmt(row['best_graph_ratio'])}x")
    rows = [r for r in report["shapes"] if "error" not in r]
    seeds = [r for r in rows if tuple(map(int, r["shape"].split("x"))) in SEEDS]
    for dtype in dtypes:
        for key in ("op_eager_ratio", "best_eager_ratio"):
            vals = [r[key] for r in seeds if r["dtype"] == dtype and r[key]]
            if vals:
                report.setdefault("seed_geomean", {})[f"{dtype} {key}"] = math.exp(sum(map(math.log, vals)) / len(vals))
    report["best_per_class"] = best_per_class(rows)
    save()
    print("\n" + summary(rows))
    print("\n| class | best plan (all its shapes and dtypes) | geomean vs cuBLAS | shipped op's geomean | shapes |\n"
          "|---|---|---|---|---|")
    for kind, b in report["best_per_class"].items():
        print(f"| {kind} | {b['best_plan']} | {_fmt(b['best_geomean'])} | {_fmt(b['op_geomean'])} | "
              f"{', '.join(b['shapes'])} |")
    print(f"\nseed geomeans: {report.get('seed_geomean')}")
    print(f"phase 1 failures: {len(report.get('phase1_failures', []))} (not run in time: "
          f"{len(report.get('phase1_not_run', []))}); skipped shapes: {report['skipped']}")
    for kind, dtype, plan, x in report.get("phase1_failures", [])[:20]:
        print(f"  FAILED {kind} {dtype} {plan}: {x}")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
