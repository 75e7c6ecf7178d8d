"""Interpreter semantics of the async-copy ops (compile-path tests: test_conformance_async.py): the
M = N = K = 1000 pipelined GEMM whose copies the compiler runs synchronously, masks and `other`, wait
groups, bulk copies completing on an mbarrier, prefetch, the AMD buffer ops, and misuse errors."""
import re

import pytest
import torch

from triton.runtime.errors import InterpreterError

from interp_shim import require_interpret_mode
from warp_pipeline_kernels import bad_priority_stage, staged_gemm
from async_copy_kernels import (INTERPRETER_TILE, bad_prefetch_level, bad_tokens, barrier_without_bulk,
                                buffer_ops_kernel, bulk_kernel, bulk_no_barrier, copy_kernel, matmul, prefetch_kernel,
                                token_from_either_branch, two_groups_kernel)

require_interpret_mode()


def test_gemm_on_1000_cubed_matches_torch():
    torch.manual_seed(0)
    a = torch.randn(1000, 1000, dtype=torch.float16)
    b = torch.randn(1000, 1000, dtype=torch.float16)
    c = matmul(a, b, **INTERPRETER_TILE)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


@pytest.mark.parametrize("other", [0, 3.0])
def test_masked_elements_get_other_or_zero(other):
    x = torch.randn(32, 80, dtype=torch.float16)
    y = torch.empty(32, 64, dtype=torch.float16)
    copy_kernel[(1, )](x, y, 37, x.stride(0), OTHER=other, BM=32, BK=64)
    assert torch.equal(y[:, :37], x[:, :37])
    assert (y[:, 37:] == other).all()


@pytest.mark.parametrize("bulk_size", [256, 96])
def test_bulk_copy_lands_when_its_barrier_completes(bulk_size):
    x = torch.randint(0, 256, (256, ), dtype=torch.uint8)
    y = torch.zeros(256, dtype=torch.uint8)
    bulk_kernel[(1, )](x, y, SIZE=256, BULK_SIZE=bulk_size)
    assert torch.equal(y[:bulk_size], x[:bulk_size]) and (y[bulk_size:] == 0).all()


def test_prefetch_is_a_checked_no_op():
    x = torch.randn(100)
    y = torch.zeros(100)
    prefetch_kernel[(1, )](x, y, 100, LEVEL="L1", MASKED=True)
    assert torch.equal(x, y)
    from triton.runtime.errors import InterpreterError
    with pytest.raises(InterpreterError, match="level must be 'L1' or 'L2'"):
        bad_prefetch_level[(1, )](x)


def test_interpreter_rejects_what_the_compile_path_rejects():
    x = torch.zeros(256, dtype=torch.uint8)
    for kernel, message in [(bulk_no_barrier, "barrier (an mbarrier the copy completes on) is required"),
                            (barrier_without_bulk, "barrier requires bulk=True"),
                            (bad_tokens, "tokens must be async tokens (from tlx.async_load / commit / wait), got 1")]:
        with pytest.raises(InterpreterError, match=re.escape(message)):
            kernel[(1, )](x)


def test_buffer_ops_numerics():
    x = torch.randn(256)
    y = torch.zeros(512)
    z = torch.ones(256)
    buffer_ops_kernel[(1, )](x, y, z, 200, BLOCK=256)
    assert torch.equal(y[:200], x[:200] * 2) and (y[200:256] == 0).all()
    assert torch.allclose(z[:200], 1 + x[:200]) and (z[200:] == 1).all()
    assert torch.equal(y[256:456], x[:200]) and (y[456:] == 0).all()  # buffer_load_to_local, via shared memory


def test_two_groups_numerics():
    x = torch.randn(2 * 32 * 64, dtype=torch.float16)
    y = torch.zeros_like(x)
    two_groups_kernel[(1, )](x, y, BM=32, BK=64)
    assert torch.equal(x, y)


@pytest.mark.parametrize("cond,value", [(1, 1.0), (0, 2.0)])
def test_a_token_assigned_in_both_branches_of_an_if(cond, value):
    x, y, out = torch.full((128, ), 1.0), torch.full((128, ), 2.0), torch.zeros(128)
    token_from_either_branch[(1, )](x, y, out, cond)
    assert out.eq(value).all()


def test_warp_pipeline_stages_run_in_order():
    """Under the interpreter a stage is its body, run where it stands (compiled: test_warp_pipeline.py); its
    arguments are checked as when compiling."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 64, dtype=torch.float16), torch.randn(64, 16, dtype=torch.float16)
    c = torch.empty(16, 16)
    staged_gemm[(1, )](a, b, c, 4, BM=16, BN=16, BK=16)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
    with pytest.raises(InterpreterError, match=re.escape("tlx.warp_pipeline_stage: priority must be a compile-time "
                                                         "int in 0..3 (s_setprio), got 'high'")):
        bad_priority_stage[(1, )](c)
