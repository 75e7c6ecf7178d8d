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


def test_a_dump_folder_that_cannot_be_written_does_not_hide_the_pass_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TRITIUM_DUMP_DIR", str(tmp_path / "file" / "dumps"))

    @mlir_pass(name="explode")
    def explode(mod, ctx):
        raise ValueError("kaboom")

    with pytest.raises(PassError, match=r"pass 'explode' in stage 'ttgir': raised ValueError: kaboom \(the IR "
                                        r"could not be dumped: (NotADirectoryError|FileExistsError): .*TRITIUM_DUMP_DIR"):
        compile_add(Pipeline("p").insert("ttgir", explode, at="end"))
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


def test_foreign_stages_hook_is_detected_not_cached_under_our_key(monkeypatch, tmp_path, no_auto_pipelines):
    """3.6 would cache the unpipelined binary under the pipeline's key; 3.7+ would skip the pipeline silently."""
    import triton

    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    monkeypatch.setattr(compat._installed, "previous", compat._installed.previous)  # restored after the test
    calls = []

    def foreign(*args):
        if not args:  # 3.7+ asks the hook for its (key, hash)
            return "", ""
        calls.append(args[0].target)

    @mlir_pass
    def noop(mod, ctx):
        pass
    marked = Pipeline("marked").insert("ttgir", noop, at="end")
    triton.knobs.runtime.add_stages_inspection_hook = foreign
    try:
        with pytest.raises(PipelineError, match="was replaced by .*foreign.*nothing was compiled"):
            compile_add(marked)
        assert compile_add(None).asm["cubin"] and calls  # without a pipeline, keys are bare Triton's
        tp.enable()  # chains the foreign hook into ours
        calls.clear()
        report = tp.CompileReport()
        fn, sig, const = ADD
        compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=marked, report=report)
        assert calls and "python:noop" in [p.name for p in report.stage("ttgir").passes]
    finally:
        if triton.knobs.runtime.add_stages_inspection_hook is foreign:
            tp.enable()
    check_recovered()


def test_llvm_ir_that_does_not_parse_is_a_pass_error_not_an_abort(dump_dir):
    @text_pass("llir", name="mangle")
    def mangle(text, ctx):
        return text.replace("define", "defin", 1)

    with pytest.raises(PassError, match="pass 'mangle' in stage 'llir': returned LLVM IR that does not parse"):
        compile_add(Pipeline("t").insert("llir", mangle, at="end"))
    check_recovered()


@pytest.mark.parametrize("helper, why", [("import time; time.sleep(60)", "did not answer within 1 s"),
                                         ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                                          "process was killed")])
def test_a_hung_or_killed_llvm_ir_checker_is_a_pass_error(dump_dir, monkeypatch, helper, why):
    from tritium import compat, knobs

    @text_pass("llir", name="edit")
    def edit(text, ctx):
        return text + "\n"

    compat._llvm_checker.stop()
    monkeypatch.setattr(compat, "_LLVM_CHECKER", helper)
    try:
        with knobs.runtime.scope(), pytest.raises(PassError, match=f"pass 'edit' in stage 'llir': returned LLVM IR that could not be "
                                            f"checked: the LLVM IR check.*{why}"):
            knobs.runtime.llvm_check_timeout = 1
            compile_add(Pipeline("t").insert("llir", edit, at="end"))
    finally:
        compat._llvm_checker.stop()
    monkeypatch.undo()
    check_recovered()


def test_module_from_another_context_is_refused(dump_dir):
    from triton._C.libtriton import ir

    @mlir_pass(name="elsewhere")
    def elsewhere(mod, ctx):
        other = ir.context()
        ir.load_dialects(other)
        return tp.parse_module(mod.str(), other)

    with pytest.raises(PassError, match="pass 'elsewhere' in stage 'ttgir': returned a module that is not in the "
                                        "compilation's MLIR context"):
        compile_add(Pipeline("t").insert("ttgir", elsewhere, at="end"))
    check_recovered()


