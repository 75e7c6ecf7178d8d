"""The fork's synchronization, warp and cluster ops: named barriers, warp barriers, vote ballot, fp8 format
names and the cluster ops, on the three paths (sm_90 compile, gfx942/gfx950 compile, interpreter).

Compile tests run in this process; the interpreter tests need ``TRITON_INTERPRET=1`` from the start
(see interp_shim), so :func:`test_interpreter_half_in_own_process` reruns this file in a process of its own.
"""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx
from interp_shim import interpret_mode
from tritium.plugins.errors import PassError
from tritium.tlx.interp_tasks import TLXDeadlockError

SM90 = GPUTarget("cuda", 90, 32)
AMD = [GPUTarget("hip", "gfx942", 64), GPUTarget("hip", "gfx950", 64)]

compiled = pytest.mark.skipif(interpret_mode(), reason="compile path: runs in the uninterpreted process")
interpreted = pytest.mark.skipif(not interpret_mode(), reason="run by test_interpreter_half_in_own_process")


def test_interpreter_half_in_own_process():
    if interpret_mode():
        pytest.skip("this process is the interpreted one")
    here = Path(__file__).resolve().parent
    src = str(Path(tlx.__file__).resolve().parents[1])
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


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
        assert f"{__file__}:{start + index}" in msg, msg
    return msg


# ------------------------------------------------------------------------------------------------
# Named barriers
# ------------------------------------------------------------------------------------------------


@triton.jit
def _named_pingpong(out_ptr, ROUNDS: tl.constexpr, COUNT: tl.constexpr):
    """The default task and a 4-warp task take turns through named barriers 9 and 10 (the fork's
    ping-pong pattern); each writes a timestamp in its turn."""
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for i in range(ROUNDS):
                tl.store(out_ptr + 2 * i, tlx.clock64())
                tlx.named_barrier_arrive(9, COUNT)
                tlx.named_barrier_wait(10, COUNT)
        with tlx.async_task(num_warps=4):
            for i in range(ROUNDS):
                tlx.named_barrier_wait(9, COUNT)
                tl.store(out_ptr + 2 * i + 1, tlx.clock64())
                tlx.named_barrier_arrive(10, COUNT)


@compiled
def test_named_barriers_compile_to_bar_sync_and_bar_arrive():
    k = compile_kernel(_named_pingpong, {"out_ptr": "*i64"}, {"ROUNDS": 4, "COUNT": 256})
    ptx = k.asm["ptx"]
    assert "tt.elementwise_inline_asm \"tlx:" not in k.asm["ttgir"]
    # One of each per round (LLVM may unroll the 4 rounds).
    counts = {op: ptx.count(op) for op in ("bar.arrive 9, 256;", "bar.sync 10, 256;", "bar.sync 9, 256;",
                                          "bar.arrive 10, 256;")}
    assert len(set(counts.values())) == 1 and counts["bar.sync 9, 256;"] in (1, 4), counts
    # The default task's side comes before the partition's (which stock Triton places after the switch).
    assert ptx.index("bar.arrive 9, 256;") < ptx.index("bar.sync 9, 256;")


@triton.jit
def _named_runtime(out_ptr, bar, count):
    tlx.named_barrier_wait(bar, count)
    tlx.named_barrier_arrive(bar + 1, count)
    tl.store(out_ptr, 1)


@compiled
def test_named_barrier_ids_and_counts_may_be_run_time_values():
    ptx = compile_kernel(_named_runtime, {"out_ptr": "*i32", "bar": "i32", "count": "i32"}, {}).asm["ptx"]
    assert re.search(r"bar\.sync %r\d+, %r\d+;", ptx) and re.search(r"bar\.arrive %r\d+, %r\d+;", ptx)


@triton.jit
def _named_misuse(out_ptr, BAR: tl.constexpr, COUNT: tl.constexpr, TASK_WARPS: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=TASK_WARPS):
            tlx.named_barrier_wait(BAR, COUNT)


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
    msg = compile_error(_named_misuse, {"out_ptr": "*i32"}, {"BAR": bar, "COUNT": count, "TASK_WARPS": warps},
                        "named_barrier_wait")
    assert message in msg


