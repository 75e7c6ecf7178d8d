"""The fork's warp-specialization surface on the GPU: constexpr replica ids, default-task replicas,
warp_group_start_id, the region arguments, guarded tasks and values passed into partitions.

The kernels are those of tests/tlx/test_conformance_tasks.py, which checks their codegen on the CPU
and their results under the interpreter; here they run on the device.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
import test_conformance_tasks as tasks  # noqa: E402

pytestmark = pytest.mark.gpu
CUDA = "cuda"


def test_constexpr_replica_ids():
    out = torch.full((3 * 64 + 1, ), -1, dtype=torch.int32, device=CUDA)
    tasks._replicas[(1, )](out, REPLICATE=3, BM=64)
    assert out.tolist() == [1000] * 32 + [2001] * 32 + [2002] * 32 + [-1] * 96 + [7]


def test_default_task_replicas():
    out = torch.full((3, ), -1, dtype=torch.int32, device=CUDA)
    tasks._default_replicas[(1, )](out)
    assert out.tolist() == [10, 11, 5]


@pytest.mark.parametrize("a, a_warps", [(8, 4), (10, 1)])
def test_warp_group_start_ids(a, a_warps):
    out = torch.zeros(3, dtype=torch.int32, device=CUDA)
    tasks._start_ids[(1, )](out, A=a, A_WARPS=a_warps, B=4)
    assert out.tolist() == [1, 2, 3]


@pytest.mark.parametrize("args", [False, True])
def test_region_arguments(args):
    out = torch.zeros(2, dtype=torch.int32, device=CUDA)
    tasks._region_args[(1, )](out, ARGS=args, SUSPEND=2000 if args else None)
    assert out.tolist() == [1, 2]


@pytest.mark.parametrize("with_worker", [True, False])
def test_guarded_tasks_and_values_from_loops(with_worker):
    out = torch.full((4, ), -1, dtype=torch.int32, device=CUDA)
    tasks._guarded[(1, )](out, 5, WITH_WORKER=with_worker)
    assert out.tolist() == ([3, 4, 5, 8] if with_worker else [3, -1, 5, -1])


@pytest.mark.parametrize("warps", [1, 2, 8])
def test_tasks_with_other_warp_counts(warps):
    n = 256
    x = torch.randn(n + 2 * 128, device=CUDA)
    y = torch.zeros_like(x)
    tasks._small_tasks[(1, )](x, y, n, BLOCK=256, W=warps)
    torch.testing.assert_close(y, torch.cat([x[:n] * 2, x[n:n + 128], x[n + 128:] + 1]))
