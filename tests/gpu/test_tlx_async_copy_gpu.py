"""TLX async copies on the GPU: the unaligned case the compiler cannot prove (the synchronous fallback),
the aligned asynchronous path, bulk copies on an mbarrier, wait groups and prefetch, against torch."""
import sys
import warnings
from pathlib import Path

import pytest
import triton

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
from async_copy_kernels import (bulk_kernel, copy_kernel, matmul, prefetch_kernel, token_from_either_branch,  # noqa: E402
                                two_groups_kernel, unaligned_gemm)

from tritium.tlx.copy_fallback import AsyncCopyFallbackWarning, forget_warnings  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("M,N,K,falls_back", [(1000, 1000, 1000, True), (1024, 1024, 1024, False),
                                              (1000, 1008, 1016, True), (129, 257, 65, True)])
def test_unaligned_gemm_matches_torch(M, N, K, falls_back, monkeypatch):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the kernel uses wgmma (sm_90)")
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    forget_warnings()
    # The warning comes from the compile: cases sharing a specialization (Triton specializes integers
    # only on divisibility by 16) must not reuse a binary, from memory or from disk.
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = matmul(a, b, kernel=triton.jit(unaligned_gemm.fn))
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
    fell_back = any(issubclass(w.category, AsyncCopyFallbackWarning) for w in caught)
    assert fell_back == falls_back


def _hopper():
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("needs sm_90")


@pytest.mark.parametrize("n, stride, other", [(64, 64, 0), (37, 80, 0), (37, 80, 3.0), (64, 72, 0), (50, 1000, 0)])
def test_copy_kernel_masks_and_strides(n, stride, other):
    """Aligned rows stay asynchronous; odd strides or mask edges and a non-zero `other` go synchronous."""
    x = torch.randn(32, stride, device="cuda", dtype=torch.float16)
    y = torch.full((32, 64), -7.0, device="cuda", dtype=torch.float16)
    copy_kernel[(1, )](x, y, n, x.stride(0), OTHER=other, BM=32, BK=64)
    torch.cuda.synchronize()
    assert torch.equal(y[:, :n], x[:, :n]) and (y[:, n:] == other).all()


def test_two_groups_land_in_order():
    x = torch.randn(2 * 32 * 64, device="cuda", dtype=torch.float16)
    y = torch.zeros_like(x)
    two_groups_kernel[(1, )](x, y, BM=32, BK=64)
    torch.cuda.synchronize()
    assert torch.equal(x, y)


@pytest.mark.parametrize("size, bulk_size", [(256, 256), (1024, 1024), (1024, 512)])
def test_bulk_copy_lands_on_the_barrier(size, bulk_size):
    _hopper()
    x = torch.randint(0, 256, (size, ), device="cuda", dtype=torch.uint8)
    y = torch.zeros_like(x)
    k = bulk_kernel[(1, )](x, y, SIZE=size, BULK_SIZE=bulk_size, num_warps=1)
    torch.cuda.synchronize()
    assert "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes" in k.asm["ptx"]
    assert torch.equal(y[:bulk_size], x[:bulk_size]) and (y[bulk_size:] == 0).all()


@pytest.mark.parametrize("level", ["L1", "L2"])
@pytest.mark.parametrize("masked", [False, True])
def test_prefetch_then_load(level, masked):
    x = torch.randn(100, device="cuda")
    y = torch.zeros_like(x)
    k = prefetch_kernel[(1, )](x, y, 100, LEVEL=level, MASKED=masked)
    torch.cuda.synchronize()
    assert f"prefetch.global.{level}" in k.asm["ptx"] and torch.equal(x, y)


@pytest.mark.parametrize("cond,source", [(1, "x"), (0, "y")])
def test_a_token_from_either_branch(cond, source):
    x, y = torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
    out = torch.zeros(128, device="cuda")
    token_from_either_branch[(1, )](x, y, out, cond)
    torch.cuda.synchronize()
    assert torch.equal(out, {"x": x, "y": y}[source])