@compiled
@pytest.mark.parametrize("bar", [0, 1, 2])
def test_named_barriers_triton_uses_itself_are_refused(bar):
    # Stock Triton syncs the default task with barrier 0, switches tasks with 1, and syncs partition k with 2 + k.
    msg = compile_error(_named_misuse, {"out_ptr": "*i32"}, {"BAR": bar, "COUNT": 256, "TASK_WARPS": 4},
                        "named_barrier_wait")
    assert f"tlx.named_barrier_wait at {__file__}:" in msg and f"bar={bar} is one of Triton's own barriers" in msg and "use a barrier id in [3, 15]" in msg


@compiled
def test_named_barrier_3_is_free_with_one_partition():
    ptx = compile_kernel(_named_misuse, {"out_ptr": "*i32"}, {"BAR": 3, "COUNT": 256, "TASK_WARPS": 4}).asm["ptx"]
    assert "bar.sync 3, 256;" in ptx and "bar.sync \t2, 128;" not in ptx


@compiled
@pytest.mark.parametrize("target", AMD, ids=lambda t: t.arch)
def test_named_barriers_are_refused_on_amd(target):
    msg = compile_error(_named_runtime, {"out_ptr": "*i32", "bar": "i32", "count": "i32"}, {}, "named_barrier_wait",
                        target)
    assert "tlx.named_barrier_wait needs NVIDIA named barriers" in msg and target.arch in msg


@interpreted
def test_named_barriers_make_tasks_take_turns():
    out = torch.zeros(8, dtype=torch.int64)
    _named_pingpong[(1, )](out, ROUNDS=4, COUNT=256)  # 4 default warps + 4 task warps
    assert (out[1:] > out[:-1]).all(), f"the tasks did not alternate: {out.tolist()}"


@interpreted
def test_named_barrier_counts_the_kernels_warps_in_the_default_task():
    out = torch.zeros(8, dtype=torch.int64)
    _named_pingpong[(1, )](out, ROUNDS=4, COUNT=384, num_warps=8)
    assert (out[1:] > out[:-1]).all()
    with pytest.raises(Exception, match=r"named_barrier_wait can never complete: named barrier 9 \(256 of 384"):
        _named_pingpong[(1, )](out, ROUNDS=4, COUNT=384)  # only 4 + 4 warps: nobody else arrives
    with pytest.raises(Exception, match=r"named_barrier_wait can never complete: named barrier 9 \(128 of 256"):
        _named_pingpong[(1, )](out, ROUNDS=4, COUNT=256, num_warps=8)  # the default's 256 threads fill it alone
    with pytest.raises(Exception, match="256 threads arrived on named barrier 9, which expects 192"):
        _named_pingpong[(1, )](out, ROUNDS=4, COUNT=192)  # a count that splits a task's warps


@interpreted
def test_named_barrier_alone_passes_when_it_counts_only_the_caller():
    out = torch.zeros(1, dtype=torch.int32)
    _named_runtime[(1, )](out, 5, 128)  # 4 warps, 128 threads: bar.sync completes on its own
    assert out.item() == 1
    with pytest.raises(Exception, match="TLX interpreter deadlock"):
        _named_runtime[(1, )](out, 5, 256)
    with pytest.raises(Exception, match="bar must be in \\[0, 15\\], got 16"):
        _named_runtime[(1, )](out, 16, 128)


# ------------------------------------------------------------------------------------------------
# Warp barriers (every thread arrives)
# ------------------------------------------------------------------------------------------------


