"""Compile-path tests of TLX on the CPU: placeholders, lowered TTGIR, PTX/AMDGCN, errors, byte-identity."""
from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.compiler.errors import CompilationError
from triton._C.libtriton import ir

import tritium.plugins as tp
import tritium.tlx as tlx
from tritium.kernels import gemm_pipelined_amd as amd
from tritium.kernels import gemm_pipelined_hopper as hopper
from tritium.kernels import specialize
from tritium.tlx import placeholders

SM90 = GPUTarget("cuda", 90, 32)
GFX950 = GPUTarget("hip", "gfx950", 64)
SM75 = GPUTarget("cuda", 75, 32)


def gemm_source(cfg, kernel=hopper.matmul_kernel_pipelined_hopper) -> ASTSource:
    return specialize.gemm_source(kernel, cfg)


def placeholder_ops(src: ASTSource, target: GPUTarget, **options) -> list[str]:
    """The TLX placeholders the frontend emits, in program order (before any pass)."""
    backend = make_backend(target)
    opts = backend.parse_options(options)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    assert mod.verify() and placeholders.is_tlx_module(mod)
    return [p.op for p in placeholders.placeholders(mod.str())]


def test_frontend_emits_placeholders_in_program_order():
    ops = placeholder_ops(gemm_source(hopper.SMALL), SM90, num_warps=4)
    # 2 allocs; the prologue loop body (views, 2 copies, commit); the main loop body; the final waits.
    assert ops[:2] == ["local_alloc", "local_alloc"]
    assert ops[2:7] == ["memdesc_index", "memdesc_index", "async_copy", "async_copy", "commit_group"]
    assert ops[7:] == ["wait_group", "memdesc_index", "memdesc_index", "wgmma", "wgmma_wait", "memdesc_index",
                       "async_copy", "memdesc_index", "async_copy", "commit_group", "wgmma_wait", "wait_group"]


@pytest.mark.parametrize("cfg", [hopper.LARGE, hopper.SMALL], ids=["128x256x64", "64x128x64"])
def test_hopper_gemm_compiles_to_cp_async_and_wgmma(cfg):
    k = triton.compile(gemm_source(cfg), target=SM90, options={"num_warps": cfg.num_warps})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    BM, BN, BK, S = cfg.BLOCK_SIZE_M, cfg.BLOCK_SIZE_N, cfg.BLOCK_SIZE_K, cfg.NUM_STAGES
    # Ring buffers in NVMMA 128B-swizzled shared memory, as stock Triton picks for wgmma operands.
    assert f"!ttg.memdesc<{S}x{BM}x{BK}xf16, #shared" in ttgir and f"!ttg.memdesc<{S}x{BK}x{BN}xf16, #shared" in ttgir
    assert "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>" in ttgir
    instr_n = BN if cfg.num_warps // 4 * 64 <= BM else BN // 2
    assert f"instrShape = [16, {instr_n}, 16]" in ttgir
    # The main loop: accumulator carried in the MMA layout, no layout conversion inside the loop,
    # the waits as written, and no Triton software pipelining of it.
    loop = ttgir[ttgir.index("scf.for", ttgir.index("ttg.async_commit_group")):]
    loop = loop[:loop.index("scf.yield")]
    assert "ttg.convert_layout" not in loop
    assert f"ttg.async_wait {{num = {S - 2} : i32}}" in loop and "pendings = 1 : i32" in loop
    assert loop.count("ttg.async_copy_global_to_local") == 2 and "isAsync = true" in loop
    assert "tt.elementwise_inline_asm" not in ttgir  # every placeholder was lowered
    # PTX: 16-byte cp.async and asynchronous wgmma.
    assert "cp.async.cg.shared.global" in ptx and ", 0x10," in ptx
    assert "wgmma.mma_async.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned 1" in ptx


@pytest.mark.parametrize("align,width", [(8, "0x10"), (4, "0x8"), (2, "0x4")])
def test_cp_async_width_follows_the_alignment_the_host_proves(align, width):
    # N, K and the row strides carry no divisibility: only STRIDE_ALIGN tells the compiler.
    src = gemm_source(hopper.SMALL)
    src.constants[(src.fn.arg_names.index("STRIDE_ALIGN"), )] = align
    src.attrs = {k: v for k, v in src.attrs.items() if k not in ((4, ), (5, ), (6, ), (8, ))}
    ptx = triton.compile(src, target=SM90, options={"num_warps": 4}).asm["ptx"]
    assert set(re.findall(r"cp\.async\.\w+\.shared\.global \[[^]]+\], \[[^]]+\], (0x\w+)", ptx)) == {width}


