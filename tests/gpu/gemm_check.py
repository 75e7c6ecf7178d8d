"""What every GPU GEMM test checks: fresh random fp16 (or bf16) data, torch fp32 reference, every element written."""
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def hopper_only():
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (sm_90)")


def check_gemm(matmul, M: int, N: int, K: int, *args, dtype=torch.float16) -> None:
    """Relative Frobenius error against fp32 at most what rounding the output to ``dtype`` costs (fp16 2e-3,
    bf16 8 bits of mantissa: 1e-2)."""
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)
    c = matmul(a, b, *args)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert c.shape == (M, N) and c.dtype == dtype and torch.isfinite(c).all()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < (2e-3 if dtype == torch.float16 else 1e-2), f"relative error {err:.2e}"
