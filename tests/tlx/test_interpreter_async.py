"""Interpreter semantics of cp.async copies, async_dot, and the pipelined GEMMs built from them."""
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError

from interp_shim import require_interpret_mode, tlx
from tritium.kernels.tiles import grouped_tile
from tritium.tlx.interpreter import check_async_dot_shape

require_interpret_mode()


@triton.jit
def _copy_visibility_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    bufs = tlx.local_alloc((N, ), tl.float32, 3)
    tlx.local_store(bufs[0], tl.full((N, ), -1.0, tl.float32))
    tlx.local_store(bufs[1], tl.full((N, ), -2.0, tl.float32))
    t0 = tlx.async_load(x_ptr + offs, bufs[0])
    tlx.async_load_commit_group([t0])
    t1 = tlx.async_load(x_ptr + N + offs, bufs[1])
    t2 = tlx.async_load(x_ptr + offs, bufs[2], mask=offs < 4, other=7.0)
    tlx.async_load_commit_group([t1, t2])
    tl.store(x_ptr + N + offs, tl.zeros((N, ), tl.float32))  # the copy already read these values
    tl.store(out_ptr + offs, tlx.local_load(bufs[0]))  # nothing landed yet
    tlx.async_load_wait_group(1)
    tl.store(out_ptr + N + offs, tlx.local_load(bufs[0]))  # oldest group landed
    tl.store(out_ptr + 2 * N + offs, tlx.local_load(bufs[1]))  # newest group still in flight
    tlx.async_load_wait_group(0)
    tl.store(out_ptr + 3 * N + offs, tlx.local_load(bufs[1]))
    tl.store(out_ptr + 4 * N + offs, tlx.local_load(bufs[2]))


def test_async_copies_land_at_wait_group():
    x = torch.randn(2, 8)
    expected = x.clone()
    out = torch.empty(5, 8)
    _copy_visibility_kernel[(1, )](x, out, N=8)
    assert (out[0] == -1).all()
    assert torch.equal(out[1], expected[0])
    assert (out[2] == -2).all()
    assert torch.equal(out[3], expected[1])
    assert torch.equal(out[4], torch.cat([expected[0, :4], torch.full((4, ), 7.0)]))


@triton.jit
def hopper_pipelined_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                          stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                          WAIT_PENDINGS: tl.constexpr):
    """The seed article's Hopper kernel with its wait made a parameter: WAIT_PENDINGS < 0 drops it.

    The shipped kernel (tritium.kernels.gemm_pipelined_hopper) is tested in
    test_interpreter_kernels.py; this copy exists to show that a missing or short wait is caught.
    """
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)

    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), tlx.dtype_of(a_ptr), NUM_STAGES)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), tlx.dtype_of(b_ptr), NUM_STAGES)

    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        a = tlx.local_view(buffers_A, i)
        b = tlx.local_view(buffers_B, i)
        token_a = tlx.async_load(a_ptrs, a, mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - i * BLOCK_SIZE_K))
        token_b = tlx.async_load(b_ptrs, b, mask=(offs_k[:, None] < K - i * BLOCK_SIZE_K) & (offs_bn[None, :] < N))
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=0):
        buf = k % NUM_STAGES
        if WAIT_PENDINGS >= 0:
            tlx.async_load_wait_group(WAIT_PENDINGS)
        acc = tlx.async_dot(tlx.local_view(buffers_A, buf), tlx.local_view(buffers_B, buf), acc)
        # keep one dot in flight: the previous one, which read the stage refilled below, is done
        acc = tlx.async_dot_wait(1, acc)
        i = k + NUM_STAGES - 1
        next_buf = i % NUM_STAGES
        token_a = tlx.async_load(a_ptrs, tlx.local_view(buffers_A, next_buf),
                                 mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - i * BLOCK_SIZE_K))
        token_b = tlx.async_load(b_ptrs, tlx.local_view(buffers_B, next_buf),
                                 mask=(offs_k[:, None] < K - i * BLOCK_SIZE_K) & (offs_bn[None, :] < N))
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    acc = tlx.async_dot_wait(0, acc)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _run_hopper(M, N, K, num_stages=3, wait_pendings=None):
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float32)
    BM, BN, BK = 64, 32, 32
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), )
    hopper_pipelined_gemm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                                c.stride(1), BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=2,
                                NUM_STAGES=num_stages,
                                WAIT_PENDINGS=num_stages - 2 if wait_pendings is None else wait_pendings)
    return c, a.float() @ b.float()


