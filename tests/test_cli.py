"""The `tritium` command line."""
import os
import subprocess
import sys
import textwrap

import pytest

from tritium.cli import main

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
    (["pipeline", ADD, "--signature", "*fp32,*fp32,*fp32,i32", "-D", "BLOCK=100"], "power of 2"),
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
