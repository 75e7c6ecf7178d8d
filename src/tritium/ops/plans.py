"""Which GEMM kernel and config run a given problem: the per-shape heuristic and the autotune cache.

The heuristic (:func:`choose`), with ``sms`` the GPU's streaming multiprocessors and
``tiles128 = cdiv(M, 128) * cdiv(N, 128)``. Each rule cites the H200 sweep that picked it (GPU run 1:
``scripts/gpu_gemm_sweep.py --budget-s 210``, 132 SMs, triton 3.6; ratios are cuBLAS time / ours in
the same run, eager and CUDA-graph replay, fp16 and bf16; the timing noise is about 3%):

1. **small**: ``M * N * K <= 512**3`` and K, N and the row strides even: the non-persistent
   cp.async + wgmma pipelined kernel (gemm_pipelined_hopper). At these sizes the time is launch
   latency plus one short K loop, and a pointer kernel needs no TMA descriptors on the host. Tiles:
   64x32x64, 4 stages: the best of the class at 256^3 and 512^3 in both dtypes, eager and graph, in
   the third session's run 6 and again in the fifth session's sweep (512^3 0.95/0.955 eager and
   1.04/1.05 graph, where 64x64x64 with 3 stages ran 0.81/0.87 and 0.98/0.99; 256^3 1.04/1.11 eager
   and 1.01/1.14 graph).
2. **split-K**: ``M * N * K >= 2**31`` and ``2 * tiles128 <= sms``: at least half the GPU would idle,
   and enough work per tile to pay for the zero-fill and the fp32 round trip of the reduction. The
   number of K slices S (1..8, each slice at least 8 BK steps) is the one whose (tile, slice) units
   fill the most of their last wave; split-K runs only when that beats S = 1 by 10%. At 79% fill it
   loses: 128x13312x16384 (104 tiles) ran 0.85 with S = 5 and 1.02 with rule 3's cooperative kernel.
3. **partial**: ``sms / 2 < tiles128 < sms``: one partial wave of 128x128 tiles, each with both
   consumer warpgroups on it: cooperative 128x128x64, 5 stages, 2 store slices
   (gemm_ws_cooperative_hopper.SMALL; 128x13312x16384: 1.02 eager, 1.00/0.975 graph; ping-pong
   64x256 0.93, 64x128 0.84).
4. **mid**: ``sms <= tiles128 < 2 * sms``: ping-pong 128x128x64, 6 stages (gemm_ws_pingpong_hopper.LARGE;
   2048^3, 256 tiles: 0.985/0.99 eager against 0.97/0.975 for cooperative 128x128; graph 0.92-0.95
   for both).
5. **large**: ``tiles128 >= 2 * sms``: cooperative 128x256x64, 3 stages, 2 store slices
   (:data:`LARGE_PLAN`; 8192^3 and the four other seed shapes: 0.94-1.03 fp16, 0.98-1.02 bf16, where
   ping-pong 128x128 ran 0.88-1.01 and 0.95-0.97; at 4096^3 the two tie within the noise: 0.93/0.95
   eager and 0.98 graph cooperative, 0.93-0.97 eager and 0.92-0.97 graph ping-pong). The same tiles
   with GROUP_SIZE_M 16 and 4 stages did better on bf16 (0.995-1.045) and worse on fp16 (0.92-1.02),
   overall a tie; the next sweep times both. Since 2026-12-04 the pairs of CTAs of a cluster share their B
   tiles (each multicasts one half): on the five large seed shapes, through the op's launch, 1.001-1.023 fp16
   and 0.994-1.035 bf16 against 0.999-1.012 and 0.985-1.014 without (geomeans 1.011 / 1.021 against 1.007 /
   1.002; an earlier run of the same kernels agreed on 8 of the 10 cases); at 4096^3 level within the noise.
6. **few**: ``tiles128 <= sms / 2`` without split-K: ping-pong 64x128 (gemm_ws_pingpong_hopper.SMALL),
   twice the tiles of 128x128 (1024^3, 128 tiles: 0.91/0.92 eager and graph; cooperative 128x64
   0.90/0.91, split-K <= 0.51; in the fifth session's sweep the pointer kernel's 64x128, 128x64, 64x64
   and 64x32 tiles with 4 stages ran 0.71-0.93 eager, 0.89-0.91 graph).

Rules 3 and 6 leave a consumer warpgroup idle or halve the programs. The dual-K kernel
(gemm_ws_dualk_hopper: both consumers on one tile, alternate K steps, reduced through shared memory
with no workspace) targets them; it is in :data:`SWEEP_SPACE` and the autotune candidates, and no rule
picks it: in two sweeps it lost wherever it ran (1024^3: 0.67-0.89 eager).

:func:`shape_class` names these rules; :data:`SWEEP_SPACE` lists, per rule, the configs
``scripts/gpu_gemm_sweep.py`` times on the GPU, whose per-class winners are what the rules should
pick. Before it runs, a plan is adapted to the problem (:func:`adapt`): a split-K plan keeps only
non-empty K slices and runs as the cooperative kernel when one slice is left, and the ring is made
shallower where an fp32 output would overflow shared memory.

Autotuning is off by default. With ``tritium.knobs.ops.gemm_autotune`` (``TRITIUM_GEMM_AUTOTUNE=1``) or
:func:`set_autotune`, the first call on a new (device, dtype, out dtype, M, N, K) times every candidate of
:func:`candidates` once and remembers the fastest in a JSON file (``tritium.knobs.ops.gemm_autotune_cache``,
``$TRITIUM_GEMM_AUTOTUNE_CACHE``, default ``~/.cache/tritium/gemm_autotune.json``); later calls
and later processes read the choice from it, while the versions and kernel sources it was tuned with
(:func:`tuning_stamp`) still hold. Processes tuning into one file merge their entries under a file lock;
a path that cannot be written warns once and the choices stay in memory. Without autotuning a new shape
costs one compile.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import threading
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import triton

from .. import knobs
from ..kernels import gemm_fp8_hopper as fp8
from ..kernels import gemm_pipelined_hopper as pipelined
from ..kernels import gemm_splitk_hopper as splitk
from ..kernels import gemm_streamk_hopper as streamk
from ..kernels import gemm_ws_cooperative_hopper as coop
from ..kernels import gemm_ws_dualk_hopper as dualk
from ..kernels import gemm_ws_pingpong_hopper as pingpong
from ..kernels.tiles import Config as PointerConfig
from ..kernels.tiles import WSConfig

#: Work (M * N * K) up to which the small-problem path runs, and from which split-K may.
SMALL_WORK = 512**3
SPLIT_K_MIN_WORK = 2**31
#: Smallest number of BK steps per K slice, largest number of slices.
SPLIT_K_MIN_STEPS = 8
SPLIT_K_MAX = 8

#: The small-problem path's tiles (rule 1): 64x32x64, 4 stages, 4 warps (one warpgroup per CTA); and
#: 64x64x64 with 3 stages, the pointer kernel's general-purpose tile (autotune candidates, tests).
SMALL_TILE = PointerConfig(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, NUM_STAGES=3, num_warps=4)
TINY_TILE = PointerConfig(BLOCK_SIZE_M=64, BLOCK_SIZE_N=32, BLOCK_SIZE_K=64, NUM_STAGES=4, num_warps=4)


@dataclass(frozen=True)
class Variant:
    """A GEMM kernel as the ops layer launches it."""
    kernel: Any  # the @triton.jit function
    config_type: type
    tma: bool  # TMA-descriptor kernel (a_desc, b_desc, c_desc, M, N, K, ...) or pointer kernel
    descriptor_blocks: Callable[[Any], tuple] | None  # TMA kernels: the A, B, C block shapes
    constexprs: Callable[[Any], dict]
    units: Callable[[Any], int]  # units of work per output tile (split-K slices)
    #: TMA kernels: B is read from its transpose (an N x K row-major matrix: b_desc over b.t()), as wgmma
    #: needs for 8-bit operands (the FP8 kernel).
    b_k_major: bool = False
    #: TMA kernels: the grid's size from (M, N, K, config, SMs) where it is not min(SMs, tiles x units)
    #: (stream-K: every SM).
    programs: Callable[[int, int, int, Any, int], int] | None = None


def _ws(module) -> Callable[[WSConfig], dict]:
    """The launch constexprs of a WS GEMM kernel module: its tile constexprs, 4 warps per task."""
    return lambda cfg: {**module.constexprs(cfg), "num_warps": 4}


VARIANTS: dict[str, Variant] = {
    "pingpong": Variant(pingpong.matmul_kernel_ws_pingpong, WSConfig, True, pingpong.descriptor_blocks,
                        _ws(pingpong), lambda cfg: 1),
    "cooperative": Variant(coop.matmul_kernel_ws_cooperative, WSConfig, True, coop.descriptor_blocks, _ws(coop),
                           lambda cfg: 1),
    "splitk": Variant(splitk.matmul_kernel_splitk, WSConfig, True, splitk.descriptor_blocks, _ws(splitk),
                      lambda cfg: cfg.SPLIT_K),
    "dualk": Variant(dualk.matmul_kernel_ws_dualk, WSConfig, True, dualk.descriptor_blocks, _ws(dualk), lambda cfg: 1),
    "small": Variant(pipelined.matmul_kernel_pipelined_hopper, PointerConfig, False, None, asdict, lambda cfg: 1),
    # tritium.ops.scaled_matmul's kernel (FP8 operands, scale pointers after M, N, K): see FP8_PLANS
    "fp8": Variant(fp8.matmul_kernel_fp8, WSConfig, True, fp8.descriptor_blocks, _ws(fp8), lambda cfg: 1, True),
    # a candidate no rule or autotuning picks: timed against the shipped plan by scripts/gpu_gemm19.py --stream-k
    # (its workspace and zeroed flags are the call's extra arguments, gemm_streamk_hopper.workspace)
    "streamk": Variant(streamk.matmul_kernel_streamk, WSConfig, True, streamk.descriptor_blocks, _ws(streamk),
                       lambda cfg: 1, programs=streamk.programs),
}


class Plan(NamedTuple):
    """A kernel of :data:`VARIANTS` and its config."""
    kernel: str
    config: WSConfig | PointerConfig

    def to_json(self) -> list:
        """``[kernel, {field: value}]``: configs are stored by field name."""
        return [self.kernel, asdict(self.config)]

    @classmethod
    def from_json(cls, item: list) -> "Plan":
        """The plan of :meth:`to_json`; a ``TypeError`` for a config that is not a mapping of its fields
        (a cache of tritium before named fields stored value lists)."""
        kernel, values = item
        if not isinstance(values, dict):
            raise TypeError(f"the {kernel} config {values!r} is not stored by field name")
        return cls(kernel, VARIANTS[kernel].config_type(**values))


#: Shared memory a TMA plan may use: what the shipped 16-bit configs take (224 KiB of the 227 KiB an
#: sm_90 block can have; the rest is barriers and alignment).
SHARED_LIMIT = 224 * 1024


def shared_bytes(plan: Plan, in_size: int, out_size: int) -> int:
    """Operand ring plus the epilogue staging buffers of a TMA plan (C tiles of ``out_size`` bytes;
    split-K stages fp32): 4 per plan where each consumer stages BM/2 rows (cooperative, split-K) or
    BM rows (ping-pong); dual-K's 2 of BM rows, plus its fp32 BMxBN partial tile."""
    cfg = plan.config
    ring = cfg.NUM_STAGES * (cfg.BM * cfg.BK + cfg.BK * cfg.BN) * in_size
    slice_cols = cfg.BN // cfg.EPILOGUE_SUBTILES
    if plan.kernel == "dualk":
        return ring + cfg.BM * cfg.BN * 4 + 2 * cfg.BM * slice_cols * out_size
    rows = cfg.BM if plan.kernel == "pingpong" else cfg.BM // 2
    out_size = 4 if plan.kernel == "splitk" else out_size
    return ring + 4 * rows * slice_cols * out_size


