"""tlx.loop_carried_dot_operands (tlx/dot_operands.py) on printed TTGIR; end to end, the fork's gfx9 GEMMs v7-v9
(tests/tlx/fork_conformance.py) fit gfx950's LDS only with it."""
from tritium.tlx.dot_operands import carry_operand_layouts, operand_buffer_layouts, operand_swizzle

DOT = "tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 8}>>"
DOT_B = "tensor<64x32xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 8}>>"
BLOCKED = "tensor<64x32xf16, #blocked>"
MEMDESC = "!ttg.memdesc<64x32xf16, #shared, #smem, mutable>"
LAYOUT = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
ACC = "tensor<64x64xf32, #mma>"


def module(extra_use: str = "") -> str:
    return f"""#blocked = {LAYOUT}
module {{
  tt.func public @k(%p: !tt.ptr<f16>) {{
    %a = ttg.local_load %buf0 : {MEMDESC} -> {BLOCKED} loc(#loc1)
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %acc = %cst) -> ({BLOCKED}, {ACC})  : i32 {{
      %c = ttg.convert_layout %x : {BLOCKED} -> {DOT} loc(#loc2)
      %d = tt.dot %c, %bb, %acc : {DOT} * tensor<32x64xf16, #dotb> -> tensor<64x64xf32, #mma> loc(#loc3)
      %next = ttg.local_load %buf1 : {MEMDESC} -> {BLOCKED} loc(#loc4){extra_use}
      scf.yield %next, %d : {BLOCKED}, tensor<64x64xf32, #mma> loc(#loc5)
    }} loc(#loc6)
    %e = ttg.convert_layout %r#0 : {BLOCKED} -> {DOT} loc(#loc7)
    tt.return loc(#loc8)
  }} loc(#loc9)
}}
"""


def test_a_carried_load_reads_into_the_dot_operand_layout():
    out = carry_operand_layouts(module()).splitlines()
    assert out[3] == f"    %a = ttg.local_load %buf0 : {MEMDESC} -> {DOT} loc(#loc1)"
    assert f"-> ({DOT}, tensor<64x64xf32, #mma>)  : i32 {{" in out[4]
    assert out[5] == f"      %c = ttg.convert_layout %x : {DOT} -> {DOT} loc(#loc2)"
    assert out[7].endswith(f"-> {DOT} loc(#loc4)") and out[8].endswith(f": {DOT}, tensor<64x64xf32, #mma> loc(#loc5)")
    assert out[10] == f"    %e = ttg.convert_layout %r#0 : {DOT} -> {DOT} loc(#loc7)"


def test_a_carried_value_with_another_use_keeps_its_layout():
    assert carry_operand_layouts(module(f"\n      tt.store %p, %next : tensor<64x32x!tt.ptr<f16>, #blocked>")) is None


MFMA3 = "#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [16, 16, 16], isTransposed = true}>"
MFMA4 = MFMA3.replace("version = 3", "version = 4")


def test_operand_buffers_get_the_swizzle_triton_composes_for_the_operand():
    # A (K contiguous) with kpack=2's kWidth 8: 8-element vectors, a phase per 64-element row of banks
    assert operand_swizzle(0, 8, [32, 64], [1, 0], 16, MFMA3) == (8, 1, 8)
    # B with N contiguous: CDNA3 does not swizzle it; CDNA4 (transposing LDS loads) does, over 64 banks
    assert operand_swizzle(1, 8, [64, 32], [1, 0], 16, MFMA3) == (1, 1, 1)
    assert operand_swizzle(1, 8, [64, 32], [1, 0], 16, MFMA4) == (8, 4, 4)


def _buffers(planned: str) -> str:
    return f"""#mma = {MFMA3}
#shared = #ttg.swizzled_shared<{{vec = 4, perPhase = 2, maxPhase = 8, order = [1, 0]}}>
#smem = #ttg.shared_memory
module {{
  tt.func public @k() {{
    %b = ttg.local_alloc{planned} : () -> !ttg.memdesc<2x64x32xf16, #shared, #smem, mutable> loc(#loc1)
    %v = ttg.memdesc_index %b[%c0] : !ttg.memdesc<2x64x32xf16, #shared, #smem, mutable> -> {MEMDESC} loc(#loc2)
    %x = ttg.local_load %v : {MEMDESC} -> {DOT_B} loc(#loc3)
    tt.return loc(#loc4)
  }} loc(#loc5)
}}
"""


