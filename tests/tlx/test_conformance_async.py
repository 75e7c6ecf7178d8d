"""Asynchronous global -> shared copies, as the TLX fork defines them, on the compile path: async_load
(cp.async on sm_90, direct-to-LDS on gfx942/gfx950, bulk copies on an mbarrier), commit/wait groups,
prefetch, the AMD buffer ops, and the synchronous fallback for copies the hardware cannot run. The
kernels are in async_copy_kernels.py; test_interpreter_async_copy.py runs them under the interpreter.
"""
import re
import warnings
from pathlib import Path

import pytest
import triton

from tritium.tlx import copy_fallback

from async_copy_kernels import (TILE, token_from_either_branch, helper_views_copy_kernel, bad_eviction, bad_pendings, bad_prefetch_level, bad_tokens,
                                barrier_without_bulk, buffer_ops_kernel, bulk_kernel, bulk_no_barrier, copy_kernel, int_mask,
                                other_without_mask, prefetch_kernel, prefetch_tensormap, prefetch_tensormap_desc,
                                two_groups_kernel, unaligned_gemm)


BUFFER_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"}


# --------------------------------------------------------------------------------------------
# Compile path
# --------------------------------------------------------------------------------------------
def _targets():
    from triton.backends.compiler import GPUTarget
    return {"sm90": GPUTarget("cuda", 90, 32), "gfx942": GPUTarget("hip", "gfx942", 64),
            "gfx950": GPUTarget("hip", "gfx950", 64)}


def _compile(fn, signature, constexprs, aligned, target, forget=True, **options):
    """Compile ``fn`` for ``target``; returns (kernel, AsyncCopyFallbackWarning messages)."""
    from tritium.plugins.inspection import make_source
    from tritium.tlx.copy_fallback import AsyncCopyFallbackWarning, forget_warnings
    if forget:
        forget_warnings()  # warnings are once per process and kernel line; tests start fresh
    sig = {n: signature.get(n, "constexpr") for n in fn.arg_names if n in signature or n in constexprs}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = triton.compile(make_source(fn, sig, constexprs, aligned), target=_targets()[target], options=options)
    return k, [str(w.message) for w in caught if issubclass(w.category, AsyncCopyFallbackWarning)]


COPY_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32", "stride": "i32"}
#: What each target's assembly shows for an asynchronous 16-bit-element copy of aligned 128-byte rows.
ASYNC_ASM = {"sm90": r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 0x10", "gfx942": r"global_load_lds_dword\b",
             "gfx950": r"global_load_lds_dwordx4\b"}


@pytest.mark.parametrize("target", ["sm90", "gfx942", "gfx950"])
def test_aligned_async_load_stays_asynchronous(target):
    k, warned = _compile(copy_kernel, COPY_SIG, {"OTHER": 0, "BM": 32, "BK": 64},
                         ("x_ptr", "y_ptr", "n", "stride"), target)
    ttgir = k.asm["ttgir"]
    asm = k.asm["ptx" if target == "sm90" else "amdgcn"]
    assert not warned
    assert ttgir.count("ttg.async_copy_global_to_local") == 1 and "tt.load" not in ttgir
    assert "ttg.async_commit_group" in ttgir and "ttg.async_wait {num = 0 : i32}" in ttgir
    assert re.search(ASYNC_ASM[target], asm), asm[:2000]
    if target == "sm90":
        assert "cp.async.commit_group" in asm and re.search(r"cp\.async\.wait_group\s+0;", asm)
    else:
        assert "s_waitcnt vmcnt(0)" in asm


#: Per target: the copy instruction of a 32x64 fp16 tile over 4 warps, and the wait that leaves the newest
#: group in flight. cp.async counts groups; AMD's vmcnt counts loads, so Triton's update_async_wait_count
#: turns `async_wait {num = 1}` into the newest group's load count (4 x 32-bit on gfx942, 1 x 128-bit on gfx950,
#: where the copy also becomes a buffer load).
GROUP_ASM = {"sm90": (r"cp\.async\.cg\.shared\.global .*0x10", r"cp\.async\.wait_group\s+1;"),
             "gfx942": (r"global_load_lds_dword\b", r"s_waitcnt vmcnt\(4\)"),
             "gfx950": (r"buffer_load_dwordx4 .* lds", r"s_waitcnt vmcnt\(1\)")}


