"""Interpreter numerics of the shared-memory and layout conformance kernels (mem_kernels.py)."""
import pytest
import torch

from interp_shim import require_interpret_mode
from mem_kernels import (view_single_kernel, view_rows_kernel, reinterpret_kernel, gather_scatter_kernel,
                         gather_1d_kernel, gs_indices, shared_layouts_kernel, register_layouts_kernel, helpers_kernel,
                         returned_buffers_kernel, reuse_kernel, alias_kernel, alias_expected, misc_kernel,
                         fork_keywords_kernel)

require_interpret_mode()


def test_local_view_of_a_single_buffer_numerics():
    x, y, z = torch.randn(2 * 16 * 32), torch.empty(16, 32), torch.empty(1)
    view_single_kernel[(1, )](x, y, z, R=16, C=32)
    torch.testing.assert_close(y, x.reshape(2, 16, 32)[1])
    torch.testing.assert_close(z, x[3:4])


def test_local_view_rows_of_a_2d_view_numerics():
    x, y = torch.randn(16, 32), torch.empty(32)
    view_rows_kernel[(1, )](x, y, y, R=16, C=32)
    torch.testing.assert_close(y, x[5])


def test_local_reinterpret_to_other_shapes_numerics():
    x = torch.randn(4 * 16 * 32).half()
    y, z = torch.empty(1, 4 * 16 * 32, dtype=torch.int16), torch.empty(16, 16)
    reinterpret_kernel[(1, )](x, y, z, R=16, C=32)
    assert torch.equal(y.flatten(), x.view(torch.int16))
    assert torch.equal(z.view(torch.int32), x[512:1024].view(torch.int32).reshape(16, 16))


@pytest.mark.parametrize("axis", [0, 1])
def test_local_gather_scatter_numerics(axis):
    x = torch.randn(16, 16)
    idx = gs_indices(16, 16, axis)
    g, s = torch.empty(16, 16), torch.empty(16, 16)
    gather_scatter_kernel[(1, )](x, idx, g, s, R=16, C=16, AXIS=axis)
    torch.testing.assert_close(g, torch.gather(x, axis, idx.long()))
    torch.testing.assert_close(s, torch.zeros(16, 16).scatter_(axis, idx.long(), x + 100.0))
    x1, idx1, g1 = torch.arange(1024.0), torch.arange(32, dtype=torch.int32) * 33, torch.empty(32)
    gather_1d_kernel[(1, )](x1, idx1, g1, N=32, M=32)
    torch.testing.assert_close(g1, x1[idx1.long()])


@pytest.mark.parametrize("kind", ["swizzled", "cute", "nvmma", "padded", "linear", "linear_xor"])
def test_explicit_shared_layouts_numerics(kind):
    x, y = torch.randn(64, 32).half(), torch.empty(64, 32, dtype=torch.float16)
    shared_layouts_kernel[(1, )](x, y, R=64, C=32, KIND=kind)
    assert torch.equal(x, y)


@pytest.mark.parametrize("kind", ["mfma", "dot", "linear64"])
def test_explicit_register_layouts_numerics(kind):
    x, y = torch.randn(64, 64).half(), torch.empty(64, 64, dtype=torch.float16)
    register_layouts_kernel[(1, )](x, y, R=64, C=64, KIND=kind)
    assert torch.equal(x, y)


def test_buffers_cross_jit_helpers_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    helpers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 4 * x)


def test_buffers_returned_by_two_calls_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    returned_buffers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 3 * x + 1)


def test_local_alloc_reuse_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32, dtype=torch.int32)
    reuse_kernel[(1, )](x, y, R=16, C=32)
    assert torch.equal(y, x.view(torch.int32))


def test_storage_alias_spec_numerics():
    out = torch.zeros(5 * 32 * 32)
    alias_kernel[(1, )](out, B=32)
    p3, alpha2, b0, a1 = alias_expected()
    torch.testing.assert_close(out[:1024].reshape(32, 32), p3)
    torch.testing.assert_close(out[1024:1536].reshape(32, 16), alpha2)
    torch.testing.assert_close(out[2048:3072].reshape(32, 32), b0)
    torch.testing.assert_close(out[3072:4096].reshape(32, 32), a1)
    torch.testing.assert_close(out[4096:], torch.full((1024, ), 1065353216.0))  # 1.0f read as int32


def test_misc_ops_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    misc_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, x)


def test_view_ops_take_the_forks_parameter_names():
    x, y = torch.randn(16, 32), torch.empty(4 * 16 * 32)
    fork_keywords_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y[:8 * 32], x[:8].flatten())
    torch.testing.assert_close(y[16 * 32:2 * 16 * 32].reshape(32, 16), x.t())
    torch.testing.assert_close(y[2 * 16 * 32:3 * 16 * 32].reshape(16, 32), x)
    torch.testing.assert_close(y[3 * 16 * 32:], x.flatten())
