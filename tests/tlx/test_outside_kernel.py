"""A TLX op called outside a ``@triton.jit`` kernel raises and names the op (issue 11, item 6).

Today a TLX builtin takes a missing ``_semantic`` for the interpreter's call (``TRITON_INTERPRET=1``
passes none) and runs the interpreter's version, so a plain call returns an interpreter object. The
op must also check that the interpreter is running a kernel (Triton patches ``triton.language``'s
builtins for the duration of each interpreted program) before it dispatches there.
"""
import pytest
import triton.language as tl

import tritium.tlx as tlx

GAP = ("TLX builtins dispatch a call without _semantic to the interpreter even when no interpreted kernel runs "
       "(tlx/emit.py tlx_builtin, triton_compat.interpreted)")


@pytest.mark.xfail(strict=True, reason=GAP)
@pytest.mark.parametrize("call,op", [
    (lambda: tlx.local_alloc((64, 32), tl.float32, 1), "local_alloc"),
    (lambda: tlx.async_task_replica_id(), "async_task_replica_id"),
])
def test_a_tlx_op_outside_a_kernel_raises_naming_the_op(call, op):
    with pytest.raises(RuntimeError, match=rf"tlx\.{op}.*@triton\.jit"):
        call()