@triton.jit
def _async_load_hints(x_ptr, y_ptr, CACHE: tl.constexpr, EVICT: tl.constexpr):
    buf = tlx.local_alloc((32, 64), tl.float16, 1)
    offs = tl.arange(0, 32)[:, None] * 64 + tl.arange(0, 64)[None, :]
    tlx.async_load(x_ptr + offs, buf[0], cache_modifier=CACHE, eviction_policy=EVICT)
    tlx.async_load_commit_group()
    tlx.async_load_wait_group(0)
    tl.store(y_ptr + offs, tlx.local_load(buf[0]))


@pytest.mark.parametrize("cache, evict", [(".ca", ""), ("", "evict_last"), (".cg", "evict_first")])
def test_async_load_cache_hints_reach_the_copy(cache, evict):
    src = ASTSource(_async_load_hints, {"x_ptr": "*fp16", "y_ptr": "*fp16", "CACHE": "constexpr",
                                        "EVICT": "constexpr"}, {"CACHE": cache, "EVICT": evict},
                    {(0, ): [["tt.divisibility", 16]], (1, ): [["tt.divisibility", 16]]})
    ttgir = triton.compile(src, target=SM90).asm["ttgir"]
    copy = next(line for line in ttgir.splitlines() if "ttg.async_copy_global_to_local" in line)
    # Triton 3.6 prints the hints as `cacheModifier = ca evictionPolicy = evict_last`, 3.9 as
    # `cachePolicy = #tt.cache_policy<cache_modifier = ca, eviction_policy = evict_last>`: either way the op's
    # own attributes, not unknown ones it would ignore.
    if cache:
        assert re.search(rf"\b(cacheModifier|cache_modifier) = {cache[1:]}\b", copy), copy
    if evict:
        assert re.search(rf"\b(evictionPolicy|eviction_policy) = {evict}\b", copy), copy


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_amd_gemm_compiles_to_lds_and_mfma(arch):
    cfg = amd.DEFAULT
    k = triton.compile(gemm_source(cfg, amd.matmul_kernel_pipelined_amd), target=GPUTarget("hip", arch, 64),
                       options={"num_warps": cfg.num_warps})
    ttgir, gcn = k.asm["ttgir"], k.asm["amdgcn"]
    loop = ttgir[ttgir.index("scf.for", ttgir.index("ttg.local_store")):]
    loop = loop[:loop.index("scf.yield")]
    # LDS reads go straight into MFMA operand layouts; no conversion is left in the loop.
    assert loop.count("ttg.local_load") == 2 and "#ttg.dot_op<{opIdx = 0" in loop and "ttg.convert_layout" not in loop
    assert loop.count("ttg.local_store") == 2 and "tt.dot" in loop
    assert re.search(r"\bds_(write|store)", gcn) and re.search(r"\bds_(read|load)", gcn) and "v_mfma" in gcn


@pytest.mark.parametrize("target", [SM90, GFX950], ids=["sm90", "gfx950"])
def test_every_view_op_lowers(target):
    from views_kernel import views_kernel
    src = ASTSource(views_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "z_ptr": "*fp16", "w_ptr": "*i16"}, {})
    ttgir = triton.compile(src, target=target).asm["ttgir"]
    for op in ("memdesc_trans", "memdesc_subslice", "memdesc_reinterpret", "ttg.local_load", "ttg.local_store"):
        assert op in ttgir


@triton.jit
def _plain_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2 + 1, mask=offs < n)


def test_kernel_without_tlx_ops_compiles_byte_identically():
    src = ASTSource(_plain_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                    {"BLOCK": 1024})
    assert tp.get_plugin("tlx") is not None
    with_tlx = triton.compile(src, target=SM90).asm["ptx"]
    tp.disable()
    try:
        bare = triton.compile(src, target=SM90).asm["ptx"]
    finally:
        tp.enable()
    assert with_tlx == bare


