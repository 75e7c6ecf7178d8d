"""Tile configuration and scheduling shared by the GEMM kernels."""
from dataclasses import dataclass, fields

import triton
import triton.language as tl


@dataclass(frozen=True, kw_only=True)
class Config:
    """Tiles, grouping, pipeline depth and warps of a pointer-based GEMM launch (built by keyword)."""
    BLOCK_SIZE_M: int
    BLOCK_SIZE_N: int
    BLOCK_SIZE_K: int
    NUM_STAGES: int
    num_warps: int
    GROUP_SIZE_M: int = 8


@triton.jit
def grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of ``tile_id`` in grouped order: GROUP_SIZE_M row tiles share B tiles in L2."""
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def sync_grid_dependency(PDL: tl.constexpr):
    """With ``PDL`` (the kernel launched with ``launch_pdl``, programmatic dependent launch): wait until the
    previous kernel in the stream has completed and its writes are visible, then let the next kernel
    launch, so that its prologue overlaps this kernel's tail. Called first thing, before any global
    memory access (a warp-specialized kernel's other tasks touch memory only after the producer's first
    load, which comes after the wait). Without ``PDL``, nothing (nor can the interpreter run it)."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


def launch_gemm(kernel, a, b, cfg: Config, **constexprs):
    """``c = a @ b`` with a pointer-based GEMM kernel: one program per output tile, fp16 out."""
    import torch

    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), )
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                 BLOCK_SIZE_M=cfg.BLOCK_SIZE_M, BLOCK_SIZE_N=cfg.BLOCK_SIZE_N, BLOCK_SIZE_K=cfg.BLOCK_SIZE_K,
                 GROUP_SIZE_M=cfg.GROUP_SIZE_M, NUM_STAGES=cfg.NUM_STAGES, num_warps=cfg.num_warps, **constexprs)
    return c


@dataclass(frozen=True, kw_only=True)
class WSConfig:
    """One config type for every persistent warp-specialized GEMM, built by keyword: tiles, grouping,
    pipeline depth, epilogue sub-tiles and consumer registers; ``SPLIT_K`` only for the split-K kernel."""
    BM: int
    BN: int
    NUM_STAGES: int
    EPILOGUE_SUBTILES: int  # the C tile leaves through shared memory in this many column slices (1, 2 or 4)
    BK: int = 64
    GROUP_SIZE_M: int = 8
    NUM_REGS: int | None = 232  # registers per consumer thread (setmaxnreg), or None to leave them to the compiler
    SPLIT_K: int = 1  # K slices per tile: gemm_splitk_hopper's; every other kernel runs with 1
    CLUSTER: int = 1  # CTAs per cluster sharing their B tiles (2: the cooperative kernel's pairs); else 1


def ws_constexprs(cfg: WSConfig, split_k: bool = False, cluster: bool = False) -> dict:
    """The tile constexprs of a WS GEMM kernel: every field, ``SPLIT_K`` only with ``split_k`` and ``CLUSTER``
    only with ``cluster`` (a kernel without K slices or clusters refuses a config that has them, rather than
    silently computing a partial sum or a wrong pairing)."""
    if not split_k and cfg.SPLIT_K != 1:
        raise ValueError(f"WSConfig: SPLIT_K={cfg.SPLIT_K} needs the split-K kernel (gemm_splitk_hopper)")
    if not cluster and cfg.CLUSTER != 1:
        raise ValueError(f"WSConfig: CLUSTER={cfg.CLUSTER} needs the cooperative kernel (gemm_ws_cooperative_hopper)")
    skip = {"SPLIT_K"} if not split_k else set()
    if not cluster or cfg.CLUSTER == 1:  # a launch without clusters keeps its constexprs (and binary)
        skip.add("CLUSTER")
    return {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name not in skip}


