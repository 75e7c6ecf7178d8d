"""tritium.ops.matmul through the kernels on the CPU interpreter (run by test_ops_matmul.py in a
TRITON_INTERPRET=1 process): ragged shapes, both layouts of B, K = 1, 1x1x1, bf16, each kernel the
heuristic can pick, split-K numerics, autograd (gradcheck in float64) and torch.compile; and
tritium.ops.scaled_matmul (FP8) against the fp32 product of the dequantised inputs."""
import os
from dataclasses import replace

import pytest

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs TRITON_INTERPRET=1 before triton is imported; test_ops_matmul.py runs this module "
                "in such a process", allow_module_level=True)

import torch  # noqa: E402

from tritium.kernels import gemm_splitk_hopper as splitk  # noqa: E402
from tritium.kernels.tiles import WSConfig  # noqa: E402
from tritium.ops import gemm, plans, registration  # noqa: E402
from tritium.ops import matmul  # noqa: E402


def _operands(M, N, K, dtype, b_transposed):
    gen = torch.Generator().manual_seed(M * 7919 + N * 31 + K)
    a = torch.randn(M, K, dtype=dtype, generator=gen)
    b = torch.randn(N, K, dtype=dtype, generator=gen).t() if b_transposed else torch.randn(K, N, dtype=dtype,
                                                                                          generator=gen)
    return a, b


def _rel_err(c, a, b):
    ref = a.double() @ b.double()
    return ((c.double() - ref).norm() / ref.norm()).item()


def _tol(dtype):
    return 2e-3 if dtype == torch.float16 else 1e-2


@pytest.mark.parametrize("M,N,K,dtype,b_transposed,kernel", [
    (70, 34, 90, torch.bfloat16, True, "small"),  # even: the cp.async path, B a transposed view
    (37, 29, 45, torch.float16, False, "pingpong"),  # odd K and N: the TMA path with padded rows
    (37, 29, 45, torch.float16, True, "pingpong"),
    (9, 13, 1, torch.float16, False, "pingpong"),  # K = 1
    # K = 1 with B a transposed view: [1, N] with strides (1, 1), read in place (no 16-byte row stride
    # to honour in a single row); N = 128 needs no padding, so nothing would have replaced that stride
    (300, 128, 1, torch.float16, True, "cooperative"),
    (300, 128, 1, torch.bfloat16, True, "cooperative"),
    (1, 1, 1, torch.bfloat16, False, "pingpong"),
])
def test_op_matches_float64(M, N, K, dtype, b_transposed, kernel):
    a, b = _operands(M, N, K, dtype, b_transposed)
    assert gemm.select_plan(a, b, dtype).kernel == kernel
    c = matmul(a, b)
    assert c.shape == (M, N) and c.dtype == dtype and c.is_contiguous()
    assert _rel_err(c, a, b) < _tol(dtype)


@pytest.mark.parametrize("plan", [plans.Plan("cooperative", plans.coop.SMALL),
                                  plans.Plan("pingpong", plans.pingpong.LARGE),
                                  plans.Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=3)),
                                  plans.Plan("dualk", plans.dualk.DEFAULT)],
                         ids=lambda p: p.kernel)
def test_every_variant_on_a_ragged_shape(plan):
    a, b = _operands(100, 70, 200, torch.float16, True)
    c = gemm.run_plan(plan, a, b, torch.float16)
    assert c.shape == (100, 70) and c.is_contiguous() and _rel_err(c, a, b) < 2e-3


def test_forced_split_k_with_one_k_step_runs_the_cooperative_kernel():
    """A split-K plan on a K of one BK step has one slice: it runs as the cooperative kernel (the split-K
    kernel would add into a C that nobody zeroed)."""
    a, b = _operands(1, 1, 2, torch.bfloat16, False)
    plan = plans.Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=3))
    assert plans.adapt(plan, 2, 2, 2).kernel == "cooperative"
    for out_dtype in (torch.bfloat16, torch.float32):
        c = gemm.run_plan(plan, a, b, out_dtype)
        assert c.shape == (1, 1) and c.dtype == out_dtype and _rel_err(c, a, b) < 1e-2