@pytest.mark.parametrize("target,kind", [("sm90", "ptx"), ("gfx950", "amdgcn")])
def test_assembly_the_next_stage_rejects_names_the_pass(dump_dir, target, kind):
    @text_pass(kind, name="scribble")
    def scribble(text, ctx):
        return text + "\nthis is not an instruction\n"

    fn, sig, const = ADD
    with pytest.raises(PassError, match=f"pass 'scribble' in stage '{kind}': stage '(cubin|hsaco)' rejected the "
                                        f"{kind} this pass returned"):
        compile_kernel(fn, sig, target, constexprs=const, pipeline=Pipeline("t").insert(kind, scribble, at="end"))
    check_recovered()


def test_raising_when_predicate_names_the_pipeline():
    def picky(src, metadata):
        return metadata["no such key"]

    with pytest.raises(PipelineError, match="pipeline 'picky': its when= predicate raised KeyError"):
        compile_add(Pipeline("picky", when=picky).disable("ttgir", "ttgpuir.coalesce"))
    check_recovered()


def test_stock_pass_arguments_are_checked_where_the_pass_is_named():
    with pytest.raises(PipelineError, match="StockPass 'ttir.convert_to_ttgpuir': Triton's builder rejects the "
                                            r"arguments \('x',\)"):
        tp.StockPass("ttir.convert_to_ttgpuir", "x")


def test_override_stage_must_return_the_stage_output():
    p = Pipeline("lazy").override_stage("ttgir", lambda src, metadata, ctx: None)
    with pytest.raises(PipelineError, match="the override of stage 'ttgir' returned NoneType; it must return the "
                                            r"stage's output \(an MLIR module\)"):
        compile_add(p)
    check_recovered()


@pytest.mark.parametrize("stage,at", [("ttir", "start"), ("ttgir", "end")])
def test_a_module_without_the_kernel_is_a_pass_error_not_an_abort(dump_dir, stage, at):
    @mlir_pass(name="empty_module")
    def empty_module(mod, ctx):
        return tp.parse_module("module {\n}\n", mod.context)

    with pytest.raises(PassError, match=f"pass 'empty_module' in stage '{stage}': returned a module without the "
                                        "kernel function @add_kernel"):
        compile_add(Pipeline("e").insert(stage, empty_module, at=at))
    check_recovered()


@pytest.mark.parametrize("edit,stage,change", [
    (lambda p: p.disable("ttgir", "ttir.convert_to_ttgpuir"), "ttgir", "disabled ttir.convert_to_ttgpuir"),
    (lambda p: p.insert("ttir", tp.StockPass("ttgpuir.coalesce"), at="start"), "ttir", "inserted ttgpuir.coalesce"),
    (lambda p: p.disable("llir", "nvidia.ttgpuir.to_llvmir"), "llir", "disabled nvidia.ttgpuir.to_llvmir"),
])
def test_a_stage_failing_under_stock_pass_edits_names_the_pipeline_and_its_edits(edit, stage, change):
    with pytest.raises(tp.StageError, match=f"stage '{stage}' failed under the edits of pipeline 'broken' "
                                            f"\\({change}\\): RuntimeError: ") as info:
        compile_add(edit(Pipeline("broken")))
    assert isinstance(info.value.error, RuntimeError) and info.value.__cause__ is info.value.error
    check_recovered()


def test_text_from_a_start_pass_or_a_stage_function_the_stage_rejects_names_its_author(dump_dir):
    @text_pass("ptx", name="blank_ptx")
    def blank_ptx(text, ctx):
        return ""

    with pytest.raises(PassError, match="pass 'blank_ptx' in stage 'cubin': stage 'cubin' rejected the ptx this "
                                        "pass returned: PTXASError"):
        compile_add(Pipeline("s").insert("cubin", blank_ptx, at="start"))
    with pytest.raises(tp.StageError, match="pipeline 'o': stage 'cubin' rejected the output of the stage function "
                                            "it gave stage 'ptx': PTXASError"):
        compile_add(Pipeline("o").override_stage("ptx", lambda src, metadata, ctx: "garbage"))
    check_recovered()


