"""AlphaFold3's triangle multiplicative updates (outgoing, the GPU MODE trimul task, and incoming): four
kernels, three in TLX, or three TLX kernels where the projection centres x itself.

Operator (x [B, N, N, C] fp32, mask [B, N, N], hidden H)::

    xn = LayerNorm_C(x)
    left = (xn Wl^T) * mask * sigmoid(xn Wlg^T);  right = (xn Wr^T) * mask * sigmoid(xn Wrg^T)
    out[b, i, j, h] = sum_k left[b, i, k, h] * right[b, j, k, h]     (outgoing)
    out[b, i, j, h] = sum_k left[b, k, i, h] * right[b, k, j, h]     (incoming)
    y = (LayerNorm_H(out) * sigmoid(xn Wog^T)) Wo^T

Kernels (16-bit inside, fp32 at the boundaries; every accumulation and LayerNorm statistic in fp32).
The projection GEMM runs in bf16 (it multiplies raw x, which has no bound), left and right are stored
in bf16, the out gate in fp16; the output path's type is its packed weight's (fp16 where the weights
bound its values below fp16's range, else bf16: ``tritium.ops.trimul.choose_dtype``):

0. :func:`trimul_center_kernel`: each row's exact LayerNorm mean and 1/sqrt(var + eps); x minus its row
   mean, rounded to bf16, is the projection GEMM's A operand.
1. :func:`trimul_proj_kernel`: one GEMM over the five stacked projections, with LayerNorm split around
   it (LN(x) W^T = rstd ((x - mean) g) W^T + beta W^T, g folded into the packed weights): a persistent
   warp-specialized GEMM (TMA producer, two consumer warpgroups) over tiles of BM rows and one HS-wide
   slice of the hidden dimension, an m64n256 wgmma for the four left/right projections and an m64n64
   one for the out gate. The epilogue scales by rstd, adds beta W^T, applies mask and sigmoid gates and
   stores by TMA left and right channel-major, [B * H, N, N] (i, k contiguous), so step 3 is a batched
   row-major GEMM, and sigmoid(out gate) row-major [B * N * N, H].
   For C <= FUSED_MAX_DIM (:func:`fused_centering`, the one place the choice is made) kernels 0 and 1 are
   replaced by :func:`trimul_proj_x_kernel`: the same GEMM and epilogue on fp32 x itself, each program taking
   whole 128-row blocks: a TMA pass for the exact row means, then per hidden slice the consumers centre their
   rows' chunks into the bf16 A tiles and sum the centred squares for rstd. No bf16 copy of x is written.
2. :func:`trimul_pair_kernel`: the batched GEMM ``out[z] = left[z] @ right[z]^T`` over z = B * H
   (incoming: ``left[z]^T @ right[z]``, the operands read down their columns),
   the project's pipelined Hopper GEMM (cp.async ring, async wgmma, one wgmma in flight) with a
   batch index and B read through a transposed shared-memory view. Output [B * H, N, N] in bf16
   (a sum of N products has no bound that fp16's range would hold).
3. :func:`trimul_out_kernel`: a program loads BM rows of ``out`` across all H channels (coalesced:
   BM contiguous elements per channel), transposes them in registers, applies LayerNorm over H, the
   out gate, and multiplies by Wo^T (K = H, one register-A wgmma per BN columns of the output, Wo^T
   tiles through a cp.async ring), writing y fp32. Several programs share an SM (:func:`out_config`).

Tiling: C must be a multiple of BK = 64 and at most MAX_DIM, H 64 or 128, N a multiple of 16 (so that BM = 128 rows of
a batch never straddle two batches and every row is 32-byte aligned). :func:`check_shapes` says so.
"""
from __future__ import annotations

from typing import NamedTuple

import triton
import triton.language as tl

import tritium.tlx as tlx

from .. import compat, knobs
from .launch import DescriptorCache, interpreting, jit_launch, sm_count
from .partitions import mma_pair_step, release_last, wait_stage
from .tiles import column_subtiles, grouped_tile

#: The x chunk width (the statistics' chunk and the projection GEMM's K step) and the row block of kernels 1 and 3.
BK = 64
BM = 128
#: Hidden widths the kernels tile (kernel 3 holds a whole [BM, H] row block in registers).
HIDDEN_DIMS = (64, 128)
#: Elements of x each centring program holds in registers (32 fp32 values a thread at 4 warps), and the
#: largest dim it takes: one row, up to 16 warps (a longer row would spill).
CENTER_ELEMS = 4096
MAX_DIM = 16384
#: The projection kernel's hidden slice (each consumer holds [BM / 2, 5 HS] fp32 accumulators), its ring
#: depth (3 x 56 KB of operands, plus 48 KB of output staging) and its consumers' registers (setmaxnreg).
PROJ_HS = 64
PROJ_STAGES = 3
PROJ_REGS = 232
#: The fused projection (:func:`trimul_proj_x_kernel`): a 32-wide K step (the consumers centre x, and at 64
#: the chunk's registers spill next to the accumulators), 6 ring stages of 20 KB, consumers at 240 registers
#: (the producer gets 24), for dims up to FUSED_MAX_DIM (:func:`fused_centering`).
FUSED_BK = 32
FUSED_STAGES = 6
FUSED_REGS = 240
FUSED_MAX_DIM = 448


class PairConfig(NamedTuple):
    """The pair GEMM's tiles, pipeline depth and warps (its launch's constexprs and num_warps)."""
    BM: int
    BN: int
    BK: int
    GROUP_SIZE_M: int
    NUM_STAGES: int
    num_warps: int


class OutConfig(NamedTuple):
    """The output kernel's row block, column tile, Wo^T ring depth, warps, register cap and y staging tiles
    (its launch's constexprs and options)."""
    BM: int
    BN: int
    NUM_STAGES: int
    num_warps: int
    maxnreg: int
    Y_STAGES: int = 1


