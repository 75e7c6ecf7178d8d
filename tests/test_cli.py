"""The `tritium` command line."""
import argparse
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
import triton

import tritium
from tritium.cli import BENCHMARKS, build_parser, main

HERE = os.path.dirname(__file__)
ADD = f"{HERE}/kernels.py:add_kernel"


def test_pipeline_lists_stages_and_passes(capsys):
    assert main(["pipeline", ADD, "--target", "sm90", "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256"]) == 0
    out = capsys.readouterr().out
    for line in ("[ttir]", "[ttgir]", "[llir]", "[ptx]", "[cubin]", "    ttgpuir.coalesce",
                 "    nvidia.ttnvgpuir.fence_insertion"):
        assert line in out


def test_pipeline_marks_plugin_edits_and_diffs(tmp_path, capsys, monkeypatch):
    plugin = tmp_path / "p.py"
    plugin.write_text(textwrap.dedent("""
        from tritium.plugins import Plugin, Pipeline
        tritium_plugin = Plugin("cliplug", "0.1",
            pipelines={"nc": Pipeline("nc").disable("ttgir", "ttgpuir.coalesce")})
    """))
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", str(plugin))
    assert main(["pipeline", ADD, "--target", "gfx950", "--signature", "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32",
                 "-D", "BLOCK=256", "--pipeline", "cliplug:nc", "--diff-around", "ttgpuir.f32_dot_tc"]) == 0
    out = capsys.readouterr().out
    assert "  - ttgpuir.coalesce   <- disabled by cliplug:nc" in out
    assert "# IR around ttgpuir.f32_dot_tc" in out and "changed nothing" in out


def test_diff_around_shows_the_change(capsys):
    main(["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256", "--diff-around", "ttgpuir.coalesce"])
    out = capsys.readouterr().out
    assert "--- ttgir: before ttgpuir.coalesce@1" in out and "+++ ttgir: after ttgpuir.coalesce@1" in out


def test_plugins_command_lists_name_version_origin(tmp_path, capsys, monkeypatch):
    plugin = tmp_path / "q.py"
    plugin.write_text("from tritium.plugins import Plugin\ntritium_plugin = Plugin('listed', '9.9', ops={'f': len})\n")
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", str(plugin))
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert f"listed 9.9  (path {plugin})" in out and "ops: f" in out


def test_errors_are_reported_without_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tritium.cli", "pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32",
                           "-D", "BLOCK=256", "--pipeline", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "tritium pipeline: pipeline 'nope' is not contributed by any loaded plugin" in proc.stderr


BAD_KERNEL_FILE = "import nonexistent_module_for_the_cli_test\n"


@pytest.mark.parametrize("args,says", [
    (["pipeline", ADD, "--signature", "*fp99,*fp32,*fp32,i32", "-D", "BLOCK=256"], "fp99"),
    (["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32"], "BLOCK"),  # a constexpr without a value
    (["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK"], "-D/--define expects NAME=VALUE"),
    (["pipeline", "{bad}:k", "--signature", "i32"], "importing"),
    (["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256", "--diff-around", "no.such"],
     "no.such"),
    (["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256", "--show", "nope"], "nope"),
    (["pipeline", f"{HERE}/kernels.py:nope", "--signature", "i32"], "has no kernel 'nope'"),
    (["pipeline", "nofile.py:k", "--signature", "i32"], "no file"),
])
def test_bad_input_is_one_line_with_a_nonzero_exit(tmp_path, capsys, args, says):
    bad = tmp_path / "bad_kernels.py"
    bad.write_text(BAD_KERNEL_FILE)
    args = [a.replace("{bad}", str(bad)) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and says in err, err
    assert err.startswith("tritium pipeline: ")


def test_a_kernel_that_does_not_compile_keeps_its_place_in_a_short_paragraph(capsys):
    assert main(["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=100"]) == 2
    assert capsys.readouterr().err == (
        "tritium pipeline: kernel 'add_kernel' does not compile at 2:38: arange's range must be a power of 2\n"
        "        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "                                          ^\n")


# --------------------------------------------------------------------------------------------
# Triton's conventions: signatures as triton.tools.compile, targets, module:kernel, relative imports
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,target", [
    ("sm90", ("cuda", 90, 32)), ("sm_90a", ("cuda", 90, 32)), ("cuda:90", ("cuda", 90, 32)),
    ("cuda:80:32", ("cuda", 80, 32)), ("sm100", ("cuda", 100, 32)), ("hip:gfx942", ("hip", "gfx942", 64)),
    ("gfx950", ("hip", "gfx950", 64)), ("hip:gfx90a:64", ("hip", "gfx90a", 64)), ("hip:gfx1100", ("hip", "gfx1100", 32)),
])
def test_targets_in_triton_and_short_forms(text, target):
    from tritium.plugins.inspection import parse_target
    t = parse_target(text)
    assert (t.backend, t.arch, t.warp_size) == target


