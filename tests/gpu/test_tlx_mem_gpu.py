"""TLX shared-memory views, gather/scatter, explicit layouts, reuse and jit helpers on the GPU.

The kernels are those of tests/tlx/mem_kernels.py, whose codegen test_conformance_mem.py checks on
the CPU and whose numerics test_interpreter_mem.py checks under the interpreter; here they run
against torch on the device.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
from mem_kernels import (  # noqa: E402
    view_single_kernel, view_rows_kernel, reinterpret_kernel, gs_indices, gather_scatter_kernel,
    shared_layouts_kernel, register_layouts_kernel, helpers_kernel, reuse_kernel, alias_kernel,
    alias_expected, returned_buffers_kernel, misc_kernel)

pytestmark = pytest.mark.gpu
CUDA = "cuda"


def test_local_view_of_a_single_buffer():
    x, y, z = (torch.randn(2 * 16 * 32, device=CUDA), torch.empty(16, 32, device=CUDA), torch.empty(1, device=CUDA))
    view_single_kernel[(1, )](x, y, z, R=16, C=32)
    torch.testing.assert_close(y, x.reshape(2, 16, 32)[1])
    torch.testing.assert_close(z, x[3:4])


def test_local_view_rows_of_a_2d_view():
    x, y = torch.randn(16, 32, device=CUDA), torch.empty(32, device=CUDA)
    view_rows_kernel[(1, )](x, y, y, R=16, C=32)
    torch.testing.assert_close(y, x[5])


def test_local_reinterpret_to_other_shapes():
    x = torch.randn(4 * 16 * 32, device=CUDA).half()
    y, z = torch.empty(1, 2048, dtype=torch.int16, device=CUDA), torch.empty(16, 16, device=CUDA)
    reinterpret_kernel[(1, )](x, y, z, R=16, C=32)
    assert torch.equal(y.flatten(), x.view(torch.int16))
    assert torch.equal(z.view(torch.int32), x[512:1024].view(torch.int32).reshape(16, 16))


@pytest.mark.parametrize("axis", [0, 1])
def test_local_gather_scatter(axis):
    x = torch.randn(16, 16, device=CUDA)
    idx = gs_indices(16, 16, axis).to(CUDA)
    g, s = torch.empty_like(x), torch.empty_like(x)
    gather_scatter_kernel[(1, )](x, idx, g, s, R=16, C=16, AXIS=axis)
    torch.testing.assert_close(g, torch.gather(x, axis, idx.long()))
    torch.testing.assert_close(s, torch.zeros_like(x).scatter_(axis, idx.long(), x + 100.0))


@pytest.mark.parametrize("kind", ["swizzled", "cute", "nvmma", "padded", "linear"])
def test_explicit_shared_layouts(kind):
    x = torch.randn(64, 32, device=CUDA).half()
    y = torch.empty_like(x)
    shared_layouts_kernel[(1, )](x, y, R=64, C=32, KIND=kind)
    assert torch.equal(x, y)


def test_explicit_register_layout():
    x = torch.randn(64, 64, device=CUDA).half()
    y = torch.empty_like(x)
    register_layouts_kernel[(1, )](x, y, R=64, C=64, KIND="linear32", num_warps=4)
    assert torch.equal(x, y)


def test_buffers_cross_jit_helpers_and_reuse():
    x, y = torch.randn(16, 32, device=CUDA), torch.empty(16, 32, device=CUDA)
    helpers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 4 * x)
    bits = torch.empty(16, 32, dtype=torch.int32, device=CUDA)
    reuse_kernel[(1, )](x, bits, R=16, C=32)
    assert torch.equal(bits, x.view(torch.int32))


def test_storage_alias_spec():
    out = torch.zeros(5 * 32 * 32, device=CUDA)
    alias_kernel[(1, )](out, B=32)
    p3, alpha2, b0, a1 = (t.to(CUDA) for t in alias_expected())
    torch.testing.assert_close(out[:1024].reshape(32, 32), p3)
    torch.testing.assert_close(out[1024:1536].reshape(32, 16), alpha2)
    torch.testing.assert_close(out[2048:3072].reshape(32, 32), b0)
    torch.testing.assert_close(out[3072:4096].reshape(32, 32), a1)
    torch.testing.assert_close(out[4096:], torch.full((1024, ), 1065353216.0, device=CUDA))


def test_buffers_returned_by_two_helper_calls_stay_apart():
    x, y = torch.randn(16, 32, device=CUDA), torch.empty(16, 32, device=CUDA)
    returned_buffers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 3 * x + 1)


def test_zeros_and_layout_checks():
    x, y = torch.randn(16, 32, device=CUDA), torch.empty(16, 32, device=CUDA)
    misc_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, x)
