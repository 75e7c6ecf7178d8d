"""The TLX GEMMs on a real GPU: fresh random data, ragged and square shapes, against torch in fp32."""
import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import gemm_pipelined_hopper as hopper  # noqa: E402

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (100, 70, 90), (129, 257, 65), (1000, 1000, 1000), (333, 4097, 1031), (4096, 4096, 4096),
          (128, 13312, 4096)]


@pytest.fixture(autouse=True)
def hopper_only():
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (sm_90)")


@pytest.mark.parametrize("cfg", [hopper.LARGE, hopper.SMALL], ids=["128x256x64", "64x128x64"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_hopper_pipelined_gemm_matches_torch(M, N, K, cfg):
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=gen)
    c = hopper.matmul(a, b, cfg)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert torch.isfinite(c).all()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 2e-3, f"relative error {err:.2e}"
