"""torch.compile with tritium.ops.use_kernels on a GPU: in a bf16 transformer block, Inductor's output code
calls tritium's GEMM where the plan rates it at least as fast as cuBLAS (the small block) and tritium's
attention where it measured at least SDPA's speed (the long block), and the output matches the switch-off
compilation. Speed: ``tritium bench inductor`` (docs/benchmarks.md)."""
import pytest

torch = pytest.importorskip("torch")

from tritium.bench.inductor import SIZES, compiled_run, make_block  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("size,expected", [(SIZES[0], "torch.ops.tritium.matmul"),
                                           (SIZES[1], "torch.ops.tritium.attention")], ids=lambda s: str(s)[:12])
def test_transformer_block_runs_tritiums_ops_where_the_plan_says(size, expected):
    block = make_block(size)
    x = torch.randn(size.batch, size.seq, size.hidden, device="cuda", dtype=torch.bfloat16)
    off, off_code, _ = compiled_run(block, x, kernels=False)
    on, on_code, _ = compiled_run(block, x, kernels=True)
    assert "torch.ops.tritium" not in off_code
    assert expected in on_code, on_code[:4000]
    err = ((on.float() - off.float()).norm() / off.float().norm()).item()
    assert err < 2e-2, err
    if size.name == "long":  # its GEMMs are large: cuBLAS keeps them
        assert "torch.ops.tritium.matmul" not in on_code
    else:  # attention over 256 tokens stays SDPA's
        assert "torch.ops.tritium.attention" not in on_code
