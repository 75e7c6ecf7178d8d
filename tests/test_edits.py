"""Each kind of pipeline edit visibly changes the compiled output."""
import re

import pytest
from triton._C.libtriton import ir

from tritium import compat
from tritium.plugins import Pipeline, PipelineError, StockPass, mlir_pass, text_pass
from tritium.plugins.inspection import compile_kernel, pipeline_report
from kernels import KERNELS

ADD = KERNELS["add"]
MATMUL = KERNELS["matmul"]


def compile_with(pipeline, kernel=ADD, target="sm90"):
    fn, sig, const = kernel
    return compile_kernel(fn, sig, target, constexprs=const, pipeline=pipeline)


@mlir_pass
def mark_module(mod, ctx):
    mod.set_attr("tritium.seen_in", ir.builder(mod.context).get_string_attr(ctx.stage))


@pytest.mark.parametrize("target", ["sm90", "gfx950"])
def test_inserted_mlir_pass_sets_an_attribute_seen_in_ttgir(target):
    k = compile_with(Pipeline("mark").insert("ttgir", mark_module, after="ttgpuir.coalesce"), target=target)
    assert 'tritium.seen_in = "ttgir"' in k.asm["ttgir"]
    assert "tritium.seen_in" not in compile_with(None, target=target).asm["ttgir"]


def test_disabling_coalesce_changes_ttgir():
    stock = compile_with(None, MATMUL).asm["ttgir"]
    k, report = pipeline_report(*MATMUL[:2], "sm90", constexprs=MATMUL[2],
                                pipeline=Pipeline("nocoalesce").disable("ttgir", "ttgpuir.coalesce"))
    assert k.asm["ttgir"] != stock
    assert [p.status for p in report.stage("ttgir").passes if p.name == "ttgpuir.coalesce"] == ["disabled"]


def test_disabling_coalesce_on_amd_changes_the_ttgir_that_follows_it():
    # AMD's later passes re-derive the final layouts for this kernel, so compare the IR right
    # after the slot where coalescing runs.
    fn, sig, const = MATMUL
    after = "ttgpuir.f32_dot_tc"
    _, stock = pipeline_report(fn, sig, "gfx950", constexprs=const, pipeline=Pipeline("noop"), diff_around=(after,))
    _, edited = pipeline_report(fn, sig, "gfx950", constexprs=const, diff_around=(after,),
                                pipeline=Pipeline("nocoalesce").disable("ttgir", "ttgpuir.coalesce"))
    key = f"after {after}@1"
    assert edited.stage("ttgir").snapshots[key] != stock.stage("ttgir").snapshots[key]


def test_stock_pass_inserted_by_name_with_arguments():
    p = (Pipeline("extra").insert("ttgir", StockPass("ttgpuir.pipeline", 3, False), after="ttir.convert_to_ttgpuir")
         .insert("ttir", StockPass("common.cse"), at="start"))
    _, report = pipeline_report(*ADD[:2], "sm90", constexprs=ADD[2], pipeline=p)
    ttgir = [(x.name, x.status) for x in report.stage("ttgir").passes[:3]]
    assert ttgir == [("ttir.convert_to_ttgpuir", "stock"), ("ttgpuir.pipeline", "inserted"), ("ttgpuir.coalesce", "stock")]
    assert (report.stage("ttir").passes[0].name, report.stage("ttir").passes[0].status) == ("common.cse", "inserted")


def test_replace_a_pass_with_a_python_pass():
    calls = []

    @mlir_pass(name="count_ops")
    def count_ops(mod, ctx):
        ops = []
        mod.walk(lambda op: ops.append(op.get_name()))
        calls.append(ops)

    p = Pipeline("rep").replace("ttgir", "ttgpuir.pipeline", count_ops)
    k = compile_with(p, MATMUL)
    assert calls and "ttng.warp_group_dot" in calls[0]
    stock = compile_with(None, MATMUL).asm["ttgir"]
    # the software pipeliner is what makes the wgmma asynchronous
    assert "isAsync = true" in stock and "isAsync" not in k.asm["ttgir"]
    assert "wgmma" in k.asm["ptx"]


def test_round_trip_pass_flows_into_the_rest_of_the_stage_and_downstream():
    @mlir_pass(name="add_to_mul")
    def add_to_mul(mod, ctx):
        return compat.parse_module(mod.str().replace("arith.addf", "arith.mulf"), mod.context)

    k = compile_with(Pipeline("rt").insert("ttgir", add_to_mul, after="ttgpuir.coalesce"))
    assert "arith.mulf" in k.asm["ttgir"]
    assert re.search(r"mul\.f32", k.asm["ptx"]) and not re.search(r"add\.f32", k.asm["ptx"])


