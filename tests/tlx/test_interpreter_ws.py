"""Interpreter semantics of warp specialization: async_tasks, replicas, and a warp-specialized GEMM."""
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError
from triton.tools.tensor_descriptor import TensorDescriptor

from interp_shim import require_interpret_mode, tlx

require_interpret_mode()


@triton.jit
def _replicas_kernel(out_ptr, REPLICATE: tl.constexpr):
    base = tl.program_id(0) * 100  # defined before the region: visible in every task
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, base + 7)
        with tlx.async_task(num_warps=4, num_regs=232, replicate=REPLICATE):
            rid = tlx.async_task_replica_id()
            tl.store(out_ptr + 1 + rid, base + rid)
    tl.store(out_ptr + 1 + REPLICATE, base + 1)  # code after the region runs once, after every task


def test_replicas_see_their_id_and_outer_values():
    out = torch.full((5, ), -1, dtype=torch.int32)
    _replicas_kernel[(1, )](out, REPLICATE=3)
    assert out.tolist() == [7, 0, 1, 2, 1]


@triton.jit
def _ping_pong_kernel(out_ptr, ROUNDS: tl.constexpr):
    """Two tasks take turns through a pair of barriers; only a cooperative schedule completes it."""
    ping = tlx.alloc_barriers(1)[0]
    pong = tlx.alloc_barriers(1)[0]
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for i in range(ROUNDS):
                tl.store(out_ptr + 2 * i, tlx.clock64())
                tlx.barrier_arrive(ping)
                tlx.barrier_wait(pong, i % 2)
        with tlx.async_task(num_warps=4):
            for i in range(ROUNDS):
                tlx.barrier_wait(ping, i % 2)
                tl.store(out_ptr + 2 * i + 1, tlx.clock64())
                tlx.barrier_arrive(pong)


def test_tasks_interleave_through_barriers():
    out = torch.zeros(8, dtype=torch.int64)
    _ping_pong_kernel[(1, )](out, ROUNDS=4)
    assert (out[1:] >= out[:-1]).all(), "each task must run only after the other arrived"


@triton.jit
def _ws_deadlock_kernel(out_ptr):
    bar = tlx.alloc_barriers(1)[0]
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(bar, 0)
        with tlx.async_task(num_warps=4, replicate=2):
            tlx.barrier_wait(bar, 0)


def test_all_tasks_blocked_is_a_deadlock():
    with pytest.raises(InterpreterError, match="deadlock: every async task is blocked.*'default' replica 0.*"
                       "'task1' replica 1: barrier_wait"):
        _ws_deadlock_kernel[(1, )](torch.empty(1))


@triton.jit
def _ws_error_kernel(out_ptr):
    bar = tlx.alloc_barriers(1)[0]
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(bar, 0)
        with tlx.async_task(num_warps=4):
            tlx.local_view(tlx.local_alloc((8, ), tl.float32, 1), 3)


def test_error_in_a_task_propagates():
    with pytest.raises(InterpreterError, match="local_view: index 3 out of range"):
        _ws_error_kernel[(1, )](torch.empty(1))


@triton.jit
def hopper_gemm_ws(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent warp-specialized GEMM: one TMA producer, two consumers each owning BM/2 rows."""
    BM_SPLIT: tl.constexpr = BM // 2
    a_bufs = tlx.local_alloc((BM_SPLIT, BK), tlx.dtype_of(a_desc), NUM_STAGES * 2)
    b_bufs = tlx.local_alloc((BK, BN), tlx.dtype_of(b_desc), NUM_STAGES)
    c_bufs = tlx.local_alloc((BM_SPLIT, BN), tlx.dtype_of(c_desc), 2)
    full_a = tlx.alloc_barriers(num_barriers=NUM_STAGES * 2, arrive_count=1)
    empty_a = tlx.alloc_barriers(num_barriers=NUM_STAGES * 2, arrive_count=1)
    full_b = tlx.alloc_barriers(num_barriers=NUM_STAGES, arrive_count=1)
    empty_b = tlx.alloc_barriers(num_barriers=NUM_STAGES, arrive_count=2)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * num_pid_n
    k_tiles = tl.cdiv(K, BK)
    elem_bytes = tlx.size_of(tlx.dtype_of(a_desc))

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            cnt = 0
            for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
                off_m = (tile_id // num_pid_n) * BM
                off_n = (tile_id % num_pid_n) * BN
                for k in range(0, k_tiles):
                    buf = cnt % NUM_STAGES
                    phase = (cnt // NUM_STAGES) & 1
                    tlx.barrier_wait(bar=tlx.local_view(empty_b, buf), phase=phase ^ 1)
                    tlx.barrier_expect_bytes(full_b[buf], BK * BN * elem_bytes)
                    tlx.async_descriptor_load(b_desc, b_bufs[buf], [k * BK, off_n], full_b[buf])
                    for half in tl.static_range(2):
                        slot = buf + half * NUM_STAGES
                        tlx.barrier_wait(empty_a[slot], phase ^ 1)
                        tlx.barrier_expect_bytes(full_a[slot], BM_SPLIT * BK * elem_bytes)
                        tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m + half * BM_SPLIT, k * BK],
                                                  full_a[slot])
                    cnt += 1
        with tlx.async_task(num_warps=4, num_regs=232, replicate=2):  # consumers
            rid = tlx.async_task_replica_id()
            cnt = 0
            for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
                off_m = (tile_id // num_pid_n) * BM
                off_n = (tile_id % num_pid_n) * BN
                acc = tl.zeros((BM_SPLIT, BN), dtype=tl.float32)
                for k in range(0, k_tiles):
                    buf = cnt % NUM_STAGES
                    phase = (cnt // NUM_STAGES) & 1
                    slot = buf + rid * NUM_STAGES
                    tlx.barrier_wait(full_a[slot], phase)
                    tlx.barrier_wait(full_b[buf], phase)
                    acc = tlx.async_dot(a_bufs[slot], b_bufs[buf], acc)
                    acc = tlx.async_dot_wait(tl.constexpr(0), acc)
                    tlx.barrier_arrive(empty_a[slot])
                    tlx.barrier_arrive(empty_b[buf])
                    cnt += 1
                c_buf = c_bufs[rid]
                tlx.local_store(c_buf, acc.to(tlx.dtype_of(c_desc)))
                tlx.fence_async_shared()
                tlx.async_descriptor_store(c_desc, c_buf, [off_m + rid * BM_SPLIT, off_n])
                tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("M, N, K, num_sms", [(128, 64, 128, 2), (150, 72, 80, 2), (256, 32, 64, 3)])
def test_hopper_gemm_ws(M, N, K, num_sms):
    BM, BN, BK, STAGES = 128, 32, 32, 2
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float32)
    num_tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    hopper_gemm_ws[(min(num_sms, num_tiles), )](TensorDescriptor.from_tensor(a, [BM // 2, BK]),
                                                TensorDescriptor.from_tensor(b, [BK, BN]),
                                                TensorDescriptor.from_tensor(c, [BM // 2, BN]), M, N, K, BM=BM, BN=BN,
                                                BK=BK, NUM_STAGES=STAGES, NUM_SMS=num_sms)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-3)
