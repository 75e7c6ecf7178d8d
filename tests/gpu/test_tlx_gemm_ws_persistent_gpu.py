"""The cooperative, ping-pong and dual-K persistent WS GEMMs on a real GPU: fresh random fp16 and bf16
data, square, skinny and ragged shapes, against torch fp32."""
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import gemm_ws_cooperative_hopper as coop  # noqa: E402
from tritium.kernels import gemm_ws_dualk_hopper as dualk  # noqa: E402
from tritium.kernels import gemm_ws_pingpong_hopper as pingpong  # noqa: E402
from tritium.kernels.tiles import WSConfig  # noqa: E402

from gemm_check import check_gemm, hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

DESIGNS = {"cooperative": coop, "pingpong": pingpong, "dualk": dualk}
# Square (each config's own pick: LARGE, or SMALL when the large tiles cannot fill the SMs), ragged in
# every dimension, a K smaller than one BK step, and the skinny 128-row shape.
SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (1000, 1000, 1000), (4097, 4095, 513), (1, 1, 1),
          (100, 70, 90), (129, 257, 65), (128, 13312, 4096)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("design", DESIGNS)
def test_matches_torch(design, M, N, K, dtype):
    check_gemm(DESIGNS[design].matmul, M, N, K, dtype=dtype)


# Other points of each design's space, fp16 only: the other tile, no register reallocation, a single
# epilogue store, the shallowest ring, one tile group.
VARIANTS = {
    "coop-128x128-noregs": (coop, replace(coop.SMALL, NUM_REGS=None)),
    "coop-128x256-2stores-3st": (coop, WSConfig(BM=128, BN=256, NUM_STAGES=3, EPILOGUE_SUBTILES=2)),
    "coop-128x128-2st-g1": (coop, WSConfig(BM=128, BN=128, GROUP_SIZE_M=1, NUM_STAGES=2, EPILOGUE_SUBTILES=1)),
    "pingpong-64x128": (pingpong, pingpong.SMALL),
    "pingpong-128x128-noregs": (pingpong, replace(pingpong.LARGE, NUM_REGS=None)),
    "pingpong-128x128-2st-1store-g1": (pingpong, WSConfig(BM=128, BN=128, GROUP_SIZE_M=1, NUM_STAGES=2,
                                                          EPILOGUE_SUBTILES=1)),
    "dualk-64x64-4st-1store": (dualk, WSConfig(BM=64, BN=64, NUM_STAGES=4, EPILOGUE_SUBTILES=1)),
    "dualk-64x128-noregs": (dualk, WSConfig(BM=64, BN=128, NUM_STAGES=6, EPILOGUE_SUBTILES=2, NUM_REGS=None)),
}


@pytest.mark.parametrize("M,N,K", [(1000, 1000, 1000), (4097, 4095, 513), (2048, 2048, 2048)])
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_torch(variant, M, N, K):
    module, cfg = VARIANTS[variant]
    check_gemm(module.matmul, M, N, K, cfg)