@functools.lru_cache(maxsize=1024)
def fit(plan: Plan, in_size: int, out_size: int) -> Plan:
    """``plan`` with a shallower ring where a wider output (fp32) would overflow shared memory: first
    narrower epilogue slices (up to 4), then fewer stages (at least 2)."""
    if not VARIANTS[plan.kernel].tma:
        return plan
    while shared_bytes(plan, in_size, out_size) > SHARED_LIMIT:
        cfg = plan.config
        if cfg.EPILOGUE_SUBTILES < 4:
            plan = Plan(plan.kernel, replace(cfg, EPILOGUE_SUBTILES=2 * cfg.EPILOGUE_SUBTILES))
        elif cfg.NUM_STAGES > 2:
            plan = Plan(plan.kernel, replace(cfg, NUM_STAGES=cfg.NUM_STAGES - 1))
        else:
            break
    return plan


@functools.lru_cache(maxsize=4096)
def adapt(plan: Plan, K: int, in_size: int, out_size: int) -> Plan:
    """``plan`` as it runs on a K of ``K`` with these element sizes: for split-K the number of non-empty
    K slices (an empty slice would leave the kernel's barrier accounting one arrive off), and a single
    slice runs as the cooperative kernel with the same tiles (the same design without the zero-filled
    fp32 workspace and the reduction); then :func:`fit` to shared memory."""
    if plan.kernel == "splitk":
        cfg = plan.config
        split = splitk.effective_split(K, cfg.BK, cfg.SPLIT_K)
        plan = Plan("splitk" if split > 1 else "cooperative", replace(cfg, SPLIT_K=split))
    return fit(plan, in_size, out_size)


