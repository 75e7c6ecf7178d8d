"""Under TRITON_INTERPRET=1, fork names that cannot exist on stock Triton raise the same clear error."""
import pytest
import torch
import triton

from interp_shim import require_interpret_mode
from tritium.tlx import unsupported

require_interpret_mode()


@pytest.mark.parametrize("name", sorted(unsupported.REASONS))
def test_unsupported_op_raises_in_the_interpreter(tmp_path, name):
    from test_unsupported import kernels_module

    class Factory:
        def mktemp(self, _):
            return tmp_path

    kernel = getattr(kernels_module(Factory()), f"use_{name.lstrip('_')}")
    with pytest.raises(Exception) as info:
        kernel[(1,)](torch.zeros(4))
    chain, e = [], info.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any(f"tlx.{name} is not available in tritium: it {unsupported.REASONS[name]}" in s for s in chain), chain