@pytest.mark.parametrize("text", ["sm", "cuda:sm90", "hip:942", "tpu:1", "cuda:90:48"])
def test_bad_targets_say_which_forms_work(text, capsys):
    assert main(["pipeline", ADD, "--target", text, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256"]) == 2
    err = capsys.readouterr().err
    assert repr(text) in err and ("cuda:ARCH" in err or "warp size" in err)


def _ttir_of(capsys, *args):
    assert main(["pipeline", *args, "--show", "ttir"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out.split("# output of stage ttir", 1)[1]


def test_signature_hints_as_triton_tools_compile(capsys):
    plain = _ttir_of(capsys, ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=256")
    hinted = _ttir_of(capsys, ADD, "--signature", "*fp32:16, *fp32:16, *fp32, i32:16", "-D", "BLOCK=256")
    assert "tt.divisibility" not in plain
    assert hinted.count("tt.divisibility = 16") == 3
    # every argument, the constexpr as a value (BLOCK, as -D would give it)
    every = _ttir_of(capsys, ADD, "--signature", "*fp32:16,*fp32:16,*fp32,i32:16,512")
    assert every.count("tt.divisibility = 16") == 3 and "512" in every
    named = _ttir_of(capsys, ADD, "--signature", "x_ptr=*fp32:16,y_ptr=*fp32,out_ptr=*fp32,n=i32", "-D", "BLOCK=256")
    assert named.count("tt.divisibility = 16") == 1


def test_signature_hint_1_and_numbers_make_constants(capsys):
    header = _ttir_of(capsys, ADD, "--signature", "*fp32,*fp32,*fp32,i32:1", "-D", "BLOCK=256").split("tt.func", 1)[1]
    header = header.split("{", 1)[0]
    assert header.count("!tt.ptr<f32>") == 3 and " i32" not in header  # n = 1 is a constant, not an argument
    header = _ttir_of(capsys, ADD, "--signature", "*fp32,*fp32,*fp32,64", "-D", "BLOCK=256").split("tt.func", 1)[1]
    assert " i32" not in header.split("{", 1)[0]


@pytest.mark.parametrize("sig,says", [
    ("*fp32:8,*fp32,*fp32,i32", "the hint must be 16"),
    ("*fp32,*fp32,*fp32,i32,*fp32", "'BLOCK' is a constexpr"),
    ("*fp32,*fp32", "--signature has 2 entries; give one per argument (5: x_ptr, y_ptr, out_ptr, n, BLOCK)"),
    ("x_ptr=*fp32,nope=i32", "names no argument 'nope'"),
    ("x_ptr=*fp32", "--signature y_ptr, out_ptr, n: no type given"),
    ("*fp32,*fp32,*fp32,i32,128:16", "a constant takes no hint"),
])
def test_bad_signatures_are_clear(capsys, sig, says):
    assert main(["pipeline", ADD, "--signature", sig, "-D", "BLOCK=256"]) == 2
    assert says in capsys.readouterr().err


def test_define_and_signature_values_must_agree(capsys):
    assert main(["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32,512", "-D", "BLOCK=256"]) == 2
    assert "'BLOCK' is 256 by -D but 512 by --signature" in capsys.readouterr().err


def test_module_kernel_and_the_pipelined_hopper_gemm_with_alignment(capsys):
    """The project's own pipelined GEMM needs 16-byte alignment for cp.async: `*fp16:16` gives it."""
    sig = "*fp16:16,*fp16:16,*fp16:16,i32,i32,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"
    args = ["pipeline", "tritium.kernels.gemm_pipelined_hopper:matmul_kernel_pipelined_hopper", "--signature", sig,
            "-D", "BLOCK_SIZE_M=128", "-D", "BLOCK_SIZE_N=128", "-D", "BLOCK_SIZE_K=64", "-D", "GROUP_SIZE_M=8",
            "-D", "NUM_STAGES=3", "-O", "num_warps=8", "--show", "ptx"]
    assert main(args) == 0, capsys.readouterr().err
    ptx = capsys.readouterr().out.split("# output of stage ptx", 1)[1]
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx


def test_file_in_a_package_imports_with_its_relative_imports(tmp_path, capsys, monkeypatch):
    pkg = tmp_path / "mypkg" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("import triton\nimport triton.language as tl\n\n@triton.jit\n"
                                    "def twice(x):\n    return x * 2\n")
    (pkg / "kern.py").write_text(textwrap.dedent("""
        import triton
        import triton.language as tl
        from .helpers import twice

        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))
    """))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    assert main(["pipeline", f"{pkg / 'kern.py'}:k", "--signature", "*fp32"]) == 0, capsys.readouterr().err
    assert sys.modules["mypkg.sub.kern"].k is not None
    monkeypatch.chdir(tmp_path)
    assert main(["pipeline", "mypkg.sub.kern:k", "--signature", "*fp32:16", "--target", "hip:gfx942"]) == 0
    assert main(["pipeline", "mypkg.nope:k", "--signature", "*fp32"]) == 2
    assert "no file or module 'mypkg.nope'" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Bad input names the flag, the name or value at fault, and what is allowed
# --------------------------------------------------------------------------------------------
SIG = ["--signature", "*fp32,*fp32,*fp32,i32"]


def _refused(capsys, *args) -> str:
    assert main(["pipeline", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("tritium pipeline: "), (out, err)
    assert "--traceback" not in err, err
    return err


def test_kernel_must_be_a_jit_function(capsys):
    err = _refused(capsys, f"{HERE}/kernels.py:FakeDriver", "--signature", "i32")
    assert "kernels.py:FakeDriver: not a @triton.jit function (it is class FakeDriver)" in err


@pytest.mark.parametrize("defines,says", [
    (["BLOCK=256", "NOPE=3"], "-D NOPE: not an argument of kernel add_kernel; its arguments: x_ptr, y_ptr, out_ptr, n, "
                              "BLOCK"),
    (["BLOCK=abc"], "-D BLOCK=abc: not a constexpr value; write a number, True, False, None, a type (u1, "),
    (["BLOCK=256", "BLOCK=128"], "-D/--define gives 'BLOCK' twice (256 and 128)"),
])
def test_bad_defines_name_the_define(capsys, defines, says):
    err = _refused(capsys, ADD, *SIG, *[a for d in defines for a in ("-D", d)])
    assert says in err, err


def test_define_values_numbers_bools_types_and_quoted_strings(tmp_path, capsys):
    kern = tmp_path / "defined.py"
    kern.write_text(textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, DT: tl.constexpr, ACT: tl.constexpr, TWICE: tl.constexpr, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs).to(DT)
            if ACT == "relu":
                x = tl.maximum(x, 0)
            if TWICE:
                x = x * 2
            tl.store(x_ptr + offs, x)
    """))
    k = [f"{kern}:k", "--signature", "*fp32"]
    ttir = _ttir_of(capsys, *k, "-D", "DT=bf16", "-D", 'ACT="relu"', "-D", "TWICE=True")
    assert "bf16" in ttir and "maxnumf" in ttir and "mulf" in ttir
    ttir = _ttir_of(capsys, *k, "-D", "DT=tl.float16", "-D", "ACT=''", "-D", "TWICE=False")
    assert "f16" in ttir and "maxnumf" not in ttir and "mulf" not in ttir


@pytest.mark.parametrize("options,says", [
    (["num_warps=abc"], "-O num_warps=abc: expected an int"),
    (["enable_fp_fusion=yes"], "-O enable_fp_fusion=yes: expected True or False"),
    (["num_warps=3"], "-O num_warps=3: num_warps must be a power of 2"),
    (["bogus_option=1"], "-O bogus_option: not a compile option of the cuda backend; its options: num_warps, "),
    (["num_warps=4", "num_warps=8"], "-O/--option gives 'num_warps' twice"),
])
def test_bad_options_name_the_option(capsys, options, says):
    err = _refused(capsys, ADD, *SIG, "-D", "BLOCK=256", *[a for o in options for a in ("-O", o)])
    assert says in err, err


def test_options_are_the_backends(capsys):
    err = _refused(capsys, ADD, *SIG, "-D", "BLOCK=256", "--target", "gfx942", "-O", "num_ctas_x=1")
    assert "not a compile option of the hip backend" in err and "waves_per_eu" in err
    args = ["pipeline", ADD, *SIG, "-D", "BLOCK=256", "-O", "num_warps=8", "-O", "maxnreg=None", "-O",
            "enable_fp_fusion=False", "-O", "supported_fp8_dtypes=fp8e5,fp8e4nv", "--show", "ttgir"]
    assert main(args) == 0, capsys.readouterr().err
    assert '"ttg.num-warps" = 8' in capsys.readouterr().out


@pytest.mark.parametrize("sig,says", [
    ("*fp99,*fp32,*fp32,i32", "--signature x_ptr: '*fp99' is not a Triton type; use one of u1, "),
    ("x_ptr=*fp32,x_ptr=*fp16,y_ptr=*fp32,out_ptr=*fp32,n=i32", "--signature gives 'x_ptr' twice"),
])
def test_signature_types_and_names_are_checked(capsys, sig, says):
    err = _refused(capsys, ADD, "--signature", sig, "-D", "BLOCK=256")
    assert says in err, err


def test_unknown_diff_around_or_stage_is_refused_before_the_report(tmp_path, capsys, monkeypatch):
    err = _refused(capsys, ADD, *SIG, "-D", "BLOCK=256", "--diff-around", "no.such.pass")
    assert "--diff-around no.such.pass: pass 'no.such.pass' did not run in this compilation; passes that ran: " in err
    assert "ttgpuir.coalesce, " in err
    err = _refused(capsys, ADD, *SIG, "-D", "BLOCK=256", "--show", "nope")
    assert "--show nope: no stage output 'nope'; have source, ttir, ttgir" in err
    plugin = tmp_path / "p.py"  # a disabled pass did not run
    plugin.write_text("from tritium.plugins import Plugin, Pipeline\ntritium_plugin = Plugin('offp', '0.1', "
                      "pipelines={'nc': Pipeline('nc').disable('ttgir', 'ttgpuir.coalesce')})\n")
    monkeypatch.setenv("TRITIUM_PLUGIN_PATHS", str(plugin))
    err = _refused(capsys, ADD, *SIG, "-D", "BLOCK=256", "--pipeline", "offp:nc", "--diff-around", "ttgpuir.coalesce")
    assert "pass 'ttgpuir.coalesce' did not run" in err and "ttgpuir.coalesce," not in err.split("ran: ")[1]


@pytest.mark.parametrize("args,says", [
    (["-D", "BLOCK=1e400"], "-D BLOCK=1e400: not a finite number"),
    (["-D", "BLOCK=-inf"], "-D BLOCK=-inf: not a finite number"),
    (["-D", "BLOCK=1180591620717411303424"], "-D BLOCK=1180591620717411303424: out of the 64-bit integer range"),
    (["-D", 'BLOCK="256"'], "-D BLOCK=\"256\": a quoted number is a string constexpr; write BLOCK=256"),
    (["-D", "BLOCK=256", "-O", "num_warps=1180591620717411303424"],
     "-O num_warps=1180591620717411303424: out of range (a 32-bit int)"),
    (["-D", "BLOCK=256", "-O", "num_ctas=0"], "-O num_ctas=0: must be at least 1"),
    (["-D", "BLOCK=256", "-O", "num_warps=-4"], "-O num_warps=-4: must be at least 1"),
])
def test_out_of_range_values_name_the_argument(capsys, args, says):
    err = _refused(capsys, ADD, *SIG, *args)
    assert says in err, err


def _parsers(parser):
    """``parser`` and every subcommand's parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_help_is_plain_text():
    helps = {p.prog: p.format_help() for p in _parsers(build_parser())}
    assert "tritium bench trimul" in helps
    assert [prog for prog, text in helps.items() if "`" in text] == []


def test_version_and_python_m_tritium():
    proc = subprocess.run([sys.executable, "-m", "tritium", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == f"tritium {tritium.__version__} (triton {triton.__version__})\n"


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_bench_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", name, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"usage: tritium bench {name} [-h] [--out OUT]")


no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")


@no_gpu
@pytest.mark.parametrize("argv", [[n] for n in sorted(BENCHMARKS)] + [["overhead", "--only", "launch"]], ids=" ".join)
def test_bench_without_a_gpu_says_so_in_one_line(argv, capsys):
    assert main(["bench", *argv]) == 2
    captured = capsys.readouterr()
    hint = "; --only compile runs without one" if argv[0] == "overhead" else ""
    assert captured.out == ""
    assert captured.err == f"tritium bench: {argv[0]} needs a CUDA GPU, and torch sees none{hint}\n"


def test_bench_overhead_only_takes_its_choices(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "overhead", "--only", "quick"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "invalid choice: 'quick' (choose from 'compile', 'launch')" in err


def test_bench_policy_compares_the_example_plugins_pipelines():
    from tritium.bench import policy
    variants = policy.pipelines()
    assert variants.pop("stock (3 stages)") is None
    assert {name: p.origin() for name, p in variants.items()} == \
        {"no-swp": "policy:no-swp", "stages-2": "policy:stages-2", "stages-4": "policy:stages-4"}


TLX_KERNEL = '''
import triton
import triton.language as tl
import tritium.tlx as tlx

@triton.jit
def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    buf = tlx.local_alloc((BLOCK,), tl.float32, 1)
    view = tlx.local_view(buf, 0)
    tlx.local_store(view, tl.load(x_ptr + tl.arange(0, BLOCK)))
    tl.store(y_ptr + tl.arange(0, BLOCK), tlx.local_load(view))
'''


def test_pipeline_of_a_tlx_kernel_names_tlx_and_decodes_its_placeholders(tmp_path, capsys):
    (tmp_path / "tlx_copy.py").write_text(TLX_KERNEL)
    assert main(["pipeline", f"{tmp_path}/tlx_copy.py:copy", "--signature", "*fp32:16,*fp32:16", "-D", "BLOCK=128",
                 "--diff-around", "tlx.lower_placeholders", "--show", "ttir"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert header.startswith(f"# {tmp_path}/tlx_copy.py:copy on sm90, pipeline tlx:tlx-cuda-sm8x-sm9x (automatic)")
    assert "--- ttgir: before python:tlx.lower_placeholders" in out
    assert '-    %buf = tt.elementwise_inline_asm "tlx:local_alloc(id=1, type=' in out
    assert '"tlx:local_store(id=3, dst=2, ' in out.split("# output of stage ttir")[1]
    assert re.search(r'"tlx:[A-Za-z0-9_-]{20,}', out) is None  # no base64 payload left
