"""`tritium bench attention` on the CPU: the cases --only selects (GQA's included), --direction, the FLOP counts,
and the report (a table per direction with every SDPA backend as a column, geometric means, plot, JSON) on
made-up timings."""
import json

import pytest

pytest.importorskip("torch")

from tritium.bench import attention as bench  # noqa: E402
from tritium.cli import build_parser  # noqa: E402


def test_selection_and_directions():
    gqa = bench.select("gqa")
    assert gqa and all(c.gqa and c.heads == 32 and c.kv_heads == 8 and c.dtype == "bf16" for c in gqa)
    assert {c.seq for c in gqa} >= {4096} and bench.Case("bf16", 128, True, 4096, True).label == \
        "bf16 d128 causal s4096 gqa 32/8"
    assert [c for c in bench.QUICK if c.gqa] == [bench.Case("bf16", 128, False, 4096, True),
                                                 bench.Case("bf16", 128, True, 4096, True)]
    assert not any(c.gqa for c in bench.select("d64"))
    assert bench.directions("both") == ("fwd", "bwd") and bench.directions("bwd") == ("bwd", )
    with pytest.raises(SystemExit, match=r"--direction must be fwd, bwd or both, got 'back'"):
        bench.directions("back")
    assert build_parser().parse_args(["bench", "attention", "--direction", "bwd"]).direction == "bwd"
    assert build_parser().parse_args(["bench", "attention"]).direction == "both"


def test_the_grid():
    assert build_parser().parse_args(["bench", "attention", "--only", "quick"]).what == "attention"
    assert len(bench.CASES) == 44 and bench.select("") == bench.CASES and len(bench.select("quick")) == 8
    mha = [c for c in bench.CASES if not c.gqa]
    assert len(mha) == 40 and all(c.batch * c.seq == 16384 and c.heads * c.head_dim == 2048 for c in mha)
    picked = bench.select("bf16 d128 causal")
    assert [(c.seq, c.gqa) for c in picked] == [(s, False) for s in bench.SEQS] + [(4096, True), (8192, True)]
    with pytest.raises(SystemExit, match="no case matches --only 'fp8'"):
        bench.select("fp8")


def test_backward_flops_are_two_and_a_half_forwards():
    case = bench.Case("fp16", 128, True, 4096)
    assert case.flops("fwd") == 4.0 * 4 * 16 * 4096 ** 2 * 128 * 0.5 and case.flops("bwd") == 2.5 * case.flops("fwd")


def _made_up(case, dirs):
    r = {**case._asdict(), "batch": case.batch, "heads": case.heads, "kv_heads": case.kv_heads}
    for i, d in enumerate(dirs):
        tflops = {"tritium": 500.0 + i, "SDPA flash": 300.0, "SDPA cudnn": 400.0 + 100 * case.gqa}
        r[d] = bench._summary_of(tflops, {"tritium": {"o": 1e-3}})
    return r


def test_report_on_made_up_timings(tmp_path, capsys):
    cases = [bench.Case("fp16", 128, False, 4096), bench.Case("bf16", 128, True, 4096, True)]
    results = [_made_up(c, bench.DIRECTIONS) for c in cases]
    env = {"gpu": "H200", "torch": "2", "triton": "3"}
    summary = bench.report(results, bench.DIRECTIONS, str(tmp_path), env)
    out = capsys.readouterr().out
    assert "## Flash-attention backward TFLOPS on H200" in out
    assert "| case | B x Hq/Hkv | tritium | SDPA flash | SDPA cudnn | fastest SDPA | tritium / SDPA |" in out
    assert "| fp16 d128 noncausal s4096 | 4 x 16/16 | 500.000 | 300.000 | 400.000 | cudnn | 1.250 |" in out
    assert "| bf16 d128 causal s4096 gqa 32/8 | 4 x 32/8 | 501.000 | 300.000 | 500.000 | cudnn | 1.002 |" in out
    assert summary == {"fwd d128 tritium / SDPA geomean": 1.25, "fwd gqa tritium / SDPA geomean": 1.0,
                       "bwd d128 tritium / SDPA geomean": 501 / 400, "bwd gqa tritium / SDPA geomean": 501 / 500}
    saved = json.loads((tmp_path / "attention.json").read_text())
    assert saved["cases"][1]["bwd"]["sdpa_backend"] == "cudnn" and (tmp_path / "attention.png").exists()


def test_main_on_made_up_timings(tmp_path, monkeypatch, capsys):
    """What runs after minutes of GPU timing (the report of every quick case, both directions) on made-up ones."""
    import torch
    monkeypatch.setattr(bench, "run_case", _made_up)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "fake GPU")
    assert bench.main(str(tmp_path), "quick") == 0
    out = capsys.readouterr().out
    assert "## Flash-attention forward TFLOPS on fake GPU" in out and "fwd d64 tritium / SDPA geomean: 1.250" in out
    saved = json.loads((tmp_path / "attention.json").read_text())
    assert len(saved["cases"]) == 8 and saved["env"]["gpu"] == "fake GPU"