def test_a_layout_seen_before_reuses_its_call():
    a, b = _operands(30, 20, 10, torch.float16, False)
    gemm._calls.clear()
    first = matmul(a, b)
    assert len(gemm._calls) == 1
    a2, b2 = _operands(30, 20, 10, torch.float16, True)
    b2 = b2.contiguous()
    second = matmul(a2, b2)  # same shapes and strides, new tensors: the same Call
    assert len(gemm._calls) == 1
    assert _rel_err(first, a, b) < 2e-3 and _rel_err(second, a2, b2) < 2e-3
    matmul(a, b.t().contiguous().t())  # another layout of B: another entry
    assert len(gemm._calls) == 2


@pytest.mark.parametrize("split", [2, 4, 9])  # 9 slices asked, 7 steps of K: 7 non-empty slices
def test_split_k_sums_every_slice_in_fp32(split):
    a, b = _operands(130, 40, 7 * 32 - 5, torch.bfloat16, False)
    cfg = WSConfig(BM=128, BN=32, BK=32, NUM_STAGES=2, EPILOGUE_SUBTILES=2, SPLIT_K=split)
    c = splitk.matmul(a, b, cfg, num_sms=3, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and c.shape == (130, 40)
    # fp32 result: only the fp32 summation order differs from float64
    assert _rel_err(c[:, :40], a, b) < 1e-5


def test_out_dtype_float32_and_empty_problems():
    a, b = _operands(20, 24, 16, torch.float16, False)
    c = matmul(a, b, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and _rel_err(c, a, b) < 1e-5
    assert matmul(a[:0], b).shape == (0, 24)
    z = matmul(a[:, :0], b[:0])
    assert z.shape == (20, 24) and not z.any()


def test_gradcheck_float64():
    """float64 operands through the kernels (interpreter only); the accumulator is fp32, so the
    numerical Jacobian uses eps 1e-3 and tolerances fp32 rounding allows."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(matmul, (a, b), eps=1e-3, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (128, 128, 128)])
def test_float64_through_each_kernel_the_heuristic_would_pick(M, N, K):
    """float64 takes the TMA kernels (the pointer kernel's dot has no float64 form) and accumulates in fp32:
    16^3 (the small path for fp16) gave errors of 1e285, 128^3 raised an fp64 accumulator error."""
    a, b = _operands(M, N, K, torch.float64, False)
    c = matmul(a, b)
    assert c.dtype == torch.float64 and _rel_err(c, a, b) < 1e-6
    assert gemm.select_plan(a, b, torch.float64).kernel != "small"


def test_gradcheck_float64_with_even_dimensions():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(4, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(2, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(matmul, (a, b), eps=1e-3, atol=1e-4, rtol=1e-3)


def test_out_dtype_is_checked_as_on_a_gpu():
    """The interpreter's only extra is float64 inputs with a float64 result: fp16 inputs do not get a
    float64 result a GPU would refuse, and out_dtype is a torch.dtype, not its name."""
    a, b = _operands(4, 4, 8, torch.float16, False)
    with pytest.raises(TypeError, match=r"out_dtype torch.float64 is not supported with torch.float16 inputs; use "
                       r"torch.float16, torch.bfloat16 or torch.float32 \(torch.float64 needs float64 inputs\)"):
        matmul(a, b, torch.float64)
    for x in (a, a.clone().requires_grad_()):  # the direct call and the dispatcher
        with pytest.raises(TypeError, match=r"out_dtype must be a torch.dtype .* got the str 'float32'"):
            matmul(x, b, "float32")
    with pytest.raises(TypeError, match=r"float64 inputs \(interpreter only\) give a float64 result"):
        matmul(a.double(), b.double(), torch.float32)
    assert matmul(a.double(), b.double(), torch.float64).dtype == torch.float64


def test_backward_and_torch_compile_fullgraph():
    a, b = _operands(24, 16, 8, torch.float16, False)
    a.requires_grad_(True)
    b.requires_grad_(True)

    def f(x, y):
        return (matmul(x, y, out_dtype=torch.float32) ** 2).sum()

    torch._dynamo.reset()
    loss = torch.compile(f, fullgraph=True, backend="aot_eager")(a, b)
    loss.backward()
    ref_a, ref_b = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ((ref_a @ ref_b) ** 2).sum().backward()
    assert abs(loss.item() - ((ref_a @ ref_b) ** 2).sum().item()) / loss.item() < 2e-3
    for got, want in ((a.grad, ref_a.grad), (b.grad, ref_b.grad)):
        assert got.dtype == torch.float16 and ((got.double() - want).norm() / want.norm()).item() < 5e-3
    torch._dynamo.reset()


def test_eager_calls_skip_the_dispatcher_only_when_nothing_observes_them():
    from torch._subclasses.fake_tensor import FakeTensorMode
    a, b = _operands(8, 8, 8, torch.float16, False)
    assert registration.direct_ok(a, b)
    assert not registration.direct_ok(a.clone().requires_grad_(), b)
    with torch.no_grad():
        assert registration.direct_ok(a.clone().requires_grad_(), b)
    with FakeTensorMode() as mode:
        fa, fb = mode.from_tensor(a), mode.from_tensor(b)
        assert not registration.direct_ok(fa, fb)
        assert matmul(fa, fb).shape == (8, 8)  # through the op's fake implementation
    assert not registration.direct_ok(a.to("meta"), b.to("meta"))
    # vmap over the op: functorch-wrapped tensors go through the dispatcher (batched by its fallback)
    batch = torch.stack([a, 2 * a])
    out = torch.vmap(lambda x: matmul(x, b, out_dtype=torch.float32))(batch)
    assert out.shape == (2, 8, 8) and _rel_err(out[1], 2 * a, b) < 1e-5


def _sweep_module(monkeypatch):
    """scripts/gpu_gemm_sweep.py imported by name (its worker processes import it the same way), on the CPU."""
    import importlib
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "scripts"))
    module = importlib.import_module("gpu_gemm_sweep")
    monkeypatch.setattr(module, "DEVICE", "cpu")
    return module


def test_gpu_sweep_worker_checks_the_op_and_forced_plans(monkeypatch):
    """scripts/gpu_gemm_sweep.py's phase-1 job on the interpreter: the op on K = 1 with B transposed and a
    float32 output, and a forced split-K plan on 1x1x2 (the two GPU failures this fixes)."""
    sweep = _sweep_module(monkeypatch)
    r = sweep.worker_job({"kind": "check", "plan": None, "dtype": "fp16",
                          "problems": [(30, 200, 1, True, None), (20, 24, 16, False, "fp32")]})
    assert [x["ok"] for x in r["results"]] == [True, True] and r["results"][1]["out"] == "torch.float32"
    forced = plans.Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=3)).to_json()
    r = sweep.worker_job({"kind": "check", "plan": forced, "dtype": "bf16", "problems": [(1, 1, 2, False, None)]})
    assert r["results"][0]["ok"], r
    # a plan that cannot run is reported, not raised
    bad = plans.Plan("pingpong", replace(plans.pingpong.SMALL, BM=48)).to_json()
    r = sweep.worker_job({"kind": "compile", "plan": bad, "dtype": "fp16", "problems": [(64, 64, 64, False, None)]})
    assert not r["results"][0]["ok"] and r["results"][0]["error"]


def test_gpu_sweep_times_a_shape_and_picks_the_fastest(monkeypatch):
    """time_shape with made-up timings: every candidate is checked against float64, one marked broken
    in phase 1 is left out, the fastest candidate is reported with its ratio to cuBLAS."""
    import json
    sweep = _sweep_module(monkeypatch)
    cands = plans.sweep_candidates(64, 48, 64, 4)
    fastest, broken = cands[2], cands[1]
    ran = {}
    real_run_plan = gemm.run_plan

    def run_plan(plan, a, b, out_dtype):
        ran["plan"] = plan
        return real_run_plan(plan, a, b, out_dtype)

    def bench(fn, rep_ms):
        ran.clear()
        fn()
        return 0.5 if ran.get("plan") == fastest else 2.0

    monkeypatch.setattr(gemm, "run_plan", run_plan)
    name = json.dumps(broken.to_json())
    row = sweep.time_shape(64, 48, 64, "fp16", 4, 100.0, 20, {(name, "fp16")}, bench=bench,
                           graph_bench=lambda fn, rep_ms: 0.25)
    assert all(c["ok"] for n, c in row["checks"].items() if n != name) and len(row["checks"]) == len(cands) + 3
    assert row["checks"][name] == {"ok": False, "error": "failed in phase 1"} and name not in row["eager_ms"]
    assert row["best_eager"] == fastest.to_json() and row["best_eager_ratio"] == 4.0
    assert row["graph_ms"] == {} and "| 64x48x64 | fp16 | small |" in sweep.summary([row])


def test_gpu_sweep_workers_survive_a_job_that_hangs(monkeypatch):
    """Phase 1 in spawned workers: a job over its time limit (here 4096x4096x1024 on the interpreter, minutes
    against a 20 s limit, as a hung kernel would be; 1024^3 finished within 20 s on a quiet host) has its
    worker killed and its plan kept out of the timing phase; the other jobs still report."""
    monkeypatch.setenv("TRITIUM_SWEEP_DEVICE", "cpu")
    sweep = _sweep_module(monkeypatch)
    quick = plans.Plan("small", plans.SMALL_TILE).to_json()
    slow = plans.Plan("pingpong", plans.pingpong.SMALL).to_json()
    jobs = [{"kind": "compile", "plan": slow, "dtype": "fp16", "problems": [(4096, 4096, 1024, False, None)]},
            {"kind": "check", "plan": quick, "dtype": "fp16", "problems": [(16, 16, 16, False, None)]}]
    import time
    results, broken = sweep.run_phase1(jobs, workers=2, deadline=time.perf_counter() + 240, job_timeout=0,
                                       per_problem=20)
    assert results[1]["results"][0]["ok"], results
    assert "timeout" in results[0]["results"][0]["error"], results
    import json
    assert broken == {(json.dumps(slow), "fp16")}


def test_gpu_sweep_end_to_end(monkeypatch, tmp_path, capsys):
    """The whole script on one tiny shape: phase 1 in two spawned workers (ragged shapes cut to two
    small ones to keep the interpreter quick), the timing phase with made-up times, the JSON and the
    summary."""
    import json
    monkeypatch.setenv("TRITIUM_SWEEP_DEVICE", "cpu")
    sweep = _sweep_module(monkeypatch)
    monkeypatch.setattr(sweep, "RAGGED", [(1, 1, 2), (30, 20, 1)])
    monkeypatch.setattr(sweep, "FP32_OUT", (20, 24, 16))
    monkeypatch.setattr(sweep, "_do_bench", lambda fn, rep_ms: (fn(), 1.0)[1])
    out = tmp_path / "sweep.json"
    assert sweep.main(["--out", str(out), "--shapes", "64x48x64", "--dtypes", "fp16", "--workers", "2",
                       "--budget-s", "500", "--rep-ms", "20"]) == 0
    report = json.loads(out.read_text())
    jobs = sweep.phase1_jobs([(64, 48, 64)], ["fp16"], 4)
    assert len(report["phase1"]) == len(jobs) and report["phase1_failures"] == [], report["phase1_failures"]
    (row, ) = report["shapes"]
    assert row["shape"] == "64x48x64" and row["best_eager"] is not None and row["op_eager_ratio"] == 1.0
    assert all(c["ok"] for c in row["checks"].values()) and report["skipped"] == []
    assert "| 64x48x64 | fp16 | small |" in capsys.readouterr().out


def _fp8_problem(M, N, K, rows, cols, b_column_major):
    gen = torch.Generator().manual_seed(M * 31 + N * 7 + K)
    a = torch.randn(M, K, generator=gen).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, generator=gen).to(torch.float8_e4m3fn).t() if b_column_major
         else torch.randn(K, N, generator=gen).to(torch.float8_e4m3fn))
    sa = torch.rand(M, 1, generator=gen) + 0.5 if rows else torch.tensor(0.25)
    sb = torch.rand(1, N, generator=gen) + 0.5 if cols else torch.tensor([3.0])
    return a, b, sa, sb


@pytest.mark.parametrize("M,N,K,rows,cols,b_column_major,out_dtype", [
    (70, 40, 96, True, True, True, torch.bfloat16),  # per-row/column scales, B read in place
    (33, 17, 45, False, False, False, torch.float16),  # per-tensor, odd K and N: both operands copied
    (130, 24, 200, True, False, True, torch.bfloat16),  # mixed kinds; two row tiles
    (1, 1, 1, False, True, False, torch.bfloat16),
])
def test_scaled_matmul_matches_the_dequantised_fp32_reference(M, N, K, rows, cols, b_column_major, out_dtype):
    from tritium.ops import scaled_matmul
    a, b, sa, sb = _fp8_problem(M, N, K, rows, cols, b_column_major)
    c = scaled_matmul(a, b, sa, sb, out_dtype=out_dtype)
    ref = (a.float() @ b.float()) * sa * sb
    assert c.shape == (M, N) and c.dtype == out_dtype and c.is_contiguous()
    assert ((c.float() - ref).norm() / ref.norm()).item() <= 2e-2


def test_scaled_matmul_strided_scales_no_backward_and_empty_problems():
    from tritium.ops import scaled_matmul
    a, b, sa, sb = _fp8_problem(20, 24, 32, True, True, True)
    wide = torch.rand(20, 3) + 0.5  # scale_a a strided column of a wider tensor: copied to unit stride
    c = torch.ops.tritium.scaled_matmul(a, b, wide[:, 1:2], sb)
    ref = (a.float() @ b.float()) * wide[:, 1:2] * sb
    assert ((c.float() - ref).norm() / ref.norm()).item() <= 2e-2
    a.requires_grad_(True)
    out = scaled_matmul(a, b, sa, sb)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="tritium.ops.scaled_matmul has no backward"):
        out.float().sum().backward()
    with pytest.raises(ValueError, match=r"scale_b has shape \(24, 1\); it must have one element"):
        scaled_matmul(a.detach(), b, sa, sb.t())  # the real implementation's checks, as the fake's
    assert scaled_matmul(a[:0].detach(), b, sa[:0], sb).shape == (0, 24)
    z = scaled_matmul(a[:, :0].detach(), b[:0], sa, sb, torch.float16)
    assert z.shape == (20, 24) and z.dtype == torch.float16 and not z.any()


def test_a_cluster_plan_runs_as_one_cta_programs_under_the_interpreter():
    """The interpreter runs clusters of one CTA, so a plan whose CTAs would share B in pairs runs unpaired."""
    from tritium.ops.launch import call_for
    assert plans.LARGE_PLAN.config.CLUSTER == 2
    a, b = _operands(300, 260, 96, torch.float16, False)
    call = call_for(plans.LARGE_PLAN, a, b, torch.float16)
    assert call.plan.config.CLUSTER == 1
    assert _rel_err(call(a, b), a, b) < 1e-2
