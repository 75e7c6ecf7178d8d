"""The partitions of a warp-specialized TMA GEMM, written once for every kernel that runs one.

A persistent WS GEMM keeps a ring of NUM_STAGES (A, B) stages in shared memory, guarded by a ``full``
and an ``empty`` mbarrier per stage (the prologue, :func:`ws_prologue`: :func:`ring_buffers`, the C
staging buffers, :func:`ring_barriers`, :func:`tile_counts`). The producer (:func:`load_tiles`) fills the
ring, the consumers (:func:`mma_steps`, then :func:`release_last`; :func:`mma_pair_step` for two
accumulators; the cooperative consumer whole, :func:`consume_units`) run wgmma over it, and the epilogue
leaves through shared-memory staging buffers with TMA stores (:func:`store_slice`,
:func:`store_subtiles`). Every side walks the ring with one counter ``it``, the ring step, and waits for
its stage with :func:`wait_stage`, the one place that turns a step into a stage and a barrier phase.
The task sets come whole too: :func:`cooperative_gemm`, and :func:`whole_tile_tasks` for kernels whose
consumers take whole tiles and bring their own consumer body.
"""
import triton
import triton.language as tl

import tritium.tlx as tlx

from .tiles import column_subtiles, grouped_tile, sync_grid_dependency

#: Threads of the two 4-warp consumers of :func:`whole_tile_tasks`: the count at the named barriers between them.
CONSUMER_PAIR_THREADS = tl.constexpr(2 * 4 * 32)


