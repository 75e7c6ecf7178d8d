"""Thread-block clusters: the CTA's rank and the cluster's size, the cluster barrier, remote mbarrier views.

A TLX kernel launched with ``ctas_per_cga=(n, 1, 1)`` (tlx/cluster_launch.py) runs as clusters of ``n``
independent programs; without it, as clusters of one CTA. The ops below read the real cluster registers
and run the real cluster barrier; a compile-time peer rank must be below the cluster's size. Stock Triton's
own ``num_ctas > 1``, where one program spans the cluster with every tensor split across its CTAs, is
refused: TLX's per-CTA shared-memory buffers cannot follow it. AMD CDNA (gfx942, gfx950) has no clusters:
a workgroup is its own cluster of one, so the rank is 0, the size 1 and the cluster barrier the
workgroup barrier.
"""
from __future__ import annotations

from typing import Any

import triton.language as tl

from . import args, layouts
from .args import Scalar
from .barriers import REMOTE_BARRIER, barrier, fence_mbarrier_init
from .cluster_launch import cluster_ctas
from .core import check_target, current_task
from .emit import emit, tlx_builtin
from .misc import read_register
from .types import buffered_tensor, buffered_tensor_type
from .triton_compat import compile_options, statement_location

def _is_nvidia(_semantic: Any, op: str) -> bool:
    """Whether the target is NVIDIA; refuses ``num_ctas > 1`` (see the module doc)."""
    options = compile_options(_semantic)
    if getattr(options, "num_ctas", 1) != 1:
        raise NotImplementedError(f"tlx.{op}: num_ctas={options.num_ctas} makes one program span the cluster with its "
                                  "tensors split across the CTAs, which TLX kernels do not support; compile with "
                                  "num_ctas=1 and launch with ctas_per_cga=(n, 1, 1) for clusters of n independent "
                                  "CTAs")
    return layouts.cuda_capability(options.arch) is not None


def _cluster_register(_semantic: Any, op: str, register: str, workgroup: int) -> tl.tensor:
    """The i32 cluster register ``register`` on NVIDIA, or its value ``workgroup`` on AMD (a workgroup is its own
    cluster of one)."""
    if not _is_nvidia(_semantic, op):
        return _semantic.to_tensor(workgroup)
    check_target(_semantic, op, 90)
    return read_register(_semantic, f"mov.u32 $0, {register};", "=r", tl.int32)


@tlx_builtin
def cluster_cta_rank(_semantic: Any = None) -> tl.tensor:
    """This CTA's rank in its cluster, over all cluster dimensions (``%cluster_ctarank``).

    Args:
    """
    return _cluster_register(_semantic, "cluster_cta_rank", "%cluster_ctarank", 0)


@tlx_builtin
def cluster_size_1d(_semantic: Any = None) -> tl.tensor:
    """The number of CTAs in this CTA's cluster (``%cluster_nctarank``).

    Args:
    """
    return _cluster_register(_semantic, "cluster_size_1d", "%cluster_nctarank", 1)


@tlx_builtin
def cluster_barrier(_semantic: Any = None) -> None:
    """Every thread of every CTA of the cluster arrives, then waits for all (``barrier.cluster.arrive`` +
    ``barrier.cluster.wait``, release/acquire at cluster scope).

    Args:
    """
    if not _is_nvidia(_semantic, "cluster_barrier"):
        _semantic.debug_barrier()  # the workgroup is the whole cluster
        return
    check_target(_semantic, "cluster_barrier", 90)
    emit(_semantic, "cluster_barrier", in_task=current_task(_semantic) is not None, where=statement_location(_semantic))


@tlx_builtin
def fence_mbarrier_init_cluster(_semantic: Any = None) -> None:
    """Make this thread's earlier mbarrier inits visible to the whole cluster before barriers are used across
    CTAs (``fence.mbarrier_init.release.cluster``).

    Args:
    """
    _is_nvidia(_semantic, "fence_mbarrier_init_cluster")
    check_target(_semantic, "fence_mbarrier_init_cluster", 90)
    fence_mbarrier_init(_semantic)


@tlx_builtin
def remote_view(local_allocated_buffer: buffered_tensor, remote_cta_rank: Scalar,
                _semantic: Any = None) -> buffered_tensor:
    """The mbarrier at the same place in CTA ``remote_cta_rank`` of the cluster. As in the fork, only mbarriers
    have remote views, and ``barrier_wait``/``barrier_arrive`` refuse them (``barrier_arrive`` takes
    ``remote_cta_rank`` itself).

    Args:
        local_allocated_buffer: one mbarrier.
        remote_cta_rank: the CTA of the cluster (below its ``ctas_per_cga`` size).
    """
    bar = barrier(local_allocated_buffer, "remote_view")
    args.check_remote_rank(remote_cta_rank, "remote_view", "remote_cta_rank", cluster_ctas(_semantic))
    _is_nvidia(_semantic, "remote_view")
    check_target(_semantic, "remote_view", 90)
    t = bar.type
    remote = buffered_tensor_type(t.element_ty, t.shape, t.layout, t.alloc_shape, t.num, t.id, t.memdesc,
                                  REMOTE_BARRIER)
    remote.origin = t.origin
    return buffered_tensor(bar.handle, remote)
