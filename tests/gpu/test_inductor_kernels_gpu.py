"""torch.compile with tritium.ops.use_kernels on a GPU: in bf16 transformer blocks, Inductor's output code
calls tritium's attention where it measured at least SDPA's speed (the long block) and leaves the GEMMs to
cuBLAS (no GEMM class measured faster inside a compiled graph: tritium.ops.plans.at_least_cublas), and the
output matches the switch-off compilation. Speed: ``tritium bench inductor`` (docs/benchmarks.md)."""
import pytest

torch = pytest.importorskip("torch")

from tritium.bench.inductor import SIZES, compiled_run, make_block  # noqa: E402

pytestmark = pytest.mark.gpu

MATMUL, ATTENTION = "torch.ops.tritium.matmul", "torch.ops.tritium._attention_inference"


@pytest.mark.parametrize("size,mode,expected", [(SIZES[0], "reduce-overhead", set()), (SIZES[1], "default", {ATTENTION})],
                         ids=lambda s: str(s)[:16])
def test_transformer_blocks_run_tritiums_ops_where_the_plan_says(size, mode, expected):
    model = make_block(size)
    x = torch.randn(size.batch, size.seq, size.hidden, device="cuda", dtype=torch.bfloat16)
    off, off_code, _ = compiled_run(model, x, kernels=False, mode=mode)
    on, on_code, _ = compiled_run(model, x, kernels=True, mode=mode)
    assert "torch.ops.tritium" not in off_code
    assert {name for name in (MATMUL, ATTENTION) if name in on_code} == expected, on_code[:4000]
    err = ((on.float() - off.float()).norm() / off.float().norm()).item()
    assert err < 2e-2, err