def _fill(units: int, sms: int) -> float:
    """How full the waves of ``units`` equal units of work on ``sms`` SMs are (1.0: the last wave is full)."""
    return units / (triton.cdiv(units, sms) * sms)


def split_k_slices(M: int, N: int, K: int, sms: int, BM: int = 128, BN: int = 128, BK: int = 64) -> int:
    """Rule 2's number of K slices (1: do not split)."""
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    if M * N * K < SPLIT_K_MIN_WORK or 2 * tiles > sms:
        return 1
    steps = triton.cdiv(K, BK)
    options = [s for s in range(1, SPLIT_K_MAX + 1) if steps // s >= SPLIT_K_MIN_STEPS] or [1]
    best = max(options, key=lambda s: (_fill(tiles * s, sms), -s))
    return best if _fill(tiles * best, sms) >= 1.1 * _fill(tiles, sms) else 1


def even_layout(a_row_stride: int, b_row_stride: int, K: int, N: int) -> bool:
    """Whether the small path can read A and B in place (cp.async moves at least 4 bytes)."""
    return all(x % 2 == 0 for x in (a_row_stride, b_row_stride, K, N))


def shape_class(M: int, N: int, K: int, sms: int, even: bool = True) -> str:
    """Which rule of the heuristic a problem falls under: "small", "splitk", "partial", "mid", "large"
    or "few" (rules 1-6)."""
    if M * N * K <= SMALL_WORK and even:
        return "small"
    if split_k_slices(M, N, K, sms) > 1:
        return "splitk"
    tiles128 = triton.cdiv(M, 128) * triton.cdiv(N, 128)
    if tiles128 >= sms:
        return "large" if tiles128 >= 2 * sms else "mid"
    return "partial" if 2 * tiles128 > sms else "few"


def at_least_cublas(M: int, N: int, K: int, even: bool, graphs: bool) -> bool:
    """Whether the H200 measurements rate ``torch.ops.tritium.matmul`` at least as fast as cuBLAS for this problem
    inside a graph compiled by Inductor (``even``: :func:`even_layout`; ``graphs``: the graph runs under CUDA
    graphs), which is what ``torch.compile`` with ``tritium.ops.inductor.use_kernels`` asks before replacing an
    ``aten.mm``. No problem qualifies today (docs/benchmarks.md, ninth session):

    * rule 1's small class (up to 512^3), 1.25-1.46x cuBLAS in graph replay of back-to-back calls and
      2.2-3.9 us against 2.9-4.2 per kernel inside a compiled block, still ran 8 blocks of 256 tokens 1.4%
      slower under CUDA graphs (0.986x, twice); without graphs such a GEMM is host-bound, and the op's host
      path costs 26-28 us per call against cuBLAS's 15-17 (one block ran 0.56x);
    * every larger class measured 0.93-1.02x as bare calls, below or within the noise of cuBLAS.

    So ``use_kernels(mm=True)`` leaves every GEMM to cuBLAS until a class measures faster in a compiled graph;
    the rule is the one place that says where."""
    return False


#: Rule 5's plan: cooperative 128x256x64, GROUP_SIZE_M 8, 3 stages, 2 store slices (3 x 48 KiB of
#: operands + 4 x 16 KiB of staging = 208 KiB of shared memory), in pairs of CTAs sharing B (CLUSTER=2).
LARGE_PLAN = Plan("cooperative", WSConfig(BM=128, BN=256, NUM_STAGES=3, EPILOGUE_SUBTILES=2, CLUSTER=2))


def choose(M: int, N: int, K: int, sms: int, even: bool = True) -> Plan:
    """The heuristic of the module docstring; ``even``: :func:`even_layout` of the operands."""
    kind = shape_class(M, N, K, sms, even)
    if kind == "small":
        return Plan("small", TINY_TILE)
    if kind == "splitk":
        return Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=split_k_slices(M, N, K, sms)))
    return {"large": LARGE_PLAN, "mid": Plan("pingpong", pingpong.LARGE), "partial": Plan("cooperative", coop.SMALL),
            "few": Plan("pingpong", pingpong.SMALL)}[kind]


