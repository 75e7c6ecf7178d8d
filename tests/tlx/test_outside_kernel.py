"""A TLX op called outside a ``@triton.jit`` kernel raises and names the op (issue 11, item 6).

A TLX builtin takes a missing ``_semantic`` for the interpreter's call (``TRITON_INTERPRET=1`` passes
none); it used to run the interpreter's version for a plain call too and return an interpreter object.
"""
import pytest
import triton.language as tl

import tritium.tlx as tlx


@pytest.mark.parametrize("call,op", [
    (lambda: tlx.local_alloc((64, 32), tl.float32, 1), "local_alloc"),
    (lambda: tlx.async_task_replica_id(), "async_task_replica_id"),
])
def test_a_tlx_op_outside_a_kernel_raises_naming_the_op(call, op):
    with pytest.raises(RuntimeError, match=rf"tlx\.{op}.*@triton\.jit"):
        call()


@pytest.mark.parametrize("call", [
    lambda: tlx.async_task(num_warps=1, registers=25),
    lambda: tlx.async_task("default", num_regs=25),  # checked before the default task's registers are refused
    lambda: tlx.async_tasks(mbarrier_try_wait_suspend_ns=-1),
], ids=["task", "default_task", "tasks"])
def test_task_arguments_are_checked_before_the_call_is_refused(call):
    """As in the fork, whose async_task(...) validates its arguments when the object is made."""
    with pytest.raises(ValueError, match=r"divisible by 8|non-negative int"):
        call()
    with pytest.raises(RuntimeError, match="was called outside a kernel"):
        tlx.async_task(num_warps=1, registers=32)
