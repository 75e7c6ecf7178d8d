"""tritium.kernels.TriMul on a Hopper GPU against the fp32 reference (TF32 off): every test case of the
GPU MODE trimul task (docs: targets.md; normal and Cauchy, with and without mask, batch 1 and 2) and the
ranked ones, |y - ref| <= 2e-2 + 2e-2 |ref| with NaN/inf in the same places; an inf in x propagating
like the reference's; torch.compile(fullgraph=True) with inductor."""
import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import TriMul  # noqa: E402
from tritium.kernels.trimul_reference import (RANKED_CASES, TEST_CASES, Case, check_close,  # noqa: E402
                                              make_inputs, reference_model)

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def strict_fp32():
    """The reference in true fp32 (no TF32 matmuls), as the task's checker computes it."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    yield
    torch.backends.cuda.matmul.allow_tf32 = saved[0]
    torch.set_float32_matmul_precision(saved[1])


def _run(case: Case, seed: int, x=None, mask=None):
    ref = reference_model(case, seed, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    if x is None:
        x, mask = make_inputs(case, seed + 1, "cuda")
    with torch.no_grad():
        got = fused(x, mask)
        torch.cuda.synchronize()
        want = ref(x, mask)
    return got, want


@pytest.mark.parametrize("case", TEST_CASES + RANKED_CASES, ids=lambda c: c.label)
def test_matches_the_fp32_reference(case):
    got, want = _run(case, 1234)
    assert got.dtype == torch.float32 and got.shape == want.shape
    assert torch.isfinite(want).all()  # the task's inputs: the reference itself never overflows
    assert check_close(got, want) is None, check_close(got, want)


def test_inf_in_x_spreads_nan_like_the_reference():
    case = Case(64, 2, 128, False, "normal")
    x, mask = make_inputs(case, 7, "cuda")
    x[1, 3, 5, 7] = float("inf")
    got, want = _run(case, 6, x, mask)
    assert (~torch.isfinite(want)).any()
    assert check_close(got, want) is None, check_close(got, want)


def test_torch_compile_fullgraph_inductor():
    case = Case(128, 2, 256, False, "cauchy")
    ref = reference_model(case, 3, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 4, "cuda")
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fused, fullgraph=True)(x, mask)
        want = ref(x, mask)
    torch._dynamo.reset()
    assert check_close(got, want) is None, check_close(got, want)