@pytest.mark.parametrize("target", ["sm90", "gfx942", "gfx950"])
def test_wait_group_leaves_the_newest_groups_in_flight(target):
    k, warned = _compile(two_groups_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16"}, {"BM": 32, "BK": 64},
                         ("x_ptr", "y_ptr"), target, num_warps=4)
    asm = k.asm["ptx" if target == "sm90" else "amdgcn"]
    copy, wait = GROUP_ASM[target]
    assert not warned
    assert re.search(copy, asm) and re.search(wait, asm), asm[:3000]
    assert "ttg.async_wait {num = 1 : i32}" in k.asm["ttgir"]
    # The second copy's is_volatile reaches the op (gfx950's stock buffer-op rewrite then drops it:
    # amdg.buffer_load_to_local has no such flag; the copy reads global memory once either way).
    assert k.asm["ttgir"].count("isVolatile = true") == (target != "gfx950")


@pytest.mark.parametrize("target", ["sm90", "gfx942", "gfx950"])
@pytest.mark.parametrize("aligned, other, reason", [
    (("x_ptr", "y_ptr", "n"), 0, "cannot prove each thread copies at least 4"),  # row stride unknown
    (("x_ptr", "y_ptr", "stride"), 0, "cannot prove each thread copies at least 4"),  # mask edge unknown
    (("x_ptr", "y_ptr", "n", "stride"), 3.0, "non-zero `other`"),
], ids=["stride", "mask", "other"])
def test_copy_the_hardware_cannot_run_falls_back_to_a_synchronous_copy(target, aligned, other, reason):
    k, warned = _compile(copy_kernel, COPY_SIG, {"OTHER": other, "BM": 32, "BK": 64}, aligned, target)
    ttgir = k.asm["ttgir"]
    assert "ttg.async_copy_global_to_local" not in ttgir
    assert "tt.load" in ttgir and "ttg.local_store" in ttgir
    asm = k.asm["ptx" if target == "sm90" else "amdgcn"]
    assert not re.search(ASYNC_ASM[target], asm)
    source = Path(copy_kernel.fn.__code__.co_filename)
    line = 1 + source.read_text().splitlines().index("    tok = tlx.async_load(x_ptr + offs_m[:, None] * stride + "
                                                     "offs_k[None, :], buf[0], mask=offs_k[None, :] < n,")
    assert warned == [w for w in warned if f"{source.name}:{line} " in w and reason in w]
    assert len(warned) == 1


