"""GEMM throughput: tritium.ops.matmul against cuBLAS, bare Triton and torch.compile; and the TLX kernels alone.

Default (issue 9): per shape and dtype, in one run, cuBLAS (``torch.matmul``), a bare-Triton
baseline written here (the persistent TMA ``tl.dot`` kernel, autotuned over 8 usual configs: what a
Triton user has today), ``torch.compile(mode="max-autotune-no-cudagraphs")`` of ``a @ b`` (dropped for
the remaining shapes once its compiles took ``tritium.knobs.bench.compile_budget_s`` seconds in total) and
``tritium.ops.matmul``. FP8 (e4m3, per-tensor scales, B column-major): ``torch._scaled_mm`` (cuBLASLt, the
ratios' denominator), ``torch.compile(max-autotune-no-cudagraphs)`` of it (Inductor's Triton FP8 templates,
the same compile budget) and ``tritium.ops.scaled_matmul``. Each is checked against a float64 reference
first (relative Frobenius error below 1e-2; FP8: 2e-2 against the dequantised inputs' product), then
timed eager (as a user calls it: launch included, ``do_bench`` median) and as CUDA-graph replay (20
calls captured, time per call), best of two interleaved rounds. Also the host cost per call of every
entry point (:func:`host_cost_us`, :func:`entry_point_wall_us`). Prints tables of TFLOPS and ratios to
the baseline, writes a plot and a JSON file per dtype. Shapes: the six seed shapes of docs/targets.md
and 256^3..4096^3, fp16, bf16 and fp8.

``--only`` words for the default suite: ``fp16``/``bf16``/``fp8`` (dtype), ``quick`` (128x13312x16384,
4096^3, 1024^3, 256^3), ``seeds``, ``squares``, shapes such as ``1000x1000x1000``, ``nocompile``
(no torch.compile column).

``--only ws`` times cuBLAS against the three warp-specialized TLX kernels, in fp16 and bf16;
``--only kernels`` the TLX kernels against a plain ``tl.dot`` kernel with the pipelined kernel's
tiles (fp16). With either, ``fp16``/``bf16`` pick the dtype and ``quick`` keeps three shapes (4096^3,
8192^3 and the skinny 128x13312x16384). The plain kernel uses the pipelined TLX kernel's tiles,
warps and stage count, with Triton's own software pipeliner doing what the TLX kernel does by hand,
so that ratio isolates the hand pipelining.
"""
from __future__ import annotations

import math

import triton
import triton.language as tl

from .. import knobs
from ..kernels import gemm_pipelined_hopper as hopper
from ..kernels import gemm_ws_cooperative_hopper as coop
from ..kernels import gemm_ws_hopper as ws
from ..kernels import gemm_ws_pingpong_hopper as pingpong
from ..kernels.tiles import grouped_tile
from .report import bar_plot, table

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192), (8192, 16384, 8192),
          (8192, 28672, 4096), (8192, 53248, 8192), (128, 13312, 16384)]
QUICK_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (128, 13312, 16384)]


@triton.jit
def plain_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                        GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :]
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=NUM_STAGES):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + offs_cn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def plain_matmul(a, b, cfg: hopper.Config):
    import torch
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), )
    plain_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_SIZE_M=cfg.BLOCK_SIZE_M,
                              BLOCK_SIZE_N=cfg.BLOCK_SIZE_N, BLOCK_SIZE_K=cfg.BLOCK_SIZE_K,
                              GROUP_SIZE_M=cfg.GROUP_SIZE_M, NUM_STAGES=cfg.NUM_STAGES, num_warps=cfg.num_warps)
    return c


