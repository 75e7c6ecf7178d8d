"""The attention forward's direct launches on a real GPU: after the first call of a layout, calls skip the JIT and
reuse encoded TMA descriptors by address (tritium.kernels.launch.DescriptorLaunch). Fresh data at new addresses,
at reused ones, and with a profiler-style launch hook set (which sends launches back through the JIT) must all
give SDPA's result."""
import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402

from tritium.kernels import attention_persistent_hopper as persistent  # noqa: E402
from tritium.ops import attention  # noqa: E402

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu


def check(q, k, v, causal):
    out = attention(q, k, v, causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    err = ((out.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


@pytest.mark.parametrize("causal", [False, True])
def test_repeated_calls_of_one_layout_launch_directly_and_stay_correct(causal):
    shape = (2, 4, 1000, 128)
    kept = [torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3)]
    check(*kept, causal)  # the first call compiles and launches through the JIT
    (launch,) = [v for key, v in persistent._launches.items() if key[0] == torch.Size(shape) and key[7] == causal]
    assert launch.compiled, "the first launch left no direct launch behind"
    for _ in range(3):  # new tensors: new addresses, or the ones just freed
        check(*(torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3)), causal)
    for x in kept:  # new data at an address seen before: the kept descriptor still reads it
        x.normal_()
    check(*kept, causal)
    calls = []
    triton.knobs.runtime.launch_enter_hook.add(calls.append)
    try:
        check(*kept, causal)
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(calls.append)
    assert calls, "with a launch hook set the launch must go through the JIT, which runs the hook"
