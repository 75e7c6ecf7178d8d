"""TLX fork conformance of the shared-memory ops and the explicit layout API (issue 8).

Each op compiles for sm_90 and for AMD CDNA3/CDNA4 (gfx942, gfx950), and its numerics are checked
under the interpreter. Interpreter tests need a process started with TRITON_INTERPRET=1, so
``test_interpreter_part`` reruns this file in one.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx
from interp_shim import interpret_mode

TARGETS = {"sm90": GPUTarget("cuda", 90, 32), "gfx942": GPUTarget("hip", "gfx942", 64),
           "gfx950": GPUTarget("hip", "gfx950", 64)}
INTERP = interpret_mode()
compiled = pytest.mark.skipif(INTERP, reason="compile-path test")
interpreted = pytest.mark.skipif(not INTERP, reason="runs in the TRITON_INTERPRET=1 process (test_interpreter_part)")


def compile_ttgir(kernel, signature: dict, constants: dict, target: str, **options) -> str:
    src = ASTSource(kernel, signature, constants)
    k = triton.compile(src, target=TARGETS[target], options=options)
    ttgir = k.asm["ttgir"]
    assert "tt.elementwise_inline_asm" not in ttgir  # every placeholder was lowered
    assert ("amdgcn" in k.asm) if target.startswith("gfx") else ("ptx" in k.asm)
    return ttgir


def lowered_ttgir(monkeypatch, kernel, signature: dict, constants: dict, target: str, **options) -> str:
    """The TTGIR right after ``tlx.lower_placeholders``, before stock passes move layouts around."""
    import tritium.tlx.pipeline as pipeline
    seen = []
    monkeypatch.setattr(pipeline, "lower", lambda text, _lower=pipeline.lower: seen.append(_lower(text)) or seen[-1])
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)
    compile_ttgir(kernel, signature, constants, target, **options)
    return seen[-1]


def compile_error(kernel, signature: dict, constants: dict, target: str = "sm90") -> str:
    with pytest.raises(Exception) as e:
        triton.compile(ASTSource(kernel, signature, constants), target=TARGETS[target])
    return str(e.value)


@triton.jit
def _offs(R: tl.constexpr, C: tl.constexpr):
    return tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]


# ------------------------------------------------------------------------------------------------
# 1. local_view on a single buffer: row i of the first dim (shape[1:]); a 1-D view gives element i
# ------------------------------------------------------------------------------------------------
@triton.jit
def view_single_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plane = tlx.local_alloc((2, R, C), tl.float32, 1)[0]  # one buffer of shape (2, R, C)
    tlx.local_store(plane, tl.reshape(tl.load(x_ptr + tl.arange(0, 2 * R * C)), (2, R, C)))
    row = tlx.local_view(plane, 1)  # (R, C)
    tl.store(y_ptr + _offs(R, C), tlx.local_load(row))
    vec = tlx.local_alloc((C, ), tl.float32, 1)[0]
    tlx.local_store(vec, tl.load(x_ptr + tl.arange(0, C)))
    i = tl.program_id(0) + 3  # a run-time index
    tl.store(z_ptr + tl.arange(0, 1), tlx.local_load(tlx.local_view(vec, i)))


VIEW_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_view_of_a_single_buffer_compiles(target):
    ttgir = compile_ttgir(view_single_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "-> !ttg.memdesc<16x32xf32" in ttgir  # the row view of the 2x16x32 buffer
    assert "ttg.memdesc_reshape" in ttgir and "-> !ttg.memdesc<1xf32" in ttgir  # the element view
    assert ttgir.count("ttg.memdesc_index") == 4


@interpreted
def test_local_view_of_a_single_buffer_numerics():
    x, y, z = torch.randn(2 * 16 * 32), torch.empty(16, 32), torch.empty(1)
    view_single_kernel[(1, )](x, y, z, R=16, C=32)
    torch.testing.assert_close(y, x.reshape(2, 16, 32)[1])
    torch.testing.assert_close(z, x[3:4])


@triton.jit
def view_rows_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    v = tlx.local_alloc((R, C), tl.float32, 1, layout=plain)[0]
    tlx.local_store(v, tl.load(x_ptr + _offs(R, C)))
    tl.store(y_ptr + tl.arange(0, C), tlx.local_load(tlx.local_view(v, 5)))


@triton.jit
def view_swizzled_row_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_view(tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.swizzled_layout(3, 3, 3))[0], 5)


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_view_rows_of_a_2d_view(target):
    ttgir = compile_ttgir(view_rows_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "-> !ttg.memdesc<32xf32" in ttgir
    msg = compile_error(view_swizzled_row_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "tlx.local_view: a row of a swizzled 2-D buffer has no 1-D shared layout" in msg


@interpreted
def test_local_view_rows_of_a_2d_view_numerics():
    x, y = torch.randn(16, 32), torch.empty(32)
    view_rows_kernel[(1, )](x, y, y, R=16, C=32)
    torch.testing.assert_close(y, x[5])


@triton.jit
def view_oob_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_view(tlx.local_alloc((R, C), tl.float32, 1)[0], R)


@compiled
def test_local_view_out_of_range_names_the_op_and_line():
    msg = compile_error(view_oob_kernel, VIEW_SIG, {"R": 16, "C": 32})
    assert "tlx.local_view: index 16 out of range for 16 rows" in msg and "view_oob_kernel" in msg


# ------------------------------------------------------------------------------------------------
# 2. local_reinterpret to another shape (and dtype) of the same bytes, whole multi-buffers included
# ------------------------------------------------------------------------------------------------
@triton.jit
def reinterpret_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plain2: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    bufs = tlx.local_alloc((R, C), tl.float16, 4, layout=plain2)
    for i in tl.static_range(4):
        tlx.local_store(bufs[i], tl.load(x_ptr + i * R * C + _offs(R, C)))
    flat = tlx.local_reinterpret(bufs, tl.int16, [1, 4 * R * C], layout=plain2)  # all four buffers
    tl.store(y_ptr + tl.arange(0, 4 * R * C)[None, :], tlx.local_load(flat))
    wide = tlx.local_reinterpret(bufs[1], tl.float32, [R, C // 2], layout=plain2)
    tl.store(z_ptr + _offs(R, C // 2), tlx.local_load(wide))


REINT_SIG = {"x_ptr": "*fp16", "y_ptr": "*i16", "z_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_reinterpret_to_other_shapes_compiles(target):
    ttgir = compile_ttgir(reinterpret_kernel, REINT_SIG, {"R": 16, "C": 32}, target)
    assert "ttg.memdesc_reinterpret" in ttgir
    assert "!ttg.memdesc<4x16x32xf16, #shared, #smem, mutable> -> !ttg.memdesc<1x2048xi16" in ttgir
    assert "-> !ttg.memdesc<16x16xf32" in ttgir


@interpreted
def test_local_reinterpret_to_other_shapes_numerics():
    x = torch.randn(4 * 16 * 32).half()
    y, z = torch.empty(1, 4 * 16 * 32, dtype=torch.int16), torch.empty(16, 16)
    reinterpret_kernel[(1, )](x, y, z, R=16, C=32)
    assert torch.equal(y.flatten(), x.view(torch.int16))
    assert torch.equal(z.view(torch.int32), x[512:1024].view(torch.int32).reshape(16, 16))


@triton.jit
def reinterpret_size_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_reinterpret(tlx.local_alloc((R, C), tl.float16, 1)[0], tl.float32, [R, C])


@compiled
def test_local_reinterpret_size_mismatch_is_an_error():
    msg = compile_error(reinterpret_size_kernel, REINT_SIG, {"R": 16, "C": 32})
    assert "tlx.local_reinterpret: [16, 32] fp16 (1024 bytes) and [16, 32] fp32 (2048 bytes) differ" in msg


# ------------------------------------------------------------------------------------------------
# 3. local_gather / local_scatter along an axis (torch.gather / scatter semantics)
# ------------------------------------------------------------------------------------------------
@triton.jit
def gather_scatter_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    x = tl.load(x_ptr + _offs(R, C))
    idx = tl.load(idx_ptr + _offs(R, C))
    tlx.local_store(buf, x)
    tl.store(g_ptr + _offs(R, C), tlx.local_gather(buf, idx, AXIS))
    tlx.local_store(buf, tl.zeros((R, C), tl.float32))
    tlx.local_scatter(buf, x + 100.0, idx, axis=AXIS)
    tl.store(s_ptr + _offs(R, C), tlx.local_load(buf))


@triton.jit
def gather_1d_kernel(x_ptr, idx_ptr, g_ptr, N: tl.constexpr, M: tl.constexpr):
    buf = tlx.local_alloc((N * M, ), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + tl.arange(0, N * M)))
    tl.store(g_ptr + tl.arange(0, N), tlx.local_gather(buf, tl.load(idx_ptr + tl.arange(0, N)), 0))


GS_SIG = {"x_ptr": "*fp32", "idx_ptr": "*i32", "g_ptr": "*fp32", "s_ptr": "*fp32", "R": "constexpr", "C": "constexpr",
          "AXIS": "constexpr"}
G1_SIG = {"x_ptr": "*fp32", "idx_ptr": "*i32", "g_ptr": "*fp32", "N": "constexpr", "M": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("axis", [0, 1])
def test_local_gather_scatter_compile(target, axis):
    ttgir = compile_ttgir(gather_scatter_kernel, GS_SIG, {"R": 16, "C": 16, "AXIS": axis}, target)
    assert ttgir.count("tt.gather") == 2  # the gather, and the scatter's gather of its source values
    assert f"axis = {axis} : i32" in ttgir and "tt.reduce" in ttgir and "arith.maxsi" in ttgir
    ttgir = compile_ttgir(gather_1d_kernel, G1_SIG, {"N": 32, "M": 32}, target)
    assert "tt.gather" in ttgir and "ttg.local_load" in ttgir


def _gs_indices(R, C, axis):
    rows, cols = torch.arange(R)[:, None], torch.arange(C)[None, :]
    n = R if axis == 0 else C
    return ((n - 1 - rows - cols) % n).int()  # a permutation along axis for every line


@interpreted
@pytest.mark.parametrize("axis", [0, 1])
def test_local_gather_scatter_numerics(axis):
    x = torch.randn(16, 16)
    idx = _gs_indices(16, 16, axis)
    g, s = torch.empty(16, 16), torch.empty(16, 16)
    gather_scatter_kernel[(1, )](x, idx, g, s, R=16, C=16, AXIS=axis)
    torch.testing.assert_close(g, torch.gather(x, axis, idx.long()))
    torch.testing.assert_close(s, torch.zeros(16, 16).scatter_(axis, idx.long(), x + 100.0))
    x1, idx1, g1 = torch.arange(1024.0), torch.arange(32, dtype=torch.int32) * 33, torch.empty(32)
    gather_1d_kernel[(1, )](x1, idx1, g1, N=32, M=32)
    torch.testing.assert_close(g1, x1[idx1.long()])


@triton.jit
def gather_bad_axis_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_gather(buf, tl.load(idx_ptr + _offs(R, C)), AXIS)


@triton.jit
def scatter_too_big_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_scatter(buf, tl.load(x_ptr + _offs(R, C)), tl.load(idx_ptr + _offs(R, C)), AXIS)


@compiled
def test_local_gather_scatter_misuse():
    msg = compile_error(gather_bad_axis_kernel, GS_SIG, {"R": 16, "C": 16, "AXIS": 2})
    assert "tlx.local_gather: axis must be a compile-time int in [-2, 2), got 2" in msg
    msg = compile_error(scatter_too_big_kernel, GS_SIG, {"R": 64, "C": 64, "AXIS": 0})
    assert "tlx.local_scatter: stock Triton has no scatter op" in msg and "limit 65536" in msg


# ------------------------------------------------------------------------------------------------
# 4. The explicit layout API
# ------------------------------------------------------------------------------------------------
@triton.jit
def shared_layouts_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "swizzled":
        lay: tl.constexpr = tlx.swizzled_shared_layout_encoding(8, 2, 4, [1, 0], [1, 1], [1, 1], [1, 1], [1, 0])
    elif KIND == "cute":
        lay: tl.constexpr = tlx.swizzled_layout(3, 3, 3)
    elif KIND == "nvmma":
        lay: tl.constexpr = tlx.nv_mma_shared_layout_encoding.make_default([R, C], tl.float16)
    elif KIND == "padded":
        lay: tl.constexpr = tlx.padded_shared_layout_encoding.with_identity_for([[C, 8]], [R, C])
    else:  # a row-major image with rows 0..R-1, as a shared linear layout
        lay: tl.constexpr = tlx.shared_linear_layout_encoding([[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0],
                                                               [2, 0], [4, 0], [8, 0], [16, 0], [32, 0]])
    buf = tlx.local_alloc((R, C), tl.float16, 2, layout=lay)
    tlx.local_store(buf[1], tl.load(x_ptr + _offs(R, C)))
    tl.store(y_ptr + _offs(R, C), tlx.local_load(buf[1]))


SL_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "R": "constexpr", "C": "constexpr", "KIND": "constexpr"}
SHARED_KINDS = {
    "swizzled": "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
    "cute": "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 8, order = [1, 0]}>",  # 2**(3+3) / 32
    "nvmma": "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = false, elementBitWidth = 16}>",
    "padded": "#ttg.padded_shared<[32:+8]",
    "linear": "#ttg.shared_linear<",
}


@compiled
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", SHARED_KINDS)
def test_explicit_shared_layouts_compile(target, kind):
    ttgir = compile_ttgir(shared_layouts_kernel, SL_SIG, {"R": 64, "C": 32, "KIND": kind}, target)
    assert SHARED_KINDS[kind] in ttgir
    assert "!ttg.memdesc<2x64x32xf16, #shared" in ttgir


@interpreted
@pytest.mark.parametrize("kind", SHARED_KINDS)
def test_explicit_shared_layouts_numerics(kind):
    x, y = torch.randn(64, 32).half(), torch.empty(64, 32, dtype=torch.float16)
    shared_layouts_kernel[(1, )](x, y, R=64, C=32, KIND=kind)
    assert torch.equal(x, y)


@triton.jit
def register_layouts_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "mfma":
        lay: tl.constexpr = tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1])
    elif KIND == "dot":
        lay: tl.constexpr = tlx.dot_operand_layout(0, tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1]), 4)
    elif KIND == "linear64":  # CuTe thread-value layout: lanes along columns, 4 warps of 16 rows, 16 rows each
        lay: tl.constexpr = tlx.layout(shape=((64, 4), (16, )), stride=((1, 16 * 64), (64, )))
    else:  # the same for 32-lane warps: two column halves per thread
        lay: tl.constexpr = tlx.layout(shape=((32, 4), (2, 16)), stride=((1, 16 * 64), (32, 64)))
    buf = tlx.local_alloc((R, C), tl.float16, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + _offs(R, C)))
    x = tlx.local_load(buf, layout=lay)
    acc = tlx.zeros((R, C), tl.float32, layout=lay)
    y = tlx.release_layout(tlx.require_layout(x.to(tl.float32) + acc, lay))
    tl.store(y_ptr + _offs(R, C), y.to(tl.float16))


RL_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "R": "constexpr", "C": "constexpr", "KIND": "constexpr"}
REGISTER_KINDS = {"mfma": "#ttg.amd_mfma<{version = 3", "dot": "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_mfma",
                  "linear64": "#ttg.linear<", "linear32": "#ttg.linear<"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", REGISTER_KINDS)
def test_explicit_register_layouts_compile(monkeypatch, target, kind):
    if (target == "sm90") != (kind == "linear32"):
        pytest.skip("MFMA layouts are AMD's; each linear layout is written for one warp size")
    ttgir = lowered_ttgir(monkeypatch, register_layouts_kernel, RL_SIG, {"R": 64, "C": 64, "KIND": kind}, target,
                          num_warps=4)
    want = REGISTER_KINDS[kind]
    # the load, the zeros and the required layout are all made in the layout asked for
    assert any("ttg.local_load" in line and want in line for line in ttgir.splitlines())
    assert any("arith.constant dense<0.000000e+00>" in line and want in line for line in ttgir.splitlines())


@interpreted
@pytest.mark.parametrize("kind", ["mfma", "dot", "linear64"])
def test_explicit_register_layouts_numerics(kind):
    x, y = torch.randn(64, 64).half(), torch.empty(64, 64, dtype=torch.float16)
    register_layouts_kernel[(1, )](x, y, R=64, C=64, KIND=kind)
    assert torch.equal(x, y)


@triton.jit
def bad_layout_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "register_as_shared":
        tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1]))
    elif KIND == "cute_period":
        tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.swizzled_layout(3, 1, 1))
    elif KIND == "tmem":
        tlx.local_alloc((R, C), tl.float16, 1, tlx.storage_kind.tmem)
    elif KIND == "warps":
        tlx.local_load(tlx.local_alloc((R, C), tl.float16, 1)[0],
                       layout=tlx.amd_mfma_layout(3, [32, 32, 8], True, [8, 1]))
    else:
        tlx.local_load(tlx.local_alloc((R, C), tl.float16, 1)[0],
                       layout=tlx.swizzled_shared_layout_encoding.make_default(2))


@compiled
@pytest.mark.parametrize("kind,message", [
    ("register_as_shared", "tlx.local_alloc: layout must be a TLX shared layout"),
    ("cute_period", "tlx.local_alloc: layout= tlx.swizzled_layout: Swizzle<3,1,1> gives perPhase < 1"),
    ("tmem", "tlx.local_alloc: storage=tmem is Blackwell tensor memory"),
    ("shared_as_register", "tlx.local_load: layout must be a TLX register layout"),
    ("warps", "the layout has 8 warps per CTA ([8, 1]), the kernel has num_warps=4"),
])
def test_layout_misuse_names_op_and_argument(kind, message):
    msg = compile_error(bad_layout_kernel, SL_SIG, {"R": 64, "C": 32, "KIND": kind}, "gfx942")
    assert message in msg and "bad_layout_kernel" in msg


@compiled
def test_mfma_layout_on_nvidia_is_an_error():
    msg = compile_error(register_layouts_kernel, RL_SIG, {"R": 64, "C": 64, "KIND": "mfma"}, "sm90")
    assert "tlx.local_load: layout" in msg and "an MFMA layout is for AMD CDNA wavefronts of 64 lanes" in msg


# ------------------------------------------------------------------------------------------------
# 5. TLX buffers passed to @triton.jit helpers, nested two deep
# ------------------------------------------------------------------------------------------------
@triton.jit
def _store_into(buf, x):
    tlx.local_store(buf, x)


@triton.jit
def _roundtrip(bufs, i, x_ptr, R: tl.constexpr, C: tl.constexpr):
    one = tlx.local_view(bufs, i)
    _store_into(one, tl.load(x_ptr + _offs(R, C)))  # the second level
    return tlx.local_load(one)


@triton.jit
def helpers_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    a = tlx.local_alloc((R, C), tl.float32, 2)
    b = tlx.local_alloc((R, C), tl.float32, 2)
    y = _roundtrip(a, 0, x_ptr, R, C)
    y += _roundtrip(b, 1, x_ptr, R, C)
    for i in range(2):  # the same helper again, with a run-time index
        y += _roundtrip(a, i, x_ptr, R, C)
    tl.store(y_ptr + _offs(R, C), y)


@triton.jit(noinline=True)
def _not_inlined(buf, y_ptr, R: tl.constexpr, C: tl.constexpr):
    tl.store(y_ptr + _offs(R, C), tlx.local_load(buf))


@triton.jit
def noinline_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    a = tlx.local_alloc((R, C), tl.float32, 1)
    _not_inlined(a[0], y_ptr, R, C)


@triton.jit
def _new_buffer(R: tl.constexpr, C: tl.constexpr):
    return tlx.local_alloc((R, C), tl.float32, 1)


@triton.jit
def _view_of(bufs, i):
    return tlx.local_view(bufs, i)


@triton.jit
def returned_buffers_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    # two calls of one helper return two buffers (one inlined body, so one id): they must stay apart
    a = _new_buffer(R, C)
    b = _new_buffer(R, C)
    tlx.local_store(a[0], tl.load(x_ptr + _offs(R, C)))
    tlx.local_store(b[0], tl.load(x_ptr + _offs(R, C)) + 1.0)
    bufs = tlx.local_alloc((R, C), tl.float32, 2)
    v0 = _view_of(bufs, tl.program_id(0))  # run-time indices: one body for both calls
    v1 = _view_of(bufs, tl.program_id(0) + 1)
    tlx.local_store(v0, tlx.local_load(a[0]) * 2.0)
    tlx.local_store(v1, tlx.local_load(b[0]))
    tl.store(y_ptr + _offs(R, C), tlx.local_load(v0) + tlx.local_load(tlx.local_view(bufs, 1)))


HELP_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_buffers_returned_by_two_calls_stay_apart(target):
    ttgir = compile_ttgir(returned_buffers_kernel, HELP_SIG, {"R": 16, "C": 32}, target)
    allocs = re.findall(r"(%\S+) = ttg.local_alloc", ttgir)
    assert len(allocs) == 3
    index_of = dict(re.findall(r"(%\S+) = ttg.memdesc_index (%\S+)\[", ttgir))
    stores = [index_of[m] for m in re.findall(r"ttg.local_store %\S+, (%\S+) :", ttgir)]
    assert stores == [allocs[0], allocs[1], allocs[2], allocs[2]]  # a[0], b[0], v0, v1


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_buffers_cross_jit_helpers(target):
    ttgir = compile_ttgir(helpers_kernel, HELP_SIG, {"R": 16, "C": 32}, target)
    assert ttgir.count("ttg.local_alloc") == 2 and ttgir.count("ttg.local_store") == 3 and "scf.for" in ttgir


@interpreted
def test_buffers_cross_jit_helpers_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    helpers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 4 * x)


@interpreted
def test_buffers_returned_by_two_calls_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    returned_buffers_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, 3 * x + 1)


@compiled
def test_noinline_helper_with_a_buffer_is_a_clear_error():
    msg = compile_error(noinline_kernel, HELP_SIG, {"R": 16, "C": 32})
    assert "tlx.local_load at " in msg and "test_conformance_mem.py:" in msg
    assert "was made outside the function" in msg and "_not_inlined" in msg and "noinline=True" in msg


# ------------------------------------------------------------------------------------------------
# 6. local_alloc(reuse=...): a second type over the same allocation
# ------------------------------------------------------------------------------------------------
@triton.jit
def reuse_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    a = tlx.local_alloc((R, C), tl.float32, 2, layout=plain)
    tlx.local_store(a[1], tl.load(x_ptr + _offs(R, C)))
    bits = tlx.local_alloc((R, C), tl.int32, 2, reuse=a, layout=plain)
    tl.store(y_ptr + _offs(R, C), tlx.local_load(bits[1]))


REUSE_SIG = {"x_ptr": "*fp32", "y_ptr": "*i32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_alloc_reuse_compiles_to_one_allocation(target):
    ttgir = compile_ttgir(reuse_kernel, REUSE_SIG, {"R": 16, "C": 32}, target)
    assert ttgir.count("ttg.local_alloc") == 1
    assert "!ttg.memdesc<2x16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<2x16x32xi32" in ttgir


@interpreted
def test_local_alloc_reuse_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32, dtype=torch.int32)
    reuse_kernel[(1, )](x, y, R=16, C=32)
    assert torch.equal(y, x.view(torch.int32))


@triton.jit
def unsupported_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    if R == 1:
        spec = tlx.storage_alias_spec()
        a = tlx.local_alloc((C, C), tl.float16, 2, reuse=spec)
        b = tlx.local_alloc((C, C), tl.float16, 2, reuse=spec)
        spec.set_buffer_overlap(tlx.reuse_group(a, tlx.reuse_group(b, group_size=2)))
    elif R == 2:
        a = tlx.local_alloc((C, ), tl.float32, 1)
        tlx.local_alloc((C, C), tl.float32, 1, reuse=a)
    elif R == 3:
        tlx.subslice(tlx.local_alloc((C, C), tl.float32, 1)[0], 0, 16)
    else:
        a = tlx.local_alloc((C, C), tl.float32, 1)
        tlx.assert_same_layout(a, tlx.swizzled_shared_layout_encoding(4, 1, 8, [1, 0]))


@compiled
@pytest.mark.parametrize("case,message", [
    (1, "storage_alias_spec.set_buffer_overlap: the elements of a group must have one buffer count (after "
        "group_size), got [2, 1]"),
    (2, "tlx.local_alloc: reuse= allocation has 128 bytes, 4096 needed"),
    (3, "tlx.subslice slices Blackwell tensor memory"),
    (4, "tlx.assert_same_layout: !ttg.memdesc<32x32xf32, #ttg.nvmma_shared<"),
])
def test_unsupported_or_wrong_use_is_a_clear_error(case, message):
    msg = compile_error(unsupported_kernel, HELP_SIG, {"R": case, "C": 32})
    assert message in msg and msg.startswith("at ")  # a CompilationError at the kernel line


@triton.jit
def alias_kernel(out_ptr, B: tl.constexpr):
    """The fork's storage-alias cases in one kernel: each member reads what another wrote.

    Members that read each other's bytes as other dtypes/shapes are unswizzled, so the bytes map to
    elements in row-major order on every target (and in the interpreter)."""
    offs = _offs(B, B)
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    spec = tlx.storage_alias_spec(storage=tlx.storage_kind.smem)
    qk = tlx.local_alloc((B, B), tl.float32, 2, reuse=spec, layout=plain)
    p = tlx.local_alloc((B, B), tl.float16, 4, reuse=spec, layout=plain)
    alpha = tlx.local_alloc((B, B // 2), tl.float32, 4, reuse=spec, layout=plain)
    # qk[i] shares slot i with (p[2i], p[2i+1]) side by side, and with alpha[2i], alpha[2i+1]
    spec.set_buffer_overlap(tlx.reuse_group(qk, tlx.reuse_group(p, group_size=2),
                                            tlx.reuse_group(alpha, group_size=2)))
    tlx.local_store(qk[1], tl.full((B, B), 1.0, tl.float32) + offs.to(tl.float32))
    tl.store(out_ptr + offs, tlx.local_load(p[3]).to(tl.float32))  # the second half of qk[1]'s bytes
    tl.store(out_ptr + B * B + _offs(B, B // 2), tlx.local_load(alpha[2]))  # the first half of qk[1]
    spec2 = tlx.storage_alias_spec(buffer_size_bytes=4 * B * B * 2)
    a = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec2)
    b = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec2)
    spec2.set_buffer_overlap(tlx.reuse_group(a, b, group_type=tlx.reuse_group_type.distinct))
    for i in tl.static_range(2):
        tlx.local_store(a[i], tl.full((B, B), 1.0 + i, tl.float16))
        tlx.local_store(b[i], tl.full((B, B), 3.0 + i, tl.float16))
    tl.store(out_ptr + 2 * B * B + _offs(B, B), tlx.local_load(b[0]).to(tl.float32))
    tl.store(out_ptr + 3 * B * B + _offs(B, B), tlx.local_load(a[1]).to(tl.float32))
    spec3 = tlx.storage_alias_spec()  # no set_buffer_overlap: the members share one offset
    c = tlx.local_alloc((B, B), tl.int32, 1, reuse=spec3)
    d = tlx.local_alloc((B, B), tl.float32, 1, reuse=spec3)
    tlx.local_store(d[0], tl.full((B, B), 1.0, tl.float32))
    tl.store(out_ptr + 4 * B * B + _offs(B, B), tlx.local_load(c[0]).to(tl.float32))


ALIAS_SIG = {"out_ptr": "*fp32", "B": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_storage_alias_spec_compiles_to_one_allocation_per_spec(target):
    ttgir = compile_ttgir(alias_kernel, ALIAS_SIG, {"B": 32}, target)
    assert ttgir.count("ttg.local_alloc") == 3 and ttgir.count("ttg.memdesc_reinterpret") == 7
    assert "!ttg.memdesc<8192xi8" in ttgir  # 2 slots of one 32x32 fp32 buffer
    assert "!ttg.memdesc<8192xi8, #shared, #smem, mutable> -> !ttg.memdesc<4x32x32xf16" in ttgir


def _alias_expected(B=32):
    qk1 = torch.ones(B, B) + torch.arange(B * B).float().reshape(B, B)
    raw = qk1.flatten().view(torch.float16)
    return [raw[B * B:].reshape(B, B).float(), qk1.flatten()[:B * B // 2].reshape(B, B // 2),
            torch.full((B, B), 3.0), torch.full((B, B), 2.0)]


@interpreted
def test_storage_alias_spec_numerics():
    out = torch.zeros(5 * 32 * 32)
    alias_kernel[(1, )](out, B=32)
    p3, alpha2, b0, a1 = _alias_expected()
    torch.testing.assert_close(out[:1024].reshape(32, 32), p3)
    torch.testing.assert_close(out[1024:1536].reshape(32, 16), alpha2)
    torch.testing.assert_close(out[2048:3072].reshape(32, 32), b0)
    torch.testing.assert_close(out[3072:4096].reshape(32, 32), a1)
    torch.testing.assert_close(out[4096:], torch.full((1024, ), 1065353216.0))  # 1.0f read as int32


# ------------------------------------------------------------------------------------------------
# 7. zeros, assert_same_layout, dump_layout
# ------------------------------------------------------------------------------------------------
@triton.jit
def misc_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    a = tlx.local_alloc((R, C), tl.float32, 2, layout=plain)
    tlx.assert_same_layout(a[0], a[1])
    tlx.assert_same_layout(a[0], plain)
    tlx.dump_layout(a)
    x = tl.load(x_ptr + _offs(R, C))
    tlx.dump_layout(x)
    tlx.local_store(a[0], x + tlx.zeros((R, C), tl.float32))
    tl.store(y_ptr + _offs(R, C), tlx.local_load(a[0]))


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_misc_ops_compile(target, capfd):
    compile_ttgir(misc_kernel, HELP_SIG, {"R": 16, "C": 32}, target)
    err = capfd.readouterr().err
    assert "tlx.dump_layout: !ttg.memdesc<2x16x32xf32, #ttg.swizzled_shared<{vec = 1" in err
    assert re.search(r"tlx.dump_layout at .*test_conformance_mem.py:\d+: tensor<16x32xf32, #ttg.blocked<", err)


@interpreted
def test_misc_ops_numerics():
    x, y = torch.randn(16, 32), torch.empty(16, 32)
    misc_kernel[(1, )](x, y, R=16, C=32)
    torch.testing.assert_close(y, x)


def test_interpreter_part():
    """Run this file's interpreter tests in a TRITON_INTERPRET=1 process (see interp_shim)."""
    if INTERP:
        pytest.skip("this process is the interpreted one")
    here = Path(__file__).resolve()
    src = str(here.parents[2] / "src")
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here), "-k", "numerics"],
                          cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-8000:] + proc.stderr[-2000:]