def implementations(a, b, which: str, cfg: hopper.Config = hopper.LARGE) -> dict:
    """name -> ``a @ b`` callable: cuBLAS first (the ratios' denominator), then ours."""
    import torch
    impls = {"cuBLAS": lambda: torch.matmul(a, b)}
    if which == "all":
        impls["Triton tl.dot"] = lambda: plain_matmul(a, b, cfg)
        if a.dtype == torch.float16:  # the pipelined TLX kernel writes fp16
            impls["TLX pipelined"] = lambda: hopper.matmul(a, b, cfg)
    impls.update({"TLX WS": lambda: ws.matmul(a, b), "TLX cooperative": lambda: coop.matmul(a, b),
                  "TLX ping-pong": lambda: pingpong.matmul(a, b)})
    return impls


def run(shapes=SHAPES, which: str = "all", dtype: str = "fp16", rounds: int = 2, rep_ms: int = 150) -> list[dict]:
    """TFLOPS of every implementation per shape: ``[{"shape": "MxNxK", name: TFLOPS, ...}, ...]``."""
    import torch
    from triton.testing import do_bench
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dtype]))
        b = torch.randn(K, N, device="cuda", dtype=a.dtype)
        ref = a.float() @ b.float()
        impls = implementations(a, b, which)
        tflops = {}
        for name, fn in impls.items():
            out = fn()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                raise AssertionError(f"{name} {dtype} {M}x{N}x{K}: relative error {err:.2e}")
            tflops[name] = 0.0
        for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
            for name, fn in impls.items():
                ms = do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
                tflops[name] = max(tflops[name], 2 * M * N * K / ms * 1e-9)
        rows.append({"shape": f"{M}x{N}x{K}", **tflops})
        print(f"{dtype} {M}x{N}x{K}: " + ", ".join(f"{k} {v:.1f}" for k, v in tflops.items()), flush=True)
    return rows


# ------------------------------------------------------------------------------------------------
# The default suite (issue 9): tritium.ops.matmul against cuBLAS, bare Triton and torch.compile

SEED_SHAPES = [(128, 13312, 16384), (16384, 8192, 8192), (8192, 16384, 8192), (8192, 53248, 8192),
               (8192, 28672, 4096), (8192, 8192, 8192)]
SQUARE_SHAPES = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)]
QUICK_OPS_SHAPES = [(128, 13312, 16384), (4096, 4096, 4096), (1024, 1024, 1024), (256, 256, 256)]
GRAPH_CALLS = 20
DTYPES = ("fp16", "bf16", "fp8")
#: FP8's baseline: cuBLASLt's scaled GEMM, with the per-tensor scales tritium.ops.scaled_matmul takes.
FP8_BASELINE = "torch._scaled_mm"


def _tma_block_hook(nargs):
    """Autotune pre-hook: the host descriptors' block shapes follow the config being tried."""
    BM, BN, BK = nargs["BLOCK_SIZE_M"], nargs["BLOCK_SIZE_N"], nargs["BLOCK_SIZE_K"]
    nargs["a_desc"].block_shape = [BM, BK]
    nargs["b_desc"].block_shape = [BK, BN]
    nargs["c_desc"].block_shape = [BM, BN]


TRITON_CONFIGS = [triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                                num_stages=s, num_warps=w, pre_hook=_tma_block_hook)
                  for bn in (128, 256) for s in (3, 4) for w in (4, 8)]


@triton.autotune(configs=TRITON_CONFIGS, key=["M", "N", "K"])
@triton.jit
def triton_persistent_tma_kernel(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr,
                                 BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                 GROUP_SIZE_M: tl.constexpr):
    """The bare-Triton baseline: persistent, TMA descriptors, ``tl.dot`` pipelined by Triton."""
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_SIZE_M, k * BLOCK_SIZE_K])
            b = b_desc.load([k * BLOCK_SIZE_K, pid_n * BLOCK_SIZE_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N], acc.to(c_desc.dtype))


