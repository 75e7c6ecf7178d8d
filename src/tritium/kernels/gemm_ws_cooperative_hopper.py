"""Persistent warp-specialized Hopper GEMM, cooperative: two consumer warpgroups share every tile.

Design (the "cooperative" persistent WS GEMM):

* grid = min(#SMs, #tiles); each program walks its tiles in GROUP_SIZE_M-grouped order.
* Producer: the default task (4 warps, registers given back to the consumers by ``setmaxnreg``).
  For every K step it waits until both consumers released the stage (``empty``, arrive count 2;
  phase ^ 1 so the first pass through the ring does not block), arms the stage's ``full`` barrier
  with the bytes of both A halves and the B tile, and issues three TMA loads.
* Consumers: one 4-warp task replicated twice; replica r owns rows [r * BM/2, (r + 1) * BM/2) of
  every BMxBN tile and so consumes every stage (its own A half, the shared B tile). wgmma runs
  asynchronously with one group in flight: after issuing step k it waits until step k - 1 retired
  and only then releases that stage, so the tensor cores always have the next MMA queued.
* Clusters (``WSConfig.CLUSTER=2``, launched with ``ctas_per_cga=(2, 1, 1)``): the two CTAs of a cluster take
  vertically adjacent tiles and each loads one half of their shared B tile, multicast to both, so B crosses
  from L2 once per pair (:func:`tritium.kernels.partitions.load_cluster_steps`).
* Epilogue: the fp32 accumulator is converted and written through shared memory with TMA stores in
  EPILOGUE_SUBTILES column slices, alternating between two staging buffers per consumer: slice j+1
  is converted while slice j's store drains, and the last stores of a tile drain under the next
  tile's main loop (``async_descriptor_store_wait(1)`` before a buffer is reused).

TMA zero-fills out-of-bounds loads and clips stores, so ragged M, N, K need no masks.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .partitions import cooperative_gemm
from .tiles import WSConfig, ws_blocks, ws_constexprs, ws_matmul

#: 128x256 tiles (each consumer a 64x256 wgmma accumulator), 4 stages, 64-column store slices:
#: 4 x 48 KiB of operands + 4 x 8 KiB of staging = 224 KiB of shared memory.
LARGE = WSConfig(BM=128, BN=256, NUM_STAGES=4, EPILOGUE_SUBTILES=4)
#: For problems with fewer 128x256 tiles than SMs.
SMALL = WSConfig(BM=128, BN=128, NUM_STAGES=5, EPILOGUE_SUBTILES=2)


@triton.jit
def matmul_kernel_ws_cooperative(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                                 EPILOGUE_SUBTILES: tl.constexpr, NUM_REGS: tl.constexpr, PDL: tl.constexpr = False,
                                 CLUSTER: tl.constexpr = 1):
    cooperative_gemm(a_desc, b_desc, c_desc, M, N, K, BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES,
                     NUM_REGS, PDL, CLUSTER=CLUSTER)


#: Each consumer loads and stores its BM/2 rows.
descriptor_blocks = ws_blocks


def constexprs(cfg: WSConfig) -> dict:
    """The kernel's constexprs: a WS config, clusters of a pair sharing B included."""
    return ws_constexprs(cfg, cluster=True)


def matmul(a, b, config: WSConfig | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return ws_matmul(matmul_kernel_ws_cooperative, a, b, config, num_sms, LARGE, SMALL, constexprs=constexprs)