def _tile(kernel: str, BM: int, BN: int, BK: int = 64, group: int = 8, stages: int = 4, subtiles: int = 4) -> Plan:
    return Plan(kernel, WSConfig(BM=BM, BN=BN, BK=BK, GROUP_SIZE_M=group, NUM_STAGES=stages,
                                 EPILOGUE_SUBTILES=subtiles))


def _small(BM: int, BN: int, BK: int = 64, stages: int = 4) -> Plan:
    return Plan("small", PointerConfig(BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, NUM_STAGES=stages,
                                       num_warps=4))


def _split(BM: int, BN: int, slices: int, stages: int = 4, subtiles: int = 4) -> Plan:
    return Plan("splitk", WSConfig(BM=BM, BN=BN, NUM_STAGES=stages, EPILOGUE_SUBTILES=subtiles, SPLIT_K=slices))


#: What the GPU sweep (scripts/gpu_gemm_sweep.py) times per shape class, besides the heuristic's
#: choice: tiles (a cooperative/split-K consumer owns BM/2 rows, so BM >= 128 there; a ping-pong
#: consumer holds a whole BMxBN fp32 accumulator, so BM * BN <= 128 * 128 there; a dual-K consumer
#: holds a whole BMxBN one too, BM = 64), K step, ring depth, epilogue slices, the grouping of tiles
#: in L2 (GROUP_SIZE_M) and the number of K slices. Every config fits shared memory as it is;
#: :func:`fit` still applies for fp32 outputs. Configs that lost by more than 10% in GPU run 1
#: (K steps of 128, split-K below 79% fill, 2-stage and 8-warp small tiles) are left out; dual-K
#: (gemm_ws_dualk_hopper) is new and timed where a program owns about one tile.
SWEEP_SPACE: dict[str, list[Plan]] = {
    "large": [LARGE_PLAN, _tile("cooperative", 128, 256, group=16), _tile("cooperative", 128, 256, stages=3, subtiles=2,
                                                                      group=16),
              _tile("cooperative", 128, 256, stages=3, subtiles=2, group=4), _tile("cooperative", 128, 256, stages=3),
              _tile("cooperative", 128, 256), _tile("cooperative", 256, 128), _tile("pingpong", 128, 128, stages=6),
              _tile("pingpong", 128, 128, stages=6, group=16), _tile("pingpong", 128, 128, stages=5, subtiles=2),
              Plan("cooperative", replace(LARGE_PLAN.config, CLUSTER=1))],
    "mid": [_tile("pingpong", 128, 128, stages=6), _tile("pingpong", 128, 128, stages=6, group=16),
            _tile("pingpong", 128, 128, stages=6, group=4), _tile("cooperative", 128, 128, stages=5, subtiles=2),
            _tile("cooperative", 128, 128, stages=6), LARGE_PLAN, _tile("cooperative", 128, 256),
            _tile("cooperative", 256, 128), _tile("dualk", 64, 128, stages=6, subtiles=2)],
    "partial": [_tile("cooperative", 128, 128, stages=5, subtiles=2),
                _tile("cooperative", 128, 128, stages=5, subtiles=2, group=1),
                _tile("cooperative", 128, 128, stages=6), _tile("pingpong", 64, 256, stages=4),
                _tile("dualk", 64, 128, stages=6, subtiles=2),
                _split(128, 256, 2, stages=3), _split(128, 128, 5)],
    "few": [_tile("pingpong", 64, 128, stages=6, subtiles=2), _tile("cooperative", 128, 64, stages=6, subtiles=2),
            _tile("dualk", 64, 128, stages=6, subtiles=2), _tile("dualk", 64, 128, stages=4, subtiles=2),
            _tile("dualk", 64, 64, stages=6, subtiles=1), _tile("dualk", 64, 128, stages=6, subtiles=2, group=1),
            _split(128, 128, 2), _small(64, 128), Plan("small", TINY_TILE),
            _small(64, 64), _small(128, 64)],
    "splitk": [*(_split(128, 128, s) for s in (2, 3, 4, 5, 6, 8)), _split(128, 128, 5, stages=6),
               *(_split(128, 256, s, stages=3) for s in (2, 3, 4)), _tile("pingpong", 64, 128, stages=6, subtiles=2),
               _tile("pingpong", 64, 256, stages=4), _tile("cooperative", 128, 128, stages=5, subtiles=2)],
    "small": [Plan("small", SMALL_TILE), Plan("small", TINY_TILE), _small(64, 128, stages=3),
              _small(64, 64, BK=128, stages=2), _small(64, 32, stages=3),
              _tile("pingpong", 64, 64, stages=4, subtiles=1), _tile("dualk", 64, 64, stages=4, subtiles=1),
              _tile("dualk", 64, 32, stages=4, subtiles=1), _tile("dualk", 64, 128, stages=4, subtiles=2)],
}