#: One warpgroup over 64 rows, capped at 128 registers a thread (no spills): three or four programs share an
#: SM (49 or 64 KB of shared memory), so some load and normalise while others multiply and store. On the H200
#: (docs/benchmarks.md, seventh session) this ran the output kernel 12% (C = 384) to 25% (C = 128) faster than
#: the earlier 128 rows over two warpgroups (two programs an SM); 32-wide column tiles win at C = 128,
#: 64-wide ones at C = 384.
OUT_NARROW = OutConfig(64, 32, 2, 4, 128)
OUT_WIDE = OutConfig(64, 64, 2, 4, 128)


def out_config(C: int) -> OutConfig:
    return OUT_NARROW if C <= 128 else OUT_WIDE


#: 128x128 tiles (two CTAs per SM fit: 96 KB of shared memory, 115 registers); with the pipelined GEMM's
#: 128x256 tile ptxas serializes this kernel's wgmmas (C7515). One warpgroup's 64x64 tile for N <= 64.
PAIR_LARGE = PairConfig(128, 128, 64, 8, 3, 8)
PAIR_TINY = PairConfig(64, 64, 64, 8, 2, 4)


@triton.jit
def trimul_center_kernel(x_ptr, xc_ptr, rstd_ptr, M, C, eps, BM: tl.constexpr, CP: tl.constexpr):
    """Per row of x [M, C]: x - mean, rounded to bf16, into ``xc`` [M, C] and 1/sqrt(var + eps) into ``rstd``
    [M]. A BM-row block stays in registers (CP: C rounded up to a power of two) between the two passes of
    exact moments: x is read once, and huge values neither cancel nor overflow a sum of squares before
    fp32's own limit. Centring before the rounding keeps a large common row offset out of the GEMM's
    bf16 operand."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, CP)
    row_ok = rows < M
    ok = row_ok[:, None] & (cols < C)[None, :]
    offs = rows.to(tl.int64)[:, None] * C + cols[None, :]
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    mean = tl.sum(x, axis=1) / C
    d = tl.where(ok, x - mean[:, None], 0.0)
    tl.store(xc_ptr + offs, d.to(tl.bfloat16), mask=ok)
    tl.store(rstd_ptr + rows, 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / C + eps), mask=row_ok)


@triton.jit
def _sigmoid(x, FAST: tl.constexpr):
    """sigmoid(x); with FAST, as 0.5 tanh(x / 2) + 0.5 on the hardware's tanh.approx: one MUFU operation
    where ``tl.sigmoid`` takes two (ex2 and rcp), which bounded the projection epilogue. Its ~2^-11
    relative error is below the 16-bit roundings that follow. (Not under the interpreter: inline PTX.)"""
    if FAST:
        t = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x * 0.5], dtype=tl.float32,
                                      is_pure=True, pack=1)
        return t * 0.5 + 0.5
    else:
        return tl.sigmoid(x)


@triton.jit
def _gated(acc, rstd, terms_ptr, j: tl.constexpr, hs, H: tl.constexpr):
    """``LN(x) @ W_j^T`` = rstd * acc + c_j (see :func:`trimul_proj_kernel`)."""
    return acc * rstd[:, None] + tl.load(terms_ptr + j * H + hs)[None, :]


@triton.jit
def _proj_epilogue(acc_q, acc_o, rstd, m0, sl, r, lr_bufs, og_bufs, left_desc, right_desc, og_desc, mask_ptr,
                   terms_ptr, M, NN, H: tl.constexpr, HALF: tl.constexpr, HS: tl.constexpr,
                   FAST_SIGMOID: tl.constexpr):
    """Consumer r's epilogue of rows m0... and hidden slice ``sl`` (both projection kernels): rstd, c_j, gates
    and mask in registers; left and right transposed into shared memory and stored channel-major by TMA,
    the out gate row-major, once the previous tile's stores have left the staging buffers (so they drain
    under the next tile's main loop)."""
    # A row block lies in one batch b (N * N % BM == 0): left/right[b * H + h, m - b * NN].
    rows = m0 + tl.arange(0, HALF)
    mask = tl.load(mask_ptr + rows.to(tl.int64), mask=rows < M, other=0).to(tl.float32)
    hs = sl * HS + tl.arange(0, HS)
    lp, lg, rp, rg = column_subtiles(acc_q, HALF, 4 * HS, 4)
    left = _gated(lp, rstd, terms_ptr, 0, hs, H) * _sigmoid(_gated(lg, rstd, terms_ptr, 1, hs, H), FAST_SIGMOID)
    right = _gated(rp, rstd, terms_ptr, 2, hs, H) * _sigmoid(_gated(rg, rstd, terms_ptr, 3, hs, H), FAST_SIGMOID)
    og = _sigmoid(_gated(acc_o, rstd, terms_ptr, 4, hs, H), FAST_SIGMOID)
    tlx.async_descriptor_store_wait(0)  # the previous tile's stores have left the staging buffers
    tlx.local_store(lr_bufs[2 * r], tl.trans(left * mask[:, None]).to(tlx.dtype_of(left_desc)))
    tlx.local_store(lr_bufs[2 * r + 1], tl.trans(right * mask[:, None]).to(tlx.dtype_of(right_desc)))
    tlx.local_store(og_bufs[r], og.to(tlx.dtype_of(og_desc)))
    tlx.fence_async_shared()
    b = m0 // NN
    tlx.async_descriptor_store(left_desc, lr_bufs[2 * r], [b * H + sl * HS, m0 - b * NN])
    tlx.async_descriptor_store(right_desc, lr_bufs[2 * r + 1], [b * H + sl * HS, m0 - b * NN])
    tlx.async_descriptor_store(og_desc, og_bufs[r], [m0, sl * HS])


