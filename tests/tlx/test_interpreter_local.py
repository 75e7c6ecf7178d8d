"""Interpreter semantics of local buffers, fences and utility ops."""
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError

from aggregate_kernels import bf16_buffer_dot, running_sum_kernel
from interp_shim import require_interpret_mode, tlx

require_interpret_mode()


@triton.jit
def _grid_offsets(R: tl.constexpr, C: tl.constexpr):
    return tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]


@triton.jit
def _views_kernel(x_ptr, view_out, trans_out, slice_out, reshape_out, R: tl.constexpr, C: tl.constexpr):
    offs = _grid_offsets(R, C)
    bufs = tlx.local_alloc((R, C), tlx.dtype_of(x_ptr), 2)
    idx = tl.program_id(0) + 1  # a tensor index
    tlx.local_store(bufs[idx], tl.load(x_ptr + offs))
    view = tlx.local_view(bufs, 1)
    tl.store(view_out + offs, tlx.local_load(view))
    tl.store(trans_out + _grid_offsets(C, R), tlx.local_load(tlx.local_trans(view)))
    tl.store(slice_out + _grid_offsets(R // 2, C // 2),
             tlx.local_load(tlx.local_slice(view, [R // 2, C // 2], [R // 2, C // 2])))
    tl.store(reshape_out + _grid_offsets(C, R), tlx.local_load(tlx.local_reshape(view, (C, R))))


def test_views_share_storage():
    x = torch.randn(8, 16)
    outs = [torch.empty(8, 16), torch.empty(16, 8), torch.empty(4, 8), torch.empty(16, 8)]
    _views_kernel[(1, )](x, *outs, R=8, C=16)
    torch.testing.assert_close(outs[0], x)
    torch.testing.assert_close(outs[1], x.T)
    torch.testing.assert_close(outs[2], x[4:, 8:])
    torch.testing.assert_close(outs[3], x.reshape(16, 8))


@triton.jit
def _store_through_view_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_store(buf, tl.zeros((R, C), tl.float32))
    # writing through a transposed view must change the underlying buffer
    tlx.local_store(tlx.local_trans(buf), tl.load(x_ptr + _grid_offsets(C, R)))
    tl.store(out_ptr + _grid_offsets(R, C), tlx.local_load(buf))


def test_store_through_view_aliases():
    x = torch.randn(16, 8)
    out = torch.empty(8, 16)
    _store_through_view_kernel[(1, )](x, out, R=8, C=16)
    torch.testing.assert_close(out, x.T)


@triton.jit
def _reinterpret_kernel(x_ptr, bits_out, halves_out, reuse_out, N: tl.constexpr):
    offs = tl.arange(0, N)
    buf = tlx.local_alloc((N, ), tl.float32, 1)
    tlx.local_store(buf[0], tl.load(x_ptr + offs))
    tl.store(bits_out + offs, tlx.local_load(tlx.local_reinterpret(buf[0], tl.int32)))
    halves = tlx.local_reinterpret(buf[0], tl.float16, [2 * N])
    tl.store(halves_out + tl.arange(0, 2 * N), tlx.local_load(halves))
    alias = tlx.local_alloc((N, ), tl.int32, 1, reuse=buf)
    tl.store(reuse_out + offs, tlx.local_load(alias[0]))


def test_reinterpret_and_reuse_alias_bits():
    x = torch.randn(16)
    bits, halves, reuse = torch.empty(16, dtype=torch.int32), torch.empty(32, dtype=torch.float16), torch.empty(
        16, dtype=torch.int32)
    _reinterpret_kernel[(1, )](x, bits, halves, reuse, N=16)
    assert torch.equal(bits, x.view(torch.int32))
    assert torch.equal(halves.view(torch.int16), x.view(torch.int16))
    assert torch.equal(reuse, x.view(torch.int32))


@triton.jit
def _uninitialized_kernel(out_ptr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), tlx.local_load(tlx.local_alloc((N, ), tl.float32, 1)[0]))


def test_fresh_allocation_is_poisoned():
    out = torch.zeros(16)
    _uninitialized_kernel[(1, )](out, N=16)
    assert torch.isnan(out).all()


@triton.jit
def _bad_store_kernel(out_ptr, N: tl.constexpr):
    buf = tlx.local_alloc((N, ), tl.float16, 1)
    tlx.local_store(buf[0], tl.zeros((N, ), tl.float32))


@triton.jit
def _bad_view_kernel(out_ptr, N: tl.constexpr):
    buf = tlx.local_alloc((N, ), tl.float16, 2)
    tlx.local_load(tlx.local_view(buf, 2))


@triton.jit
def _bad_slice_kernel(out_ptr, N: tl.constexpr):
    buf = tlx.local_alloc((N, N), tl.float16, 1)
    tlx.local_slice(buf[0], [N // 2, 0], [N, N])


@triton.jit
def _bad_reshape_kernel(out_ptr, N: tl.constexpr):
    buf = tlx.local_alloc((N, N // 2), tl.float16, 1)
    tlx.local_reshape(tlx.local_trans(buf[0]), (N * N // 2, ))  # would need a copy


@triton.jit
def _bad_reinterpret_kernel(out_ptr, N: tl.constexpr):
    buf = tlx.local_alloc((N, N), tl.float16, 1)
    tlx.local_reinterpret(tlx.local_slice(buf[0], [0, 0], [N, N // 2]), tl.int16)


@pytest.mark.parametrize("kernel, message", [
    (_bad_reshape_kernel, "local_reshape: cannot view buffer of shape"),
    (_bad_reinterpret_kernel, "local_reinterpret: stock Triton 3.6 reinterprets whole buffers only"),
    (_bad_store_kernel, "local_store: value dtype fp32 does not match buffer dtype fp16"),
    (_bad_view_kernel, "local_view: index 2 out of range for 2 buffers"),
    (_bad_slice_kernel, "local_slice: slice"),
])
def test_misuse_is_reported(kernel, message):
    with pytest.raises(InterpreterError, match=message):
        kernel[(1, )](torch.empty(1), N=16)


@triton.jit
def _utilities_kernel(x_ptr, out_ptr, h_ptr, FENCE: tl.constexpr):
    t0 = tlx.clock64()
    tlx.fence(FENCE)
    tlx.fence_async_shared()
    t1 = tlx.clock64()
    tl.store(out_ptr + 0, tlx.size_of(tlx.dtype_of(x_ptr)))
    tl.store(out_ptr + 1, tlx.size_of(tlx.dtype_of(tl.load(h_ptr))))
    tl.store(out_ptr + 2, tlx.size_of(tlx.dtype_of(tl.load(x_ptr + tl.arange(0, 4)))))
    tl.store(out_ptr + 3, tlx.thread_id(0) + tlx.thread_id(2))
    tl.store(out_ptr + 4, t1 - t0)


def test_utilities():
    out = torch.full((5, ), -1, dtype=torch.int64)
    _utilities_kernel[(1, )](torch.zeros(4, dtype=torch.float64), out, torch.zeros(1, dtype=torch.float16), "gpu")
    assert out[:4].tolist() == [8, 2, 8, 0]
    assert out[4] >= 0


def test_fence_rejects_unknown_scope():
    with pytest.raises(InterpreterError, match="tlx.fence: scope must be 'gpu', 'sys' or 'async_shared', got 'cta'"):
        _utilities_kernel[(1, )](torch.zeros(4), torch.empty(5, dtype=torch.int64), torch.zeros(1), "cta")



def test_fork_style_aggregate_runs():
    """An aggregate without __init__ and with @triton.jit methods (tlx/triton_compat.accept_fork_aggregates)."""
    x = torch.arange(8, dtype=torch.float32)
    out = torch.empty(8)
    running_sum_kernel[(1, )](x, out, N=8)
    torch.testing.assert_close(out, 3 * x + x.sum())
    # a host that passes a constexpr object, as fork kernels do (tlx/triton_compat.accept_constexpr_launch_args)
    out.zero_()
    running_sum_kernel[(1, )](x, out, N=tl.constexpr(8))
    torch.testing.assert_close(out, 3 * x + x.sum())


def test_bf16_dot_multiplies_numbers():
    """Stock Triton's interpreter multiplies bf16 bit patterns (tlx/triton_compat.accept_bf16_interpreted_dots)."""
    x = torch.randn(16, 16).bfloat16()
    z = torch.empty(16, 16)
    bf16_buffer_dot[(1, )](x, z, N=16)
    torch.testing.assert_close(z, x.float() @ x.float().T, atol=1e-4, rtol=1e-4)


def test_buffer_indexed_in_a_local_jit_helper():
    """A kernel defined in a function calls a helper defined there too (the fork's
    test_buffer_indexing_in_function_call): stock 3.6's interpreter loses the closure (NameError)."""

    @triton.jit
    def store_and_load(buffers, idx, data):
        tlx.local_store(buffers[idx], data)
        return tlx.local_load(buffers[idx])

    @triton.jit
    def kernel(x_ptr, y_ptr, B: tl.constexpr):
        offs = tl.arange(0, B)
        bufs = tlx.local_alloc((B, ), tl.float32, num=tl.constexpr(2))
        tl.store(y_ptr + offs, store_and_load(bufs, 1, tl.load(x_ptr + offs)) * 2)

    x = torch.rand(64)
    y = torch.empty(64)
    kernel[(1, )](x, y, 64)
    torch.testing.assert_close(y, x * 2)


@triton.jit
def _to_bf16_kernel(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_casts_to_bf16_round_to_nearest_even(dtype):
    """As torch and compiled kernels (the fork's test_fp_cast_preserves_layout_for_equal_width_types_on_cdna4):
    stock 3.6's interpreter truncated, one ulp off in about half the elements."""
    x = (torch.linspace(-1.0, 1.0, 1024) * 0.75 + 0.125).to(dtype)
    x[:3] = torch.tensor([float("inf"), -float("inf"), float("nan")])
    y = torch.empty(1024, dtype=torch.bfloat16)
    _to_bf16_kernel[(1, )](x, y, N=1024)
    torch.testing.assert_close(y, x.to(torch.bfloat16), atol=0, rtol=0, equal_nan=True)
