"""A GEMM whose main loop is two warp-pipeline stages (the fork's README pattern: three LDS buffers, two
tiles in flight), compiled for gfx950 in test_warp_pipeline and run under the interpreter in
test_interpreter_async_copy (with a misuse)."""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def staged_gemm(a_ptr, b_ptr, c_ptr, K_ITERS, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C (BM x BN) = A (BM x K) @ B (K x BN), row-major, K = K_ITERS * BK, K_ITERS >= 2."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    K = K_ITERS * BK
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    sa = tlx.local_alloc((BM, BK), tl.float16, 3)
    sb = tlx.local_alloc((BK, BN), tl.float16, 3)
    for i in tl.range(0, 2, loop_unroll_factor=2):
        tlx.async_load(a_ptrs + i * BK, tlx.local_view(sa, i))
        tlx.async_load(b_ptrs + i * BK * BN, tlx.local_view(sb, i))
        tlx.async_load_commit_group()
    tlx.async_load_wait_group(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(2, K_ITERS):
        with tlx.warp_pipeline_stage("lds_load", priority=1):
            a = tlx.local_load(tlx.local_view(sa, (k - 2) % 3))
            b = tlx.local_load(tlx.local_view(sb, (k - 2) % 3))
        tlx.async_load_wait_group(0)
        with tlx.warp_pipeline_stage("compute_and_load", priority=0):
            tlx.async_load(a_ptrs + k * BK, tlx.local_view(sa, k % 3))
            tlx.async_load(b_ptrs + k * BK * BN, tlx.local_view(sb, k % 3))
            tlx.async_load_commit_group()
            acc = tl.dot(a, b, acc)
    tlx.async_load_wait_group(0)
    for i in tl.range(0, 2, loop_unroll_factor=2):
        j = (K_ITERS - 2 + i) % 3
        acc = tl.dot(tlx.local_load(tlx.local_view(sa, j)), tlx.local_load(tlx.local_view(sb, j)), acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@triton.jit
def bad_priority_stage(x_ptr):
    for i in tl.range(0, 2):
        with tlx.warp_pipeline_stage("a", priority="high"):
            tl.store(x_ptr + i, 1.0)