def test_a_planned_buffer_takes_its_operand_layout_and_an_explicit_one_keeps_its_own():
    out = operand_buffer_layouts(_buffers(" {tlx.planned_layout}"))
    assert "#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>" in out
    assert "tlx.planned_layout" not in out and "%b = ttg.local_alloc : () ->" in out
    assert operand_buffer_layouts(_buffers("")) == _buffers("")


def test_a_buffer_with_a_transposed_view_keeps_its_layout():
    """A memdesc_trans view's encoding derives from its source's; re-encoding one of them alone is invalid."""
    text = _buffers(" {tlx.planned_layout}").replace(
        "    tt.return", "    %t = ttg.memdesc_trans %v {order = array<i32: 1, 0>} : !ttg.memdesc<64x32xf16, #shared, "
        "#smem, mutable> -> !ttg.memdesc<32x64xf16, #shared2, #smem, mutable> loc(#loc6)\n    tt.return")
    assert "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 8" in operand_buffer_layouts(text)


def _two_buffers(extra: str = "") -> str:
    """A (64x32, K contiguous) and B (32x64, N contiguous) planned with one encoding, as the planner does when
    their swizzles coincide; only the loads say which operand each is."""
    a, b = "!ttg.memdesc<64x32xf16, #shared, #smem, mutable>", "!ttg.memdesc<32x64xf16, #shared, #smem, mutable>"
    return f"""#mma = {MFMA3}
#shared = #ttg.swizzled_shared<{{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}}>
#smem = #ttg.shared_memory
module {{
  tt.func public @k() {{
    %A = ttg.local_alloc {{tlx.planned_layout}} : () -> !ttg.memdesc<1x64x32xf16, #shared, #smem, mutable> loc(#loc1)
    %B = ttg.local_alloc {{tlx.planned_layout}} : () -> !ttg.memdesc<1x32x64xf16, #shared, #smem, mutable> loc(#loc2)
    %a = ttg.memdesc_index %A[%c0] : !ttg.memdesc<1x64x32xf16, #shared, #smem, mutable> -> {a} loc(#loc3)
    %b = ttg.memdesc_index %B[%c0] : !ttg.memdesc<1x32x64xf16, #shared, #smem, mutable> -> {b} loc(#loc4)
    ttg.local_store %x, %a : {BLOCKED} -> {a} loc(#loc5)
    %la = ttg.local_load %a : {a} -> {DOT} loc(#loc6)
    %lb = ttg.local_load %b : {b} -> {DOT_B.replace("64x32", "32x64")} loc(#loc7){extra}
    tt.return loc(#loc8)
  }} loc(#loc9)
}}
"""


def test_buffers_sharing_a_planned_encoding_each_get_their_operand_layout():
    """The fork's amd_gemm_pipelined at 64 x 64 x 128, kpack=2: A takes kWidth 8 as its vector, B (not
    K-contiguous on CDNA3) no swizzle, each in the lines of its own views, loads and stores."""
    out = operand_buffer_layouts(_two_buffers()).splitlines()
    a_enc = "#ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>"
    b_enc = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    for i in (5, 7, 9, 10):
        assert a_enc in out[i] and "#shared," not in out[i], out[i]
    for i in (6, 8, 11):
        assert b_enc in out[i] and "#shared," not in out[i], out[i]


def test_buffers_sharing_an_encoding_keep_it_where_a_use_is_not_traced():
    """A buffer view passed on (here into a loop) would carry the old encoding past the rewrite: keep both."""
    extra = ("\n    %r = scf.for %i = %c0 to %n step %c1 iter_args(%v = %b) -> (!ttg.memdesc<32x64xf16, #shared, "
             "#smem, mutable>)  : i32 {\n      scf.yield %v : !ttg.memdesc<32x64xf16, #shared, #smem, mutable>\n"
             "    } loc(#loc10)")
    out = operand_buffer_layouts(_two_buffers(extra))
    assert "vec = 8" not in out and "vec = 1," not in out and "tlx.planned_layout" not in out
