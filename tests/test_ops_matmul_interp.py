"""tritium.ops.matmul through the kernels on the CPU interpreter (run by test_ops_matmul.py in a
TRITON_INTERPRET=1 process): ragged shapes, both layouts of B, K = 1, 1x1x1, bf16, each kernel the
heuristic can pick, split-K numerics, autograd (gradcheck in float64) and torch.compile."""
import os

import pytest

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs TRITON_INTERPRET=1 before triton is imported; test_ops_matmul.py runs this module "
                "in such a process", allow_module_level=True)

import torch  # noqa: E402

from tritium.kernels import gemm_splitk_hopper as splitk  # noqa: E402
from tritium.ops import gemm, plans  # noqa: E402
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
                                  plans.Plan("splitk", splitk.DEFAULT._replace(SPLIT_K=3))],
                         ids=lambda p: p.kernel)
def test_every_variant_on_a_ragged_shape(plan):
    a, b = _operands(100, 70, 200, torch.float16, True)
    c = gemm.run_plan(plan, a, b, torch.float16)
    assert c.shape == (100, 70) and c.is_contiguous() and _rel_err(c, a, b) < 2e-3


@pytest.mark.parametrize("split", [2, 4, 9])  # 9 slices asked, 7 steps of K: 7 non-empty slices
def test_split_k_sums_every_slice_in_fp32(split):
    a, b = _operands(130, 40, 7 * 32 - 5, torch.bfloat16, False)
    cfg = splitk.Config(128, 32, 32, 8, 2, 2, 232, split)
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
    assert gemm.direct_ok(a, b)
    assert not gemm.direct_ok(a.clone().requires_grad_(), b)
    with torch.no_grad():
        assert gemm.direct_ok(a.clone().requires_grad_(), b)
    with FakeTensorMode() as mode:
        fa, fb = mode.from_tensor(a), mode.from_tensor(b)
        assert not gemm.direct_ok(fa, fb)
        assert matmul(fa, fb).shape == (8, 8)  # through the op's fake implementation
    assert not gemm.direct_ok(a.to("meta"), b.to("meta"))
    # vmap over the op: functorch-wrapped tensors go through the dispatcher (batched by its fallback)
    batch = torch.stack([a, 2 * a])
    out = torch.vmap(lambda x: matmul(x, b, out_dtype=torch.float32))(batch)
    assert out.shape == (2, 8, 8) and _rel_err(out[1], 2 * a, b) < 1e-5
