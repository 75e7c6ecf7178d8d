"""Clusters of CTAs on the GPU (``ctas_per_cga=(n, 1, 1)``): the launch groups the grid's CTAs, a grid that is no
multiple of the cluster is refused, and the TMA multicast and the peer barrier arrive deliver (tests/tlx/cluster_kernels.py)."""
import sys
from pathlib import Path

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
import cluster_kernels as ck  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [2, 4])
def test_the_grid_counts_ctas_grouped_in_clusters_along_x(n):
    out = torch.full((16, 2), -1, dtype=torch.int32, device="cuda")
    ck.cluster_registers[(16,)](out, ctas_per_cga=(n, 1, 1))
    assert out.tolist() == [[i % n, n] for i in range(16)]


def test_a_grid_that_splits_a_cluster_is_refused():
    with pytest.raises(ValueError, match=r"ctas_per_cga=\(2, 1, 1\): the grid's x size 5 is not a multiple"):
        ck.cluster_registers[(5,)](torch.empty(10, dtype=torch.int32, device="cuda"), ctas_per_cga=(2, 1, 1))


def test_multicast_and_peer_arrive_deliver_to_both_ctas():
    B, pairs = 64, 4
    x = torch.randn(pairs * 2 * B, B, device="cuda", dtype=torch.float16)
    out = torch.zeros(2 * pairs, 2 * B, B, device="cuda", dtype=torch.float16)
    ck.pair_exchange[(2 * pairs,)](TensorDescriptor.from_tensor(x, [B, B]), out, B, ctas_per_cga=(2, 1, 1))
    assert torch.equal(out, x.view(pairs, 2 * B, B).repeat_interleave(2, 0))
