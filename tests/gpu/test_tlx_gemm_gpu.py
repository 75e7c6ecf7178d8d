"""The TLX GEMMs on a real GPU: fresh random data, ragged and square shapes, against torch in fp32."""
import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import gemm_pipelined_hopper as hopper  # noqa: E402

from gemm_check import check_gemm, hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (100, 70, 90), (129, 257, 65), (1000, 1000, 1000), (333, 4097, 1031), (4096, 4096, 4096),
          (128, 13312, 4096)]


@pytest.mark.parametrize("cfg", [hopper.LARGE, hopper.SMALL], ids=["128x256x64", "64x128x64"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_hopper_pipelined_gemm_matches_torch(M, N, K, cfg):
    check_gemm(hopper.matmul, M, N, K, cfg)
