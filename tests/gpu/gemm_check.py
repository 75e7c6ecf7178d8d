"""What every GPU GEMM test checks: fresh random fp16 data, torch fp32 reference, every element written."""
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def hopper_only():
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (sm_90)")


def check_gemm(matmul, M: int, N: int, K: int, *args) -> None:
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=gen)
    c = matmul(a, b, *args)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert c.shape == (M, N) and torch.isfinite(c).all()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 2e-3, f"relative error {err:.2e}"
