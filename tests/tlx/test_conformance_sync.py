"""The fork's synchronization, warp and cluster ops compiled for sm_90 and gfx942/gfx950: named barriers,
warp barriers, vote ballot, warp reduction, fp8 format names and the cluster ops (kernels in sync_kernels.py;
test_interpreter_sync.py runs them under the interpreter)."""
from __future__ import annotations

import inspect
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

from interp_shim import interpret_mode
from sync_kernels import (ballot, ballot_tensor, cluster_amd, cluster_barrier_outside_tasks, cluster_barrier_tasks,
                          cluster_misuse, cluster_ops, fp8_name, named_misuse, named_pingpong, named_runtime, redux,
                          warp_barrier_square)
import tritium.tlx as tlx
from tritium import compat
from tritium.plugins.errors import PassError

SM90 = GPUTarget("cuda", 90, 32)
AMD = [GPUTarget("hip", "gfx942", 64), GPUTarget("hip", "gfx950", 64)]

compiled = pytest.mark.skipif(interpret_mode(), reason="compile path: not under TRITON_INTERPRET=1")


def compile_kernel(fn, signature: dict, constants: dict, target: GPUTarget = SM90, **options):
    sig = {**signature, **{k: "constexpr" for k in constants}}
    return triton.compile(ASTSource(fn, sig, constants), target=target, options={"num_warps": 4, **options})


def compile_error(fn, signature: dict, constants: dict, line: str, target: GPUTarget = SM90, **options) -> str:
    """The message of the compile error, checked to point at the first line of ``fn`` containing ``line``."""
    with pytest.raises((CompilationError, PassError)) as info:
        compile_kernel(fn, signature, constants, target, **options)
    msg = str(info.value)
    lines, start = inspect.getsourcelines(fn.fn)
    index = next(i for i, text in enumerate(lines) if line in text)
    if isinstance(info.value, CompilationError):  # the frontend: "at <line in the function>:<column>"
        first = next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))
        assert msg.startswith(f"at {index - first + 1}:") and lines[index].strip() in msg, msg
    else:  # the lowering: file:line
        assert f"{inspect.getsourcefile(fn.fn)}:{start + index}" in msg, msg
    return msg


# ------------------------------------------------------------------------------------------------
# Named barriers
# ------------------------------------------------------------------------------------------------


@compiled
def test_named_barriers_compile_to_bar_sync_and_bar_arrive():
    k = compile_kernel(named_pingpong, {"out_ptr": "*i64"}, {"ROUNDS": 4, "COUNT": 256})
    ptx = k.asm["ptx"]
    assert "tt.elementwise_inline_asm \"tlx:" not in k.asm["ttgir"]
    # One of each per round (LLVM may unroll the 4 rounds).
    counts = {op: ptx.count(op) for op in ("bar.arrive 9, 256;", "bar.sync 10, 256;", "bar.sync 9, 256;",
                                          "bar.arrive 10, 256;")}
    assert len(set(counts.values())) == 1 and counts["bar.sync 9, 256;"] in (1, 4), counts
    # The default task's side comes before the partition's (which stock Triton places after the switch).
    assert ptx.index("bar.arrive 9, 256;") < ptx.index("bar.sync 9, 256;")


@compiled
def test_named_barrier_ids_and_counts_may_be_run_time_values():
    ptx = compile_kernel(named_runtime, {"out_ptr": "*i32", "bar": "i32", "count": "i32"}, {}).asm["ptx"]
    assert re.search(r"bar\.sync %r\d+, %r\d+;", ptx) and re.search(r"bar\.arrive %r\d+, %r\d+;", ptx)


@compiled
@pytest.mark.parametrize("bar,count,warps,message", [
    (16, 256, 4, "tlx.named_barrier_wait: bar must be an int in [0, 15], got 16"),
    (-1, 256, 4, "bar must be an int in [0, 15], got -1"),
    (9, 100, 4, "arrive_count counts threads and must be a multiple of the warp size 32, got 100"),
    (9, 0, 4, "arrive_count must be an int in [32, 1024], got 0"),
    (9, 2048, 4, "arrive_count must be an int in [32, 1024], got 2048"),
    (9, 64, 4, "arrive_count=64 is fewer than the 128 threads (4 warps) executing it"),
])
def test_named_barrier_misuse_is_reported_at_the_kernel_line(bar, count, warps, message):
    msg = compile_error(named_misuse, {"out_ptr": "*i32"}, {"BAR": bar, "COUNT": count, "TASK_WARPS": warps},
                        "named_barrier_wait")
    assert message in msg


