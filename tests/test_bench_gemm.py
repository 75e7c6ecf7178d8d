"""`tritium bench gemm` on the CPU: which implementations and dtypes each --only selects, and the report
(TFLOPS table, ratios against cuBLAS, one plot per dtype) on made-up timings."""
import pytest

torch = pytest.importorskip("torch")

from tritium.bench import gemm  # noqa: E402


def test_only_ws_times_cublas_against_the_three_ws_kernels():
    a = torch.zeros(8, 8, dtype=torch.bfloat16)
    assert list(gemm.implementations(a, a, "ws")) == ["cuBLAS", "TLX WS", "TLX cooperative", "TLX ping-pong"]
    a16 = a.half()
    assert list(gemm.implementations(a16, a16, "all")) == ["cuBLAS", "Triton tl.dot", "TLX pipelined", "TLX WS",
                                                           "TLX cooperative", "TLX ping-pong"]
    assert "TLX pipelined" not in gemm.implementations(a, a, "all")  # it writes fp16 only


def test_report_on_made_up_timings(monkeypatch, tmp_path, capsys):
    calls = []

    def fake_run(shapes, which, dtype):
        calls.append((tuple(shapes), which, dtype))
        names = ["cuBLAS", "TLX WS", "TLX cooperative", "TLX ping-pong"]
        return [{"shape": f"{m}x{n}x{k}", **{name: 100.0 * (1 + i / 10) for i, name in enumerate(names)}}
                for m, n, k in shapes]

    monkeypatch.setattr(gemm, "run", fake_run)
    assert gemm.main(str(tmp_path), "ws quick") == 0
    assert calls == [(tuple(gemm.QUICK_SHAPES), "ws", "fp16"), (tuple(gemm.QUICK_SHAPES), "ws", "bf16")]
    out = capsys.readouterr().out
    assert "| shape | cuBLAS | TLX WS | TLX cooperative | TLX ping-pong | TLX WS/cuBLAS | TLX cooperative/cuBLAS " \
           "| TLX ping-pong/cuBLAS |" in out
    assert "| 4096x4096x4096 | 100.000 | 110.000 | 120.000 | 130.000 | 1.100 | 1.200 | 1.300 |" in out
    assert (tmp_path / "gemm_ws_fp16.png").exists() and (tmp_path / "gemm_ws_bf16.png").exists()


def test_unknown_only_words_are_refused():
    with pytest.raises(SystemExit, match=r"unknown --only words \['fp8'\]; with ws or kernels use fp16, bf16, quick"):
        gemm.main("unused", "ws fp8")
    with pytest.raises(SystemExit, match=r"unknown --only words \['ws2'\]; use fp16, bf16, fp8, quick, seeds"):
        gemm.main("unused", "ws2 quick")


def test_default_suite_selection():
    assert gemm.select_ops(set()) == (gemm.SEED_SHAPES + gemm.SQUARE_SHAPES, ["fp16", "bf16", "fp8"], True)
    assert gemm.select_ops({"fp8", "seeds"}) == (gemm.SEED_SHAPES, ["fp8"], True)
    shapes, dtypes, with_compile = gemm.select_ops({"quick", "bf16", "nocompile", "1000x1000x1000"})
    assert shapes == [(1000, 1000, 1000), *gemm.QUICK_OPS_SHAPES] and dtypes == ["bf16"] and not with_compile
    assert len(gemm.SEED_SHAPES) == 6 and gemm.SQUARE_SHAPES[0] == (256, 256, 256)


def test_default_suite_report_on_made_up_timings(monkeypatch, tmp_path, capsys):
    import json

    def fake_shape(M, N, K, dtype, compiled):
        base = gemm.FP8_BASELINE if dtype == "fp8" else "cuBLAS"
        names = [base, "torch.compile", "tritium"] if dtype == "fp8" else [base, "Triton", "tritium"]
        return {"shape": f"{M}x{N}x{K}", "dtype": dtype, "baseline": base,
                "eager": {n: 100.0 + 10 * i for i, n in enumerate(names)},
                "graph": {n: 200.0 + 10 * i for i, n in enumerate(names)}, "tritium_plan": ["pingpong", [128]]}

    monkeypatch.setattr(gemm, "run_ops_shape", fake_shape)
    monkeypatch.setattr(gemm, "host_cost_us", lambda n: {"torch.matmul": 6.5, "tritium.ops.matmul": n / 256})
    monkeypatch.setattr(gemm, "entry_point_wall_us", lambda: {"torch.matmul": 15.5, "torch._scaled_mm (fp8)": 16.0})
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "FakeGPU")
    assert gemm.main(str(tmp_path), "fp16 fp8 nocompile 128x13312x16384 4096x4096x4096") == 0
    out = capsys.readouterr().out
    assert "| shape | tritium plan | cuBLAS eager | Triton eager | tritium eager | Triton/cuBLAS eager " \
           "| tritium/cuBLAS eager | Triton/cuBLAS graph | tritium/cuBLAS graph |" in out
    assert "| 128x13312x16384 | pingpong | 100.000 | 110.000 | 120.000 | 1.100 | 1.200 | 1.050 | 1.100 |" in out
    assert "tritium/cuBLAS eager geomean over the 1 seed shapes: 1.200" in out
    data = json.loads((tmp_path / "gemm_ops_fp16.json").read_text())
    assert "| tritium.ops.matmul | 1.000 | 8.000 |" in out
    assert data["host_cost_us"]["2048^3"]["torch.matmul"] == 6.5 and len(data["results"]) == 2
    assert data["entry_point_wall_us"]["torch._scaled_mm (fp8)"] == 16.0 and "| torch.matmul | 15.500 |" in out
    assert (tmp_path / "gemm_ops_fp16.png").exists()
    # fp8: the ratios are against torch._scaled_mm
    assert "| shape | tritium plan | torch._scaled_mm eager | torch.compile eager | tritium eager " \
           "| torch.compile/torch._scaled_mm eager | tritium/torch._scaled_mm eager |" in out
    assert "tritium/torch._scaled_mm eager geomean over the 1 seed shapes: 1.200" in out
    assert json.loads((tmp_path / "gemm_ops_fp8.json").read_text())["results"][0]["baseline"] == "torch._scaled_mm"


@pytest.mark.parametrize("bn", [128, 256])
def test_bare_triton_baseline_compiles_for_sm90(bn):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    consts = {"NUM_SMS": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
    sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": f"tensordesc<fp16[64, {bn}]>",
           "c_desc": f"tensordesc<fp16[128, {bn}]>", "M": "i32", "N": "i32", "K": "i32",
           **{k: "constexpr" for k in consts}}
    k = triton.compile(ASTSource(gemm.triton_persistent_tma_kernel.fn, sig, consts),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 3})
    assert "wgmma.mma_async" in k.asm["ptx"] and "cp.async.bulk.tensor.2d" in k.asm["ptx"]
