"""TLX fork conformance of the shared-memory ops and the explicit layout API (issue 8).

Each op compiles for sm_90 and for AMD CDNA3/CDNA4 (gfx942, gfx950); the kernels are in mem_kernels.py,
their interpreter numerics in test_interpreter_mem.py (run by test_interpreter_run.py).
"""
from __future__ import annotations

import re

import pytest
import triton

from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from interp_shim import interpret_mode
from mem_kernels import (slice_at_runtime_row_kernel, view_single_kernel, view_rows_kernel, view_swizzled_row_kernel, view_oob_kernel,
                         reinterpret_kernel, reinterpret_size_kernel, gather_scatter_kernel, gather_1d_kernel,
                         gather_bad_axis_kernel, scatter_too_big_kernel, shared_layouts_kernel,
                         register_layouts_kernel, bad_layout_kernel, helpers_kernel, _not_inlined, noinline_kernel,
                         returned_buffers_kernel, reuse_kernel, unsupported_kernel, alias_kernel, misc_kernel,
                         fork_keywords_kernel)

TARGETS = {"sm90": GPUTarget("cuda", 90, 32), "gfx942": GPUTarget("hip", "gfx942", 64),
           "gfx950": GPUTarget("hip", "gfx950", 64)}
compiled = pytest.mark.skipif(interpret_mode(), reason="compile path: runs in the uninterpreted process")


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

    def build(mod, _build=pipeline.build):  # a module whose placeholders are all built is not written as text
        textual = _build(mod)
        if not textual:
            seen.append(mod.str())
        return textual

    monkeypatch.setattr(pipeline, "build", build)
    monkeypatch.setattr(pipeline, "lower", lambda text, _lower=pipeline.lower: seen.append(_lower(text)) or seen[-1])
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)
    compile_ttgir(kernel, signature, constants, target, **options)
    return seen[-1]


def compile_error(kernel, signature: dict, constants: dict, target: str = "sm90") -> str:
    with pytest.raises(Exception) as e:
        triton.compile(ASTSource(kernel, signature, constants), target=TARGETS[target])
    return str(e.value)


# ------------------------------------------------------------------------------------------------
# 1. local_view on a single buffer: row i of the first dim (shape[1:]); a 1-D view gives element i
# ------------------------------------------------------------------------------------------------


