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
    with pytest.raises(SystemExit, match=r"unknown --only words \['fp8'\]; use ws, fp16, bf16, quick"):
        gemm.main("unused", "ws fp8")