@triton.jit
def _warp_barrier_square(x_ptr, z_ptr, n, BLOCK: tl.constexpr, NUM_WARPS: tl.constexpr, ARRIVALS: tl.constexpr):
    """The fork's warp-barrier pattern: the default task stages x in shared memory, a 4-warp task squares it;
    each side arrives ARRIVALS times per phase with all its threads."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bars = tlx.alloc_warp_barrier(num_barriers=2, num_warps=NUM_WARPS, num_arrivals=ARRIVALS)
    buf = tlx.local_alloc((BLOCK, ), tl.float32, 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(bars[1], 1)
            tlx.local_store(buf[0], tl.load(x_ptr + offs, mask=offs < n))
            for _ in tl.static_range(ARRIVALS):
                tlx.barrier_arrive(bars[0])
        with tlx.async_task(num_warps=4):
            tlx.barrier_wait(bars[0], 0)
            data = tlx.local_load(buf[0])
            tl.store(z_ptr + offs, data * data, mask=offs < n)
            for _ in tl.static_range(ARRIVALS):
                tlx.barrier_arrive(bars[1])


@compiled
@pytest.mark.parametrize("arrivals", [1, 2])
def test_warp_barrier_counts_every_thread(arrivals):
    k = compile_kernel(_warp_barrier_square, {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 256, "NUM_WARPS": 4, "ARRIVALS": arrivals})
    ptx = k.asm["ptx"]
    # 4 warps x 32 threads x arrivals per phase; each arrive of a 4-warp task counts its 128 threads.
    inits = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64 \[%r\d+(?:\+\d+)?\], (\d+);", ptx)
    assert inits == [str(128 * arrivals)] * 2, inits
    arrives = re.findall(r"mbarrier\.arrive\.shared(?:::cta)?\.b64 _, \[%r\d+\], (\d+);", ptx)
    assert arrives and set(arrives) == {"128"}, arrives


@compiled
def test_alloc_warp_barrier_argument_errors():
    msg = compile_error(_warp_barrier_square, {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 256, "NUM_WARPS": 0, "ARRIVALS": 1}, "alloc_warp_barrier")
    assert "tlx.alloc_warp_barrier: num_warps must be a compile-time int >= 1, got 0" in msg


@interpreted
@pytest.mark.parametrize("arrivals", [1, 2])
def test_warp_barrier_hands_the_buffer_over(arrivals):
    x = torch.randn(1000)
    z = torch.full_like(x, float("nan"))
    _warp_barrier_square[(4, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=4, ARRIVALS=arrivals)
    torch.testing.assert_close(z, x * x)


@interpreted
def test_warp_barrier_waits_for_all_the_warps_it_counts():
    x = torch.randn(256)
    z = torch.zeros_like(x)
    # An 8-warp barrier is not complete after the 4-warp default task's arrival: the consumer never runs.
    with pytest.raises(Exception, match="barrier_wait\\(phase=0\\) can never complete"):
        _warp_barrier_square[(1, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=8, ARRIVALS=1)
    _warp_barrier_square[(1, )](x, z, x.numel(), BLOCK=256, NUM_WARPS=8, ARRIVALS=1, num_warps=8)
    torch.testing.assert_close(z, x * x)


# ------------------------------------------------------------------------------------------------
# Cluster ops
# ------------------------------------------------------------------------------------------------


@triton.jit
def _cluster_ops(out_ptr):
    bars = tlx.alloc_barriers(1)
    tlx.fence_mbarrier_init_cluster()
    rank = tlx.cluster_cta_rank()
    tlx.cluster_barrier()
    tlx.barrier_arrive(bars[0], remote_cta_rank=rank)  # the CTA's own barrier, named by its rank
    tlx.barrier_wait(bars[0], 0)
    tl.store(out_ptr, rank * 100 + tlx.cluster_size_1d())


@compiled
def test_cluster_ops_compile_to_the_cluster_registers_and_barrier():
    k = compile_kernel(_cluster_ops, {"out_ptr": "*i32"}, {})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.cluster_arrive {relaxed = false}" in ttgir and "ttng.cluster_wait" in ttgir
    assert re.search(r"mov\.u32 %r\d+, %cluster_ctarank;", ptx) and re.search(r"mov\.u32 %r\d+, %cluster_nctarank;", ptx)
    assert "barrier.cluster.arrive" in ptx and "barrier.cluster.wait" in ptx
    assert "fence.mbarrier_init.release.cluster;" in ptx
    assert ptx.index("fence.mbarrier_init") < ptx.index("barrier.cluster.arrive") < ptx.index("mbarrier.arrive")


@triton.jit
def _cluster_amd(out_ptr):
    tlx.cluster_barrier()
    tl.store(out_ptr, tlx.cluster_cta_rank() * 100 + tlx.cluster_size_1d())


@compiled
@pytest.mark.parametrize("target", AMD, ids=lambda t: t.arch)
def test_cluster_ops_on_amd_are_a_cluster_of_one_workgroup(target):
    k = compile_kernel(_cluster_amd, {"out_ptr": "*i32"}, {}, target)
    ttgir, amdgcn = k.asm["ttgir"], k.asm["amdgcn"]
    assert "gpu.barrier" in ttgir or "ttg.barrier" in ttgir or "s_barrier" in amdgcn
    assert "s_barrier" in amdgcn
    assert re.search(r"arith\.constant 1 : i32", ttgir)  # rank 0 * 100 + size 1, folded
    msg = compile_error(_cluster_ops, {"out_ptr": "*i32"}, {}, "alloc_barriers", target)
    assert "needs NVIDIA" in msg


@triton.jit
def _cluster_misuse(out_ptr, CASE: tl.constexpr):
    bars = tlx.alloc_barriers(2)
    if CASE == 0:
        tlx.barrier_arrive(bars[0], remote_cta_rank=1)
    elif CASE == 1:
        tlx.barrier_wait(tlx.remote_view(bars[0], 0), 0)
    elif CASE == 2:
        tlx.remote_view(bars[1], 3)
    elif CASE == 3:
        tlx.barrier_arrive(tlx.remote_view(bars[0], 0))
    tl.store(out_ptr, tlx.cluster_cta_rank())


@compiled
@pytest.mark.parametrize("case,line,message", [
    (0, "remote_cta_rank=1", "tlx.barrier_arrive: remote_cta_rank=1 names another CTA of the cluster, but stock "
     "Triton runs a TLX kernel as a cluster of one CTA (the fork's ctas_per_cga launch option"),
    (1, "barrier_wait(tlx.remote_view", "tlx.barrier_wait does not take a remote_view of an mbarrier"),
    (2, "remote_view(bars[1], 3)", "tlx.remote_view: remote_cta_rank=3 names another CTA of the cluster"),
    (3, "barrier_arrive(tlx.remote_view", "pass the local mbarrier and remote_cta_rank="),
])
def test_cluster_misuse_is_reported_at_the_kernel_line(case, line, message):
    assert message in compile_error(_cluster_misuse, {"out_ptr": "*i32"}, {"CASE": case}, line)


@compiled
def test_cluster_ops_refuse_num_ctas_clusters():
    msg = compile_error(_cluster_amd, {"out_ptr": "*i32"}, {}, "cluster_barrier", num_ctas=2)
    assert "tlx.cluster_barrier: num_ctas=2 makes one program span the cluster" in msg


@triton.jit
def _cluster_barrier_tasks(out_ptr):
    """Each task stamps the time before and after a cluster barrier: all "before"s precede all "after"s."""
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr + 0, tlx.clock64())
            tlx.cluster_barrier()
            tl.store(out_ptr + 2, tlx.clock64())
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, tlx.clock64())
            tlx.cluster_barrier()
            tl.store(out_ptr + 3, tlx.clock64())


@compiled
def test_cluster_barrier_in_every_task_compiles():
    ptx = compile_kernel(_cluster_barrier_tasks, {"out_ptr": "*i64"}, {}).asm["ptx"]
    assert ptx.count("barrier.cluster.arrive") == 2 and ptx.count("barrier.cluster.wait") == 2


@interpreted
def test_cluster_ops_are_a_cluster_of_one_cta():
    out = torch.full((1, ), -1, dtype=torch.int32)
    _cluster_ops[(2, )](out)
    assert out.item() == 1  # rank 0, size 1; the remote arrive reached the CTA's own barrier
    for case, message in [(0, "remote_cta_rank=1 names another CTA"), (1, "does not take a remote_view"),
                          (2, "remote_cta_rank=3 names another CTA"), (3, "does not take a remote_view")]:
        with pytest.raises(Exception, match=message):
            _cluster_misuse[(1, )](out, CASE=case)


@interpreted
def test_cluster_barrier_waits_for_every_task():
    out = torch.zeros(4, dtype=torch.int64)
    _cluster_barrier_tasks[(1, )](out)
    assert max(out[0], out[1]) < min(out[2], out[3]), out.tolist()


# ------------------------------------------------------------------------------------------------
# Warp vote and reduction
# ------------------------------------------------------------------------------------------------


@triton.jit
def _ballot(out_ptr, x_ptr, MASK: tl.constexpr):
    tl.store(out_ptr, tlx.vote_ballot_sync(MASK, tl.load(x_ptr) != 0))


@triton.jit
def _ballot_tensor(out_ptr, x_ptr):
    offs = tl.arange(0, 32)
    tl.store(out_ptr + offs, tlx.vote_ballot_sync(0xFFFFFFFF, tl.load(x_ptr + offs) > 0))


@compiled
@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0x0000FFFF])
def test_vote_ballot_compiles_to_vote_sync_ballot(mask):
    ptx = compile_kernel(_ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": mask}).asm["ptx"]
    assert re.search(rf"vote\.sync\.ballot\.b32 %r\d+, p, {mask:#x};", ptx)


@compiled
def test_vote_ballot_refusals():
    msg = compile_error(_ballot_tensor, {"out_ptr": "*i32", "x_ptr": "*i32"}, {}, "vote_ballot_sync")
    assert "tlx.vote_ballot_sync: pred must be a scalar, got a tensor of shape [32]" in msg
    msg = compile_error(_ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": 2**32}, "vote_ballot_sync")
    assert "mask must be a compile-time 32-bit lane mask" in msg
    for target in AMD:
        msg = compile_error(_ballot, {"out_ptr": "*i32", "x_ptr": "*i32"}, {"MASK": 1}, "vote_ballot_sync", target)
        assert "AMD wavefronts have 64 lanes" in msg


@interpreted
def test_vote_ballot_of_a_scalar_is_the_mask_or_zero():
    out = torch.zeros(1, dtype=torch.int32)
    for x, mask, want in [(5, 0xFFFFFFFF, -1), (5, 0x0000FFFF, 0xFFFF), (0, 0xFFFFFFFF, 0)]:
        _ballot[(1, )](out, torch.tensor([x], dtype=torch.int32), MASK=mask)
        assert out.item() == want
    with pytest.raises(Exception, match="vote_ballot_sync: a tensor pred needs the lanes of the compiled"):
        _ballot_tensor[(1, )](torch.zeros(32, dtype=torch.int32), torch.ones(32, dtype=torch.int32))


@triton.jit
def _redux(out_ptr, x_ptr, OP: tl.constexpr):
    tl.store(out_ptr, tlx.warp_redux(tl.load(x_ptr), OP))


@compiled
def test_warp_redux_needs_blackwell():
    ptx = compile_kernel(_redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "abs_max"},
                         GPUTarget("cuda", 100, 32)).asm["ptx"]
    assert "and.b32" in ptx and "redux.sync.max.f32" in ptx
    msg = compile_error(_redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "max"}, "warp_redux")
    assert "tlx.warp_redux needs redux.sync on f32, which NVIDIA has from sm_100" in msg and "sm90" in msg
    msg = compile_error(_redux, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {"OP": "sum"}, "warp_redux")
    assert "op must be one of ['max', 'min', 'abs_max', 'abs_min'], got 'sum'" in msg


@interpreted
def test_warp_redux_of_a_scalar():
    out = torch.zeros(1)
    for op, want in [("max", -2.5), ("abs_max", 2.5), ("abs_min", 2.5)]:
        _redux[(1, )](out, torch.tensor([-2.5]), OP=op)
        assert out.item() == want


# ------------------------------------------------------------------------------------------------
# FP8 format names
# ------------------------------------------------------------------------------------------------


@triton.jit
def _fp8_name(out_ptr, DTYPE: tl.constexpr, EXPECTED: tl.constexpr):
    name: tl.constexpr = tlx.get_fp8_format_name(DTYPE)
    tl.static_assert(name == EXPECTED)
    tl.store(out_ptr, 1)


@compiled
@pytest.mark.parametrize("target", [SM90, *AMD], ids=lambda t: str(t.arch))
def test_fp8_format_names_are_compile_time_strings(target):
    for dtype, name in [(tl.float8e5, "e5m2"), (tl.float8e4nv, "e4m3")]:
        compile_kernel(_fp8_name, {"out_ptr": "*i32"}, {"DTYPE": dtype, "EXPECTED": name}, target)
    msg = compile_error(_fp8_name, {"out_ptr": "*i32"}, {"DTYPE": tl.float16, "EXPECTED": ""}, "get_fp8_format_name",
                        target)
    assert "only supports tl.float8e5 (e5m2) and tl.float8e4nv (e4m3), got fp16" in msg


@interpreted
def test_fp8_format_names_in_the_interpreter():
    out = torch.zeros(1, dtype=torch.int32)
    _fp8_name[(1, )](out, DTYPE=tl.float8e5, EXPECTED="e5m2")
    assert out.item() == 1
    with pytest.raises(Exception, match="only supports tl.float8e5"):
        _fp8_name[(1, )](out, DTYPE=tl.int32, EXPECTED="")


@triton.jit
def _cluster_barrier_outside_tasks(out_ptr):
    tlx.cluster_barrier()
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, 1)


@compiled
def test_cluster_barrier_outside_the_tasks_of_a_ws_kernel_is_refused():
    # Triton parks the task warps in its task switch until the region starts: they could never arrive.
    msg = compile_error(_cluster_barrier_outside_tasks, {"out_ptr": "*i32"}, {}, "tlx.cluster_barrier()")
    assert "outside the async_tasks of a warp-specialized kernel the task warps wait" in msg