VIEW_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_view_of_a_single_buffer_compiles(target):
    ttgir = compile_ttgir(view_single_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "-> !ttg.memdesc<16x32xf32" in ttgir  # the row view of the 2x16x32 buffer
    assert "ttg.memdesc_reshape" in ttgir and "-> !ttg.memdesc<1xf32" in ttgir  # the element view
    assert ttgir.count("ttg.memdesc_index") == 4


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_view_rows_of_a_2d_view(target):
    ttgir = compile_ttgir(view_rows_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "-> !ttg.memdesc<32xf32" in ttgir
    msg = compile_error(view_swizzled_row_kernel, VIEW_SIG, {"R": 16, "C": 32}, target)
    assert "tlx.local_view: a row of a swizzled 2-D buffer has no 1-D shared layout" in msg


@compiled
def test_local_view_out_of_range_names_the_op_and_line():
    msg = compile_error(view_oob_kernel, VIEW_SIG, {"R": 16, "C": 32})
    assert "tlx.local_view: index 16 out of range for 16 rows" in msg and "view_oob_kernel" in msg


# ------------------------------------------------------------------------------------------------
# 2. local_reinterpret to another shape (and dtype) of the same bytes, whole multi-buffers included
# ------------------------------------------------------------------------------------------------


REINT_SIG = {"x_ptr": "*fp16", "y_ptr": "*i16", "z_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_reinterpret_to_other_shapes_compiles(target):
    ttgir = compile_ttgir(reinterpret_kernel, REINT_SIG, {"R": 16, "C": 32}, target)
    assert "ttg.memdesc_reinterpret" in ttgir
    assert "!ttg.memdesc<4x16x32xf16, #shared, #smem, mutable> -> !ttg.memdesc<1x2048xi16" in ttgir
    assert "-> !ttg.memdesc<16x16xf32" in ttgir


@compiled
def test_local_reinterpret_size_mismatch_is_an_error():
    msg = compile_error(reinterpret_size_kernel, REINT_SIG, {"R": 16, "C": 32})
    assert "tlx.local_reinterpret: [16, 32] fp16 (1024 bytes) and [16, 32] fp32 (2048 bytes) differ" in msg


# ------------------------------------------------------------------------------------------------
# 3. local_gather / local_scatter along an axis (torch.gather / scatter semantics)
# ------------------------------------------------------------------------------------------------


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


@compiled
def test_local_gather_scatter_misuse():
    msg = compile_error(gather_bad_axis_kernel, GS_SIG, {"R": 16, "C": 16, "AXIS": 2})
    assert "tlx.local_gather: axis must be a compile-time int in [-2, 2), got 2" in msg
    msg = compile_error(scatter_too_big_kernel, GS_SIG, {"R": 64, "C": 64, "AXIS": 0})
    assert "tlx.local_scatter: stock Triton has no scatter op" in msg and "limit 65536" in msg


# ------------------------------------------------------------------------------------------------
# 4. The explicit layout API
# ------------------------------------------------------------------------------------------------


SL_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "R": "constexpr", "C": "constexpr", "KIND": "constexpr"}
SHARED_KINDS = {
    "swizzled": "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
    "cute": "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 8, order = [1, 0]}>",  # 2**(3+3) / 32
    "nvmma": "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = false, elementBitWidth = 16}>",
    "padded": "#ttg.padded_shared<[32:+8]",
    "linear": "#ttg.shared_linear<",
    "linear_xor": "#ttg.shared_linear<{offset = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0], [4, 2]",
}


@compiled
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", SHARED_KINDS)
def test_explicit_shared_layouts_compile(target, kind):
    ttgir = compile_ttgir(shared_layouts_kernel, SL_SIG, {"R": 64, "C": 32, "KIND": kind}, target)
    assert SHARED_KINDS[kind] in ttgir
    assert "!ttg.memdesc<2x64x32xf16, #shared" in ttgir


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
    # the load, the zeros and the required layout are all made in the layout asked for (layout aliases of the
    # printed module spelled out)
    want = REGISTER_KINDS[kind]
    aliases = dict(re.findall(r"^(#\w+) = (#ttg\..*)$", ttgir, re.M))
    lines = ttgir.splitlines()
    for _ in range(2):  # an alias may name another (a dot operand's parent)
        lines = [re.sub(r"#\w+\b(?![.<])", lambda m: aliases.get(m[0], m[0]), line) for line in lines]
    assert any("ttg.local_load" in line and want in line for line in lines)
    assert any("arith.constant dense<0.000000e+00>" in line and want in line for line in lines)


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


@compiled
def test_noinline_helper_with_a_buffer_is_a_clear_error():
    msg = compile_error(noinline_kernel, HELP_SIG, {"R": 16, "C": 32})
    assert "tlx.local_load at " in msg and "mem_kernels.py:" in msg
    assert "was made outside the function" in msg and "_not_inlined" in msg and "noinline=True" in msg


# ------------------------------------------------------------------------------------------------
# 6. local_alloc(reuse=...): a second type over the same allocation
# ------------------------------------------------------------------------------------------------


REUSE_SIG = {"x_ptr": "*fp32", "y_ptr": "*i32", "R": "constexpr", "C": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_local_alloc_reuse_compiles_to_one_allocation(target):
    ttgir = compile_ttgir(reuse_kernel, REUSE_SIG, {"R": 16, "C": 32}, target)
    assert ttgir.count("ttg.local_alloc") == 1
    assert "!ttg.memdesc<2x16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<2x16x32xi32" in ttgir


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


ALIAS_SIG = {"out_ptr": "*fp32", "B": "constexpr"}


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_storage_alias_spec_compiles_to_one_allocation_per_spec(target):
    ttgir = compile_ttgir(alias_kernel, ALIAS_SIG, {"B": 32}, target)
    # 7 members, but spec2's two see its backing as the same type (each as many buffers as fill the backing,
    # which Triton 3.8 requires), so one view serves both
    assert ttgir.count("ttg.local_alloc") == 3 and ttgir.count("ttg.memdesc_reinterpret") == 6
    assert "!ttg.memdesc<8192xi8" in ttgir  # 2 slots of one 32x32 fp32 buffer
    assert "!ttg.memdesc<8192xi8, #shared, #smem, mutable> -> !ttg.memdesc<4x32x32xf16" in ttgir


# ------------------------------------------------------------------------------------------------
# 7. zeros, assert_same_layout, dump_layout
# ------------------------------------------------------------------------------------------------


@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_misc_ops_compile(target, capfd):
    compile_ttgir(misc_kernel, HELP_SIG, {"R": 16, "C": 32}, target)
    err = capfd.readouterr().err
    assert "tlx.dump_layout: !ttg.memdesc<2x16x32xf32, #ttg.swizzled_shared<{vec = 1" in err
    assert re.search(r"tlx.dump_layout at .*mem_kernels.py:\d+: tensor<16x32xf32, #ttg.blocked<", err)




@compiled
@pytest.mark.parametrize("target", TARGETS)
def test_view_ops_take_the_forks_parameter_names(target):
    ttgir = compile_ttgir(fork_keywords_kernel, HELP_SIG, {"R": 16, "C": 32}, target)
    assert "ttg.memdesc_trans" in ttgir and "ttg.memdesc_subslice" in ttgir


@compiled
def test_local_slice_at_a_runtime_offset_says_why_not():
    """The fork's test_local_slice_runtime_offset_compiles_gfx950 slices at a kernel argument; stock has no
    dynamic subslice, so the error says that (not "outside the buffer" with a tensor's repr)."""
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "row": "i32", "R": "constexpr", "C": "constexpr"}
    with pytest.raises(triton.CompilationError, match="tlx.local_slice: offset must be compile-time ints; a runtime "
                                                      "offset needs the fork's ttg.memdesc_dynamic_subslice"):
        compile_ttgir(slice_at_runtime_row_kernel, sig, {"R": 8, "C": 64}, "gfx950")