def ws_blocks(cfg: WSConfig, split_a: bool = True,
              b_k_major: bool = False) -> tuple[list[int], list[int], list[int]]:
    """Block shapes of a WS GEMM's A, B and C descriptors: A and C in BM/2-row blocks with ``split_a`` (each of
    two consumers loads and stores its half of a tile's rows), else whole BM-row tiles; C in EPILOGUE_SUBTILES
    column slices; B's tiles (BN, BK) with ``b_k_major`` (B read from its transpose), else (BK, BN), of which
    each CTA of a pair sharing B (``CLUSTER=2``) loads one column half."""
    rows = cfg.BM // 2 if split_a else cfg.BM
    b_block = [cfg.BN, cfg.BK] if b_k_major else [cfg.BK, cfg.BN // cfg.CLUSTER]  # a CTA of a pair loads half
    return [rows, cfg.BK], b_block, [rows, cfg.BN // cfg.EPILOGUE_SUBTILES]


@triton.jit
def _halves(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The left and right column halves of a [ROWS, COLS] register tensor."""
    return x.reshape(ROWS, 2, COLS // 2).permute(0, 2, 1).split()


@triton.jit
def column_subtiles(x, ROWS: tl.constexpr, COLS: tl.constexpr, PARTS: tl.constexpr):
    """``x`` [ROWS, COLS] as a tuple of PARTS (1, 2 or 4) column slices, left to right."""
    if PARTS == 1:
        return (x, )
    elif PARTS == 2:
        return _halves(x, ROWS, COLS)
    else:
        tl.static_assert(PARTS == 4, "column_subtiles: PARTS must be 1, 2 or 4")
        lo, hi = _halves(x, ROWS, COLS)
        q0, q1 = _halves(lo, ROWS, COLS // 2)
        q2, q3 = _halves(hi, ROWS, COLS // 2)
        return q0, q1, q2, q3


def num_sms(device) -> int:
    """Streaming multiprocessors of ``device``; 4 stands in for the CPU interpreter."""
    import torch
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


def pick_tile(large, small, M: int, N: int, sms: int):
    """``large`` unless its tiles would leave SMs idle, then ``small`` (configs with BM and BN)."""
    return large if triton.cdiv(M, large.BM) * triton.cdiv(N, large.BN) >= sms else small


def ws_programs(M: int, N: int, BM: int, BN: int, units: int, sms: int, cluster: int = 1) -> int:
    """The persistent grid of a WS GEMM: a program per SM, or per tile and unit of work where there are fewer, in
    whole clusters of ``cluster`` CTAs (a pair sharing B takes two vertically adjacent tiles)."""
    tiles = triton.cdiv(M, BM * cluster) * triton.cdiv(N, BN) * units
    return min(sms // cluster, tiles) * cluster


def cluster_launch(cluster: int) -> dict:
    """The launch option of clusters of ``cluster`` CTAs (none for one)."""
    return {"ctas_per_cga": (cluster, 1, 1)} if cluster > 1 else {}


def _tma_ready(x, cols: int):
    """``x`` padded with zero columns to ``cols`` (TMA needs 16-byte aligned row strides), copying only if needed."""
    import torch
    if x.shape[1] == cols and x.stride(1) == 1 and (x.stride(0) * x.element_size()) % 16 == 0 and x.data_ptr() % 16 == 0:
        return x
    return torch.nn.functional.pad(x, (0, cols - x.shape[1])).contiguous()


def launch_tma_gemm(kernel, a, b, blocks, sms: int | None, out=None, units: int = 1, b_k_major: bool = False,
                    extra: tuple = (), programs: int | None = None, **constexprs):
    """``a @ b`` with a persistent TMA GEMM kernel ``kernel(a_desc, b_desc, c_desc, M, N, K, *extra, ...)``.

    ``constexprs`` are the kernel's, its tile BM x BN among them; ``blocks`` are the (A, B, C) descriptor
    block shapes the kernel loads and stores; the grid is min(sms, #BMxBN tiles x ``units``). fp16 or
    bf16 in, fp32 accumulation, C of dtype ``out`` (default: the inputs'); with ``units`` > 1 (split-K:
    units of work per tile, reduced into C) C starts zeroed. With ``b_k_major`` (the FP8 kernel) a and b
    are float8_e4m3fn, ``b_desc`` is over B's transpose (N x K) and C is ``out`` (bf16 or fp16). ``programs``
    replaces the grid's size (stream-K: every SM). A ``CLUSTER`` constexpr of 2 launches pairs of CTAs
    (``ctas_per_cga=(2, 1, 1)``), each pair a tile pair. Rows are padded to 16 bytes when needed (TMA strides);
    TMA zero-fills and clips the ragged edges.
    """
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if b_k_major:
        if a.dtype != torch.float8_e4m3fn or b.dtype != a.dtype:
            raise TypeError(f"matmul: a and b must both be float8_e4m3fn, got {a.dtype} and {b.dtype}")
    elif a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
        raise TypeError(f"matmul: a and b must both be float16 or both bfloat16, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if b_k_major:  # 16-byte rows: 16 8-bit elements of A and B^T, 8 16-bit elements of C
        a, b = _tma_ready(a, triton.cdiv(K, 16) * 16), _tma_ready(b.t(), triton.cdiv(K, 16) * 16)
        c_cols = triton.cdiv(N, 8) * 8
    else:
        a, b = _tma_ready(a, triton.cdiv(K, 8) * 8), _tma_ready(b, triton.cdiv(N, 8) * 8)
        c_cols = b.shape[1]
    c = (torch.zeros if units > 1 else torch.empty)((M, c_cols), device=a.device, dtype=out or a.dtype)
    descs = [TensorDescriptor.from_tensor(t, list(block)) for t, block in zip((a, b, c), blocks)]
    cluster = constexprs.get("CLUSTER", 1)
    if programs is None:
        programs = ws_programs(M, N, constexprs["BM"], constexprs["BN"], units,
                               num_sms(a.device) if sms is None else sms, cluster)
    kernel[(programs, )](*descs, M, N, K, *extra, num_warps=4, **constexprs, **cluster_launch(cluster))
    return c[:, :N]


def ws_matmul(kernel, a, b, config: WSConfig | None, sms: int | None, large: WSConfig, small: WSConfig,
              split_a: bool = True, constexprs=ws_constexprs, **launch):
    """``a @ b`` with the WS GEMM ``kernel`` (:func:`launch_tma_gemm`, which takes ``launch``) at ``config``,
    by default ``large`` unless its tiles would leave SMs idle, then ``small``; ``split_a`` and the launch's
    ``b_k_major`` shape the descriptors (:func:`ws_blocks`), ``constexprs`` turns the config into the kernel's."""
    cfg = config or pick_tile(large, small, a.shape[0], b.shape[-1], sms or num_sms(a.device))
    blocks = ws_blocks(cfg, split_a, launch.get("b_k_major", False))
    return launch_tma_gemm(kernel, a, b, blocks, sms, **launch, **constexprs(cfg))