def sweep_candidates(M: int, N: int, K: int, sms: int) -> list[Plan]:
    """The heuristic's choice, then :data:`SWEEP_SPACE` of the problem's class; a split-K plan only where
    each slice keeps at least 4 K steps."""
    steps = triton.cdiv(K, 64)
    plans = [choose(M, N, K, sms), *SWEEP_SPACE[shape_class(M, N, K, sms)]]
    plans = [p for p in plans if p.kernel != "splitk" or steps // p.config.SPLIT_K >= SPLIT_K_MIN_STEPS // 2]
    return list(dict.fromkeys(plans))


def candidates(M: int, N: int, K: int, sms: int, even: bool = True) -> list[Plan]:
    """What autotuning times: the heuristic's choice first, then every other variant's usual configs."""
    plans = [choose(M, N, K, sms, even), Plan("pingpong", pingpong.LARGE), Plan("pingpong", pingpong.SMALL),
             LARGE_PLAN, Plan("cooperative", coop.LARGE), Plan("cooperative", coop.SMALL)]
    if triton.cdiv(M, 128) * triton.cdiv(N, 128) < sms:  # about one tile per program: dual-K
        plans.append(Plan("dualk", dualk.DEFAULT))
    if even and M * N * K <= 8 * SMALL_WORK:  # up to 1024^3
        plans += [Plan("small", SMALL_TILE), _small(64, 128)]
    steps = triton.cdiv(K, 64)
    plans += [Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=s)) for s in (2, 3, 4, 5, 6, 8)
              if steps // s >= SPLIT_K_MIN_STEPS // 2]
    return list(dict.fromkeys(plans))


