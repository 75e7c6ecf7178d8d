"""tritium.ops.scaled_matmul on the CPU without the interpreter: argument errors (the real and the fake
implementation), torch.compile tracing through the fake, the FP8 plans, and the kernel compiled for sm_90
(e4m3 wgmma, B K-major); the numerics run under the interpreter in test_ops_matmul_interp.py."""
import re

import pytest

torch = pytest.importorskip("torch")

from tritium.ops import plans, scaled_matmul  # noqa: E402

FP8 = torch.float8_e4m3fn


def _meta(*shape, dtype=FP8):
    return torch.empty(*shape, dtype=dtype, device="meta")


_S = _meta(1, dtype=torch.float32)


@pytest.mark.parametrize("args,exc,message", [
    ((_meta(4, 3, dtype=torch.float16), _meta(3, 5), _S, _S), TypeError, r"a has dtype torch.float16; supported: "
     r"float8_e4m3fn"),
    ((_meta(4, 3), _meta(3, 5, dtype=torch.float8_e5m2), _S, _S), TypeError, r"b has dtype torch.float8_e5m2"),
    ((_meta(4, 3), _meta(4, 5), _S, _S), ValueError, r"a is 4x3 and b is 4x5: a's columns \(K=3\) must equal b's rows"),
    ((_meta(4, 3, 1), _meta(3, 5), _S, _S), ValueError, r"a must be a 2-D matrix"),
    ((_meta(4, 3), _meta(3, 5), _meta(1, dtype=torch.bfloat16), _S), TypeError,
     r"scale_a has dtype torch.bfloat16; scales must be float32"),
    ((_meta(4, 3), _meta(3, 5), _S, _meta(5, 1, dtype=torch.float32)), ValueError,
     r"scale_b has shape \(5, 1\); it must have one element \(per-tensor\) or shape \[1, 5\] \(per-column\)"),
    ((_meta(4, 3), _meta(3, 5), _meta(4, dtype=torch.float32), _S), ValueError,
     r"scale_a has shape \(4,\); it must have one element \(per-tensor\) or shape \[4, 1\] \(per-row\)"),
    ((_meta(4, 3), _meta(3, 5), 2.0, _S), TypeError, r"scale_a must be a float32 tensor, got the float 2.0"),
    ((_meta(4, 3), _meta(3, 5), _S, torch.ones(1)), ValueError, r"scale_b is on cpu but a is on meta"),
    ((torch.zeros(4, 3).to(FP8), torch.zeros(3, 5).to(FP8), torch.ones(1), torch.ones(1)), ValueError,
     r"a is a CPU tensor; the kernels run on CUDA devices, or on the CPU only under TRITON_INTERPRET=1"),
])
def test_bad_input_names_the_argument(args, exc, message):
    with pytest.raises(exc, match=r"tritium\.ops\.scaled_matmul: " + message):
        scaled_matmul(*args)


def test_out_dtype_is_checked_before_and_after_the_dispatcher():
    for out_dtype, message in ((torch.float32, r"out_dtype torch.float32 is not supported; use torch.bfloat16 or "
                                "torch.float16"), ("bf16", r"out_dtype must be a torch.dtype .* got the str 'bf16'")):
        with pytest.raises(TypeError, match=message):
            scaled_matmul(_meta(4, 3), _meta(3, 5), _S, _S, out_dtype)
    with pytest.raises(TypeError, match=r"out_dtype torch.float32 is not supported"):
        torch.ops.tritium.scaled_matmul(_meta(4, 3), _meta(3, 5), _S, _S, torch.float32)