def triton_matmul(a, b):
    """``a @ b`` with the bare-Triton baseline (row-major operands with 16-byte rows)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    dummy = [1, 1]  # the pre-hook sets the real block shapes
    descs = [TensorDescriptor.from_tensor(t, dummy) for t in (a, b, c)]
    grid = lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])), )
    triton_persistent_tma_kernel[grid](*descs, M, N, K, NUM_SMS=sms)
    return c


def select_ops(words: set[str]) -> tuple[list[tuple[int, int, int]], list[str], bool]:
    """(shapes, dtypes, with torch.compile) of the default suite for ``--only`` words."""
    import re
    shapes_named = [tuple(int(x) for x in w.split("x")) for w in sorted(words) if re.fullmatch(r"\d+x\d+x\d+", w)]
    unknown = {w for w in words if not re.fullmatch(r"\d+x\d+x\d+", w)} - {
        "fp16", "bf16", "fp8", "quick", "seeds", "squares", "nocompile"}
    if unknown:
        raise SystemExit(f"tritium bench gemm: unknown --only words {sorted(unknown)}; use fp16, bf16, fp8, quick, seeds, "
                         "squares, nocompile, shapes such as 1000x1000x1000, or ws / kernels for the TLX kernels alone")
    shapes = list(shapes_named)
    if "quick" in words:
        shapes += QUICK_OPS_SHAPES
    if "seeds" in words:
        shapes += SEED_SHAPES
    if "squares" in words:
        shapes += SQUARE_SHAPES
    shapes = list(dict.fromkeys(shapes)) or SEED_SHAPES + SQUARE_SHAPES
    dtypes = [d for d in DTYPES if d in words] or list(DTYPES)
    return shapes, dtypes, "nocompile" not in words


def graph_ms(fn, rep_ms: int = 100, calls: int = GRAPH_CALLS) -> float:
    """Milliseconds per call of ``fn`` replayed from a CUDA graph of ``calls`` calls."""
    import torch
    from triton.testing import do_bench
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return do_bench(graph.replay, warmup=5, rep=rep_ms, return_mode="median") / calls


class _Compiled:
    """torch.compile(max-autotune-no-cudagraphs) of ``a @ b`` and of ``torch._scaled_mm``, with the compile
    time spent so far (one budget for both)."""

    def __init__(self):
        import torch
        self.fn = torch.compile(lambda x, y: x @ y, mode="max-autotune-no-cudagraphs", dynamic=False)
        self.scaled = torch.compile(lambda x, y, sx, sy: torch._scaled_mm(x, y, sx, sy, out_dtype=torch.bfloat16),
                                    mode="max-autotune-no-cudagraphs", dynamic=False)
        self.seconds = 0.0

    def warm(self, *args) -> bool:
        """Compile for this shape (two operands: ``fn``, four: ``scaled``) unless the budget is spent; False
        when skipped."""
        import time
        if self.seconds >= knobs.bench.compile_budget_s:
            return False
        t0 = time.perf_counter()
        (self.fn if len(args) == 2 else self.scaled)(*args)
        self.seconds += time.perf_counter() - t0
        return True


def ops_implementations(a, b, compiled: _Compiled | None) -> dict:
    """name -> ``a @ b`` callable: cuBLAS first (the ratios' denominator)."""
    import torch

    from ..ops import matmul as ops_matmul
    impls = {"cuBLAS": lambda: torch.matmul(a, b), "Triton": lambda: triton_matmul(a, b)}
    if compiled is not None and compiled.warm(a, b):
        impls["torch.compile"] = lambda: compiled.fn(a, b)
    impls["tritium"] = lambda: ops_matmul(a, b)
    return impls


def fp8_implementations(a, b, scale_a, scale_b, compiled: _Compiled | None) -> dict:
    """name -> the FP8 product callable (bf16 out): ``torch._scaled_mm`` first (the ratios' denominator)."""
    import torch

    from ..ops import scaled_matmul
    impls = {FP8_BASELINE: lambda: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)}
    if compiled is not None and compiled.warm(a, b, scale_a, scale_b):
        impls["torch.compile"] = lambda: compiled.scaled(a, b, scale_a, scale_b)
    impls["tritium"] = lambda: scaled_matmul(a, b, scale_a, scale_b)
    return impls