# ------------------------------------------------------------------------------------------------
# FP8 (tritium.ops.scaled_matmul): the cooperative FP8 kernel (gemm_fp8_hopper), K steps of 128 bytes

#: The FP8 plan per shape class, with ``tiles256 = cdiv(M, 128) * cdiv(N, 256)`` and ``tiles128`` as above:
#: "large" (``tiles256 >= sms``): 128x256x128, 4 stages, 4 store slices (gemm_fp8_hopper.LARGE, the 16-bit
#: large plan's tile with twice the K bytes per step); "mid" (``tiles128 > sms / 2``): 128x128x128, 6 stages
#: (gemm_fp8_hopper.SMALL); "few": 128x64x128, 8 stages, twice the tiles of 128x128. ``scripts/gpu_gemm19.py``
#: timed :data:`FP8_SWEEP` against ``torch._scaled_mm`` on the H200 (docs/benchmarks.md, 2026-12-02): each class's
#: plan is its best sweep config or within 0.3% of it (geometric means over the class: few 0.934, mid 0.989,
#: large 1.025).
FP8_PLANS: dict[str, Plan] = {
    "large": Plan("fp8", fp8.LARGE), "mid": Plan("fp8", fp8.SMALL),
    "few": Plan("fp8", WSConfig(BM=128, BN=64, BK=128, NUM_STAGES=8, EPILOGUE_SUBTILES=2))}