def test_fake_under_torch_compile_and_opcheck():
    """Dynamo traces the op through its fake implementation with no graph break; a scale error surfaces
    while tracing."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b, sa, sb):
        return scaled_matmul(a, b, sa, sb, out_dtype=torch.float16) * 2

    torch._dynamo.reset()
    out = torch.compile(f, fullgraph=True, backend=backend)(_meta(6, 32), _meta(32, 5), _meta(6, 1, dtype=torch.float32),
                                                            _S)
    assert out.shape == (6, 5) and out.dtype == torch.float16 and len(graphs) == 1
    assert torch.ops.tritium.scaled_matmul in [n.target for n in graphs[0].graph.nodes]
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"scale_a has shape \(7, 1\)"):
        torch.compile(f, fullgraph=True, backend=backend)(_meta(6, 32), _meta(32, 5), _meta(7, 1, dtype=torch.float32),
                                                          _S)
    torch._dynamo.reset()
    torch.library.opcheck(torch.ops.tritium.scaled_matmul.default, (_meta(6, 32), _meta(32, 5), _S, _S),
                          test_utils=("test_schema", "test_faketensor"))
    assert scaled_matmul(_meta(6, 32), _meta(32, 5), _S, _S, None).dtype == torch.bfloat16


def test_fp8_plans_per_shape_class():
    sms = 132
    assert plans.choose_fp8(8192, 8192, 8192, sms) == plans.FP8_PLANS["large"]
    assert plans.choose_fp8(128, 13312, 16384, sms) == plans.FP8_PLANS["mid"]  # 104 tiles of 128x128
    assert plans.choose_fp8(1024, 1024, 1024, sms) == plans.FP8_PLANS["few"]
    assert len(set(plans.FP8_SWEEP)) == len(plans.FP8_SWEEP)
    for plan in plans.FP8_SWEEP:
        cfg = plan.config
        assert plan.kernel == "fp8" and cfg.BK == 128 and cfg.BM >= 128, plan
        assert plans.shared_bytes(plan, 1, 2) <= plans.SHARED_LIMIT and plans.fit(plan, 1, 2) == plan, plan


def test_kernel_compiles_to_e4m3_wgmma_with_b_k_major():
    """sm_90: the e4m3 wgmma (B read K-major, no transposed-B flag it would refuse), TMA loads of 128-byte
    K steps, the scale vectors' loads in the epilogue, and no spills."""
    import triton
    from triton.backends.compiler import GPUTarget

    from tritium.kernels import gemm_fp8_hopper as fp8
    from tritium.plugins.inspection import make_source
    from tritium.tlx import triton_compat
    cfg = fp8.SMALL
    a, b, c = fp8.descriptor_blocks(cfg)
    sig = {"a_desc": f"tensordesc<fp8e4nv{a}>", "b_desc": f"tensordesc<fp8e4nv{b}>", "c_desc": f"tensordesc<bf16{c}>",
           "M": "i32", "N": "i32", "K": "i32", "scale_a_ptr": "*fp32", "scale_b_ptr": "*fp32"}
    consts = {**fp8.constexprs(cfg), "ROW_SCALES": True, "COL_SCALES": True}
    sig.update({k: "constexpr" for k in consts})
    k = triton.compile(make_source(fp8.matmul_kernel_fp8, sig, consts), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    ptx = k.asm["ptx"]
    assert set(re.findall(r"wgmma\.mma_async\.\S+", ptx)) == {"wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"}
    assert triton_compat.ptx_tma_load(2) in ptx and ".local" not in ptx
    assert k.metadata.shared <= 232448 and k.metadata.num_warps == 12
    assert "ttg.memdesc_trans" in k.asm["ttgir"] and "ld.global" in ptx  # B transposed in shared; scale loads


def test_gpu_script_picks_the_best_fp8_plan_per_class():
    """scripts/gpu_gemm19.py's per-class pick on made-up timings: the sweep plan with the best geometric mean
    of its ratios to torch._scaled_mm over the class's shapes."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "scripts" / "gpu_gemm19.py"
    spec = importlib.util.spec_from_file_location("gpu_gemm19", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    p, q = (json_plan(plans.FP8_SWEEP[i]) for i in (0, 1))
    rows = [{"class": "large", "shape": "s1", "op_eager_ratio": 1.0,
             "eager_tflops": {"torch._scaled_mm": 100.0, p: 200.0, q: 110.0}},
            {"class": "large", "shape": "s2", "op_eager_ratio": 0.25,
             "eager_tflops": {"torch._scaled_mm": 100.0, p: 50.0, q: 110.0}}]
    best = script.best_per_class(rows)["large"]
    assert best["best_plan"] == plans.FP8_SWEEP[1].to_json() and abs(best["best_geomean"] - 1.1) < 1e-9
    assert abs(best["op_geomean"] - 0.5) < 1e-9 and best["shapes"] == ["s1", "s2"]
    assert script.short(plans.FP8_SWEEP[0].to_json()) == "128x256x128 s4 e4 g8"


def json_plan(plan) -> str:
    import json
    return json.dumps(plan.to_json())
