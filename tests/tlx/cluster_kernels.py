"""Kernels of clusters of two CTAs (``ctas_per_cga=(2, 1, 1)``), compiled on the CPU by tests/tlx/test_clusters.py
and run on the GPU by tests/gpu/test_tlx_clusters_gpu.py."""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def cluster_registers(out_ptr):
    """Each CTA writes its rank and its cluster's size."""
    pid = tl.program_id(0)
    tl.store(out_ptr + 2 * pid, tlx.cluster_cta_rank())
    tl.store(out_ptr + 2 * pid + 1, tlx.cluster_size_1d())


@triton.jit
def pair_exchange(x_desc, out_ptr, BLOCK: tl.constexpr):
    """The two CTAs of a cluster each TMA-load one BLOCK-row half of their pair's [2 BLOCK, BLOCK] tile of x and
    multicast it to both, then tell each other, by an arrive on the peer's barrier, that they are done; each
    writes the whole tile as its shared memory holds it, so both halves must have arrived in both CTAs."""
    pid = tl.program_id(0)
    rank = tlx.cluster_cta_rank()
    bufs = tlx.local_alloc((BLOCK, BLOCK), tl.float16, 2)
    full = tlx.alloc_barriers(1, arrive_count=1)
    done = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_expect_bytes(full[0], 2 * BLOCK * BLOCK * 2)
    tlx.async_descriptor_load(x_desc, bufs[rank], [(pid // 2) * 2 * BLOCK + rank * BLOCK, 0], full[0],
                              multicast_targets=[rank, rank ^ 1])
    tlx.barrier_wait(full[0], 0)
    tlx.barrier_arrive(done[0], 1, remote_cta_rank=rank ^ 1)
    tlx.barrier_wait(done[0], 0)
    offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    for half in tl.static_range(2):
        tl.store(out_ptr + pid * 2 * BLOCK * BLOCK + half * BLOCK * BLOCK + offs, tlx.local_load(bufs[half]))