def test_hopper_gemm_with_the_right_wait_is_right():
    """The control for the test below: the same copy with the article's wait gives the right numbers."""
    c, ref = _run_hopper(128, 32, 128)
    torch.testing.assert_close(c, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("wait_pendings", [-1, 2], ids=["no_wait", "wait_one_too_few"])
def test_hopper_gemm_without_proper_wait_is_wrong(wait_pendings):
    c, ref = _run_hopper(128, 32, 128, wait_pendings=wait_pendings)
    assert not torch.allclose(c, ref, rtol=1e-4, atol=1e-3, equal_nan=False)


@triton.jit
def _dot_options_kernel(a_ptr, b_ptr, acc_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])  # A from registers
    b_buf = tlx.local_alloc((K, N), tl.float16, 1)[0]
    tlx.local_store(b_buf, tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]))
    c_offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    acc = tl.load(acc_ptr + c_offs)
    tl.store(out_ptr + c_offs, tlx.async_dot_wait(0, tlx.async_dot(a, b_buf, acc)))
    tl.store(out_ptr + M * N + c_offs, tlx.async_dot(a, b_buf, acc, use_acc=False))
    tl.store(out_ptr + 2 * M * N + c_offs, tlx.async_dot(a, b_buf, acc, pred=tl.program_id(0) > 0))
    tl.store(out_ptr + 3 * M * N + c_offs, tlx.async_dot(a, b_buf).to(tl.float32))
    tl.store(out_ptr + 4 * M * N + c_offs, tlx.async_dot(a, b_buf, out_dtype=tl.float16).to(tl.float32))


def test_async_dot_options():
    a, b = torch.randn(64, 16, dtype=torch.float16), torch.randn(16, 8, dtype=torch.float16)
    acc = torch.randn(64, 8)
    out = torch.empty(5, 64, 8)
    _dot_options_kernel[(1, )](a, b, acc, out, M=64, N=8, K=16)
    prod = a.float() @ b.float()
    torch.testing.assert_close(out[0], acc + prod)
    torch.testing.assert_close(out[1], prod)
    torch.testing.assert_close(out[2], acc)
    torch.testing.assert_close(out[3], prod)
    torch.testing.assert_close(out[4], prod, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("M, N, K, bad", [(32, 64, 16, "M=32"), (64, 12, 16, "N=12"), (64, 264, 16, "N=264"),
                                          (128, 64, 12, "K=12")])
def test_check_async_dot_shape_rejects(M, N, K, bad):
    with pytest.raises(ValueError, match=f"async_dot: {bad} must be"):
        check_async_dot_shape(M, N, K)


def test_check_async_dot_shape_uses_instruction_k_of_dtype():
    check_async_dot_shape(64, 64, 8, tl.float32)
    with pytest.raises(ValueError, match="async_dot: K=8 must be a positive multiple of 16"):
        check_async_dot_shape(64, 64, 8, tl.float16)


def test_check_async_dot_shape_accepts_hopper_tiles():
    for M, N, K in [(64, 8, 16), (128, 256, 64), (192, 96, 32)]:
        check_async_dot_shape(M, N, K)


def test_async_dot_rejects_bad_shape_in_kernel():
    a, b = torch.randn(32, 16, dtype=torch.float16), torch.randn(16, 8, dtype=torch.float16)
    with pytest.raises(InterpreterError, match="async_dot: M=32 must be a positive multiple of 64"):
        _dot_options_kernel[(1, )](a, b, torch.zeros(32, 8), torch.empty(5, 32, 8), M=32, N=8, K=16)