GEMM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in (
    "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}}


def test_gemm_on_1000_cubed_compiles_for_sm90_and_warns_once_per_line():
    """The issue's case: M = N = K = 1000 fp16. The JIT marks none of the sizes or strides divisible by 16."""
    consts = dict(TILE, stride_ak=1, stride_bn=1, stride_cn=1)
    k, warned = _compile(unaligned_gemm, GEMM_SIG, consts, ("a_ptr", "b_ptr", "c_ptr"), "sm90", num_warps=4)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg" not in ptx
    assert "fence.proxy.async" in ptx  # generic-proxy smem writes made visible to wgmma
    # Three copies of each async_load line after unrolling, but one warning per line.
    source = Path(unaligned_gemm.fn.__code__.co_filename).read_text().splitlines()
    lines = sorted(int(re.search(r"async_copy_kernels\.py:(\d+) ", w).group(1)) for w in warned)
    assert [source[n - 1].strip()[:19] for n in lines] == ["ta = tlx.async_load", "tb = tlx.async_load"]
    assert k.asm["ttgir"].count("tt.load") >= 4
    # Compiling the kernel again (another specialization) does not repeat the warnings.
    _, again = _compile(unaligned_gemm, GEMM_SIG, consts, ("a_ptr", "b_ptr", "c_ptr"), "sm90", forget=False,
                        num_warps=8)
    assert again == []


def test_shipped_hopper_gemm_keeps_its_asynchronous_copies():
    from tritium.kernels import gemm_pipelined_hopper as hopper, specialize
    from tritium.tlx.copy_fallback import AsyncCopyFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", AsyncCopyFallbackWarning)
        k = triton.compile(specialize.gemm_source(hopper.matmul_kernel_pipelined_hopper, hopper.SMALL),
                           target=_targets()["sm90"], options={"num_warps": 4})
    assert k.asm["ptx"].count("cp.async.cg.shared.global") >= 2


@pytest.mark.parametrize("level", ["L1", "L2"])
@pytest.mark.parametrize("masked", [False, True])
def test_prefetch_emits_ptx_prefetch(level, masked):
    k, _ = _compile(prefetch_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                    {"LEVEL": level, "MASKED": masked}, ("x_ptr", "y_ptr"), "sm90")
    ptx = k.asm["ptx"]
    # 128 elements over 128 threads: one prefetch each, predicated on the mask when there is one.
    assert ptx.count(f"prefetch.global.{level} [") == 1
    assert ("@p prefetch" in ptx) == masked


@pytest.mark.parametrize("kernel, target, message, line", [
    (bulk_kernel, "sm90", "bulk_size=40 must be a multiple of 16 bytes", "tlx.async_load("),
    (prefetch_kernel, "sm90", "tlx.prefetch: pointer must be a pointer or a tensor of pointers", "tlx.prefetch("),
    (bulk_no_barrier, "sm90", "async_load(bulk=True): barrier (an mbarrier the copy completes on) is required",
     "tlx.async_load("),
    (barrier_without_bulk, "sm90", "tlx.async_load: barrier requires bulk=True", "tlx.async_load("),
    (other_without_mask, "gfx950", "tlx.async_load: other requires mask", "tlx.async_load("),
    (int_mask, "sm90", "tlx.async_load: mask must be a boolean tensor", "tlx.async_load("),
    (bad_eviction, "gfx942", "tlx.async_load: Eviction policy evict_sometimes not supported", "tlx.async_load("),
    (bad_tokens, "sm90", "tlx.async_load_commit_group: tokens must be async tokens", "async_load_commit_group("),
    (bad_pendings, "gfx942", "pendings must be a non-negative compile-time int", "async_load_wait_group("),
    (bad_prefetch_level, "sm90", "tlx.prefetch: level must be 'L1' or 'L2', got 'L3'", "tlx.prefetch("),
    (prefetch_tensormap, "sm90", "tlx.prefetch: pointer (with tensormap=True) must be a tensor descriptor",
     "tlx.prefetch("),
    (bad_prefetch_level, "gfx950", "level must be 'L1' or 'L2'", "tlx.prefetch("),
])
def test_misuse_names_the_op_argument_and_kernel_line(kernel, target, message, line):
    from triton.compiler.errors import CompilationError
    signature = {"x_ptr": "*u8", "y_ptr": "*u8", "n": "i32"}
    consts = {"SIZE": 256, "BULK_SIZE": 256 if target != "sm90" else 40} if kernel is bulk_kernel else {}
    if kernel is prefetch_kernel:  # a float where the pointer goes
        signature, consts = {"x_ptr": "fp32", "y_ptr": "*fp32", "n": "i32"}, {"LEVEL": "L2", "MASKED": False}
    with pytest.raises(CompilationError) as info:
        _compile(kernel, signature, consts, ("x_ptr", ), target)
    assert message in str(info.value) and line in str(info.value)


@pytest.mark.parametrize("size, bulk_size", [(256, 256), (1024, 512)])
def test_bulk_async_load_is_one_cp_async_bulk_on_the_barrier(size, bulk_size):
    k, _ = _compile(bulk_kernel, {"x_ptr": "*u8", "y_ptr": "*u8"}, {"SIZE": size, "BULK_SIZE": bulk_size},
                    ("x_ptr", "y_ptr"), "sm90", num_warps=1)
    ptx = k.asm["ptx"]
    copies = re.findall(r"cp\.async\.bulk\.shared::cta\.global\.mbarrier::complete_tx::bytes \[%r\d+\], \[%rd\d+\], "
                        r"(%r\d+), \[(%r\d+)\];", ptx)
    assert len(copies) == 1 and "bulk.tensor" not in ptx
    size_reg, bar_reg = copies[0]
    assert re.search(rf"mov\.b32\s+{size_reg}, {bulk_size};", ptx)  # the barrier counts bulk_size bytes
    # Triton 3.7+ predicates the arrive and spells the state space shared::cta
    assert re.search(rf"(@%p\d+ )?mbarrier\.arrive\.expect_tx\.shared(::cta)?\.b64 _, \[{bar_reg}\], {bulk_size};", ptx)


def test_prefetch_tensormap_prefetches_the_descriptor():
    k, _ = _compile(prefetch_tensormap_desc, {"desc": "tensordesc<fp16[4, 4]>", "y_ptr": "*fp16"}, {}, ("y_ptr", ),
                    "sm90")
    assert "prefetch.tensormap [" in k.asm["ptx"]


def test_prefetch_on_amd_says_why_not():
    from triton.compiler.errors import CompilationError
    with pytest.raises(CompilationError, match="has no global-memory prefetch instruction"):
        _compile(prefetch_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"LEVEL": "L2", "MASKED": False},
                 ("x_ptr", ), "gfx942")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_amd_buffer_ops_become_buffer_instructions(target):
    k, _ = _compile(buffer_ops_kernel, BUFFER_SIG, {"BLOCK": 256}, ("x_ptr", "y_ptr", "z_ptr", "n"), target)
    ttgir, gcn = k.asm["ttgir"], k.asm["amdgcn"]
    for op in ("amdg.buffer_load ", "amdg.buffer_store ", "amdg.buffer_atomic_rmw ", "amdg.buffer_load_to_local "):
        assert op in ttgir, op
    assert re.search(r"buffer_load_dword v\d+, s\[\d+:\d+\], 0 offen[^\n]* lds", gcn)  # the copy straight to LDS
    assert "buffer_store_dword" in gcn and "buffer_atomic_add_f32" in gcn