@triton.jit
def wait_stage(bars, it, NUM_STAGES: tl.constexpr, FLIP: tl.constexpr = 0):
    """Wait on ``bars[s]`` for ring step ``it`` and return its stage s = it % NUM_STAGES. The phase flips
    each time the ring wraps; ``FLIP=1`` (a producer waiting for free stages) inverts it, so that the
    first pass through the ring does not block."""
    s = it % NUM_STAGES
    if FLIP:
        tlx.barrier_wait(bars[s], ((it // NUM_STAGES) & 1) ^ 1)
    else:
        tlx.barrier_wait(bars[s], (it // NUM_STAGES) & 1)
    return s


@triton.jit
def ring_buffers(a_desc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr,
                 SPLIT_A: tl.constexpr, B_K_MAJOR: tl.constexpr = False):
    """The operand ring of a WS GEMM (the first allocations of its prologue): ``(a_bufs, b_bufs)`` in
    ``a_desc``'s dtype. With ``SPLIT_A`` two consumers each own half of A's rows: stage s holds consumer
    r's rows at ``a_bufs[2 * s + r]``. With ``B_K_MAJOR`` B's tiles are (BN, BK), K contiguous (B read
    from its transpose, an N x K row-major matrix), as wgmma needs for 8-bit operands."""
    dtype = tlx.dtype_of(a_desc)
    if SPLIT_A:
        a_bufs = tlx.local_alloc((BM // 2, BK), dtype, 2 * NUM_STAGES)
    else:
        a_bufs = tlx.local_alloc((BM, BK), dtype, NUM_STAGES)
    if B_K_MAJOR:
        b_bufs = tlx.local_alloc((BN, BK), dtype, NUM_STAGES)
    else:
        b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
    return a_bufs, b_bufs


@triton.jit
def ring_barriers(NUM_STAGES: tl.constexpr, CONSUMERS: tl.constexpr):
    """The ring's ``(full, empty)`` barriers, allocated after the kernel's staging buffers (the order the
    kernels were written in, which the shared-memory layout follows): ``full[s]`` completes when the
    producer's loads of stage s landed, ``empty[s]`` when its CONSUMERS released it."""
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=CONSUMERS)
    return full, empty


@triton.jit
def tile_counts(M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, UNITS: tl.constexpr = 1):
    """``(num_pid_m, num_pid_n, num_units, k_tiles)`` of an M x N x K GEMM in BM x BN tiles and BK steps, with
    ``UNITS`` units of work per tile (split-K's slices)."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_units = num_pid_m * num_pid_n * UNITS
    return num_pid_m, num_pid_n, num_units, tl.cdiv(K, BK)


@triton.jit
def ws_prologue(a_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                NUM_STAGES: tl.constexpr, SPLIT_A: tl.constexpr, C_COLS: tl.constexpr, C_BUFS: tl.constexpr,
                PDL: tl.constexpr = False, B_K_MAJOR: tl.constexpr = False, UNITS: tl.constexpr = 1,
                CLUSTER: tl.constexpr = 1):
    """The prologue of a WS GEMM whose only other shared memory is its C staging: the grid dependency
    (:func:`sync_grid_dependency`, first), the operand ring, C_BUFS staging buffers of a consumer's rows
    (BM / 2 with ``SPLIT_A``, else BM) by C_COLS columns in ``c_desc``'s dtype, the ring's barriers (released
    by both consumers with ``SPLIT_A``, else by one, and in a cluster of CLUSTER CTAs by the consumers of each: see
    :func:`load_cluster_steps`) and the tile counts, in this order (the shared-memory
    layout follows it). Returns ``(a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_units,
    k_tiles)``."""
    sync_grid_dependency(PDL)
    a_bufs, b_bufs = ring_buffers(a_desc, BM, BN, BK, NUM_STAGES, SPLIT_A, B_K_MAJOR)
    if SPLIT_A:
        c_bufs = tlx.local_alloc((BM // 2, C_COLS), tlx.dtype_of(c_desc), C_BUFS)
        full, empty = ring_barriers(NUM_STAGES, 2 * CLUSTER)
    else:
        c_bufs = tlx.local_alloc((BM, C_COLS), tlx.dtype_of(c_desc), C_BUFS)
        full, empty = ring_barriers(NUM_STAGES, 1)
    num_pid_m, num_pid_n, num_units, k_tiles = tile_counts(M, N, K, BM, BN, BK, UNITS)
    return a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_units, k_tiles


@triton.jit
def load_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n, k_lo, k_hi, BM: tl.constexpr,
               BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr, SPLIT_A: tl.constexpr,
               B_K_MAJOR: tl.constexpr = False):
    """The producer's loads of one tile's K steps ``k_lo`` to ``k_hi``, ring steps ``it``, ``it + 1``, ...,
    each into the next free ring stage s. B's (BK, BN) tile goes to ``b_bufs[s]``; A's (BM, BK) tile to
    ``a_bufs[s]``, or with ``SPLIT_A`` (two consumers each owning half of A's rows) its two (BM / 2, BK)
    halves to ``a_bufs[2 * s]`` and ``a_bufs[2 * s + 1]``. With ``B_K_MAJOR`` (and ``SPLIT_A``) ``b_desc``
    is over B's transpose (N x K) and B's tiles are (BN, BK). Returns ``it`` past the last step."""
    tl.static_assert(SPLIT_A or not B_K_MAJOR, "load_steps: B_K_MAJOR needs SPLIT_A")
    for k in range(k_lo, k_hi):
        s = wait_stage(empty, it, NUM_STAGES, 1)
        tlx.barrier_expect_bytes(full[s], (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc)))
        if B_K_MAJOR:
            tlx.async_descriptor_load(b_desc, b_bufs[s], [pid_n * BN, k * BK], full[s])
            tlx.async_descriptor_load(a_desc, a_bufs[2 * s], [pid_m * BM, k * BK], full[s])
            tlx.async_descriptor_load(a_desc, a_bufs[2 * s + 1], [pid_m * BM + BM // 2, k * BK], full[s])
        elif SPLIT_A:
            tlx.async_descriptor_load(b_desc, b_bufs[s], [k * BK, pid_n * BN], full[s])
            tlx.async_descriptor_load(a_desc, a_bufs[2 * s], [pid_m * BM, k * BK], full[s])
            tlx.async_descriptor_load(a_desc, a_bufs[2 * s + 1], [pid_m * BM + BM // 2, k * BK], full[s])
        else:
            tlx.async_descriptor_load(a_desc, a_bufs[s], [pid_m * BM, k * BK], full[s])
            tlx.async_descriptor_load(b_desc, b_bufs[s], [k * BK, pid_n * BN], full[s])
        it += 1
    return it


@triton.jit
def load_cluster_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n, rank, k_tiles, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """:func:`load_steps` (two consumers, B's tiles (BK, BN)) for a CTA of a pair that shares B: the two CTAs
    of a cluster take vertically adjacent tiles, and each loads one column half of their B tile and multicasts it
    to both. Stage s is free in both CTAs once ``empty[s]`` completes here: each CTA's consumers release it in
    both (:func:`mma_steps` with ``CLUSTER=2``), so its arrive count is 4."""
    HALF_N: tl.constexpr = BN // 2
    for k in range(0, k_tiles):
        s = wait_stage(empty, it, NUM_STAGES, 1)
        tlx.barrier_expect_bytes(full[s], (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc)))
        if rank == 0:
            tlx.async_descriptor_load(b_desc, tlx.local_slice(b_bufs[s], [0, 0], [BK, HALF_N]), [k * BK, pid_n * BN],
                                      full[s], multicast_targets=[0, 1])
        else:
            tlx.async_descriptor_load(b_desc, tlx.local_slice(b_bufs[s], [0, HALF_N], [BK, HALF_N]),
                                      [k * BK, pid_n * BN + HALF_N], full[s], multicast_targets=[0, 1])
        tlx.async_descriptor_load(a_desc, a_bufs[2 * s], [pid_m * BM, k * BK], full[s])
        tlx.async_descriptor_load(a_desc, a_bufs[2 * s + 1], [pid_m * BM + BM // 2, k * BK], full[s])
        it += 1
    return it


@triton.jit
def cluster_tile(unit, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr, rank):
    """(pid_m, pid_n) of this CTA in work unit ``unit`` of a pair sharing B: the units are the grouped order of
    the grid of vertical tile pairs, and the CTA of rank r takes row tile ``2 * pair + r`` (past M on the last
    pair of an odd count: TMA zero-fills its loads and drops its stores)."""
    pair_m, pid_n = grouped_tile(unit, tl.cdiv(num_pid_m, 2), num_pid_n, GROUP_SIZE_M)
    return 2 * pair_m + rank, pid_n


@triton.jit
def unit_range(lo, num_units, num_pid_m, num_pid_n, CLUSTER: tl.constexpr):
    """``(first, end, step)`` of the work units of the program whose first unit is ``lo`` (its program id, or
    stream-K's): its own, or with ``CLUSTER=2`` its pair's, the tile pairs sharing B (:func:`cluster_tile`)."""
    if CLUSTER == 2:
        return lo // 2, tl.cdiv(num_pid_m, 2) * num_pid_n, tl.num_programs(0) // 2
    return lo, num_units, tl.num_programs(0)


@triton.jit
def unit_tile(unit, num_pid_m, num_pid_n, k_per_unit, k_tiles, GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr,
              CLUSTER: tl.constexpr, rank):
    """``(pid_m, pid_n, k_lo, k_hi)`` of work unit ``unit``: its tile in grouped order (:func:`grouped_tile`; with
    ``CLUSTER=2`` this CTA's tile of the pair, :func:`cluster_tile`) and its K steps (all of them, or with
    ``SPLIT_K`` > 1 the unit % SPLIT_K-th of the ``k_per_unit``-step slices)."""
    if CLUSTER == 2:
        pid_m, pid_n = cluster_tile(unit, num_pid_m, num_pid_n, GROUP_SIZE_M, rank)
    else:
        pid_m, pid_n = grouped_tile(unit // SPLIT_K, num_pid_m, num_pid_n, GROUP_SIZE_M)
    k_lo = (unit % SPLIT_K) * k_per_unit
    return pid_m, pid_n, k_lo, min(k_lo + k_per_unit, k_tiles)


@triton.jit
def load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_units, num_pid_m, num_pid_n, k_tiles,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
               NUM_STAGES: tl.constexpr, SPLIT_A: tl.constexpr, SPLIT_K: tl.constexpr = 1,
               B_K_MAJOR: tl.constexpr = False, CLUSTER: tl.constexpr = 1):
    """The TMA producer of a persistent WS GEMM: every K step of this program's work units, in order
    (:func:`load_steps`). A work unit is a tile's K range: with ``SPLIT_K`` > 1, unit u covers the
    u % SPLIT_K-th of ``cdiv(k_tiles, SPLIT_K)``-step slices of tile u // SPLIT_K. With ``CLUSTER=2`` a unit
    is a pair of tiles sharing B, taken by the pair of CTAs of a cluster (:func:`load_cluster_steps`)."""
    k_per_unit = tl.cdiv(k_tiles, SPLIT_K)
    it = 0
    rank = tlx.cluster_cta_rank() if CLUSTER == 2 else 0
    first, end, step = unit_range(tl.program_id(0), num_units, num_pid_m, num_pid_n, CLUSTER)
    for unit in range(first, end, step):
        pid_m, pid_n, k_lo, k_hi = unit_tile(unit, num_pid_m, num_pid_n, k_per_unit, k_tiles, GROUP_SIZE_M, SPLIT_K,
                                             CLUSTER, rank)
        if CLUSTER == 2:
            it = load_cluster_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n, rank, k_hi, BM, BN,
                                    BK, NUM_STAGES)
        else:
            it = load_steps(a_desc, b_desc, a_bufs, b_bufs, full, empty, it, pid_m, pid_n, k_lo, k_hi, BM, BN, BK,
                            NUM_STAGES, SPLIT_A, B_K_MAJOR)


@triton.jit
def mma_steps(a_bufs, b_bufs, full, empty, it, acc, k_lo, k_hi, r, NUM_STAGES: tl.constexpr,
              SPLIT_A: tl.constexpr, IN_FLIGHT: tl.constexpr, B_K_MAJOR: tl.constexpr = False, peer=None):
    """The consumer's K loop: ring steps ``it``, ``it + 1``, ... for K steps ``k_lo`` to ``k_hi``, each
    waited on (``full``), multiplied into ``acc`` with wgmma (consumer ``r``'s half of A with
    ``SPLIT_A``) and released (``empty``). With ``IN_FLIGHT`` = 0 each step retires before its stage is
    released; with 1 one wgmma group stays in flight, so step k's stage is released once step k + 1 is
    issued, and :func:`release_last` retires and releases the last one. Returns ``(it, acc)``, ``it``
    past the last step. With ``B_K_MAJOR`` (and ``SPLIT_A``; B's tiles are (BN, BK)) wgmma reads B's tile
    transposed. With a ``peer`` (the other CTA of a pair sharing B, :func:`load_cluster_steps`) each stage is
    released in both CTAs."""
    tl.static_assert(SPLIT_A or not B_K_MAJOR, "mma_steps: B_K_MAJOR needs SPLIT_A")
    for k in range(k_lo, k_hi):
        s = wait_stage(full, it, NUM_STAGES)
        if B_K_MAJOR:
            acc = tlx.async_dot(a_bufs[2 * s + r], tlx.local_trans(b_bufs[s]), acc)
        elif SPLIT_A:
            acc = tlx.async_dot(a_bufs[2 * s + r], b_bufs[s], acc)
        else:
            acc = tlx.async_dot(a_bufs[s], b_bufs[s], acc)
        if IN_FLIGHT == 0:
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(empty[s])
        else:
            acc = tlx.async_dot_wait(1, acc)  # step k - 1 retired: its stage can be refilled
            tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES], pred=k > k_lo)
            if peer is not None:
                tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES], 1, remote_cta_rank=peer,
                                   pred=k > k_lo)
        it += 1
    return it, acc


@triton.jit
def mma_pair_step(a, b_bufs, b2_bufs, s, acc, acc2, empty, it, k, NUM_STAGES: tl.constexpr):
    """Ring step ``it`` (K step ``k`` of a tile, stage ``s``) of a consumer that multiplies its A tile ``a`` by
    two B tiles, ``b_bufs[s]`` into ``acc`` and ``b2_bufs[s]`` into ``acc2`` (TriMul's projections): as a step
    of :func:`mma_steps` with one group in flight, here two wgmma groups, so step k - 1's stage is released
    once step k's two are issued and k - 1's retired. Each B tile is indexed where its wgmma is issued (3.8
    moves the PTX otherwise). The caller waits for the stage (:func:`wait_stage`) and fills ``a`` if it builds
    it. After the last step, retire ``acc``, then ``acc2`` with :func:`release_last`. Returns ``(acc, acc2)``."""
    acc = tlx.async_dot(a, b_bufs[s], acc)
    acc2 = tlx.async_dot(a, b2_bufs[s], acc2)
    acc = tlx.async_dot_wait(2, acc)  # step k - 1 retired: its stage can be refilled
    acc2 = tlx.async_dot_wait(2, acc2)
    tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES], pred=k > 0)
    return acc, acc2


@triton.jit
def release_last(acc, empty, it, NUM_STAGES: tl.constexpr, peer=None):
    """After :func:`mma_steps` with one group in flight: retire the last wgmma and release its stage (in the
    ``peer`` CTA too, as :func:`mma_steps` does)."""
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
    if peer is not None:
        tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES], 1, remote_cta_rank=peer)
    return acc


@triton.jit
def consume_units(a_bufs, b_bufs, c_bufs, full, empty, c_desc, lo, num_units, num_pid_m, num_pid_n, k_tiles,
                  k_per_unit, r, BM: tl.constexpr, BN: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr, SPLIT_K: tl.constexpr = 1,
                  B_K_MAJOR: tl.constexpr = False, scale_a_ptr=None, scale_b_ptr=None, M=0, N=0,
                  ROW_SCALES: tl.constexpr = False, COL_SCALES: tl.constexpr = False, CLUSTER: tl.constexpr = 1):
    """Consumer ``r`` of a cooperative WS GEMM (two consumers, each BM / 2 rows of every tile) over the work
    units ``lo``, ``lo + num_programs``, ... below ``num_units``, as :func:`load_tiles` loads them, each of
    ``k_per_unit`` K steps (``k_tiles`` without K slices; split-K computes it before the tasks, as its PTX
    has it): the K loop with one wgmma group in flight (:func:`mma_steps`, :func:`release_last`), with scale
    pointers the dequantisation (:func:`scale_tile`), then the store ring's column slices, reduce-added into
    C with ``SPLIT_K`` > 1. With ``CLUSTER=2``, the tiles of a pair of CTAs sharing B (:func:`load_tiles`).
    Returns ``(it, stores)``, the ring step and the store count after the last unit."""
    HALF_M: tl.constexpr = BM // 2
    it = 0
    stores = 0  # TMA stores issued so far (the store ring's counter)
    rank = tlx.cluster_cta_rank() if CLUSTER == 2 else 0
    peer = rank ^ 1 if CLUSTER == 2 else None  # releases each stage in the pair's other CTA too
    first, end, step = unit_range(lo, num_units, num_pid_m, num_pid_n, CLUSTER)
    for unit in range(first, end, step):
        pid_m, pid_n, k_lo, k_hi = unit_tile(unit, num_pid_m, num_pid_n, k_per_unit, k_tiles, GROUP_SIZE_M, SPLIT_K,
                                             CLUSTER, rank)
        acc = tl.zeros((HALF_M, BN), dtype=tl.float32)
        it, acc = mma_steps(a_bufs, b_bufs, full, empty, it, acc, k_lo, k_hi, r, NUM_STAGES, True, 1, B_K_MAJOR, peer)
        acc = release_last(acc, empty, it, NUM_STAGES, peer)
        off_m = pid_m * BM + r * HALF_M
        if scale_a_ptr is not None:
            acc = scale_tile(acc, scale_a_ptr, scale_b_ptr, off_m, pid_n * BN, M, N, HALF_M, BN, ROW_SCALES,
                             COL_SCALES)
        stores = store_subtiles(c_desc, c_bufs, stores, 2 * r, acc, off_m, 1, pid_n, HALF_M, BN, EPILOGUE_SUBTILES,
                                SPLIT_K > 1)
    return it, stores


@triton.jit
def cooperative_gemm(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr,
                     NUM_REGS: tl.constexpr, PDL: tl.constexpr, SPLIT_K: tl.constexpr = 1,
                     B_K_MAJOR: tl.constexpr = False, scale_a_ptr=None, scale_b_ptr=None,
                     ROW_SCALES: tl.constexpr = False, COL_SCALES: tl.constexpr = False, CLUSTER: tl.constexpr = 1):
    """The body of a cooperative WS GEMM kernel (the cooperative, FP8 and split-K kernels): the prologue, the
    TMA producer on the default task and two replicated 4-warp consumers (:func:`consume_units`, then the
    drain of their last stores), each with NUM_REGS registers a thread. A ``with tlx.async_tasks()`` region
    in a helper compiles as it does in the kernel. With ``CLUSTER=2`` (launched with ``ctas_per_cga=(2, 1, 1)``)
    the two CTAs of a cluster share their B tiles (:func:`load_cluster_steps`); every task meets the cluster
    last, so that no CTA exits while its peer may still release a stage in it (TLX opens each task with the
    meeting that publishes the barriers)."""
    tl.static_assert(CLUSTER == 1 or (CLUSTER == 2 and SPLIT_K == 1 and not B_K_MAJOR and scale_a_ptr is None),
                     "cooperative_gemm: CLUSTER is 1, or 2 (a pair sharing B) with 16-bit operands without K slices")
    a_bufs, b_bufs, c_bufs, full, empty, num_pid_m, num_pid_n, num_units, k_tiles = ws_prologue(
        a_desc, c_desc, M, N, K, BM, BN, BK, NUM_STAGES, True, BN // EPILOGUE_SUBTILES, 4, PDL, B_K_MAJOR, SPLIT_K,
        CLUSTER)
    if SPLIT_K == 1:
        k_per_unit = k_tiles
    else:
        k_per_unit = tl.cdiv(k_tiles, SPLIT_K)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_units, num_pid_m, num_pid_n, k_tiles, BM, BN,
                       BK, GROUP_SIZE_M, NUM_STAGES, True, SPLIT_K, B_K_MAJOR, CLUSTER)
            if CLUSTER > 1:
                tlx.cluster_barrier()
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            consume_units(a_bufs, b_bufs, c_bufs, full, empty, c_desc, tl.program_id(0), num_units, num_pid_m,
                          num_pid_n, k_tiles, k_per_unit, r, BM, BN, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES,
                          SPLIT_K, B_K_MAJOR, scale_a_ptr, scale_b_ptr, M, N, ROW_SCALES, COL_SCALES, CLUSTER)
            tlx.async_descriptor_store_wait(0)
            if CLUSTER > 1:
                tlx.cluster_barrier()


@triton.jit
def whole_tile_tasks(consume: tl.constexpr, a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, full, empty, scratch,
                     num_pid_m, num_pid_n, num_tiles, k_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, EPILOGUE_SUBTILES: tl.constexpr,
                     NUM_REGS: tl.constexpr):
    """The tasks of a persistent WS GEMM whose consumers multiply whole BM-row tiles (ping-pong, dual-K), after
    :func:`ws_prologue`: the TMA producer on the default task and two replicated 4-warp consumers, each running
    ``consume`` over this program's tiles, then draining its last stores. ``consume`` is a @triton.jit function
    ``(r, my_tiles, a_bufs, b_bufs, c_bufs, full, empty, scratch, c_desc, num_pid_m, num_pid_n, k_tiles, BM, BN,
    GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES)``; ``scratch`` is the kernel's own shared memory, or None."""
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            load_tiles(a_desc, b_desc, a_bufs, b_bufs, full, empty, num_tiles, num_pid_m, num_pid_n, k_tiles,
                       BM, BN, BK, GROUP_SIZE_M, NUM_STAGES, False)
        with tlx.async_task(num_warps=4, num_regs=NUM_REGS, replicate=2):  # consumers
            r: tl.constexpr = tlx.async_task_replica_id()
            my_tiles = tl.cdiv(num_tiles - tl.program_id(0), tl.num_programs(0))
            consume(r, my_tiles, a_bufs, b_bufs, c_bufs, full, empty, scratch, c_desc, num_pid_m, num_pid_n, k_tiles,
                    BM, BN, GROUP_SIZE_M, NUM_STAGES, EPILOGUE_SUBTILES)
            tlx.async_descriptor_store_wait(0)


@triton.jit
def scale_tile(acc, scale_a_ptr, scale_b_ptr, off_m, off_n, M, N, ROWS: tl.constexpr, COLS: tl.constexpr,
               ROW_SCALES: tl.constexpr, COL_SCALES: tl.constexpr):
    """The epilogue's dequantisation of a [ROWS, COLS] fp32 accumulator at row ``off_m``, column ``off_n``:
    times A's scale (one per row with ``ROW_SCALES``, else one for the tensor) and B's (one per column with
    ``COL_SCALES``, else one), loaded once per tile, after the K loop (a vector held across it would take
    registers from the accumulator)."""
    if ROW_SCALES:
        rows = off_m + tl.arange(0, ROWS)
        acc = acc * tl.load(scale_a_ptr + rows, mask=rows < M, other=0.0)[:, None]
    else:
        acc = acc * tl.load(scale_a_ptr)
    if COL_SCALES:
        cols = off_n + tl.arange(0, COLS)
        acc = acc * tl.load(scale_b_ptr + cols, mask=cols < N, other=0.0)[None, :]
    else:
        acc = acc * tl.load(scale_b_ptr)
    return acc


@triton.jit
def store_slice(c_desc, c_bufs, stores, FIRST: tl.constexpr, value, pid_m, BM: tl.constexpr, pid_n,
                BN: tl.constexpr, COL: tl.constexpr, REDUCE_ADD: tl.constexpr = False):
    """One step of the epilogue's store ring: ``value`` leaves in ``c_desc``'s dtype through staging buffer
    ``c_bufs[FIRST + stores % 2]`` with a TMA store at row ``pid_m * BM``, column ``pid_n * BN + COL`` (a
    reduce-add with ``REDUCE_ADD``), once the store that last read that buffer is done, so each store
    drains under the next slice's work. A row that is not a multiple of a tile (a consumer's half) is
    passed as ``pid_m`` with ``BM=1``. The coordinates are computed where the store is issued, as the
    kernels always did (the codegen guard holds them there). Returns ``stores + 1``; the consumer waits
    for its last stores (``async_descriptor_store_wait(0)``) before it exits."""
    c_buf = c_bufs[FIRST + stores % 2]
    tlx.async_descriptor_store_wait(1)  # the store that last read c_buf is done
    tlx.local_store(c_buf, value.to(tlx.dtype_of(c_desc)))
    tlx.fence_async_shared()
    if REDUCE_ADD:
        tlx.async_descriptor_store(c_desc, c_buf, [pid_m * BM, pid_n * BN + COL], store_reduce="add")
    else:
        tlx.async_descriptor_store(c_desc, c_buf, [pid_m * BM, pid_n * BN + COL])
    return stores + 1


@triton.jit
def store_subtiles(c_desc, c_bufs, stores, FIRST: tl.constexpr, acc, pid_m, BM: tl.constexpr, pid_n,
                   ROWS: tl.constexpr, BN: tl.constexpr, SUBTILES: tl.constexpr, REDUCE_ADD: tl.constexpr = False):
    """The epilogue of a [ROWS, BN] accumulator at row ``pid_m * BM`` of tile column ``pid_n``: SUBTILES
    column slices through the store ring (:func:`store_slice`), left to right. Returns the store count
    after them."""
    parts = column_subtiles(acc, ROWS, BN, SUBTILES)
    for j in tl.static_range(SUBTILES):
        stores = store_slice(c_desc, c_bufs, stores, FIRST, parts[j], pid_m, BM, pid_n, BN, j * (BN // SUBTILES),
                             REDUCE_ADD)
    return stores
