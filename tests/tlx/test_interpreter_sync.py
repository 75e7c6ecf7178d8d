"""Interpreter semantics of the fork's sync, warp and cluster ops (test_conformance_sync.py compiles the same
kernels): named and cluster barriers synchronize tasks by thread count, warp barriers count every thread,
a program is a cluster of one CTA, and a warp's lanes are identical threads of control."""
import pytest
import torch
import triton.language as tl

from interp_shim import require_interpret_mode
from sync_kernels import (ballot, ballot_tensor, cluster_barrier_tasks, cluster_misuse, cluster_ops, fp8_name,
                          named_pingpong, named_runtime, redux, warp_barrier_square)

require_interpret_mode()


# ------------------------------------------------------------------------------------------------
# Named barriers
# ------------------------------------------------------------------------------------------------


def test_named_barriers_make_tasks_take_turns():
    out = torch.zeros(8, dtype=torch.int64)
    named_pingpong[(1, )](out, ROUNDS=4, COUNT=256)  # 4 default warps + 4 task warps
    assert (out[1:] > out[:-1]).all(), f"the tasks did not alternate: {out.tolist()}"


def test_named_barrier_counts_the_kernels_warps_in_the_default_task():
    out = torch.zeros(8, dtype=torch.int64)
    named_pingpong[(1, )](out, ROUNDS=4, COUNT=384, num_warps=8)
    assert (out[1:] > out[:-1]).all()
    with pytest.raises(Exception, match=r"named_barrier_wait can never complete: named barrier 9 \(256 of 384"):
        named_pingpong[(1, )](out, ROUNDS=4, COUNT=384)  # only 4 + 4 warps: nobody else arrives
    with pytest.raises(Exception, match=r"named_barrier_wait can never complete: named barrier 9 \(128 of 256"):
        named_pingpong[(1, )](out, ROUNDS=4, COUNT=256, num_warps=8)  # the default's 256 threads fill it alone
    with pytest.raises(Exception, match="256 threads arrived on named barrier 9, which expects 192"):
        named_pingpong[(1, )](out, ROUNDS=4, COUNT=192)  # a count that splits a task's warps


def test_named_barrier_alone_passes_when_it_counts_only_the_caller():
    out = torch.zeros(1, dtype=torch.int32)
    named_runtime[(1, )](out, 5, 128)  # 4 warps, 128 threads: bar.sync completes on its own
    assert out.item() == 1
    with pytest.raises(Exception, match="TLX interpreter deadlock"):
        named_runtime[(1, )](out, 5, 256)
    with pytest.raises(Exception, match="bar must be an int in \\[0, 15\\], got 16"):
        named_runtime[(1, )](out, 16, 128)


# ------------------------------------------------------------------------------------------------
# Warp barriers (every thread arrives)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arrivals", [1, 2])
def test_warp_barrier_hands_the_buffer_over(arrivals):
    x = torch.randn(1000)
    z = torch.full_like(x, float("nan"))
    warp_barrier_square[(4, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=4, ARRIVALS=arrivals)
    torch.testing.assert_close(z, x * x)


def test_warp_barrier_waits_for_all_the_warps_it_counts():
    x = torch.randn(256)
    z = torch.zeros_like(x)
    # An 8-warp barrier is not complete after the 4-warp default task's arrival: the consumer never runs.
    with pytest.raises(Exception, match="barrier_wait\\(phase=0\\) can never complete"):
        warp_barrier_square[(1, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=8, ARRIVALS=1)
    warp_barrier_square[(1, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=8, ARRIVALS=1, num_warps=8)
    torch.testing.assert_close(z, x * x)


# ------------------------------------------------------------------------------------------------
# Cluster ops
# ------------------------------------------------------------------------------------------------


def test_cluster_ops_are_a_cluster_of_one_cta():
    out = torch.full((1, ), -1, dtype=torch.int32)
    cluster_ops[(2, )](out)
    assert out.item() == 1  # rank 0, size 1; the remote arrive reached the CTA's own barrier
    for case, message in [(0, "remote_cta_rank=1 names another CTA"), (1, "does not take a remote_view"),
                          (2, "remote_cta_rank=3 names another CTA"), (3, "does not take a remote_view")]:
        with pytest.raises(Exception, match=message):
            cluster_misuse[(1, )](out, CASE=case)


def test_cluster_barrier_waits_for_every_task():
    out = torch.zeros(4, dtype=torch.int64)
    cluster_barrier_tasks[(1, )](out)
    assert max(out[0], out[1]) < min(out[2], out[3]), out.tolist()


# ------------------------------------------------------------------------------------------------
# Warp vote and reduction
# ------------------------------------------------------------------------------------------------


def test_vote_ballot_of_a_scalar_is_the_mask_or_zero():
    out = torch.zeros(1, dtype=torch.int32)
    for x, mask, want in [(5, 0xFFFFFFFF, -1), (5, 0x0000FFFF, 0xFFFF), (0, 0xFFFFFFFF, 0)]:
        ballot[(1, )](out, torch.tensor([x], dtype=torch.int32), MASK=mask)
        assert out.item() == want
    with pytest.raises(Exception, match="tlx.vote_ballot_sync: pred must be a scalar, got a tensor"):
        ballot_tensor[(1, )](torch.zeros(32, dtype=torch.int32), torch.ones(32, dtype=torch.int32))


def test_warp_redux_of_a_scalar():
    out = torch.zeros(1)
    for op, want in [("max", -2.5), ("abs_max", 2.5), ("abs_min", 2.5)]:
        redux[(1, )](out, torch.tensor([-2.5]), OP=op)
        assert out.item() == want


# ------------------------------------------------------------------------------------------------
# FP8 format names
# ------------------------------------------------------------------------------------------------


def test_fp8_format_names_in_the_interpreter():
    out = torch.zeros(1, dtype=torch.int32)
    fp8_name[(1, )](out, DTYPE=tl.float8e5, EXPECTED="e5m2")
    assert out.item() == 1
    with pytest.raises(Exception, match="only supports tl.float8e5"):
        fp8_name[(1, )](out, DTYPE=tl.int32, EXPECTED="")