@compiled
@pytest.mark.parametrize("bar", [0, 1, 2])
def test_named_barriers_triton_uses_itself_are_refused(bar):
    # Stock Triton syncs the default task with barrier 0, switches tasks with 1, and syncs partition k with 2 + k.
    msg = compile_error(named_misuse, {"out_ptr": "*i32"}, {"BAR": bar, "COUNT": 256, "TASK_WARPS": 4},
                        "named_barrier_wait")
    assert "tlx.named_barrier_wait at " in msg and f"bar={bar} is one of Triton's own barriers" in msg and "use a barrier id in [3, 15]" in msg


@compiled
def test_named_barrier_3_is_free_with_one_partition():
    ptx = compile_kernel(named_misuse, {"out_ptr": "*i32"}, {"BAR": 3, "COUNT": 256, "TASK_WARPS": 4}).asm["ptx"]
    assert "bar.sync 3, 256;" in ptx and "bar.sync \t2, 128;" not in ptx


@compiled
@pytest.mark.parametrize("target", AMD, ids=lambda t: t.arch)
def test_named_barriers_are_refused_on_amd(target):
    msg = compile_error(named_runtime, {"out_ptr": "*i32", "bar": "i32", "count": "i32"}, {}, "named_barrier_wait",
                        target)
    assert "tlx.named_barrier_wait needs NVIDIA named barriers" in msg and target.arch in msg


# ------------------------------------------------------------------------------------------------
# Warp barriers (every thread arrives)
# ------------------------------------------------------------------------------------------------


@compiled
@pytest.mark.parametrize("arrivals", [1, 2])
def test_warp_barrier_counts_every_thread(arrivals):
    k = compile_kernel(warp_barrier_square, {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 256, "NUM_WARPS": 4, "ARRIVALS": arrivals})
    ptx = k.asm["ptx"]
    # 4 warps x 32 threads x arrivals per phase; an arrive of a 4-warp task counts its 128 threads (x arrive_count).
    inits = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64 \[%r\d+(?:\+\d+)?\], (\d+);", ptx)
    assert inits == [str(128 * arrivals)] * 2, inits
    arrives = re.findall(r"mbarrier\.arrive\.shared(?:::cta)?\.b64 _, \[%r\d+\], (\d+);", ptx)
    assert sorted(set(arrives)) == sorted({"128", str(128 * arrivals)}), arrives  # ARRIVALS calls / arrive_count


@compiled
def test_alloc_warp_barrier_argument_errors():
    msg = compile_error(warp_barrier_square, {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 256, "NUM_WARPS": 0, "ARRIVALS": 1}, "alloc_warp_barrier")
    assert "tlx.alloc_warp_barrier: num_warps must be a compile-time int >= 1, got 0" in msg


# ------------------------------------------------------------------------------------------------
# Cluster ops
# ------------------------------------------------------------------------------------------------


@compiled
def test_cluster_ops_compile_to_the_cluster_registers_and_barrier():
    k = compile_kernel(cluster_ops, {"out_ptr": "*i32"}, {})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    if compat.TRITON_VERSION < (3, 7):
        assert "ttng.cluster_arrive {relaxed = false}" in ttgir and "ttng.cluster_wait" in ttgir
    else:  # 3.7+ verify num-ctas > 1 on the cluster ops: the PTX of 3.6's two ops, as inline assembly
        assert "ttng.cluster_" not in ttgir
        assert '"barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned; mov.u32 $0, 0;"' in ttgir
    assert re.search(r"mov\.u32 %r\d+, %cluster_ctarank;", ptx) and re.search(r"mov\.u32 %r\d+, %cluster_nctarank;", ptx)
    assert "barrier.cluster.arrive" in ptx and "barrier.cluster.wait" in ptx
    assert "fence.mbarrier_init.release.cluster;" in ptx
    assert ptx.index("fence.mbarrier_init") < ptx.index("barrier.cluster.arrive") < ptx.index("mbarrier.arrive")