@triton.jit
def trimul_proj_kernel(x_desc, wq_desc, wo_desc, left_desc, right_desc, og_desc, rstd_ptr, mask_ptr, terms_ptr,
                       M, NN, C, H: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr, HS: tl.constexpr,
                       NUM_STAGES: tl.constexpr, NUM_REGS: tl.constexpr, FAST_SIGMOID: tl.constexpr):
    """LayerNorm(x) @ [Wl | Wlg | Wr | Wrg | Wog]^T, gated, as a persistent warp-specialized GEMM.

    LayerNorm is split around the GEMM: A is x centred on its rows' means in bf16 (``x_desc`` over
    :func:`trimul_center_kernel`'s output), the norm's weight g is folded into the packed weights and
    ``terms_ptr`` [5, H] holds c_j = W_j beta, so ``LN(x) W_j^T = rstd (A W_j^T) + c_j``. A tile is BM rows
    by one HS-wide slice of the hidden dimension (tile t: rows (t // (H / HS)) * BM, slice t % (H / HS), so
    the programs running at one time share their x rows in L2). Per K step it multiplies by two weight
    tiles: the four left/right projections' HS columns side by side (``wq_desc``, [BK, 4 HS], one
    m64n256 wgmma) and the out gate's (``wo_desc``, [BK, HS]).

    * Producer (the default task): TMA loads into a NUM_STAGES ring, ``full``/``empty`` barriers.
    * Consumers: two warpgroups, each BM/2 rows of every tile; one wgmma group in flight.
    * Epilogue: rstd, c_j, gates and mask in registers; left and right transposed into shared memory and
      stored channel-major, [B * H, N * N], by TMA (so the pair GEMM reads row-major [N, N] matrices),
      the out gate row-major [M, H]. The stores drain under the next tile's main loop.
    """
    HALF: tl.constexpr = BM // 2
    SLICES: tl.constexpr = H // HS
    a_bufs = tlx.local_alloc((HALF, BK), tl.bfloat16, 2 * NUM_STAGES)  # stage s: consumer r's rows at 2 * s + r
    q_bufs = tlx.local_alloc((BK, 4 * HS), tl.bfloat16, NUM_STAGES)
    o_bufs = tlx.local_alloc((BK, HS), tl.bfloat16, NUM_STAGES)
    lr_bufs = tlx.local_alloc((HS, HALF), tlx.dtype_of(left_desc), 4)  # consumer r: left 2 * r, right 2 * r + 1
    og_bufs = tlx.local_alloc((HALF, HS), tlx.dtype_of(og_desc), 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    num_tiles = tl.cdiv(M, BM) * SLICES
    k_tiles = tl.cdiv(C, BK)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            it = 0
            for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
                m0 = (tile // SLICES) * BM
                sl = tile % SLICES
                for k in range(0, k_tiles):
                    s = wait_stage(empty, it, NUM_STAGES, 1)
                    tlx.barrier_expect_bytes(full[s], (BM * BK + 5 * BK * HS) * 2)
                    tlx.async_descriptor_load(wq_desc, q_bufs[s], [k * BK, sl * 4 * HS], full[s])
                    tlx.async_descriptor_load(wo_desc, o_bufs[s], [k * BK, 4 * H + sl * HS], full[s])
                    tlx.async_descriptor_load(x_desc, a_bufs[2 * s], [m0, k * BK], full[s])
                    tlx.async_descriptor_load(x_desc, a_bufs[2 * s + 1], [m0 + HALF, k * BK], full[s])
                    it += 1
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            it = 0
            for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
                m0 = (tile // SLICES) * BM + r * HALF
                sl = tile % SLICES
                acc_q = tl.zeros((HALF, 4 * HS), dtype=tl.float32)
                acc_o = tl.zeros((HALF, HS), dtype=tl.float32)
                for k in range(0, k_tiles):
                    s = wait_stage(full, it, NUM_STAGES)
                    acc_q, acc_o = mma_pair_step(a_bufs[2 * s + r], q_bufs, o_bufs, s, acc_q, acc_o, empty, it, k,
                                                 NUM_STAGES)
                    it += 1
                acc_q = tlx.async_dot_wait(0, acc_q)
                acc_o = release_last(acc_o, empty, it, NUM_STAGES)

                rows = m0 + tl.arange(0, HALF)
                rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
                _proj_epilogue(acc_q, acc_o, rstd, m0, sl, r, lr_bufs, og_bufs, left_desc, right_desc, og_desc,
                               mask_ptr, terms_ptr, M, NN, H, HALF, HS, FAST_SIGMOID)
            tlx.async_descriptor_store_wait(0)


@triton.jit
def trimul_proj_x_kernel(x_desc, x_ptr, wq_desc, wo_desc, left_desc, right_desc, og_desc, mask_ptr, terms_ptr, M, NN,
                         C, eps, H: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr, HS: tl.constexpr,
                         NUM_STAGES: tl.constexpr, NUM_REGS: tl.constexpr, FAST_SIGMOID: tl.constexpr):
    """:func:`trimul_proj_kernel` on x [M, C] fp32 itself, without :func:`trimul_center_kernel`: no bf16 copy
    of x is written and read back.

    A program takes whole row blocks of BM rows (M % BM == 0: N % 16 == 0), and makes 1 + H / HS passes over
    each block's rows; consumer r owns rows ``r * BM / 2...`` of every block.

    * Pass 0, the means: x's [BM / 2, BK] chunks arrive by TMA (``x_desc``, from DRAM) in the ring's stages,
      in the bytes of the left/right weight tile, and each consumer sums its rows.
    * Then per hidden slice, the TMA kernel's K loop with the weights by TMA, where each consumer reads its
      rows' chunks itself (``x_ptr``: just read, so from L2; one chunk ahead), centres them on the means,
      rounds them to bf16 into its double-buffered A tile, and sums the squares of the centred values (the
      second pass of the exact moments) for the epilogue's rstd. Every slice computes them alike.

    Registers decide the split: the TMA ring hides DRAM's latency for pass 0, where no accumulator is live;
    in the K loop, a chunk loaded from global memory comes in 16-byte vectors, 4 rows a thread at BK = 32 (a
    ``local_load`` of the ring's copy takes Triton's default layout, a scalar per row for BM / 8 rows, whose
    means and addresses spilled next to the 160 accumulator registers)."""
    HALF: tl.constexpr = BM // 2
    SLICES: tl.constexpr = H // HS
    # Shared memory at BM = 128, HS = 64, BK = 32 and six stages (FUSED_*): 6 x 20 KB of weights (pass 0's x
    # chunks, 2 x 8 KB, in the left/right tile's 16 KB) + 16 KB of A tiles + 48 KB of epilogue staging
    # = 184 KB (189,032 bytes with barriers) of the H200's 227 KB a block.
    q_bufs = tlx.local_alloc((BK, 4 * HS), tl.bfloat16, NUM_STAGES)
    x_bufs = tlx.local_alloc((HALF, BK), tl.float32, 2 * NUM_STAGES, reuse=q_bufs)  # stage s: rows r at 2 * s + r
    o_bufs = tlx.local_alloc((BK, HS), tl.bfloat16, NUM_STAGES)
    a_bufs = tlx.local_alloc((HALF, BK), tl.bfloat16, 4)  # consumer r, K step k: 2 * r + k % 2
    lr_bufs = tlx.local_alloc((HS, HALF), tlx.dtype_of(left_desc), 4)  # consumer r: left 2 * r, right 2 * r + 1
    og_bufs = tlx.local_alloc((HALF, HS), tlx.dtype_of(og_desc), 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    num_blocks = M // BM
    k_tiles = C // BK

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            it = 0
            for blk in range(tl.program_id(0), num_blocks, tl.num_programs(0)):
                m0 = blk * BM
                for p in range(0, 1 + SLICES):  # pass 0: x; pass 1 + sl: slice sl's weights
                    for k in range(0, k_tiles):
                        s = wait_stage(empty, it, NUM_STAGES, 1)
                        if p == 0:
                            tlx.barrier_expect_bytes(full[s], BM * BK * 4)
                            tlx.async_descriptor_load(x_desc, x_bufs[2 * s], [m0, k * BK], full[s])
                            tlx.async_descriptor_load(x_desc, x_bufs[2 * s + 1], [m0 + HALF, k * BK], full[s])
                        else:
                            tlx.barrier_expect_bytes(full[s], 5 * BK * HS * 2)
                            tlx.async_descriptor_load(wq_desc, q_bufs[s], [k * BK, (p - 1) * 4 * HS], full[s])
                            tlx.async_descriptor_load(wo_desc, o_bufs[s], [k * BK, 4 * H + (p - 1) * HS], full[s])
                        it += 1
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            it = 0
            offs = tl.arange(0, HALF)[:, None] * C + tl.arange(0, BK)[None, :]
            for blk in range(tl.program_id(0), num_blocks, tl.num_programs(0)):
                m0 = blk * BM + r * HALF
                total = tl.zeros((HALF, BK), dtype=tl.float32)
                for k in range(0, k_tiles):
                    s = wait_stage(full, it, NUM_STAGES)
                    total += tlx.local_load(x_bufs[2 * s + r])
                    tlx.barrier_arrive(empty[s])
                    it += 1
                mean = tl.sum(total, axis=1) / C
                for sl in range(0, SLICES):
                    acc_q = tl.zeros((HALF, 4 * HS), dtype=tl.float32)
                    acc_o = tl.zeros((HALF, HS), dtype=tl.float32)
                    squares = tl.zeros((HALF, ), dtype=tl.float32)
                    x_rows = x_ptr + m0.to(tl.int64) * C
                    chunk = tl.load(x_rows + offs)
                    for k in range(0, k_tiles):
                        d = chunk - mean[:, None]
                        # The next chunk, from L2, under this step's and the last one's wgmmas.
                        more = tl.full((HALF, BK), k + 1, tl.int32) < k_tiles  # Triton 3.9's interpreter
                        chunk = tl.load(x_rows + (k + 1) * BK + offs, mask=more)  # refuses a scalar mask
                        squares += tl.sum(d * d, axis=1)
                        # Step k - 2, the last reader of this A tile, retired in step k - 1's wait.
                        a = a_bufs[2 * r + k % 2]
                        tlx.local_store(a, d.to(tl.bfloat16))
                        tlx.fence_async_shared()
                        s = wait_stage(full, it, NUM_STAGES)
                        acc_q, acc_o = mma_pair_step(a, q_bufs, o_bufs, s, acc_q, acc_o, empty, it, k, NUM_STAGES)
                        it += 1
                    acc_q = tlx.async_dot_wait(0, acc_q)
                    acc_o = release_last(acc_o, empty, it, NUM_STAGES)
                    rstd = 1.0 / tl.sqrt(squares / C + eps)
                    _proj_epilogue(acc_q, acc_o, rstd, m0, sl, r, lr_bufs, og_bufs, left_desc, right_desc, og_desc,
                                   mask_ptr, terms_ptr, M, NN, H, HALF, HS, FAST_SIGMOID)
            tlx.async_descriptor_store_wait(0)


@triton.jit
def trimul_pair_kernel(l_ptr, r_ptr, o_ptr, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, INCOMING: tl.constexpr):
    """Per z = program_id(1), over row-major [N, N] matrices (N % 16 == 0): ``o[z] = l[z] @ r[z]^T``
    (outgoing: rows of l and r are i and j, k runs along them) or, with INCOMING, ``o[z] = l[z]^T @ r[z]``
    (k runs down the columns: tiles are loaded [BK, BM] and A is read through a transposed view)."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(N, BM), tl.cdiv(N, BN), GROUP_SIZE_M)
    base = tl.program_id(1).to(tl.int64) * N * N
    # Rows past N wrap around: loads stay in bounds, the store mask drops them.
    offs_i = (pid_m * BM + tl.arange(0, BM)) % N
    offs_j = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    dtype = tlx.dtype_of(l_ptr)
    if INCOMING:
        # i and j run along rows here: BM, BN and N are multiples of 16, so the wrapped indices come in
        # aligned runs of 16 (the hints keep the copies 16 bytes wide).
        offs_i = tl.max_contiguous(tl.multiple_of(offs_i, 16), 16)
        offs_j = tl.max_contiguous(tl.multiple_of(offs_j, 16), 16)
        a_ptrs = l_ptr + base + (offs_k[:, None] * N + offs_i[None, :])
        b_ptrs = r_ptr + base + (offs_k[:, None] * N + offs_j[None, :])
        bufs_a = tlx.local_alloc((BK, BM), dtype, NUM_STAGES)
        bufs_b = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
        k_step = BK * N
    else:
        a_ptrs = l_ptr + base + (tl.multiple_of(offs_i[:, None] * N, [16, 16]) + offs_k[None, :])
        b_ptrs = r_ptr + base + (tl.multiple_of(offs_j[:, None] * N, [16, 16]) + offs_k[None, :])
        bufs_a = tlx.local_alloc((BM, BK), dtype, NUM_STAGES)
        bufs_b = tlx.local_alloc((BN, BK), dtype, NUM_STAGES)
        k_step = BK

    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):  # prologue
        ok = _k_in_range(offs_k, N - i * BK, INCOMING)
        token_a = tlx.async_load(a_ptrs + i * k_step, bufs_a[i], mask=ok)
        token_b = tlx.async_load(b_ptrs + i * k_step, bufs_b[i], mask=ok)
        tlx.async_load_commit_group([token_a, token_b])

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(N, BK), num_stages=0):
        s = k % NUM_STAGES
        tlx.async_load_wait_group(NUM_STAGES - 2)
        if INCOMING:
            acc = tlx.async_dot(tlx.local_trans(bufs_a[s]), bufs_b[s], acc)
        else:
            acc = tlx.async_dot(bufs_a[s], tlx.local_trans(bufs_b[s]), acc)
        acc = tlx.async_dot_wait(1, acc)  # retires the previous wgmma, which read the stage refilled below
        i = k + NUM_STAGES - 1
        ns = i % NUM_STAGES
        ok = _k_in_range(offs_k, N - i * BK, INCOMING)
        token_a = tlx.async_load(a_ptrs + i * k_step, bufs_a[ns], mask=ok)
        token_b = tlx.async_load(b_ptrs + i * k_step, bufs_b[ns], mask=ok)
        tlx.async_load_commit_group([token_a, token_b])
    acc = tlx.async_dot_wait(0, acc)
    tlx.async_load_wait_group(0)

    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(o_ptr + base + rows[:, None] * N + cols[None, :], acc.to(tlx.dtype_of(o_ptr)),
             mask=(rows[:, None] < N) & (cols[None, :] < N))


@triton.jit
def _k_in_range(offs_k, limit, INCOMING: tl.constexpr):
    """The load mask of a K step: ``offs_k < limit`` along the tile's K dimension (rows when INCOMING,
    else columns), constant over groups of 16 (N % 16 == 0) so that masked copies stay 16 bytes wide."""
    if INCOMING:
        return offs_k[:, None] < limit
    else:
        return tl.max_constancy(offs_k[None, :] < limit, [1, 16])


@triton.jit
def trimul_out_kernel(p_ptr, og_ptr, ln_w_ptr, ln_b_ptr, w_ptr, y_desc, M, NN, C, eps, H: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr, NUM_STAGES: tl.constexpr, Y_STAGES: tl.constexpr):
    """y[m] = (LayerNorm_H(p[:, m]) * og[m]) @ Wo^T for BM rows; ``p`` [B * H, NN], ``w_ptr`` Wo^T [H, C],
    ``y_desc`` over y [M, C] fp32 in [BM, BN] blocks.

    y is most of the kernel's traffic (4 C bytes a row against 4 H read), so its tiles leave by TMA stores
    from a ring of Y_STAGES shared-memory tiles: one bulk copy per tile, drained under the next tiles'
    wgmmas, in place of a register store per thread and row."""
    m0 = tl.program_id(0) * BM
    b = m0 // NN
    hs = tl.arange(0, H)
    ps = tl.arange(0, BM)
    rows = m0 + ps
    row_ok = rows < M
    rows64 = rows.to(tl.int64)
    dtype = tlx.dtype_of(w_ptr)

    # Wo^T column blocks through a cp.async ring; the first ones load while the LayerNorm runs.
    w_bufs = tlx.local_alloc((H, BN), dtype, NUM_STAGES)
    w_ptrs = w_ptr + (hs[:, None] * C + tl.arange(0, BN)[None, :])
    n_tiles = C // BN
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        tlx.async_load(w_ptrs + i * BN, w_bufs[i], mask=hs[:, None] + i * H < n_tiles * H)  # i < n_tiles
        tlx.async_load_commit_group()

    # [H, BM] -> [BM, H]: per channel, BM contiguous elements of the channel-major pair product.
    pt = tl.load(p_ptr + ((b * H + hs[:, None]).to(tl.int64) * NN + (m0 - b * NN) + ps[None, :]),
                 mask=row_ok[None, :], other=0.0)
    v = tl.trans(pt).to(tl.float32)
    mean = tl.sum(v, axis=1) / H
    d = v - mean[:, None]
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / H + eps)
    g = tl.load(ln_w_ptr + hs)
    beta = tl.load(ln_b_ptr + hs)
    gate = tl.load(og_ptr + rows64[:, None] * H + hs[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)
    a = ((d * rstd[:, None] * g[None, :] + beta[None, :]) * gate).to(dtype)

    y_bufs = tlx.local_alloc((BM, BN), tl.float32, Y_STAGES)
    for n in tl.range(0, n_tiles, num_stages=0):
        s = n % NUM_STAGES
        tlx.async_load_wait_group(NUM_STAGES - 2)
        acc = tlx.async_dot(a, w_bufs[s])
        acc = tlx.async_dot_wait(0, acc)
        i = n + NUM_STAGES - 1
        tlx.async_load(w_ptrs + i * BN, w_bufs[i % NUM_STAGES], mask=hs[:, None] + i * H < n_tiles * H)
        tlx.async_load_commit_group()
        tlx.async_descriptor_store_wait(Y_STAGES - 1)  # the store that last read this tile's buffer is done
        y_buf = y_bufs[n % Y_STAGES]
        tlx.local_store(y_buf, acc)
        tlx.fence_async_shared()
        tlx.async_descriptor_store(y_desc, y_buf, [m0, n * BN])  # rows past M are clipped
    tlx.async_load_wait_group(0)
    tlx.async_descriptor_store_wait(0)


#: The triangle updates: outgoing sums over the k of rows i and j, incoming over the k of columns i and j.
DIRECTIONS = ("outgoing", "incoming")


def check_direction(direction, op: str) -> None:
    """A clear error for a direction that is not one of :data:`DIRECTIONS`, naming ``op``."""
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise ValueError(f"{op}: direction must be one of {DIRECTIONS}, got {direction!r}")


def check_shapes(B: int, N: int, C: int, H: int, op: str) -> None:
    """The tiling limits, as errors that name the argument (x or hidden_dim)."""
    if C % BK:
        raise ValueError(f"{op}: x's last dimension (dim={C}) must be a multiple of {BK}: the projection GEMM "
                         f"steps through it {BK} columns at a time")
    if C > MAX_DIM:
        raise ValueError(f"{op}: x's last dimension (dim={C}) is above {MAX_DIM}: the LayerNorm pass holds a "
                         "whole row in registers")
    if N % 16:
        raise ValueError(f"{op}: x's sequence dimensions (N={N}) must be a multiple of 16: the kernels take "
                         f"{BM}-row blocks of N * N rows and 32-byte aligned rows of N elements")
    if H not in HIDDEN_DIMS:
        raise ValueError(f"{op}: hidden_dim={H} is not supported; the kernels tile hidden_dim in {HIDDEN_DIMS}")


def fused_centering(C: int) -> bool:
    """Whether a call centres x inside the projection kernel (:func:`trimul_proj_x_kernel`) rather than in
    :func:`trimul_center_kernel`'s pass: ``tritium.knobs.ops.trimul_fused_centering`` when set, else for
    C <= FUSED_MAX_DIM: on the H200 the fused path ran the ranked cases at 0.945 ms geomean against 0.992,
    faster in six of seven (docs/benchmarks.md, ninth session); at N = 512 it was 2.3% faster at C = 384 and
    0.7% at C = 448, and the separate pass 2.6%, 8.4% and 11.3% faster at C = 512, 640 and 768 (twelfth
    session)."""
    forced = knobs.ops.trimul_fused_centering
    return C <= FUSED_MAX_DIM if forced is None else forced


def pair_config(N: int) -> PairConfig:
    return PAIR_LARGE if N > 64 else PAIR_TINY


def center_block(C: int) -> tuple[int, int, int]:
    """(rows per program, C rounded up to a power of two, warps) of :func:`trimul_center_kernel`: at least
    CENTER_ELEMS elements of x per program, 32 a thread."""
    cp = triton.next_power_of_2(C)
    return max(1, CENTER_ELEMS // cp), cp, max(4, cp // 1024)


class _Desc(NamedTuple):
    """A host TMA descriptor to be: its tensor, its block and its slot among the plan's descriptors (where its
    launcher arguments are cached, by the tensor's address)."""
    tensor: object
    block: tuple
    slot: int

    def data_ptr(self) -> int:
        return self.tensor.data_ptr()


#: Descriptor slots of a :class:`Plan` (the ``slot`` of each :class:`_Desc` it makes).
_DESC_SLOTS = 10


class Launcher:
    """Launches of kernels whose non-pointer arguments stay fixed from call to call, on one device: per
    kernel and pipeline digest, the first launch goes through the JIT (compiling, caching and the tritium
    pipelines as always) and later ones straight to the compiled launcher
    (:func:`tritium.kernels.launch.jit_launch`), without the JIT's per-call binding. The arguments must keep
    the JIT's specialization (16-byte alignment of pointers, integers equal to 1): the owner keys its
    launcher on it. Under the interpreter, or while a launch hook is set, every launch goes through the JIT.
    :class:`Plan` adds host TMA descriptors."""

    def __init__(self, device) -> None:
        self.device = device
        self.interpreting = interpreting()
        self.direct: dict = {}  # (kernel, pipeline digest) -> (DirectLaunch, constexpr values) or None

    def run(self, kernel, grid: tuple, args: list, consts: dict) -> None:
        if self.interpreting or compat.launch_hooks_active():
            kernel[grid](*[self._host(a) for a in args], **consts)
            return
        key = (kernel, compat.pipeline_digest(kernel))
        entry = self.direct.get(key, False)
        if entry is False:
            self.direct[key] = jit_launch(kernel, grid, [self._host(a) for a in args], consts)
        elif entry is None:
            kernel[grid](*[self._host(a) for a in args], **consts)
        else:
            direct, const_values = entry
            direct((*grid, 1, 1)[:3], compat.current_stream(self.device.index),
                   [*self._expanded(args, direct), *const_values])

    def ready(self, kernels) -> bool:
        """Whether every kernel of ``kernels`` launches directly under the pipelines now in effect (nothing to
        compile)."""
        return all(self.direct.get((k, compat.pipeline_digest(k))) for k in kernels)

    def _host(self, arg):
        """``arg`` as the JIT takes it."""
        return arg

    def _expanded(self, args: list, direct) -> list:
        """``args`` as the compiled launcher takes them."""
        return args


class Plan(Launcher):
    """The launches (four, or three where the projection centres x: :func:`fused_centering`) of every call
    with one (B, N, C, H, device, 16-byte alignment of the inputs): grids, constexprs, descriptor blocks,
    and the compiled kernels' direct launches (:class:`Launcher`):
    the host time before a call's first kernel, and between kernels while they are short, is the call's
    time. Host TMA descriptors encode their tensor's address, so their launcher arguments are kept per
    address (:class:`tritium.kernels.launch.DescriptorCache`): the caching allocator hands the same intermediate
    buffers back call after call."""

    def __init__(self, B: int, N: int, C: int, H: int, device, incoming: bool = False) -> None:
        super().__init__(device)
        self.B, self.N, self.C, self.H, self.incoming = B, N, C, H, incoming
        self.M, self.NN = B * N * N, N * N
        self.center_bm, self.cp, self.center_warps = center_block(C)
        self.center_grid = (triton.cdiv(self.M, self.center_bm), )
        self.fused = fused_centering(C)
        units = self.M // BM if self.fused else triton.cdiv(self.M, BM) * (H // PROJ_HS)  # row blocks, or tiles
        self.proj_grid = (min(units, sm_count(device)), )
        self.kernels = ((trimul_proj_x_kernel, ) if self.fused else (trimul_center_kernel, trimul_proj_kernel)) + (
            trimul_pair_kernel, trimul_out_kernel)
        self.pair_cfg = cfg = pair_config(N)
        self.pair_grid = (triton.cdiv(N, cfg.BM) * triton.cdiv(N, cfg.BN), B * H)
        self.out_cfg = out_config(C)
        self.out_grid = (triton.cdiv(self.M, self.out_cfg.BM), )
        self.graphs = _graphs if not self.interpreting and self.M <= GRAPH_MAX_ROWS else None
        self.descriptors = DescriptorCache(_DESC_SLOTS)

    def _host(self, arg):
        from triton.tools.tensor_descriptor import TensorDescriptor
        return TensorDescriptor.from_tensor(arg.tensor, list(arg.block)) if type(arg) is _Desc else arg

    def _host_of(self, slot: int, desc: _Desc):
        return self._host(desc)

    def _expanded(self, args: list, direct) -> list:
        metas = iter(direct.descriptor_meta)  # the kernel's descriptor parameters, in order
        expanded = []
        for a in args:
            if type(a) is _Desc:
                expanded += self.descriptors.args(a.slot, a, self._host_of, next(metas))
            else:
                expanded.append(a)
        return expanded

    def __call__(self, x, mask, w_proj_t, proj_terms, out_ln_w, out_ln_b, w_out_t, eps: float, out_eps: float,
                 stages=None, prologue=None):
        """y [B, N, N, C] fp32 from checked, contiguous arguments. ``stages``: an optional callable
        ``stages(name)`` returning a context manager entered around each launch (the benchmark's per-kernel
        timing); with it, every call launches its kernels one by one. ``prologue``: the caller's launch to run
        first, in the same graph (see :func:`launch`)."""
        import torch

        y = torch.empty((self.B, self.N, self.N, self.C), device=x.device, dtype=torch.float32)
        inputs = (x, mask, w_proj_t, proj_terms, out_ln_w, out_ln_b, w_out_t)
        if stages is None and self.graphs is not None and self.graphs.replay(self, inputs, y, eps, out_eps, prologue):
            return y
        self.launch_all(inputs, y, eps, out_eps, stages, prologue)
        return y

    def launch_all(self, inputs: tuple, y, eps: float, out_eps: float, stages=None, prologue=None) -> None:
        """The launches (``prologue``'s first), writing ``y``; the intermediates come from the caching allocator
        (or, while a :class:`Graphs` captures, from the graph's private pool)."""
        import contextlib

        import torch

        if prologue is not None:
            prologue()
        x, mask, w_proj_t, proj_terms, out_ln_w, out_ln_b, w_out_t = inputs
        M, NN, C, H = self.M, self.NN, self.C, self.H
        dev = x.device
        stage = stages or (lambda name: contextlib.nullcontext())
        # left/right in bf16 (their bound grows with the LayerNorm weights), the sigmoid gate in fp16 ([0, 1]).
        left = torch.empty((self.B * H, NN), device=dev, dtype=torch.bfloat16)
        right = torch.empty_like(left)
        og = torch.empty((M, H), device=dev, dtype=torch.float16)
        half = BM // 2
        outs = [_Desc(left, (PROJ_HS, half), 3), _Desc(right, (PROJ_HS, half), 4), _Desc(og, (half, PROJ_HS), 5)]
        consts = dict(H=H, BM=BM, HS=PROJ_HS, FAST_SIGMOID=not self.interpreting, num_warps=4)
        if self.fused:
            x2 = x.view(M, C)
            descs = [_Desc(x2, (half, FUSED_BK), 6), x2, _Desc(w_proj_t, (FUSED_BK, 4 * PROJ_HS), 7),
                     _Desc(w_proj_t, (FUSED_BK, PROJ_HS), 8), *outs]
            with stage("proj"):
                self.run(trimul_proj_x_kernel, self.proj_grid, [*descs, mask, proj_terms, M, NN, C, eps],
                         dict(consts, BK=FUSED_BK, NUM_STAGES=FUSED_STAGES, NUM_REGS=FUSED_REGS))
        else:
            xc = torch.empty((M, C), device=dev, dtype=torch.bfloat16)
            rstd = torch.empty((M, ), device=dev, dtype=torch.float32)
            with stage("center"):
                self.run(trimul_center_kernel, self.center_grid, [x, xc, rstd, M, C, eps],
                         dict(BM=self.center_bm, CP=self.cp, num_warps=self.center_warps))
            descs = [_Desc(xc, (half, BK), 0), _Desc(w_proj_t, (BK, 4 * PROJ_HS), 1),
                     _Desc(w_proj_t, (BK, PROJ_HS), 2), *outs]
            with stage("proj"):
                self.run(trimul_proj_kernel, self.proj_grid, [*descs, rstd, mask, proj_terms, M, NN, C],
                         dict(consts, BK=BK, NUM_STAGES=PROJ_STAGES, NUM_REGS=PROJ_REGS))
        pair = torch.empty_like(left)  # bf16: sums of N products, fp32's range
        with stage("pair"):
            self.run(trimul_pair_kernel, self.pair_grid, [left, right, pair, self.N],
                     dict(self.pair_cfg._asdict(), INCOMING=self.incoming))
        y_desc = _Desc(y.view(M, C), (self.out_cfg.BM, self.out_cfg.BN), 9)
        with stage("out"):
            self.run(trimul_out_kernel, self.out_grid,
                     [pair, og, out_ln_w, out_ln_b, w_out_t, y_desc, self.M, NN, C, out_eps],
                     dict(self.out_cfg._asdict(), H=H))



class Graphs:
    """CUDA graphs of a :class:`Plan`'s launches, replayed in place of launching them one by one.

    A small call is bound by the host: launching four kernels takes longer than running them. A graph
    replays them in one launch, with no gap between kernels. It bakes in every address the kernels touch
    (the inputs, ``y``, and TMA descriptors encoding them; the intermediates live in the graph's private
    pool) and the pipelines' compiled kernels, so it is kept per (stream, pipeline digests, eps values,
    addresses) and replayed only when a call matches all of them. The caching allocator hands a loop's
    fresh inputs and outputs the same addresses call after call, so such a loop replays; a graph is
    captured only for a key seen twice (a call whose addresses never repeat launches directly and pays no
    capture), and at most :attr:`KEPT` graphs are held, least recently used dropped first, since each
    holds its intermediates' memory. Not while the stream is being captured (the caller's graph takes
    the launches), under a launch hook, or before every kernel has been compiled."""

    KEPT = 4
    SEEN_KEPT = 256

    def __init__(self) -> None:
        from collections import OrderedDict
        self.graphs: OrderedDict = OrderedDict()
        self.seen: set = set()  # keys seen once, not yet captured

    def replay(self, plan: Plan, inputs: tuple, y, eps: float, out_eps: float, prologue=None) -> bool:
        """Replay (capturing first if due) the graph of this call, ``prologue``'s launch included; False where the
        call must launch directly."""
        import torch

        if torch.cuda.is_current_stream_capturing() or compat.launch_hooks_active():
            return False
        kernels = plan.kernels if prologue is None else (*plan.kernels, prologue.kernel)
        digests = tuple(compat.pipeline_digest(k) for k in kernels)
        key = (plan, prologue, compat.current_stream(plan.device.index), digests, eps, out_eps, y.data_ptr(),
               *(t.data_ptr() for t in inputs))
        graph = self.graphs.get(key)
        if graph is None:
            if not (plan.ready(plan.kernels) and (prologue is None or prologue.ready())):
                return False
            if key not in self.seen:
                if len(self.seen) >= self.SEEN_KEPT:
                    self.seen.clear()
                self.seen.add(key)
                return False
            self.seen.discard(key)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                plan.launch_all(inputs, y, eps, out_eps, prologue=prologue)
            if len(self.graphs) >= self.KEPT:
                self.graphs.popitem(last=False)
            self.graphs[key] = graph
        else:
            self.graphs.move_to_end(key)
        graph.replay()
        return True


#: One graph cache for every plan (its size bounds the memory graphs hold), and the largest call it takes:
#: rows of x (B * N * N) at most GRAPH_MAX_ROWS (above it the kernels' time hides the host's).
_graphs = Graphs()
GRAPH_MAX_ROWS = 1 << 18


#: Plans by (B, N, C, H, device, mask and output-path dtypes, the inputs' offsets from 16-byte alignment);
#: emptied when PLANS_KEPT are held.
_plans: dict = {}
PLANS_KEPT = 64


def launch(x, mask, w_proj_t, proj_terms, out_ln_w, out_ln_b, w_out_t, eps: float, out_eps: float,
           incoming: bool = False, stages=None, prologue=None):
    """Run the kernels on checked, contiguous arguments; returns y [B, N, N, C] fp32 (see :class:`Plan`).
    ``incoming``: the incoming update (sum over k of left[k, i] right[k, j]) instead of the outgoing one.
    ``prologue``: a launch to run before the kernels, part of a small call's graph (``TriMul``'s weight
    packing, which writes the weights the kernels read: replayed with them, it costs no host time of its own):
    a callable with a ``kernel`` attribute (its digest is part of the graph's key) and a ``ready()`` method
    (whether it launches without compiling)."""
    B, N, _, C = x.shape
    inputs = (x, mask, w_proj_t, proj_terms, out_ln_w, out_ln_b, w_out_t)
    key = (B, N, C, w_out_t.shape[0], x.device, mask.dtype, w_out_t.dtype, incoming, fused_centering(C),
           *(t.data_ptr() % 16 for t in inputs))
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= PLANS_KEPT:
            _plans.clear()
        plan = _plans[key] = Plan(B, N, C, w_out_t.shape[0], x.device, incoming)
    return plan(*inputs, eps, out_eps, stages, prologue)
