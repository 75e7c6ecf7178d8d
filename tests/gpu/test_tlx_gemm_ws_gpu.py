"""The warp-specialized TLX GEMM on a real GPU: fresh random data, ragged and large shapes, against torch fp32."""
import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import gemm_ws_hopper as ws  # noqa: E402
from tritium.kernels.tiles import WSConfig  # noqa: E402

from gemm_check import check_gemm, hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (100, 70, 90), (129, 257, 65), (1000, 1000, 1000), (333, 4097, 1031), (4096, 4096, 4096),
          (128, 13312, 4096)]
CONFIGS = {"128x256-split": ws.LARGE, "128x128": ws.SMALL,
           "256x128-g1": WSConfig(BM=256, BN=128, GROUP_SIZE_M=1, NUM_STAGES=3, EPILOGUE_SUBTILES=1),
           "128x256-g64-2st": WSConfig(BM=128, BN=256, GROUP_SIZE_M=64, NUM_STAGES=2, EPILOGUE_SUBTILES=1)}


@pytest.mark.parametrize("cfg", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_ws_gemm_matches_torch(M, N, K, cfg):
    check_gemm(ws.matmul, M, N, K, cfg)
