"""Warp-specialized persistent Hopper GEMM with TLX (the "hopper_gemm_ws" design).

grid = min(#SMs, #tiles); each program walks tiles in GROUP_SIZE_M-grouped order. The default task
(the kernel's 4 warps) produces: for every K step it waits until both consumers released the stage
(``empty``, phase ^ 1 so the first pass does not block), arms the stage's ``full`` barrier with the
bytes of one A and one B tile and issues their TMA loads. Two replicated 4-warp consumer tasks each
own BM/2 rows of the tile: wait on ``full``, wgmma, retire it, release the stage, and after the K
loop write their half of C through shared memory with a TMA store (optionally in two N/2 halves, so
the staging buffer is half as large). TMA zero-fills out-of-bounds loads and clips stores, so
ragged M, N, K need no masks. fp16 or bf16 in, fp32 accumulate, the input dtype out.
"""
from __future__ import annotations

import triton
import triton.language as tl

import tritium.tlx as tlx

from .partitions import load_tiles, mma_steps, ws_prologue
from .tiles import WSConfig, grouped_tile, ws_constexprs, ws_matmul


#: The published tile, and one for problems with few tiles.
#: This kernel stores C in one piece or in two column halves (EPILOGUE_SUBTILES 1 or 2).
LARGE = WSConfig(BM=128, BN=256, NUM_STAGES=3, EPILOGUE_SUBTILES=2)
SMALL = WSConfig(BM=128, BN=128, NUM_STAGES=4, EPILOGUE_SUBTILES=1)


@triton.jit
def matmul_kernel_ws_hopper(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
                            EPILOGUE_SPLIT: tl.constexpr, NUM_REGS: tl.constexpr):
    HALF_M: tl.constexpr = BM // 2
    EPI_N: tl.constexpr = BN // 2 if EPILOGUE_SPLIT else BN
    a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_tiles, k_tiles = ws_prologue(
        a_desc, c_desc, M, N, K, BM, BN, BK, NUM_STAGES, True, EPI_N, 2)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_tiles, num_pid_m, num_pid_n, k_tiles,
                       BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, True)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r = tlx.async_task_replica_id()
            it = 0
            for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
                pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
                acc = tl.zeros((HALF_M, BN), dtype=tl.float32)
                it, acc = mma_steps(a_bufs, b_bufs, full, empty, it, acc, 0, k_tiles, r, NUM_STAGES, True, 0)
                c_buf = c_bufs[r]
                off_m = pid_m * BM + r * HALF_M
                if EPILOGUE_SPLIT:
                    c0, c1 = acc.reshape(HALF_M, 2, EPI_N).permute(0, 2, 1).split()
                    tlx.local_store(c_buf, c0.to(tlx.dtype_of(c_desc)))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_buf, [off_m, pid_n * BN])
                    tlx.async_descriptor_store_wait(0)
                    tlx.local_store(c_buf, c1.to(tlx.dtype_of(c_desc)))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_buf, [off_m, pid_n * BN + EPI_N])
                    tlx.async_descriptor_store_wait(0)
                else:
                    tlx.local_store(c_buf, acc.to(tlx.dtype_of(c_desc)))
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_buf, [off_m, pid_n * BN])
                    tlx.async_descriptor_store_wait(0)


def constexprs(cfg: WSConfig) -> dict:
    """The kernel's tile constexprs: EPILOGUE_SUBTILES 2 is its EPILOGUE_SPLIT (stores in two column halves)."""
    if cfg.EPILOGUE_SUBTILES not in (1, 2):
        raise ValueError(f"gemm_ws_hopper: EPILOGUE_SUBTILES must be 1 or 2, not {cfg.EPILOGUE_SUBTILES}")
    consts = ws_constexprs(cfg)
    consts["EPILOGUE_SPLIT"] = consts.pop("EPILOGUE_SUBTILES") == 2
    return consts


def matmul(a, b, config: WSConfig | None = None, num_sms: int | None = None):
    """``a @ b`` for fp16 or bf16 tensors ``a`` [M, K] and ``b`` [K, N] (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return ws_matmul(matmul_kernel_ws_hopper, a, b, config, num_sms, LARGE, SMALL, constexprs=constexprs)