@compiled
@pytest.mark.parametrize("target", AMD, ids=lambda t: t.arch)
def test_cluster_ops_on_amd_are_a_cluster_of_one_workgroup(target):
    k = compile_kernel(cluster_amd, {"out_ptr": "*i32"}, {}, target)
    ttgir, amdgcn = k.asm["ttgir"], k.asm["amdgcn"]
    assert "gpu.barrier" in ttgir or "ttg.barrier" in ttgir or "s_barrier" in amdgcn
    assert "s_barrier" in amdgcn
    assert re.search(r"arith\.constant 1 : i32", ttgir)  # rank 0 * 100 + size 1, folded
    msg = compile_error(cluster_ops, {"out_ptr": "*i32"}, {}, "alloc_barriers", target)
    assert "needs NVIDIA" in msg


@compiled
@pytest.mark.parametrize("case,line,message", [
    (0, "remote_cta_rank=1", "tlx.barrier_arrive: remote_cta_rank=1 names another CTA of the cluster, but the kernel "
     "runs as clusters of one CTA: launch it with ctas_per_cga=(n, 1, 1)"),
    (1, "barrier_wait(tlx.remote_view", "tlx.barrier_wait does not take a remote_view of an mbarrier"),
    (2, "remote_view(bars[1], 3)", "tlx.remote_view: remote_cta_rank=3 names another CTA of the cluster"),
    (3, "barrier_arrive(tlx.remote_view", "pass the local mbarrier and remote_cta_rank="),
])
def test_cluster_misuse_is_reported_at_the_kernel_line(case, line, message):
    assert message in compile_error(cluster_misuse, {"out_ptr": "*i32"}, {"CASE": case}, line)


@compiled
def test_cluster_ops_refuse_num_ctas_clusters():
    msg = compile_error(cluster_amd, {"out_ptr": "*i32"}, {}, "cluster_barrier", num_ctas=2)
    assert "tlx.cluster_barrier: num_ctas=2 makes one program span the cluster" in msg


@compiled
def test_cluster_barrier_in_every_task_compiles():
    ptx = compile_kernel(cluster_barrier_tasks, {"out_ptr": "*i64"}, {}).asm["ptx"]
    assert ptx.count("barrier.cluster.arrive") == 2 and ptx.count("barrier.cluster.wait") == 2


# ------------------------------------------------------------------------------------------------
# Warp vote and reduction
# ------------------------------------------------------------------------------------------------


@compiled
@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0x0000FFFF])
def test_vote_ballot_compiles_to_vote_sync_ballot(mask):
    ptx = compile_kernel(ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": mask}).asm["ptx"]
    assert re.search(rf"vote\.sync\.ballot\.b32 %r\d+, p, {mask:#x};", ptx)


@compiled
def test_vote_ballot_refusals():
    msg = compile_error(ballot_tensor, {"out_ptr": "*i32", "x_ptr": "*i32"}, {}, "vote_ballot_sync")
    assert "tlx.vote_ballot_sync: pred must be a scalar, got a tensor of shape [32]" in msg
    msg = compile_error(ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": 2**32}, "vote_ballot_sync")
    assert "mask must be a compile-time 32-bit lane mask" in msg
    for target in AMD:
        msg = compile_error(ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": 1}, "vote_ballot_sync", target)
        assert "AMD wavefronts have 64 lanes" in msg


@compiled
def test_warp_redux_needs_blackwell():
    ptx = compile_kernel(redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "abs_max"},
                         GPUTarget("cuda", 100, 32)).asm["ptx"]
    assert "and.b32" in ptx and "redux.sync.max.f32" in ptx
    msg = compile_error(redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "max"}, "warp_redux")
    assert "tlx.warp_redux needs redux.sync on f32, which NVIDIA has from sm_100" in msg and "sm90" in msg
    msg = compile_error(redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "sum"}, "warp_redux")
    assert "op must be one of ['max', 'min', 'abs_max', 'abs_min'], got 'sum'" in msg


# ------------------------------------------------------------------------------------------------
# FP8 format names
# ------------------------------------------------------------------------------------------------


