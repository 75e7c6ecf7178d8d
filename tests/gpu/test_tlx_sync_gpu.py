"""TLX named barriers, warp barriers, the warp ballot and the cluster ops on the GPU (sm_90).

The kernels are tests/tlx/sync_kernels.py, whose codegen test_conformance_sync.py checks on the CPU.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
import sync_kernels as kernels  # noqa: E402

import tritium.tlx as tlx  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def hopper():
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("named barriers with warp specialization, clusters: sm_90")


def test_named_barriers_make_tasks_take_turns():
    out = torch.zeros(64, dtype=torch.int64, device="cuda")
    kernels.named_pingpong[(1, )](out, ROUNDS=32, COUNT=256)
    stamps = out.cpu()
    assert (stamps[1:] > stamps[:-1]).all(), f"the tasks did not alternate: {stamps.tolist()}"


def test_warp_barrier_hands_the_buffer_over():
    x = torch.randn(98432, device="cuda")
    for arrivals in (1, 2):
        z = torch.full_like(x, float("nan"))
        kernels.warp_barrier_square[(triton.cdiv(x.numel(), 1024), )](x, z, x.numel(), BLOCK=1024, NUM_WARPS=4,
                                                                     ARRIVALS=arrivals)
        torch.testing.assert_close(z, x * x)


@triton.jit
def _ballot_by_lane(out_ptr, MASK: tl.constexpr, PARITY: tl.constexpr):
    tid = tlx.thread_id(0)
    ballot = tlx.vote_ballot_sync(MASK, (tid % 2 == PARITY) | (tid < 4))
    tl.store(out_ptr, ballot)  # a scalar store: thread 0's value, the ballot of warp 0


@pytest.mark.parametrize("mask,parity,want", [(0xFFFFFFFF, 1, 0xAAAAAAAF), (0xFFFFFFFF, 0, 0x5555555F)])
def test_vote_ballot_collects_each_lanes_vote(mask, parity, want):
    # Every lane executes the ballot (the code is not divergent), so the mask must name all 32 (PTX).
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    _ballot_by_lane[(1, )](out, MASK=mask, PARITY=parity, num_warps=4)
    assert out.item() & 0xFFFFFFFF == want


def test_cluster_ops_are_a_cluster_of_one_cta():
    out = torch.full((1, ), -1, dtype=torch.int32, device="cuda")
    kernels.cluster_ops[(3, )](out)
    assert out.item() == 1  # rank 0, size 1, and the arrive on the CTA's own barrier completed its phase


def test_cluster_barrier_waits_for_every_task():
    out = torch.zeros(4, dtype=torch.int64, device="cuda")
    kernels.cluster_barrier_tasks[(1, )](out)
    before, after = out.cpu().tolist()[:2], out.cpu().tolist()[2:]
    assert max(before) < min(after), out.tolist()