def test_added_stages_and_pipeline_overrides_are_checked():
    with pytest.raises(PipelineError, match="pipeline 'a': the added stage 'audit' returned int; it must return "
                                            r"the stage's output \(an MLIR module\)"):
        compile_add(Pipeline("a").add_stage("audit", lambda src, metadata, ctx: 42, after="ttgir"))

    def garbage(stages, ctx):
        stages["cubin"] = 42
    with pytest.raises(PipelineError, match="pipeline 'g': override_pipeline left 'cubin' -> int in the stages"):
        compile_add(Pipeline("g").override_pipeline(garbage))
    with pytest.raises(PipelineError, match="pipeline 'c': override_pipeline removed stage.*'ttir'"):
        compile_add(Pipeline("c").override_pipeline(lambda stages, ctx: stages.clear()))
    check_recovered()


def test_a_tritium_error_raised_in_a_stage_keeps_its_own_message():
    def diagnose(src, metadata, ctx):
        raise tp.TritiumError("my plugin's own diagnosis")

    with pytest.raises(tp.TritiumError, match="^my plugin's own diagnosis$"):
        compile_add(Pipeline("d").override_stage("ttgir", diagnose))
    check_recovered()


@pytest.mark.parametrize("call,says", [
    (lambda fn, sig, const: compile_kernel(fn.fn, sig, "sm90", constexprs=const),
     "kernel add_kernel: not a @triton.jit function (it is a function object)"),
    (lambda fn, sig, const: compile_kernel(fn, {**sig, "x_ptr": "*fp99"}, "sm90", constexprs=const),
     "signature x_ptr: '*fp99' is not a Triton type; use one of u1, "),
    (lambda fn, sig, const: compile_kernel(fn, {k: v for k, v in sig.items() if k != "n"}, "sm90", constexprs=const),
     "signature n: no type given (kernel add_kernel's arguments: x_ptr, y_ptr, out_ptr, n, BLOCK)"),
    (lambda fn, sig, const: compile_kernel(fn, sig, "sm90", constexprs={**const, "NOPE": 1}),
     "constexpr NOPE: not an argument of kernel add_kernel; its arguments: x_ptr, "),
    (lambda fn, sig, const: compile_kernel(fn, sig, "sm90"),
     "constexpr BLOCK: kernel add_kernel gives it no default"),
    (lambda fn, sig, const: compile_kernel(fn, sig, "sm90", constexprs=const, options={"num_warps": 3}),
     "option num_warps=3: num_warps must be a power of 2"),
    (lambda fn, sig, const: compile_kernel(fn, sig, "gfx950", constexprs=const, options={"maxnreg": 3}),
     "option maxnreg: not a compile option of the hip backend; its options: "),
])
def test_compile_kernel_checks_its_arguments_as_the_cli_does(call, says):
    with pytest.raises(tp.ArgumentError) as info:
        call(*ADD)
    assert str(info.value).startswith(says), str(info.value)
    check_recovered()


def test_a_kernel_that_does_not_compile_says_where_in_a_short_paragraph():
    fn, sig, _ = ADD
    with pytest.raises(tp.KernelCompileError) as info:
        compile_kernel(fn, sig, "sm90", constexprs={"BLOCK": 100})
    assert str(info.value) == ("kernel 'add_kernel' does not compile at 2:38: arange's range must be a power of 2\n"
                               "        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                               "                                          ^")
    from triton.compiler.errors import CompilationError
    assert isinstance(info.value, CompilationError) and isinstance(info.value.__cause__, CompilationError)
