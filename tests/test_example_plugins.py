"""The example plugins (src/tritium/examples, found through entry points) and the effects they claim (compile-only)."""
import json
import re
import sys
from pathlib import Path

import pytest
import triton

import tritium.plugins as tp
from tritium.cli import main
from tritium.plugins.inspection import compile_kernel, make_source, parse_target
from kernels import KERNELS, MATMUL_CONST

MATMUL = KERNELS["matmul"]
BM, BN, BK = MATMUL_CONST["BM"], MATMUL_CONST["BN"], MATMUL_CONST["BK"]
TILE_BYTES = (BM * BK + BK * BN) * 2  # one fp16 A tile and one B tile per loop iteration
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")  # what the JIT proves for a torch matmul


def compile_matmul(target, pipeline, **options):
    """The tests/kernels.py matmul, specialized like the JIT would for 16-byte aligned tensors and strides
    (without that, sm_90 cannot use cp.async and Triton does not software-pipeline the loop)."""
    fn, sig, const = MATMUL
    src = make_source(fn, sig, const, aligned=ALIGNED)
    with tp.use_pipeline(pipeline):
        return triton.compile(src, target=parse_target(target), options=options)


# ------------------------------------------------------------------------------------------------
# analysis.py
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def analysis():
    return tp.get_plugin("analysis")  # through tritium's entry point


def test_analysis_report_on_sm90(analysis):
    kernel = compile_matmul("sm90", "analysis:report")
    report = json.loads(kernel.asm["analysis"])
    assert report == kernel.metadata.tritium_analysis
    assert report["kernel"] == "matmul_kernel"
    assert report["registers"]["reg"] > 0  # ptxas' count, read back with cuobjdump
    assert report["shared_bytes"] == kernel.metadata.shared == 3 * TILE_BYTES  # num_stages=3 buffers of A and B
    mix = report["instructions"]
    assert mix["wgmma"] > 0 and mix["mma.sync"] == 0  # Hopper's matrix instruction, not Ampere's
    assert mix["cp.async"] > 0 and mix["wgmma"] == len(re.findall(r"wgmma\.mma_async", kernel.asm["ptx"]))
    flops, loaded = 2 * BM * BN * BK, TILE_BYTES
    assert report["intensity"] == {"dot_flops": flops, "global_bytes_loaded": loaded, "flops_per_byte": 64.0}
    assert flops / loaded == 64.0


def test_analysis_counts_each_op_once_whatever_the_pipelining(analysis):
    deep = compile_matmul("sm90", "analysis:report", num_stages=4)
    assert deep.metadata.tritium_analysis["intensity"]["global_bytes_loaded"] == TILE_BYTES
    assert deep.metadata.shared == 4 * TILE_BYTES


def test_analysis_report_on_gfx950(analysis):
    kernel = compile_matmul("gfx950", "analysis:report")
    report = json.loads(kernel.asm["analysis"])
    assert report["registers"]["vgpr_count"] > 0 and report["registers"]["sgpr_count"] > 0
    assert report["instructions"]["mfma"] > 0 and report["instructions"]["wmma"] == 0
    assert report["shared_bytes"] == kernel.metadata.shared >= TILE_BYTES
    assert report["intensity"]["flops_per_byte"] == 2 * BM * BN * BK / TILE_BYTES


def test_analysis_is_printed_by_the_cli(capsys):
    signature = ",".join(f"{k}={v}" for k, v in MATMUL[1].items())
    assert main(["pipeline", f"{Path(__file__).parent}/kernels.py:matmul_kernel", "--target", "sm90",
                 "--signature", signature, *[f"-D{k}={v}" for k, v in MATMUL_CONST.items()],
                 "--pipeline", "analysis:report", "--show", "analysis"]) == 0
    out = capsys.readouterr().out
    assert "+ python:estimate_intensity" in out
    report = json.loads(out.split("# output of stage analysis\n", 1)[1])
    assert report["registers"]["reg"] > 0 and report["intensity"]["flops_per_byte"] == 64.0


# ------------------------------------------------------------------------------------------------
# pipeline_policy.py
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def policy():
    return tp.get_plugin("policy")


def buffers(kernel):
    """Depths of the multi-buffered A/B tiles in shared memory (memdesc<Nx128x64xf16> etc.)."""
    return set(re.findall(r"memdesc<(\d+)x(?:128x64|64x128)xf16", kernel.asm["ttgir"]))


def async_copies(kernel):
    return kernel.asm["ttgir"].count("ttg.async_copy_global_to_local")


