"""The shipped TLX GEMM kernels, run on the CPU interpreter against a float64 reference."""
import pytest
import torch

from interp_shim import require_interpret_mode

require_interpret_mode()

from tritium.kernels import gemm_pipelined_amd as amd  # noqa: E402
from tritium.kernels import gemm_pipelined_hopper as hopper  # noqa: E402

SHAPES = [(64, 128, 64), (100, 70, 90), (128, 256, 200)]  # square-ish, ragged, K not a tile multiple


def check(matmul, M, N, K, **kw):
    torch.manual_seed(M * 1000 + N + K)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = matmul(a, b, **kw)
    ref = a.double() @ b.double()
    err = (c.double() - ref).norm() / ref.norm()
    assert torch.isfinite(c).all() and err < 2e-3, f"{M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_hopper_pipelined_gemm(M, N, K, stages):
    check(hopper.matmul, M, N, K, config=hopper.Config(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32,
                                                    GROUP_SIZE_M=4, NUM_STAGES=stages, num_warps=4))


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_amd_pipelined_gemm(M, N, K, stages):
    check(amd.matmul, M, N, K, config=amd.Config(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=4,
                                              NUM_STAGES=stages, num_warps=4))