@compiled
@pytest.mark.parametrize("target", [SM90, *AMD], ids=lambda t: str(t.arch))
def test_fp8_format_names_are_compile_time_strings(target):
    for dtype, name in [(tl.float8e5, "e5m2"), (tl.float8e4nv, "e4m3")]:
        compile_kernel(fp8_name, {"out_ptr": "*i32"}, {"DTYPE": dtype, "EXPECTED": name}, target)
    msg = compile_error(fp8_name, {"out_ptr": "*i32"}, {"DTYPE": tl.float16, "EXPECTED": ""}, "get_fp8_format_name",
                        target)
    assert "only supports tl.float8e5 (e5m2) and tl.float8e4nv (e4m3), got fp16" in msg


@compiled
def test_cluster_barrier_outside_the_tasks_of_a_ws_kernel_is_refused():
    # Triton parks the task warps in its task switch until the region starts: they could never arrive.
    msg = compile_error(cluster_barrier_outside_tasks, {"out_ptr": "*i32"}, {}, "tlx.cluster_barrier()")
    assert "outside the async_tasks of a warp-specialized kernel the task warps wait" in msg


@triton.jit
def _phased_barriers(out_ptr):
    if tl.program_id(axis=0) == 258:
        return
    first = tlx.alloc_barriers(num_barriers=1, arrive_count=1)
    second = tlx.alloc_barriers(num_barriers=1, arrive_count=2)
    tlx.barrier_arrive(second[0])
    tlx.barrier_wait(bar=second[0], phase=1)
    third = tlx.alloc_barriers(num_barriers=1, arrive_count=3)  # made after the second one's last use
    tlx.barrier_arrive(third[0])
    tlx.barrier_wait(bar=third[0], phase=1)
    tlx.barrier_arrive(first[0])
    tlx.barrier_wait(bar=first[0], phase=0)
    tl.store(out_ptr, 1)


def test_barriers_keep_their_own_shared_memory_to_the_end():
    """PTX wants mbarrier.inval before an mbarrier's memory is reused: no barrier may take a dead one's slot
    (the fork's test_barrier_live_range)."""
    ptx = compile_kernel(_phased_barriers, {"out_ptr": "*i32"}, {}).asm["ptx"]
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[(%r\d+)\], (\d)", ptx)
    assert sorted(count for _, count in inits) == ["1", "2", "3"]
    assert len({register for register, _ in inits}) == 3, inits


#: Wraps ``triton.compile`` the way a harness recording compiles does (scripts/fork_unit_tests.py's
#: plugin), before tritium is imported, then compiles a TLX kernel through the wrapper.
_WRAPPED_COMPILE = """
import functools, json, sys
import triton, triton.compiler, triton.compiler.compiler as cc
calls = []
real = cc.compile
@functools.wraps(real)
def compile(src, *args, **kwargs):
    calls.append(src.name)
    return real(src, *args, **kwargs)
triton.compile = triton.compiler.compile = cc.compile = compile
sys.path.insert(0, sys.argv[1])
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from sync_kernels import named_pingpong
sig = {"out_ptr": "*i64", "ROUNDS": "constexpr", "COUNT": "constexpr"}
k = triton.compile(ASTSource(named_pingpong, sig, {"ROUNDS": 4, "COUNT": 256}), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 4})
print(json.dumps({"calls": calls, "placeholders": k.asm["ttgir"].count('"tlx:'),
                  "bar_sync": k.asm["ptx"].count("bar.sync 9, 256;")}))
"""


@compiled
def test_tlx_lowers_through_a_wrapper_set_over_triton_compile_before_tritium_import(tmp_path):
    """A wrapper over ``triton.compile`` installed before tritium's import must not hide Triton's own compile
    from the 3.7+ stages-hook key (the fork's unit-test harness does this; TLX's placeholders then reached
    ptxas). Run in a fresh interpreter: the wrapper must be in place before tritium is imported, and this
    process's ``triton.compile`` is left untouched."""
    import json
    import os
    import subprocess
    import sys
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", _WRAPPED_COMPILE, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["calls"] == ["named_pingpong"], result
    assert result["placeholders"] == 0 and result["bar_sync"] in (1, 4), result