def test_policy_sets_the_pipelining_depth_on_sm90(policy):
    stock, two, four = (compile_matmul("sm90", p) for p in (None, "policy:stages-2", "policy:stages-4"))
    assert buffers(stock) == {"3"} and buffers(two) == {"2"} and buffers(four) == {"4"}
    assert (two.metadata.shared, four.metadata.shared) == (2 * TILE_BYTES, 4 * TILE_BYTES)
    assert async_copies(two) < async_copies(stock) < async_copies(four)


def test_policy_no_swp_removes_the_async_copies_on_sm90(policy):
    stock, off = compile_matmul("sm90", None), compile_matmul("sm90", "policy:no-swp")
    assert async_copies(stock) > 0 and "cp.async.cg" in stock.asm["ptx"]
    assert async_copies(off) == 0 and "cp.async" not in off.asm["ptx"] and buffers(off) == set()
    assert off.metadata.shared == TILE_BYTES
    assert "wgmma.mma_async" in off.asm["ptx"]  # still a Hopper matmul, just not pipelined


def test_policy_on_gfx950(policy):
    two, three, off = (compile_matmul("gfx950", p) for p in ("policy:hip-stages-2", "policy:hip-stages-3",
                                                              "policy:hip-no-swp"))
    (depth,) = buffers(two)
    assert buffers(three) == {str(int(depth) + 1)} and three.metadata.shared > two.metadata.shared
    assert buffers(off) == set() and async_copies(off) == 0 and off.metadata.shared < two.metadata.shared


def test_policy_for_one_backend_leaves_the_other_alone(policy):
    stock = compile_matmul("gfx950", None)
    nvidia_policy = compile_matmul("gfx950", "policy:no-swp")
    assert nvidia_policy.asm["amdgcn"] == stock.asm["amdgcn"]
    amd_policy = compile_matmul("sm90", "policy:hip-no-swp")
    assert amd_policy.asm["ptx"] == compile_matmul("sm90", None).asm["ptx"]


# ------------------------------------------------------------------------------------------------
# instrumentation.py (the readout needs a GPU: tests/gpu/test_instrumentation_gpu.py)
# ------------------------------------------------------------------------------------------------
def module_of(plugin):
    """The module a plugin loaded by path came from, for the helpers it defines besides the plugin."""
    return sys.modules[plugin.all_pipelines()[0].python_passes()[0].fn.__module__]


@pytest.fixture
def instrumentation():
    return module_of(tp.get_plugin("instrumentation"))


@pytest.mark.parametrize("kernel", ["add", "matmul"])
def test_instrumentation_probes_and_globals_are_in_the_ptx(instrumentation, kernel):
    fn, sig, const = KERNELS[kernel]
    probed = compile_kernel(fn, sig, "sm90", constexprs=const, pipeline="instrumentation:timing")
    ptx = probed.asm["ptx"]
    for name in ("tritium_region_ns", "tritium_region_count"):
        assert f".visible .global .align 8 .u64 {name};" in ptx
        assert re.search(rf"atom\.[a-z.]*global\.add\.u64\s+%rd\d+, \[{name}\]", ptx)
    assert len(re.findall(r"mov\.u64\s+%rd\d+, %globaltimer;", ptx)) == 2  # entry, return
    assert re.search(r"mov\.u32\s+%r\d+, %tid\.x;", ptx)
    assert probed.asm["cubin"]  # and ptxas took it
    bare = compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=None)
    assert "%globaltimer" not in bare.asm["ptx"] and "tritium_region" not in bare.asm["ptx"]
    assert "%globaltimer" not in probed.asm["llir"]  # the probes are added by the ptx stage's pass, not earlier


def test_instrumentation_times_every_return(instrumentation):
    llir = ("define ptx_kernel void @k(i32 %0) {\n  %c = icmp eq i32 %0, 0\n  br i1 %c, label %a, label %b\n"
            "a:\n  ret void\nb:\n  ret void, !dbg !3\n}\n")
    probed = instrumentation.insert_probes(llir)
    assert probed.count("%globaltimer") == 3 and probed.count("atomicrmw add") == 4
    assert "tritium.done.1:\n  ret void, !dbg !3" in probed
    with pytest.raises(ValueError, match="no ptx_kernel"):
        instrumentation.insert_probes("define void @helper() {\n  ret void\n}\n")


def test_instrumentation_leaves_amd_alone(instrumentation):
    fn, sig, const = KERNELS["add"]
    probed = compile_kernel(fn, sig, "gfx950", constexprs=const, pipeline="instrumentation:timing")
    assert probed.asm["amdgcn"] == compile_kernel(fn, sig, "gfx950", constexprs=const, pipeline=None).asm["amdgcn"]