def fp8_shape_class(M: int, N: int, sms: int) -> str:
    """Which of :data:`FP8_PLANS` an M x N FP8 problem takes."""
    if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= sms:
        return "large"
    return "mid" if 2 * triton.cdiv(M, 128) * triton.cdiv(N, 128) > sms else "few"


def choose_fp8(M: int, N: int, K: int, sms: int) -> Plan:
    """The FP8 plan of an M x N x K problem (:data:`FP8_PLANS`)."""
    return FP8_PLANS[fp8_shape_class(M, N, sms)]


def _fp8(BM: int, BN: int, stages: int, subtiles: int, group: int = 8) -> Plan:
    return Plan("fp8", WSConfig(BM=BM, BN=BN, BK=128, NUM_STAGES=stages, EPILOGUE_SUBTILES=subtiles,
                                GROUP_SIZE_M=group))


#: The FP8 configs the GPU script times on every shape, besides :func:`choose_fp8`'s: each fits shared memory
#: with bf16 output (a consumer owns BM/2 >= 64 rows).
FP8_SWEEP: list[Plan] = [*FP8_PLANS.values(), _fp8(128, 256, 3, 2), _fp8(128, 256, 4, 4, group=16),
                         _fp8(256, 128, 4, 4), _fp8(128, 128, 4, 2), _fp8(128, 128, 6, 2, group=16)]


# ------------------------------------------------------------------------------------------------
# The on-disk autotune cache

def cache_key(device_name: str, dtype: str, out_dtype: str, M: int, N: int, K: int) -> str:
    return f"{device_name}|{dtype}|{out_dtype}|{M}x{N}x{K}"


