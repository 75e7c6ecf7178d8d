"""Failing passes name plugin, pass and stage, dump the IR, and leave Triton working."""
import os

import pytest

import tritium.plugins as tp
from tritium import compat
from tritium.plugins import PassError, Pipeline, PipelineError, mlir_pass, text_pass
from tritium.plugins.inspection import compile_kernel
from kernels import KERNELS

ADD = KERNELS["add"]


def compile_add(pipeline):
    fn, sig, const = ADD
    return compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=pipeline)


def check_recovered():
    assert compat.pass_builders_pristine() and compat.stages_hook_installed()
    assert compile_add(None).asm["cubin"]


@pytest.fixture
def dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_DUMP_DIR", str(tmp_path))
    return tmp_path


def in_plugin(pipeline):
    tp.register(tp.Plugin("faulty", "0.1", pipelines={"p": pipeline}))
    return pipeline


def test_raising_pass_names_plugin_pass_stage_and_dumps_ir(dump_dir):
    @mlir_pass(name="explode")
    def explode(mod, ctx):
        raise ValueError("kaboom")

    with pytest.raises(PassError) as e:
        compile_add(in_plugin(Pipeline("p").insert("ttgir", explode, after="ttgpuir.coalesce")))
    msg = str(e.value)
    assert "pass 'explode' of plugin 'faulty' in stage 'ttgir'" in msg and "ValueError: kaboom" in msg
    assert os.path.dirname(e.value.dump) == str(dump_dir) and "tt.func" in open(e.value.dump).read()
    check_recovered()


def test_invalid_ir_is_caught_after_the_pass(dump_dir):
    @mlir_pass(name="break_verifier")
    def break_verifier(mod, ctx):
        # an int attribute where Triton's verifier requires a positive warp count
        from triton._C.libtriton import ir
        mod.set_attr("ttg.num-warps", ir.builder(mod.context).get_int32_attr(-3))

    with pytest.raises(PassError, match="pass 'break_verifier' in stage 'ttgir': produced IR that fails verification"):
        compile_add(Pipeline("v").insert("ttgir", break_verifier, after="ttgpuir.coalesce"))
    check_recovered()


def test_text_pass_returning_garbage(dump_dir):
    @text_pass("ptx", name="nothing")
    def nothing(text, ctx):
        return None

    with pytest.raises(PassError, match="pass 'nothing' in stage 'ptx': returned NoneType, expected the new ptx text"):
        compile_add(Pipeline("t").insert("ptx", nothing, at="end"))
    check_recovered()


def test_override_stage_that_raises_leaves_triton_working():
    def broken(src, metadata, ctx):
        raise RuntimeError("stage broke")

    with pytest.raises(PipelineError, match="pipeline 'o': the override of stage 'ttgir' raised RuntimeError: stage broke"):
        compile_add(Pipeline("o").override_stage("ttgir", broken))
    check_recovered()