def test_round_trip_in_the_llir_stage_reaches_llvm_ir():
    @mlir_pass(name="mark_llvm")
    def rename(mod, ctx):
        return compat.parse_module(mod.str().replace("arith.addf", "arith.mulf"), mod.context)

    k = compile_with(Pipeline("rt2").insert("llir", rename, at="start"))
    assert "fmul" in k.asm["llir"] and "fadd" not in k.asm["llir"]


def test_ptx_text_pass_edit_shows_in_the_kernel_ptx():
    @text_pass("ptx")
    def tag(text, ctx):
        return text.replace(".address_size 64", ".address_size 64\n// tagged-by-tritium")

    k = compile_with(Pipeline("tag").insert("ptx", tag, at="end"))
    assert "// tagged-by-tritium" in k.asm["ptx"]


def test_amdgcn_text_pass():
    @text_pass("amdgcn")
    def tag(text, ctx):
        return text + "\n; tagged-by-tritium\n"

    k = compile_with(Pipeline("tag").insert("amdgcn", tag, at="end"), target="gfx950")
    assert k.asm["amdgcn"].rstrip().endswith("; tagged-by-tritium")


def test_llvm_ir_text_pass_feeds_ptx():
    @text_pass("llir")
    def fadd_to_fmul(text, ctx):
        return text.replace("fadd float", "fmul float")

    k = compile_with(Pipeline("llvm").insert("llir", fadd_to_fmul, at="end"))
    assert "mul.f32" in k.asm["ptx"] and "add.f32" not in k.asm["ptx"]


def test_override_stage_output_is_used_downstream():
    def ptx_stage(src, metadata, ctx):
        out = ctx.backend.make_ptx(src, metadata, ctx.options, ctx.backend.target.arch)
        return out.replace(".address_size 64", ".address_size 64\n// overridden")

    k = compile_with(Pipeline("ov").override_stage("ptx", ptx_stage))
    assert "// overridden" in k.asm["ptx"] and k.asm["cubin"]


def test_add_stage_and_override_pipeline():
    seen = []

    def audit(src, metadata, ctx):
        seen.append(len(src))
        return src

    def drop_nothing(stages, ctx):
        seen.append(list(stages))

    p = Pipeline("stages").add_stage("audit", audit, after="ptx").override_pipeline(drop_nothing)
    k = compile_with(p)
    assert seen[0] == ["ttir", "ttgir", "llir", "ptx", "audit", "cubin"]
    assert seen[1] == len(k.asm["ptx"])


def test_unknown_pass_name_lists_valid_names():
    with pytest.raises(PipelineError) as e:
        compile_with(Pipeline("bad").disable("ttgir", "ttgpuir.coalesse"))
    assert "ttgpuir.coalesse" in str(e.value) and "ttgpuir.coalesce" in str(e.value)
    assert compat.pass_builders_pristine()
    compile_with(None)


def test_ambiguous_repeated_pass_name_is_an_error():
    with pytest.raises(PipelineError, match=r"ttgpuir.remove_layout_conversions@1"):
        compile_with(Pipeline("amb").disable("ttgir", "ttgpuir.remove_layout_conversions"), MATMUL)
    k = compile_with(Pipeline("ok").disable("ttgir", "ttgpuir.remove_layout_conversions@3"), MATMUL)
    assert k.asm["cubin"]


def test_edit_checks_at_definition_time():
    with pytest.raises(PipelineError, match="unknown stage 'ttgr'"):
        Pipeline("x").disable("ttgr", "ttgpuir.coalesce")
    with pytest.raises(PipelineError, match="no pass named 'ttgpuir.nope'"):
        StockPass("ttgpuir.nope")
    with pytest.raises(PipelineError, match="works on ptx"):
        Pipeline("x").insert("llir", text_pass("ptx")(lambda t, c: t), at="end")
    with pytest.raises(PipelineError, match="cannot go between MLIR passes"):
        Pipeline("x").insert("ttgir", text_pass("ptx")(lambda t, c: t), after="ttgpuir.coalesce")
    with pytest.raises(PipelineError, match="runs no named passes"):
        Pipeline("x").disable("ptx", "anything")