@functools.lru_cache(maxsize=1)
def tuning_stamp() -> str:
    """What a tuned choice depends on besides the device and the problem: the versions of Triton, torch and
    tritium, and the source of every GEMM kernel (Triton's hash of it, helpers included). An entry recorded
    under another stamp is stale: it is tuned again and replaced."""
    import hashlib
    import importlib.metadata as md

    def version(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "none"
    sources = "|".join(getattr(v.kernel, "cache_key", None) or getattr(v.kernel, "src", "") for v in VARIANTS.values())
    kernels = hashlib.sha256(sources.encode()).hexdigest()[:16]
    return f"triton {triton.__version__}, torch {version('torch')}, tritium {version('tritium')}, kernels {kernels}"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` + ``.lock`` (POSIX ``fcntl``; elsewhere writes are only atomic)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class AutotuneCache:
    """Whether the op autotunes, and the plans it chose, in memory and in one JSON file.

    The file is ``tritium.knobs.ops.gemm_autotune_cache`` (default ``~/.cache/tritium/gemm_autotune.json``),
    read again whenever that knob names another file. The cache only saves tuning time, so it never fails
    a matmul: a file that cannot be read as a cache is set aside with a warning naming it, and a path that
    cannot be written (a read-only folder, a folder in its place) warns once and the process tunes in
    memory. Writers in several processes merge their entries: each write re-reads the file under a lock
    and replaces it atomically. An entry is ``{"plan": ..., "stamp": tuning_stamp()}``; one with another
    stamp (other versions, edited kernels) is stale and tuned again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._enabled: bool | None = None  # None: follow tritium.knobs.ops.gemm_autotune
        self._memory: dict[str, Plan] = {}
        self._loaded_from: Path | None = None
        self._unwritable: set[Path] = set()  # paths already warned about

    def set_enabled(self, enabled: bool | None) -> None:
        """Turn autotuning on or off for this process.

        Args:
            enabled: True or False; None follows ``tritium.knobs.ops.gemm_autotune``
                (``TRITIUM_GEMM_AUTOTUNE``) again.
        """
        if enabled is not None and not isinstance(enabled, bool):
            raise TypeError(f"tritium.ops.plans.set_autotune: enabled must be True, False or None, not {enabled!r}")
        self._enabled = enabled

    def enabled(self) -> bool:
        return self._enabled if self._enabled is not None else knobs.ops.gemm_autotune

    @staticmethod
    def path() -> Path:
        return Path(knobs.ops.gemm_autotune_cache or Path.home() / ".cache" / "tritium" / "gemm_autotune.json")

    def forget(self) -> None:
        """Drop what is in memory: the next lookup reads the file, as a new process would."""
        with self._lock:
            self._loaded_from = None

    @staticmethod
    def _read(path: Path, warn: bool = True) -> dict[str, Any]:
        """The file's raw entries ({} when there is none, or when it is not a cache: with a warning)."""
        if not path.is_file():
            return {}
        try:
            raw = json.loads(path.read_text())
            if not isinstance(raw, dict):
                raise TypeError(f"a JSON {type(raw).__name__}, not an object")
            for entry in raw.values():
                if isinstance(entry, dict):
                    Plan.from_json(entry["plan"]) if AutotuneCache._named(entry) else None
                elif not isinstance(entry, list):  # a list: an entry of tritium before stamps, stale
                    raise TypeError(f"an entry {entry!r} is not an object")
            return raw
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            if warn:
                warnings.warn(f"tritium.ops.matmul: the autotune cache {path} is not a plan cache ({e!r}); "
                              "ignoring it (the next tuned shape rewrites it)", RuntimeWarning, stacklevel=4)
            return {}

    @staticmethod
    def _named(entry: dict[str, Any]) -> bool:
        """Whether a stamped entry holds a plan of a known kernel with its config stored by field name; one
        of tritium before named configs (a list of values) is stale, whatever its stamp."""
        kernel, config = entry["plan"]
        return kernel in VARIANTS and isinstance(config, dict)

    @staticmethod
    def _current(raw: dict[str, Any]) -> dict[str, Plan]:
        stamp = tuning_stamp()
        return {k: Plan.from_json(v["plan"]) for k, v in raw.items()
                if isinstance(v, dict) and v.get("stamp") == stamp and AutotuneCache._named(v)}

    def _load(self) -> dict[str, Plan]:
        path = self.path()
        if self._loaded_from != path:
            self._memory = self._current(self._read(path))
            self._loaded_from = path
        return self._memory

    def lookup(self, key: str) -> Plan | None:
        """The autotuned plan of ``key`` (see :func:`cache_key`), if one was recorded under this stamp."""
        with self._lock:
            return self._load().get(key)

    def record(self, key: str, plan: Plan) -> None:
        """Remember ``plan`` for ``key`` in memory and on disk: under the file's lock, the file as it is now
        plus this entry, written to a temporary file that replaces it."""
        with self._lock:
            memory = self._load()
            memory[key] = plan
            path = self.path()
            tmp = None
            try:
                if path.is_dir():
                    raise IsADirectoryError(f"{path} is a folder")
                path.parent.mkdir(parents=True, exist_ok=True)
                with _file_lock(path):
                    raw = self._read(path, warn=False)  # a broken file was warned about on loading
                    raw[key] = {"plan": plan.to_json(), "stamp": tuning_stamp()}
                    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
                    with os.fdopen(fd, "w") as f:
                        json.dump(dict(sorted(raw.items())), f, indent=1)
                    os.replace(tmp, path)
                    tmp = None
                memory.update(self._current(raw))  # what other processes tuned meanwhile
            except OSError as e:
                if path not in self._unwritable:
                    self._unwritable.add(path)
                    warnings.warn(f"tritium.ops.matmul: cannot write the autotune cache {path} ({e}); tuned plans "
                                  "are kept in memory for this process only", RuntimeWarning, stacklevel=3)
            finally:
                if tmp is not None:
                    os.unlink(tmp)


#: The process's autotune state; the functions below are its methods.
AUTOTUNE = AutotuneCache()
set_autotune = AUTOTUNE.set_enabled
autotune_enabled = AUTOTUNE.enabled
cache_path = AUTOTUNE.path
cached_plan = AUTOTUNE.lookup
record_plan = AUTOTUNE.record


def tune(run: Callable[[Plan], Any], plans: list[Plan], time_ms: Callable[[Callable[[], Any]], float]) -> Plan:
    """The fastest of ``plans`` by ``time_ms(lambda: run(plan))``; a plan that fails to compile or run
    (e.g. out of shared memory) is skipped, and if all fail the first plan's error propagates."""
    best, best_ms, first_error = None, float("inf"), None
    for plan in plans:
        try:
            ms = time_ms(lambda: run(plan))
        except Exception as e:  # noqa: BLE001  (a candidate that cannot run is not a choice)
            first_error = first_error or e
            continue
        if ms < best_ms:
            best, best_ms = plan, ms
    if best is None:
        raise first_error
    return best
