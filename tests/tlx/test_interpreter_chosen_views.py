"""Interpreter numerics of views chosen by a run-time ``if`` (chosen_view_kernels.py): each branch's view is
the buffer (or slice) that the ``if`` chose, for loads and for a store."""
import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from chosen_view_kernels import chosen_tma_kernel, chosen_views_kernel
from interp_shim import require_interpret_mode

require_interpret_mode()

N = 64


@pytest.mark.parametrize("c", [1, 0])
def test_views_chosen_by_a_runtime_condition_numerics(c):
    x = torch.randn(N)
    y, z, w, v = torch.empty(N), torch.empty(N), torch.empty(N // 2), torch.empty(2 * N)
    chosen_views_kernel[(1, )](x, y, z, w, v, c, N=N)
    torch.testing.assert_close(y, x * 2 if c else x)
    torch.testing.assert_close(z, x + 1 if c else x)
    torch.testing.assert_close(w, (x * 2)[N // 2:] if c else (x * 2)[:N // 2])
    zero = torch.zeros(N)
    torch.testing.assert_close(v, torch.cat([zero, x - 1] if c else [x - 1, zero]))


@pytest.mark.parametrize("c", [1, 0])
def test_tma_load_into_a_chosen_half_numerics(c):
    x = torch.randn(N // 2, N).half()
    y = torch.empty(N, N, dtype=torch.float16)
    chosen_tma_kernel[(1, )](TensorDescriptor.from_tensor(x, [N // 2, N]), y, c, N=N)
    zero = torch.zeros(N // 2, N, dtype=torch.float16)
    torch.testing.assert_close(y, torch.cat([zero, x] if c else [x, zero]))
