"""Interpreter semantics of mbarriers and TMA (tensor descriptor) copies."""
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError
from triton.tools.tensor_descriptor import TensorDescriptor

from interp_shim import require_interpret_mode, tlx
from tritium.tlx import interpreter
from tritium.tlx.interpreter import TLXDeadlockError

require_interpret_mode()


def test_barrier_phase_completes_after_all_arrivals():
    bar = interpreter.local_view(interpreter.alloc_barriers(2, arrive_count=2), 1)
    interpreter.barrier_wait(bar, 1)  # parity 1 names the phase before the first: already complete
    interpreter.barrier_arrive(bar)
    interpreter.barrier_arrive(bar, pred=False)
    with pytest.raises(TLXDeadlockError, match=r"barrier_wait\(phase=0\).*pending arrivals=1/2"):
        interpreter.barrier_wait(bar, 0)
    interpreter.barrier_arrive(bar)
    interpreter.barrier_wait(bar, 0)
    with pytest.raises(TLXDeadlockError, match=r"barrier_wait\(phase=1\)"):
        interpreter.barrier_wait(bar, 1)
    interpreter.barrier_wait(bar, 1, pred=False)
    interpreter.barrier_arrive(bar, arrive_count=2)
    interpreter.barrier_wait(bar, 1)
    with pytest.raises(TLXDeadlockError, match=r"barrier_wait\(phase=0\)"):
        interpreter.barrier_wait(bar, 0)


def test_barrier_expect_bytes_arrives_and_waits_for_bytes():
    bar = interpreter.alloc_barriers(1)[0]
    interpreter.barrier_expect_bytes(bar, 64, pred=False)
    interpreter.barrier_expect_bytes(bar, 64)
    with pytest.raises(TLXDeadlockError, match="pending arrivals=0/1, pending bytes=64"):
        interpreter.barrier_wait(bar, 0)
    with pytest.raises(RuntimeError, match="barrier_arrive: 2 arrival"):
        interpreter.barrier_arrive(bar, 2)


def test_barrier_ops_need_one_barrier():
    with pytest.raises(TypeError, match="tlx.barrier_wait: pick one barrier of the array"):
        interpreter.barrier_wait(interpreter.alloc_barriers(2), 0)


@triton.jit
def _tma_kernel(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr, WAIT: tl.constexpr, REDUCE: tl.constexpr):
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    bufs = tlx.local_alloc((BM, BN), tlx.dtype_of(in_desc), 2)
    bars = tlx.alloc_barriers(num_barriers=2, arrive_count=1)
    for i in tl.static_range(2):
        bar = tlx.local_view(bars, i)
        tlx.barrier_expect_bytes(bar, BM * BN * tlx.size_of(tlx.dtype_of(in_desc)))
        tlx.async_descriptor_load(in_desc, bufs[i], [off_m, off_n], bar)
        if WAIT:
            tlx.barrier_wait(bar, 0)
    x = tlx.local_load(bufs[0]) + tlx.local_load(bufs[1])
    tlx.local_store(bufs[0], x)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(out_desc, bufs[0], [off_m, off_n], store_reduce=REDUCE)
    tlx.async_descriptor_store_wait(0)


def _run_tma(M, N, wait=True, reduce=""):
    BM, BN = 16, 8
    x = torch.randn(M, N)
    out = torch.ones(M, N)
    _tma_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](TensorDescriptor.from_tensor(x, [BM, BN]),
                                                          TensorDescriptor.from_tensor(out, [BM, BN]), BM=BM, BN=BN,
                                                          WAIT=wait, REDUCE=reduce)
    return x, out


@pytest.mark.parametrize("M, N", [(32, 16), (40, 20)])
def test_tma_load_store(M, N):
    x, out = _run_tma(M, N)
    torch.testing.assert_close(out, 2 * x)


def test_tma_store_reduce_add():
    x, out = _run_tma(40, 20, reduce="add")
    torch.testing.assert_close(out, 2 * x + 1)


def test_tma_load_lands_only_at_barrier_wait():
    _, out = _run_tma(32, 16, wait=False)
    assert torch.isnan(out).all()


@triton.jit
def _deadlock_kernel(x_ptr, EXPECT: tl.constexpr):
    bar = tlx.alloc_barriers(1)[0]
    if EXPECT:
        tlx.barrier_expect_bytes(bar, 128)
    tlx.barrier_wait(bar, 0)


@pytest.mark.parametrize("expect, state", [(False, "pending arrivals=1/1, pending bytes=0"),
                                           (True, "pending arrivals=0/1, pending bytes=128")])
def test_barrier_deadlock_in_kernel(expect, state):
    with pytest.raises(InterpreterError, match=f"TLX interpreter deadlock: barrier_wait.*{state}"):
        _deadlock_kernel[(1, )](torch.empty(1), EXPECT=expect)
