"""Compile-path tests of TLX on the CPU: the TTIR the frontend builds, errors, and byte-identity."""
from __future__ import annotations

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
from tritium.kernels import gemm_pipelined_hopper as hopper

SM90 = GPUTarget("cuda", 90, 32)
GFX950 = GPUTarget("hip", "gfx950", 64)
SM75 = GPUTarget("cuda", 75, 32)


def gemm_source(cfg: hopper.Config) -> ASTSource:
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
           "stride_cm": "i32", "stride_cn": "constexpr"}
    meta = {f: getattr(cfg, f) for f in cfg._fields if f != "num_warps"}
    sig.update({f: "constexpr" for f in meta})
    attrs = {(i, ): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}
    return ASTSource(hopper.matmul_kernel_pipelined_hopper, sig,
                     {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, **meta}, attrs)


def build_ttir(src: ASTSource, target: GPUTarget, **options) -> str:
    """The kernel as the frontend builds it (before any pass)."""
    backend = make_backend(target)
    opts = backend.parse_options(options)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    assert mod.verify()
    return mod.str()


@pytest.mark.parametrize("cfg", [hopper.LARGE, hopper.SMALL], ids=["128x256x64", "64x128x64"])
def test_hopper_gemm_frontend_builds_tlx_ops(cfg):
    ttir = build_ttir(gemm_source(cfg), SM90, num_warps=cfg.num_warps)
    BM, BN, BK, S = cfg.BLOCK_SIZE_M, cfg.BLOCK_SIZE_N, cfg.BLOCK_SIZE_K, cfg.NUM_STAGES
    # Multi-buffers in NVMMA 128B-swizzled shared memory (what cp.async writes and wgmma reads).
    assert f"!ttg.memdesc<{S}x{BM}x{BK}xf16, #shared" in ttir and f"!ttg.memdesc<{S}x{BK}x{BN}xf16, #shared" in ttir
    assert "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>" in ttir
    # cp.async sources in a 16-byte-vector blocked layout; commit groups and waits as written.
    assert ttir.count("ttg.async_copy_global_to_local") == 4  # 2 in the prologue loop, 2 in the main loop
    assert "sizePerThread = [1, 8]" in ttir
    assert f"ttg.async_wait {{num = {S - 2} : i32}}" in ttir
    # Async wgmma with the MMA v3 accumulator layout; retire one, then all.
    assert "ttng.warp_group_dot" in ttir and "isAsync = true" in ttir
    assert "pendings = 1 : i32" in ttir and "pendings = 0 : i32" in ttir
    instr_n = BN if cfg.num_warps // 4 * 64 <= BM else BN // 2
    assert f"instrShape = [16, {instr_n}, 16]" in ttir
    # The hand-pipelined loop keeps Triton's pipeliner off.
    assert "tt.num_stages = 0 : i32" in ttir


@pytest.mark.xfail(strict=True, reason="stock convert_to_ttgpuir rejects the tt.call bridges (docs/tlx-design.md)")
def test_hopper_gemm_compiles_to_cp_async_and_wgmma():
    cfg = hopper.LARGE
    ptx = triton.compile(gemm_source(cfg), target=SM90, options={"num_warps": cfg.num_warps}).asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx


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
    v = tlx.local_view(buf, tl.load(x_ptr))  # a float index


@triton.jit
def _dot_small_m(x_ptr):
    a = tlx.local_alloc((32, 64), tl.float16, 1)
    b = tlx.local_alloc((64, 64), tl.float16, 1)
    acc = tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0))  # M = 32 < 64


@triton.jit
def _dot_wide_n(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)
    b = tlx.local_alloc((64, 512), tl.float16, 1)
    acc = tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0))  # N = 512 > 256


@triton.jit
def _async_load_kernel(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    tok = tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0))


@pytest.mark.parametrize("kernel, target, message, line", [
    (_store_wrong_dtype, SM90, "value dtype fp32 does not match buffer dtype fp16", "tlx.local_store("),
    (_store_wrong_rank, SM90, "does not match buffer shape [16, 16]", "tlx.local_store("),
    (_view_float_index, SM90, "index must be an integer scalar", "tlx.local_view(buf, tl.load(x_ptr))"),
    (_dot_small_m, SM90, "M=32 N=64 K=64 is outside wgmma limits", "tlx.async_dot("),
    (_dot_wide_n, SM90, "M=64 N=512 K=64 is outside wgmma limits", "tlx.async_dot("),
    (_dot_small_m, GFX950, "tlx.async_dot is implemented for Hopper (sm_90 wgmma); the target is gfx950",
     "tlx.async_dot("),
    (_async_load_kernel, SM75, "tlx.async_load needs cp.async (NVIDIA sm_80 or newer); the target is sm75",
     "tlx.async_load("),
])
def test_errors_name_the_kernel_line(kernel, target, message, line):
    src = ASTSource(kernel, {"x_ptr": "*fp32"}, {})
    with pytest.raises(CompilationError) as info:
        triton.compile(src, target=target)
    text = str(info.value)
    assert message in text
    assert line in text  # Triton prints the offending source line
