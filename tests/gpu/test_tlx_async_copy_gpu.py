"""TLX async copies on the GPU: the unaligned case the compiler cannot prove (the synchronous fallback)
and the aligned asynchronous path, against torch."""
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
from unaligned_gemm import matmul  # noqa: E402

from tritium.tlx.copy_fallback import AsyncCopyFallbackWarning, forget_warnings  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("M,N,K,falls_back", [(1000, 1000, 1000, True), (1024, 1024, 1024, False),
                                              (1000, 1008, 1016, True), (129, 257, 65, True)])
def test_unaligned_gemm_matches_torch(M, N, K, falls_back):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the kernel uses wgmma (sm_90)")
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    forget_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = matmul(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
    fell_back = any(issubclass(w.category, AsyncCopyFallbackWarning) for w in caught)
    assert fell_back == falls_back
