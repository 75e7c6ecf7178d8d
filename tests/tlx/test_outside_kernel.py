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
