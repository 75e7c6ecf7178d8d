"""The codegen-parity comparison (scripts/codegen_parity): normalization and the rules CI enforces."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from codegen_parity import compare, normalize  # noqa: E402
from codegen_parity.justifications import Justification  # noqa: E402

PTX_A = """
.reg .b32 %r<12>;
// begin inline asm
mov.u32 %r5, %clock64;
$L__BB0_3:
\tcp.async.wait_group 1; // a comment
\tadd.s32 %r7, %r5, %r9;
@%p2 bra $L__BB0_3;
.loc 1 2 3
.section\t.debug_abbrev { .b8 1 }
"""
PTX_B = PTX_A.replace("%r5", "%r1").replace("%r7", "%r2").replace("%r9", "%r3").replace("BB0_3", "BB0_9") \
    .replace("%r<12>", "%r<4>").replace("1 2 3", "1 7 3")


def test_ptx_renumbering_hides_only_numbering():
    assert normalize.ptx(PTX_A) == normalize.ptx(PTX_B)
    assert "mov.u32 %r0, %clock64;" in normalize.ptx(PTX_A)  # special registers keep their names
    weaker = PTX_B.replace("wait_group 1", "wait_group 0")
    assert normalize.ptx(PTX_A) != normalize.ptx(weaker)
    assert normalize.count_key_instructions("ptx", normalize.ptx(PTX_A))["cp.async.wait_group"] == 1


def test_amdgcn_drops_descriptor_and_renumbers_registers():
    a = "\tds_write_b128 v3, v[4:7] ; comment\n.LBB0_2:\n\ts_cbranch_scc1 .LBB0_2\n.amdhsa_kernel k\n .amdhsa_next_free_vgpr 9\n.end_amdhsa_kernel\n"
    b = a.replace("v3", "v8").replace("v[4:7]", "v[10:13]").replace("LBB0_2", "LBB0_5").replace("vgpr 9", "vgpr 20")
    assert normalize.amdgcn(a) == normalize.amdgcn(b)
    assert normalize.count_key_instructions("amdgcn", normalize.amdgcn(a))["ds_write"] == 1
    assert normalize.amdgcn(a) != normalize.amdgcn(b.replace("ds_write_b128", "ds_write_b64"))


def test_ttgir_inlines_aliases_and_drops_locations_and_markers():
    a = ('#blocked = #ttg.blocked<{sizePerThread = [1]}>\n#loc = loc("f.py":1:0)\n'
         'module attributes {tlx.kernel = 1 : i32, "ttg.num-warps" = 4 : i32} {\n'
         '  %x = tt.splat %arg0 : i32 -> tensor<4xi32, #blocked> loc(#loc)\n}\n')
    b = ('#blocked1 = #ttg.blocked<{sizePerThread = [1]}>\n'
         'module attributes {"ttg.num-warps" = 4 : i32} {\n'
         '  %y = tt.splat %c : i32 -> tensor<4xi32, #blocked1> loc("g.py":3:1)\n}\n')
    assert normalize.ttgir(a) == normalize.ttgir(b)
    assert normalize.ttgir_ops(normalize.ttgir(a)) == ["tt.splat"]


def _dump(tmp: Path, side: str, asm: str, ok: bool = True) -> Path:
    d = tmp / side
    d.mkdir()
    case = "fork.hopper_gemm_pipelined@sm90"
    (d / f"{case}.ttgir").write_text("module {\n}\n")
    (d / f"{case}.ptx").write_text(asm)
    (d / "status.json").write_text(json.dumps({"triton": "3.8.0", "cases": {case: {"ok": ok, "error": "boom"}}}))
    return d


def test_a_difference_needs_a_current_justification(tmp_path, monkeypatch):
    u = _dump(tmp_path, "u", "cp.async.wait_group 0;\nbar.sync 0;\n")
    t = _dump(tmp_path, "t", "cp.async.wait_group 1;\nbar.sync 0;\n")
    args = ["--utlx", str(u), "--tritium", str(t), "--out", str(tmp_path / "r.md")]
    monkeypatch.setattr(compare, "JUSTIFIED", {})
    assert compare.main(args) == 1
    assert "not justified (digest " in (tmp_path / "r.md").read_text()
    case = compare.Case("fork.hopper_gemm_pipelined", "sm90", {}, {})
    compare.compare_case(case, u, t)
    right = {case.key: Justification(case.digest, "the source asks for 1")}
    monkeypatch.setattr(compare, "JUSTIFIED", right)
    assert compare.main(args) == 0
    assert "the source asks for 1" in (tmp_path / "r.md").read_text()
    t2 = _dump(tmp_path, "t2", "cp.async.wait_group 2;\nbar.sync 0;\n")  # a new difference: look again
    assert compare.main(["--utlx", str(u), "--tritium", str(t2), "--out", str(tmp_path / "r.md")]) == 1
    assert "justification out of date" in (tmp_path / "r.md").read_text()


def test_must_match_kernels_may_not_differ(tmp_path, monkeypatch):
    u = _dump(tmp_path, "u", "ds_write_b128 v0, v[1:4]\n")
    t = _dump(tmp_path, "t", "ds_write_b64 v0, v[1:2]\n")
    monkeypatch.setattr(compare, "MUST_MATCH", ("fork.hopper_gemm_pipelined", ))
    monkeypatch.setattr(compare, "JUSTIFIED", {"fork.hopper_gemm_pipelined@sm90": Justification("0", "why")})
    assert compare.main(["--utlx", str(u), "--tritium", str(t), "--out", str(tmp_path / "r.md")]) == 1
    assert "DIFFERS (must match)" in (tmp_path / "r.md").read_text()


def test_a_tritium_compile_failure_needs_a_listed_reason(tmp_path, monkeypatch):
    u = _dump(tmp_path, "u", "ret;\n")
    t = _dump(tmp_path, "t", "ret;\n", ok=False)
    args = ["--utlx", str(u), "--tritium", str(t), "--out", str(tmp_path / "r.md")]
    monkeypatch.setattr(compare, "KNOWN_GAPS", {})
    assert compare.main(args) == 1
    monkeypatch.setattr(compare, "KNOWN_GAPS", {"fork.hopper_gemm_pipelined@sm90": "reason"})
    assert compare.main(args) == 0


def test_error_summary_keeps_the_cause_not_the_moving_line_numbers():
    error = ("CompilationError: at 43:20:\n        acc = tlx.async_dot(a, b, acc)\n"
             "        tlx.barrier_arrive(empty[s], pred=k > 0)\n        ^\n"
             "barrier_arrive() got an unexpected keyword argument 'pred'\n")
    assert compare._error_summary(error) == "CompilationError: barrier_arrive() got an unexpected keyword argument 'pred'"
    assert compare._error_summary("not run") == "not run" and compare._error_summary("") == "?"


def test_a_failure_in_a_jit_helper_is_recorded_down_to_the_helper():
    from codegen_parity.dump import _chain
    from triton.compiler.errors import CompilationError

    class Inner(CompilationError):  # Triton's own class, raised for the helper's line
        def __init__(self, text):
            Exception.__init__(self, text)

        def __str__(self):
            return self.args[0]

    Inner.__name__ = "CompilationError"
    try:
        try:
            try:
                raise TypeError("barrier_arrive() got an unexpected keyword argument 'pred'")
            except TypeError as e:
                raise Inner("at 20:12:\n    tlx.barrier_arrive(...)\nbarrier_arrive() got an unexpected keyword "
                            "argument 'pred'") from e
        except Inner as e:
            raise Inner("at 25:26:\n    it, acc = mma_steps(...)\n    ^") from e
    except Inner as e:
        recorded = _chain(e)
    assert compare._error_summary(recorded) == \
        "CompilationError: barrier_arrive() got an unexpected keyword argument 'pred'"


def _git_dump(tmp: Path, side: str, git: bool) -> Path:
    """A dump with one wheel case and, where it had a git copy of the fork, one git-sourced case."""
    d = tmp / side
    d.mkdir()
    cases = {}
    for case in ("fork.amd_gemm_pipelined@gfx942", "fork.main.amd_gemm_pipelined@gfx942")[:2 if git else 1]:
        (d / f"{case}.ttgir").write_text("module {\n}\n")
        (d / f"{case}.amdgcn").write_text("ds_write_b128 v0, v[1:4]\n")
        cases[case] = {"ok": True}
    (d / "status.json").write_text(json.dumps({"triton": "3.8.0", "git": "c" if git else None, "cases": cases}))
    return d


def test_without_a_git_copy_the_git_section_is_kept_from_the_report(tmp_path):
    out = tmp_path / "r.md"
    with_git = ["--utlx", str(_git_dump(tmp_path, "u", True)), "--tritium", str(_git_dump(tmp_path, "t", True)),
                "--out", str(out)]
    assert compare.main(with_git) == 0
    text = out.read_text()
    assert text.index("| fork.amd_gemm_pipelined |") < text.index(compare.GIT_HEADING) \
        < text.index("| fork.main.amd_gemm_pipelined |")
    without = ["--utlx", str(_git_dump(tmp_path, "u2", False)), "--tritium", str(_git_dump(tmp_path, "t2", False)),
               "--out", str(out), "--check"]
    assert compare.main(without) == 0 and out.read_text() == text
    out.write_text(text.split(compare.GIT_HEADING)[0])  # a report from before: nothing to keep
    assert compare.main(without) == 0 and compare.GIT_HEADING not in out.read_text()