# --------------------------------------------------------------------------------------------
# Compile-time errors point at the kernel line
# --------------------------------------------------------------------------------------------
@triton.jit
def _store_wrong_dtype(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float16, 1)
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    tlx.local_store(tlx.local_view(buf, 0), tl.load(x_ptr + offs))  # fp32 into an fp16 buffer


@triton.jit
def _store_wrong_rank(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    tlx.local_store(tlx.local_view(buf, 0), tl.load(x_ptr + tl.arange(0, 16)))  # 1D into a 2D buffer


@triton.jit
def _view_float_index(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.local_view(buf, tl.load(x_ptr))  # a float index


@triton.jit
def _dot_small_m(x_ptr):
    a = tlx.local_alloc((32, 64), tl.float16, 1)
    b = tlx.local_alloc((64, 64), tl.float16, 1)
    tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0))  # M = 32 < 64


@triton.jit
def _dot_wide_n(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)
    b = tlx.local_alloc((64, 512), tl.float16, 1)
    tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0))  # N = 512 > 256


@triton.jit
def _async_load_kernel(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0))


@triton.jit
def _async_load_bad_hint(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0), cache_modifier=".wb")


@pytest.mark.parametrize("kernel, target, message, line", [
    (_store_wrong_dtype, SM90, "value dtype fp32 does not match buffer dtype fp16", "tlx.local_store("),
    (_store_wrong_rank, SM90, "does not match buffer shape [16, 16]", "tlx.local_store("),
    (_view_float_index, SM90, "index must be an integer scalar", "tlx.local_view(buf, tl.load(x_ptr))"),
    (_dot_small_m, SM90, "tlx.async_dot: M=32 must be a positive multiple of 64", "tlx.async_dot("),
    (_dot_wide_n, SM90, "tlx.async_dot: N=512 must be a multiple of 8 in [8, 256]", "tlx.async_dot("),
    (_dot_small_m, GFX950, "tlx.async_dot is implemented for Hopper (sm_90 wgmma); the target is gfx950",
     "tlx.async_dot("),
    (_async_load_kernel, SM75, "tlx.async_load needs cp.async (NVIDIA sm_80 or newer); the target is sm75",
     "tlx.async_load("),
    (_async_load_bad_hint, SM90, "Cache modifier .wb not supported", "tlx.async_load("),
])
def test_errors_name_the_kernel_line(kernel, target, message, line):
    src = ASTSource(kernel, {"x_ptr": "*fp32"}, {})
    with pytest.raises(CompilationError) as info:
        triton.compile(src, target=target)
    text = str(info.value)
    assert message in text
    assert line in text  # Triton prints the offending source line


@triton.jit
def _carried_view_kernel(out_ptr, N: tl.constexpr, USE_BEFORE_REBIND: tl.constexpr):
    bufs = tlx.local_alloc((N, ), tl.float32, 2)
    cur = bufs[0]
    for i in range(0, 3):
        if USE_BEFORE_REBIND:
            tlx.local_store(cur, tl.full((N, ), 1.0, tl.float32) * i)  # iteration i would need view i % 2
        cur = bufs[(i + 1) % 2]
        tlx.local_store(cur, tl.full((N, ), 2.0, tl.float32) * i)  # the view made in this iteration: fine
    tl.store(out_ptr + tl.arange(0, N), tlx.local_load(bufs[0]))


def test_a_view_carried_by_a_loop_is_refused_where_it_is_used():
    """Ops fix their buffer when traced, so a view rebound in a loop and used from the previous iteration
    would always be the first one: refused at the use (the interpreter, which runs it, agrees with the fork)."""
    src = ASTSource(_carried_view_kernel, {"out_ptr": "*fp32"}, {"N": 32, "USE_BEFORE_REBIND": True})
    with pytest.raises(CompilationError, match="(?s)tlx.local_store\\(cur,.*TLX buffer view was rebound inside a "
                                               "loop and is used where its value depends on the iteration"):
        triton.compile(src, target=SM90)
    fresh = ASTSource(_carried_view_kernel, {"out_ptr": "*fp32"}, {"N": 32, "USE_BEFORE_REBIND": False})
    assert "ttg.local_store" in triton.compile(fresh, target=SM90).asm["ttgir"]