def fp8_operands(M: int, N: int, K: int, seed: int):
    """Random e4m3 ``a`` [M, K] and column-major ``b`` [K, N] (the layout ``torch._scaled_mm`` takes) with
    per-tensor fp32 scales."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()
    return a, b, torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")


def run_ops_shape(M: int, N: int, K: int, dtype: str, compiled: _Compiled | None, rounds: int = 2,
                  rep_ms: int = 100) -> dict:
    """One shape of the default suite: checked results, then eager and graph TFLOPS per implementation."""
    import torch
    from triton.testing import do_bench

    from ..ops import plans
    from ..ops.gemm import select_plan
    from ..ops.launch import sm_count
    seed = M + 3 * N + 7 * K
    if dtype == "fp8":
        a, b, sa, sb = fp8_operands(M, N, K, seed)
        ref = (a.double() @ b.double()) * sa.double() * sb.double()
        impls, tol, baseline = fp8_implementations(a, b, sa, sb, compiled), 2e-2, FP8_BASELINE
        plan = plans.choose_fp8(M, N, K, sm_count(a.device))
    else:
        tdtype = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dtype])
        gen = torch.Generator(device="cuda").manual_seed(seed)
        a = torch.randn(M, K, device="cuda", dtype=tdtype, generator=gen)
        b = torch.randn(K, N, device="cuda", dtype=tdtype, generator=gen)
        ref = a.double() @ b.double()
        impls, tol, baseline = ops_implementations(a, b, compiled), 1e-2, "cuBLAS"
        plan = select_plan(a, b, tdtype)
    for name, fn in impls.items():
        err = ((fn().double() - ref).norm() / ref.norm()).item()
        if not err < tol:
            raise AssertionError(f"{name} {dtype} {M}x{N}x{K}: relative error {err:.2e} against float64")
    del ref
    flops = 2 * M * N * K
    eager, graph = dict.fromkeys(impls, 0.0), dict.fromkeys(impls, 0.0)
    for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
        for name, fn in impls.items():
            eager[name] = max(eager[name], flops / do_bench(fn, warmup=25, rep=rep_ms, return_mode="median") * 1e-9)
            graph[name] = max(graph[name], flops / graph_ms(fn, rep_ms) * 1e-9)
    return {"shape": f"{M}x{N}x{K}", "dtype": dtype, "baseline": baseline, "eager": eager, "graph": graph,
            "tritium_plan": plan.to_json()}


def entry_points(n: int) -> dict:
    """name -> one call of each way a user multiplies n x n matrices on the GPU: fp16 through torch,
    tritium.ops.matmul and the torch op, and FP8 (per-tensor scales) through torch._scaled_mm,
    tritium.ops.scaled_matmul and its torch op."""
    import torch

    from ..ops import matmul, scaled_matmul
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    a8, b8, sa, sb = fp8_operands(n, n, n, n)
    return {"torch.matmul": lambda: torch.matmul(a, b), "tritium.ops.matmul": lambda: matmul(a, b),
            "torch.ops.tritium.matmul": lambda: torch.ops.tritium.matmul(a, b),
            "torch._scaled_mm (fp8)": lambda: torch._scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16),
            "tritium.ops.scaled_matmul (fp8)": lambda: scaled_matmul(a8, b8, sa, sb),
            "torch.ops.tritium.scaled_matmul (fp8)": lambda: torch.ops.tritium.scaled_matmul(a8, b8, sa, sb)}


def _per_call_us(fn, calls: int, host_only: bool) -> float:
    """Microseconds per call of ``fn`` over ``calls`` calls, best of 5 rounds: with ``host_only`` the GPU is
    kept busy by a sleep kernel so that only the host is timed; else wall clock, synchronised at the end."""
    import time

    import torch
    for _ in range(20):
        fn()
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        if host_only:
            torch.cuda._sleep(int(2e8))  # ~0.1 s of GPU time: the queue never drains while we time
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        if not host_only:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def entry_point_wall_us(n: int = 256, calls: int = 3000) -> dict[str, float]:
    """Wall-clock microseconds per call of each of :func:`entry_points`, ``calls`` back-to-back calls
    synchronised at the end (issue 19's host-cost measure: at 256^3 the host is the bottleneck)."""
    return {name: _per_call_us(fn, calls, False) for name, fn in entry_points(n).items()}


def host_cost_us(n: int = 256, dtype=None, calls: int = 500) -> dict[str, float]:
    """Host microseconds per call of a tiny n^3 GEMM, the GPU kept busy by a sleep kernel so that only
    the host is timed: every entry point (:func:`entry_points`); then for tritium.ops.matmul's kernel the
    plan launch (no checks, no plan choice), its direct launch alone, and the same kernel launched
    through the JIT (``kernel[grid]``, host TensorDescriptors built per call)."""
    import torch

    from ..ops import gemm as ops_gemm
    from ..ops import launch as ops_launch
    dtype = dtype or torch.float16
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    plan = ops_gemm.select_plan(a, b, dtype)
    call = ops_launch.call_for(plan, a, b, dtype)
    pa, pb, pc = call.prepare(a, b)
    kernel = ops_launch.VARIANTS[plan.kernel].kernel

    def jit_launch():  # as a Triton user launches it: host TensorDescriptors made per call
        from triton.tools.tensor_descriptor import TensorDescriptor
        args, consts = call._jit_args(pa, pb, pc)
        if call.variant.tma:
            args[:3] = [TensorDescriptor.from_tensor(t, list(blk)) for t, blk in zip((pa, pb, pc), call.blocks)]
        kernel[call.grid](*args, **consts)

    paths = {**entry_points(n),
             "tritium plan launch (no checks, no plan choice)": lambda: ops_gemm.run_plan(plan, a, b, dtype),
             "tritium direct launch alone (operands ready)": lambda: call.launch(pa, pb, pc),
             "Triton JIT launch, same kernel": jit_launch}
    return {name: _per_call_us(fn, calls, True) for name, fn in paths.items()}


def ops_main(out: str, shapes, dtypes: list[str], with_compile: bool) -> int:
    import torch
    from tqdm import tqdm

    from .report import save_json
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    host = {f"{n}^3": host_cost_us(n) for n in (256, 2048)}  # the small path; a TMA (descriptor) kernel
    print("## Host cost per call (us; the GPU busy, so only the host is timed; fp16 unless marked fp8)\n"
          + table(["path", *host], [(p, *(h[p] for h in host.values())) for p in host["256^3"]]))
    wall = entry_point_wall_us()
    print("\n## Wall clock per call at 256^3 (us; 3000 back-to-back calls, synchronised at the end)\n"
          + table(["entry point", "us per call"], list(wall.items())))
    compiled = _Compiled() if with_compile else None
    for dtype in dtypes:
        results = []
        bar = tqdm(shapes, unit="shape")
        for M, N, K in bar:
            bar.set_description(f"{dtype} {M}x{N}x{K}")
            results.append(run_ops_shape(M, N, K, dtype, compiled))
            r = results[-1]
            tqdm.write(f"{dtype} {r['shape']}: " + ", ".join(f"{k} {v:.1f}/{r['graph'][k]:.1f}"
                                                             for k, v in r["eager"].items()) + " TFLOPS eager/graph")
        base = results[0]["baseline"]
        names = list(dict.fromkeys(n for r in results for n in r["eager"]))
        ours = [n for n in names if n != base]
        headers = ["shape", "tritium plan", *(f"{n} eager" for n in names),
                   *(f"{n}/{base} eager" for n in ours), *(f"{n}/{base} graph" for n in ours)]

        def ratio(r, mode, n):
            return r[mode][n] / r[mode][base] if n in r[mode] else float("nan")

        rows = [(r["shape"], r["tritium_plan"][0], *(r["eager"].get(n, float("nan")) for n in names),
                 *(ratio(r, "eager", n) for n in ours), *(ratio(r, "graph", n) for n in ours)) for r in results]
        print(f"\n## {dtype} GEMM TFLOPS on {env['gpu']} (torch {env['torch']}, triton {env['triton']}); "
              f"ratios against {base} in the same run; graph = CUDA-graph replay of {GRAPH_CALLS} calls")
        print(table(headers, rows))
        seeds = [r for r in results if tuple(map(int, r["shape"].split("x"))) in SEED_SHAPES]
        if seeds:
            geo = math.exp(sum(math.log(ratio(r, "eager", "tritium")) for r in seeds) / len(seeds))
            print(f"\ntritium/{base} eager geomean over the {len(seeds)} seed shapes: {geo:.3f}")
        series = {f"{n}/{base} eager": [ratio(r, "eager", n) for r in results] for n in ours}
        plot = bar_plot(f"{out}/gemm_ops_{dtype}.png", f"{dtype} GEMM vs {base} ({env['gpu']})",
                        [r["shape"] for r in results], series, "ratio of TFLOPS")
        print(f"\nplot: {plot}")
        payload = {"env": env, "host_cost_us": host, "entry_point_wall_us": wall, "graph_calls": GRAPH_CALLS,
                   "results": results, "torch_compile_seconds": compiled.seconds if compiled else None}
        print(f"json: {save_json(f'{out}/gemm_ops_{dtype}.json', payload)}")
    return 0


def kernels_main(out: str, which: str, words: set[str]) -> int:
    """``--only ws`` / ``--only kernels``: the TLX kernels on their own."""
    dtypes = [d for d in ("fp16", "bf16") if d in words] or (["fp16", "bf16"] if which == "ws" else ["fp16"])
    shapes = QUICK_SHAPES if "quick" in words else SHAPES
    cfg = hopper.LARGE
    for dtype in dtypes:
        rows = run(shapes, which, dtype)
        names = [k for k in rows[0] if k != "shape"]
        ours = names[1:]
        print(f"\n## {dtype} GEMM TFLOPS, ratios against cuBLAS in the same run")
        if which == "all":
            print(f"Triton tl.dot and TLX pipelined: tiles {cfg.BLOCK_SIZE_M}x{cfg.BLOCK_SIZE_N}x{cfg.BLOCK_SIZE_K}, "
                  f"{cfg.NUM_STAGES} stages, {cfg.num_warps} warps.")
        print(f"TLX WS: {ws.LARGE} (or {ws.SMALL} when it has fewer tiles than SMs); TLX cooperative: "
              f"{coop.LARGE} (or {coop.SMALL}); TLX ping-pong: {pingpong.LARGE} (or {pingpong.SMALL})")
        ratios = {f"{n}/cuBLAS": (n, "cuBLAS") for n in ours}
        if "TLX pipelined" in names:  # what hand pipelining gains over Triton's own pipeliner
            ratios["pipelined/tl.dot"] = ("TLX pipelined", "Triton tl.dot")
        print(table(["shape", *names, *ratios],
                    [(r["shape"], *(r[n] for n in names), *(r[x] / r[y] for x, y in ratios.values())) for r in rows]))
        series = {n: [r[n] for r in rows] for n in names}
        plot = bar_plot(f"{out}/gemm{'_ws' if which == 'ws' else ''}_{dtype}.png", f"{dtype} GEMM on one GPU",
                        [r["shape"] for r in rows], series, "TFLOPS")
        print(f"\nplot: {plot}")
    return 0


def main(out: str, only: str = "") -> int:
    words = set(only.replace(",", " ").split())
    if "ws" in words or "kernels" in words:
        unknown = words - {"ws", "kernels", "fp16", "bf16", "quick"}
        if unknown:
            raise SystemExit(f"tritium bench gemm: unknown --only words {sorted(unknown)}; with ws or kernels use "
                             "fp16, bf16, quick")
        return kernels_main(out, "ws" if "ws" in words else "all", words)
    shapes, dtypes, with_compile = select_ops(words)
    return ops_main(out, shapes, dtypes, with_compile)
