"""tlx.warp_pipeline_stage (tlx/warp_pipeline.py, tlx/warp_pipeliner.py): the fork's AMD warp pipelining,
compiled for gfx950 (no GPU). The interpreter's version is tested in test_interpreter_async_copy.py."""
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx
from tritium.plugins.errors import PassError
from tritium.plugins.inspection import make_source
from tritium.tlx.warp_pipeliner import _barriers, _Stage

from warp_pipeline_kernels import staged_gemm

GFX950 = GPUTarget("hip", "gfx950", 64)


def test_stages_stagger_the_warp_groups_and_set_their_priorities():
    src = make_source(staged_gemm, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K_ITERS": "i32"},
                      {"BM": 64, "BN": 64, "BK": 32}, aligned=("a_ptr", "b_ptr", "c_ptr"))
    k = triton.compile(src, target=GFX950, options={"num_warps": 8})
    ttgir, gcn = k.asm["ttgir"], k.asm["amdgcn"]
    assert "tlx.warp_pipeline" not in ttgir  # every border consumed
    head, loop = ttgir.split("scf.for")  # the prologue and drain loops are unrolled
    # before the loop: LDS drained, the upper warp group (threads 256..511: one wave per SIMD) held back one
    # barrier, and the first stage's priority; after it: the lower group held back, the priority reset
    assert re.search(r"gpu\.barrier .*\n.*rocdl\.workitem\.id\.x.*\n.*arith\.constant 0 .*\n"
                     r".*arith\.constant 256 .*\n.*arith\.divsi.*\n.*cmpi eq.*\n.*cmpi ne.*\n"
                     r".*amdg\.cond_barrier %\S+ .*\n.*rocdl\.s\.setprio 1 .*\n[^\n]*$", head)
    body, after = loop.split("scf.yield")
    # in the loop: the wait between the stages is the second stage's boundary, with its priority; the
    # wrap-around boundary before the yield drains LDS (the first stage reads what the second writes)
    wait = body.index("ttg.async_wait")
    assert body.rindex("rocdl.s.setprio 0", 0, wait) > body.rindex("ttg.local_load", 0, wait)
    assert re.search(r"rocdl\.s\.setprio 1 .*\n.*rocdl\.sched\.barrier (?:0|none) .*\n.*gpu\.barrier .*\n"
                     r".*rocdl\.sched\.barrier (?:0|none) [^\n]*\n\s*$", body)
    assert re.search(r"^\s*} .*\n.*rocdl\.s\.setprio 0 .*\n.*amdg\.cond_barrier", after, re.M)
    # the code: each cond_barrier is a branch around an s_barrier (LLVM may duplicate the one after the loop
    # for the path that skips it); the stages' priorities, 1 and 0
    assert len(re.findall(r"s_cbranch_execz (\S+)\n(?:[;.].*\n)?\s*s_barrier\n\1:", gcn)) >= 2
    assert set(re.findall(r"s_setprio (\d)", gcn)) == {"0", "1"}


def test_barriers_follow_shared_memory_conflicts_on_the_circular_schedule():
    def stage(reads=(), writes=()):
        return _Stage([], "s", None, set(reads), set(writes))

    # reads only: bare s_barriers
    assert _barriers([stage(reads="a"), stage(reads="a"), stage()]) == [False, False, False]
    # a stage writing a buffer conflicts with itself one iteration later: one barrier on the way round
    assert _barriers([stage(writes="a"), stage()]) == [False, True]
    # stage 2 writes what stage 0 reads: the wrap-around boundary serves 2 -> 0 of the next iteration, and
    # 0 -> 2 in one iteration needs one more, before stage 1 (the fork's choice: just before dst - 1)
    assert _barriers([stage(reads="a"), stage(), stage(writes="a")]) == [True, True, False]


@triton.jit
def _outside_loop(x_ptr):
    with tlx.warp_pipeline_stage("a", priority=1):
        tl.store(x_ptr, 1.0)
    with tlx.warp_pipeline_stage("b", priority=0):
        tl.store(x_ptr + 1, 2.0)


@triton.jit
def _in_an_if(x_ptr, n):
    for i in tl.range(0, n):
        if i > 2:
            with tlx.warp_pipeline_stage("a"):
                tl.store(x_ptr + i, 1.0)
        with tlx.warp_pipeline_stage("b"):
            tl.store(x_ptr + i + 1, 2.0)


@triton.jit
def _one_stage(x_ptr, n):
    for i in tl.range(0, n):
        with tlx.warp_pipeline_stage("a"):
            tl.store(x_ptr + i, 1.0)


@triton.jit
def _wait_inside(x_ptr, n):
    for i in tl.range(0, n):
        with tlx.warp_pipeline_stage("a"):
            tl.store(x_ptr + i, 1.0)
            tlx.async_load_wait_group(0)
        with tlx.warp_pipeline_stage("b"):
            tl.store(x_ptr + i + 1, 2.0)


@pytest.mark.parametrize("kernel, message", [
    (_outside_loop, r"must be directly in the body of a loop \(tl\.range\), not in tt\.func"),
    (_in_an_if, r"must be directly in the body of a loop \(tl\.range\), not in scf\.if"),
    (_one_stage, r"make fewer than two stages"),
    (_wait_inside, r"ttg\.async_wait \(a wait or barrier, e\.g\. tlx\.async_load_wait_group\) is inside a stage"),
], ids=["outside_loop", "in_an_if", "one_stage", "wait_inside"])
def test_misplaced_stages_name_the_op_and_the_line(kernel, message):
    src = make_source(kernel, {"x_ptr": "*fp32", "n": "i32"} if "n" in kernel.arg_names else {"x_ptr": "*fp32"})
    with pytest.raises(PassError) as info:
        triton.compile(src, target=GFX950, options={"num_warps": 8})
    text = str(info.value)
    assert f"tlx.warp_pipeline_stage at {__file__}:" in text and re.search(message, text), text


@triton.jit
def _nested(x_ptr, n):
    for i in tl.range(0, n):
        with tlx.warp_pipeline_stage("outer"):
            with tlx.warp_pipeline_stage("inner"):
                tl.store(x_ptr + i, 1.0)


@triton.jit
def _bad_priority(x_ptr, n):
    for i in tl.range(0, n):
        with tlx.warp_pipeline_stage("a", priority=4):
            tl.store(x_ptr + i, 1.0)


@pytest.mark.parametrize("kernel, target, message", [
    (_nested, GFX950, "tlx.warp_pipeline_stage('inner') is inside stage 'outer': stages cannot be nested"),
    (_bad_priority, GFX950, "tlx.warp_pipeline_stage: priority must be a compile-time int in 0..3 (s_setprio), got 4"),
    (_nested, GPUTarget("cuda", 90, 32), "tlx.warp_pipeline_stage is implemented for AMD CDNA (gfx942, gfx950)"),
], ids=["nested", "priority", "nvidia"])
def test_bad_stage_arguments_are_refused_at_the_kernel_line(kernel, target, message):
    with pytest.raises(CompilationError) as info:
        triton.compile(make_source(kernel, {"x_ptr": "*fp32", "n": "i32"}), target=target)
    assert message in str(info.value) and "tlx.warp_pipeline_stage(" in str(info.value)