def test_buffer_ops_are_amd_only():
    from triton.compiler.errors import CompilationError
    with pytest.raises(CompilationError, match="tlx.buffer_load is an AMD buffer instruction; the target sm90"):
        _compile(buffer_ops_kernel, BUFFER_SIG, {"BLOCK": 256}, ("x_ptr", ), "sm90")


def test_buffer_atomic_add_names_the_types_it_supports():
    """As the fork's test_buffer_atomic_rejects_unsupported_i16_gfx950 matches: "supports only"."""
    from triton.compiler.errors import CompilationError
    with pytest.raises(CompilationError, match="tlx.buffer_atomic_add supports only f16, bf16, f32, f64, i32 and "
                                               "i64 values, got int16"):
        _compile(buffer_ops_kernel, {**BUFFER_SIG, "z_ptr": "*i16"}, {"BLOCK": 256}, ("x_ptr", ), "gfx950")


@pytest.mark.parametrize("target", ["sm90", "gfx942", "gfx950"])
def test_copies_into_views_from_two_calls_of_one_helper_land_in_two_slots(target):
    k, _ = _compile(helper_views_copy_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16"}, {"BM": 32, "BK": 64},
                    ("x_ptr", "y_ptr"), target)
    ttgir = k.asm["ttgir"]
    views = dict(re.findall(r"(%\S+) = ttg.memdesc_index %\S+\[(%\S+)\]", ttgir))
    dests = re.findall(r"(?:ttg.async_copy_global_to_local %\S+,|amdg.buffer_load_to_local .* into) (%\S+)", ttgir)
    assert len(dests) == 2 and len({views[d] for d in dests}) == 2, ttgir  # indexed by pid and pid + 1


def test_a_token_assigned_in_both_branches_of_an_if_compiles():
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "cond": "i32"}
    k, _ = _compile(token_from_either_branch, signature, {}, ("x_ptr", "y_ptr", "out_ptr"), "sm90", num_warps=4)
    ttgir = k.asm["ttgir"]
    assert ttgir.count("ttg.async_copy_global_to_local") == 2 and ttgir.count("ttg.async_commit_group") == 1



def test_copy_width_is_read_from_blocked_and_linear_source_layouts():
    """AMD's coalesce_async_copy gives a copy into a padded shared buffer a linear source layout; the width probe
    counts its leading register bases that step along one dimension."""
    aliases = {"#linear": "#ttg.linear<{register = [[0, 1], [0, 2], [4, 0]], lane = [[0, 4], [8, 0]], warp = [], "
                          "block = []}>",
               "#blocked": "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [4, 1], "
                           "order = [0, 1]}>"}
    assert copy_fallback._per_thread("#linear", aliases) == 4
    assert copy_fallback._per_thread("#blocked", aliases) == 4
    assert copy_fallback._per_thread("#ttg.linear<{register = [[2, 0]], lane = [], warp = [], block = []}>", {}) == 1
