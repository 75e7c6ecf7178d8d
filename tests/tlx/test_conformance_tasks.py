"""The fork's warp-specialization surface: every argument of ``async_tasks``/``async_task`` and the
compile-time ``async_task_replica_id()``, on the sm_90 compile path and under the interpreter.

Compile tests run in this process; the interpreter tests need ``TRITON_INTERPRET=1`` from the start
(see interp_shim), so :func:`test_interpreter_part_in_own_process` reruns this file in such a process.
"""
from __future__ import annotations

import math
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
from tritium.tlx import tasks

SM90 = GPUTarget("cuda", 90, 32)
INTERPRETED = interpret_mode()
compiled = pytest.mark.skipif(INTERPRETED, reason="compile test; this process is interpreted")
interpreted = pytest.mark.skipif(not INTERPRETED, reason="runs in the TRITON_INTERPRET=1 process")


def test_interpreter_part_in_own_process():
    if INTERPRETED:
        pytest.skip("this process is the interpreted one")
    here = Path(__file__).resolve().parent
    src = str(Path(tlx.__file__).resolve().parents[1])
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def compile_kernel(fn, signature: dict, constants: dict, **options):
    sig = {**signature, **{k: "constexpr" for k in constants}}
    return triton.compile(ASTSource(fn, sig, constants), target=SM90, options={"num_warps": 4, **options})


def compile_error(fn, signature: dict, constants: dict, line: str) -> str:
    """The compile error's text, checked to point at the kernel line containing ``line``."""
    with pytest.raises(CompilationError) as info:
        compile_kernel(fn, signature, constants)
    text = str(info.value)
    assert line in text, text
    return text


def partitions(ttgir: str) -> list[str]:
    """The text of each partition of the (one) ttg.warp_specialize, in order."""
    return re.split(r"\n\s*partition\d+\(", ttgir.split("ttg.warp_specialize(", 1)[1])[1:]


# --------------------------------------------------------------------------------------------
# Replicas: one code-generated copy per replica, the replica id a compile-time constant
# --------------------------------------------------------------------------------------------
@triton.jit
def _replicas(out_ptr, REPLICATE: tl.constexpr, BM: tl.constexpr):
    bufs = tlx.local_alloc((BM // 2, ), tl.int32, REPLICATE)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            rid: tl.constexpr = tlx.async_task_replica_id()  # 0 in the default task, as in the fork
            tl.store(out_ptr + BM * REPLICATE, rid + 7)
        with tlx.async_task(num_warps=4, registers=232, replicate=REPLICATE):
            cid: tl.constexpr = tlx.async_task_replica_id()
            offs = BM // 2 * cid + tl.arange(0, BM // 2)  # constexpr arithmetic on the replica id
            buf = tlx.local_view(bufs, cid)
            if cid == 0:  # a compile-time branch
                tlx.local_store(buf, offs * 0 + 1000)
            else:
                tlx.local_store(buf, offs * 0 + 2000 + cid)
            tl.store(out_ptr + offs, tlx.local_load(buf))


@compiled
def test_replica_id_is_a_compile_time_constant():
    k = compile_kernel(_replicas, {"out_ptr": "*i32"}, {"REPLICATE": 3, "BM": 64})
    ttgir = k.asm["ttgir"]
    assert "requestedRegisters = array<i32: 232, 232, 232>" in ttgir
    parts = partitions(ttgir)
    assert len(parts) == 3 and all(") num_warps(4) {" in p for p in parts)
    # Each copy has only its own branch: no runtime test of the replica id.
    assert "dense<1000>" in parts[0] and "dense<200" not in parts[0]
    assert "dense<2001>" in parts[1] and "dense<1000>" not in parts[1] and "dense<2002>" not in parts[1]
    assert "dense<2002>" in parts[2]
    # Replica r views buffer r and stores at r * BM // 2: constants, no index arithmetic.
    for r, part in enumerate(parts):
        index = re.search(r"ttg\.memdesc_index %\w+\[(%\w+)\]", part).group(1)
        assert re.search(rf"{re.escape(index)} = arith\.constant {r} : i32", part), part
    default = ttgir.split("ttg.warp_specialize(", 1)[1].split("partition0(")[0]
    assert re.search(r"tt\.store %\w+, %c7_i32", default)
    assert "scf.if" not in ttgir


@interpreted
def test_replica_id_is_a_compile_time_constant_interpreted():
    out = torch.full((3 * 8 + 1, ), -1, dtype=torch.int32)
    _replicas[(1, )](out, REPLICATE=3, BM=8)
    assert out.tolist() == [1000] * 4 + [2001] * 4 + [2002] * 4 + [-1] * 12 + [7]


@triton.jit
def _default_replicas(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default", replicate=2):
            r: tl.constexpr = tlx.async_task_replica_id()
            tl.store(out_ptr + r, r + 10)
        with tlx.async_task(num_warps=1):
            tl.store(out_ptr + 2, 5)


@compiled
def test_default_task_replicas_run_on_more_warps_of_the_kernels_size():
    k = compile_kernel(_default_replicas, {"out_ptr": "*i32"}, {})
    parts = partitions(k.asm["ttgir"])
    assert [re.search(r"num_warps\((\d+)\)", p).group(1) for p in parts] == ["4", "1"]
    assert re.search(r"arith\.constant 11 : i32", parts[0])  # replica 1 of the default task
    assert k.metadata.num_warps == 12  # 4 + (4 + 1, padded to two warp groups)


@interpreted
def test_default_task_replicas_interpreted():
    out = torch.full((3, ), -1, dtype=torch.int32)
    _default_replicas[(1, )](out)
    assert out.tolist() == [10, 11, 5]


@triton.jit
def _store_replica(out_ptr, CID: tl.constexpr):
    tl.store(out_ptr + CID, CID + 20)


@triton.jit
def _replica_in_helper(out_ptr):
    tl.store(out_ptr + tlx.async_task_replica_id(), 1)


@triton.jit
def _helpers(out_ptr, ASK_IN_HELPER: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr + 2, 1)
        with tlx.async_task(num_warps=4, replicate=2):
            if ASK_IN_HELPER:
                _replica_in_helper(out_ptr)
            else:
                _store_replica(out_ptr, tlx.async_task_replica_id())  # one helper specialization per replica


@compiled
def test_replica_id_reaches_helpers_as_a_constexpr_argument():
    parts = partitions(compile_kernel(_helpers, {"out_ptr": "*i32"}, {"ASK_IN_HELPER": False}).asm["ttgir"])
    assert re.search(r"arith\.constant 20 : i32", parts[0]) and re.search(r"arith\.constant 21 : i32", parts[1])
    with pytest.raises(CompilationError) as info:  # reported at the call, with the helper's error as its cause
        compile_kernel(_helpers, {"out_ptr": "*i32"}, {"ASK_IN_HELPER": True})
    cause = info.value.__cause__
    assert "_replica_in_helper(out_ptr)" in str(info.value) and cause is not None
    assert "tlx.async_task_replica_id()" in str(cause) and "not in a @triton.jit helper" in str(cause)


@interpreted
def test_replica_id_reaches_helpers_interpreted():
    out = torch.zeros(3, dtype=torch.int32)
    _helpers[(1, )](out, ASK_IN_HELPER=False)
    assert out.tolist() == [20, 21, 1]


@triton.jit
def _small_tasks(x_ptr, y_ptr, n, BLOCK: tl.constexpr, W: tl.constexpr):
    """The fork's test_async_tasks pattern: tasks of W warps (not the kernel's 4) holding register tensors."""
    pid = tl.program_id(0)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
        with tlx.async_task(num_warps=W, replicate=2):
            r: tl.constexpr = tlx.async_task_replica_id()
            rows = (pid * 2 + r) * 8 + tl.arange(0, 8)[:, None]
            cols = tl.arange(0, 16)[None, :]
            offs2 = n + rows * 16 + cols  # a 2-D tile per replica, after the first n elements
            tl.store(y_ptr + offs2, tl.load(x_ptr + offs2) + r)


@compiled
@pytest.mark.parametrize("warps", [1, 2, 8])
def test_tasks_with_other_warp_counts_hold_register_tensors(warps):
    ttgir = compile_kernel(_small_tasks, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                           {"BLOCK": 256, "W": warps}).asm["ttgir"]
    blocked = dict(re.findall(r"^(#blocked\d*) = #ttg\.blocked<\{.*warpsPerCTA = \[([\d, ]+)\]", ttgir, re.M))
    parts = partitions(ttgir)
    assert len(parts) == 2
    for part in parts:
        assert f") num_warps({warps}) {{" in part
        used = set(re.findall(r"#blocked\d*\b", part))
        assert used and all(math.prod(int(x) for x in blocked[b].split(", ")) == warps for b in used), (used, blocked)
    default = ttgir.split("default {", 1)[1].split("partition0(", 1)[0]
    used = set(re.findall(r"#blocked\d*\b", default))
    assert all(math.prod(int(x) for x in blocked[b].split(", ")) == 4 for b in used)


@triton.jit
def _dot_in_small_task(x_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr, 1.0)
        with tlx.async_task(num_warps=8):
            offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
            a = tl.load(x_ptr + offs).to(tl.float16)
            tl.store(x_ptr + offs, tl.dot(a, a))


@compiled
def test_register_layouts_fixed_by_the_kernels_warps_are_an_error_in_other_tasks():
    with pytest.raises(PassError, match=r"tlx.async_task\(num_warps=8\) in a kernel of num_warps=4 uses (a|the) "
                                        r"dot_op register layout.*give the task the kernel's num_warps"):
        compile_kernel(_dot_in_small_task, {"x_ptr": "*fp32"}, {})


@interpreted
def test_tasks_with_other_warp_counts_interpreted():
    x = torch.arange(64 + 2 * 128, dtype=torch.float32)
    y = torch.zeros_like(x)
    _small_tasks[(1, )](x, y, 64, BLOCK=64, W=1)
    expect = torch.cat([x[:64] * 2, x[64:192], x[192:] + 1])
    assert torch.equal(y, expect)


# --------------------------------------------------------------------------------------------
# async_task arguments
# --------------------------------------------------------------------------------------------
@triton.jit
def _regs(out_ptr, ALIAS: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        if ALIAS:
            with tlx.async_task(num_warps=4, registers=200):
                tl.store(out_ptr + 1, 2)
        else:
            with tlx.async_task(num_warps=4, num_regs=200):
                tl.store(out_ptr + 1, 2)


@compiled
def test_registers_is_num_regs():
    for alias in (True, False):
        k = compile_kernel(_regs, {"out_ptr": "*i32"}, {"ALIAS": alias})
        assert "requestedRegisters = array<i32: 200>" in k.asm["ttgir"]
        assert "setmaxnreg.dec.sync.aligned.u32 \t200;" in k.asm["ptx"]  # 256 per thread before the region


@triton.jit
def _start_ids(out_ptr, A: tl.constexpr, A_WARPS: tl.constexpr, B: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=A_WARPS, warp_group_start_id=A):
            tl.store(out_ptr + 1, 2)
        with tlx.async_task(num_warps=4, warp_group_start_id=B):
            tl.store(out_ptr + 2, 3)


def allocated_start_ids(ttgir: str) -> list[int]:
    """The warps stock ``allocate_warp_groups`` gives the partitions of ``ttgir`` (it runs in make_llir)."""
    from triton._C.libtriton import ir, nvidia, passes
    from tritium import compat
    ctx = ir.context()
    ir.load_dialects(ctx)
    nvidia.load_dialects(ctx)
    mod = compat.parse_module(ttgir, ctx)
    pm = ir.pass_manager(ctx)
    passes.ttgpuir.add_allocate_warp_groups(pm)
    pm.run(mod, "allocate_warp_groups")
    ids = re.search(r"warpGroupStartIds = array<i32: ([\d, ]+)>", mod.str()).group(1)
    return [int(i) for i in ids.split(", ")]


@compiled
def test_warp_group_start_id_orders_the_partitions_and_is_what_stock_allocates():
    k = compile_kernel(_start_ids, {"out_ptr": "*i32"}, {"A": 8, "A_WARPS": 4, "B": 4})
    ttgir = k.asm["ttgir"]
    assert "warpGroupStartIds = array<i32: 4, 8>" in ttgir
    parts = partitions(ttgir)
    assert re.search(r"arith\.constant 3 : i32", parts[0]) and re.search(r"arith\.constant 2 : i32", parts[1])
    # Stock's allocation (which overwrites the attribute) lands exactly where the tasks asked.
    assert allocated_start_ids(ttgir) == [4, 8]
    # A 1-warp task next to a 4-warp one: stock pads with 2 + 1 warps and puts the 2-warp padding first.
    k = compile_kernel(_start_ids, {"out_ptr": "*i32"}, {"A": 10, "A_WARPS": 1, "B": 4})
    assert allocated_start_ids(k.asm["ttgir"])[:2] == [4, 10]


@compiled
def test_warp_group_start_id_stock_cannot_honour_is_an_error():
    text = compile_error(_start_ids, {"out_ptr": "*i32"}, {"A": 8, "A_WARPS": 1, "B": 4}, "with tlx.async_tasks():")
    assert "ask to start at warps [4, 8]" in text and "places them at [4, 10]" in text
    assert "overwrites warpGroupStartIds" in text


@triton.jit
def _default_start(out_ptr, S: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default", warp_group_start_id=S):  # no partition copies: nothing to place
            tl.store(out_ptr, S + 1)
        with tlx.async_task(num_warps=1, registers=96):
            tl.store(out_ptr + 1, 2)


@compiled
@pytest.mark.parametrize("start", [0, 1])
def test_warp_group_start_id_on_a_default_task_without_replicas(start):
    ttgir = compile_kernel(_default_start, {"out_ptr": "*i32"}, {"S": start}).asm["ttgir"]
    assert len(partitions(ttgir)) == 1 and "warpGroupStartIds" not in ttgir


@interpreted
def test_warp_group_start_id_on_a_default_task_interpreted():
    out = torch.zeros(2, dtype=torch.int32)
    _default_start[(1, )](out, S=1)
    assert out.tolist() == [2, 2]


def test_stock_placement_model():
    """The model of stock allocate_warp_groups used for the check (sizes, base warps, largest region)."""
    assert tasks.stock_start_ids([4, 4], 4, 8) == [4, 8]
    assert tasks.stock_start_ids([1, 4], 4, 5) == [10, 4]  # pads 2 and 1: 4 -> 4, 2 -> 8, 1 -> 10, 1 -> 11
    assert tasks.stock_start_ids([4], 8, 12) == [16]  # another region needs 12 warps: padding 8 goes first


@triton.jit
def _default_regs(out_ptr, ALIAS: tl.constexpr):
    with tlx.async_tasks():
        if ALIAS:
            with tlx.async_task("default", registers=64):
                tl.store(out_ptr, 1)
        else:
            with tlx.async_task("default", num_regs=64):
                tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4, num_regs=232):
            tl.store(out_ptr + 1, 2)


@triton.jit
def _both_regs(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task(num_warps=4, num_regs=232, registers=232):
            tl.store(out_ptr + 1, 2)


@triton.jit
def _task_ids(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task([0]):
            tl.store(out_ptr + 1, 2)


@triton.jit
def _not_a_with(out_ptr):
    with tlx.async_tasks():
        task = tlx.async_task(num_warps=4)  # noqa: F841
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)


@triton.jit
def _bad_start(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task(num_warps=4, warp_group_start_id=-4):
            tl.store(out_ptr + 1, 2)


@compiled
@pytest.mark.parametrize("kernel, constants, message, line", [
    (_default_regs, {"ALIAS": True}, "stock Triton's ttg.warp_specialize has no register request for the default",
     'with tlx.async_task("default", registers=64):'),
    (_default_regs, {"ALIAS": False}, "the default task gets the registers the other tasks leave",
     'with tlx.async_task("default", num_regs=64):'),
    (_both_regs, {}, "registers is an alias of num_regs; give one of them", "registers=232"),
    (_task_ids, {}, "task-id lists annotate code for the TLX fork's automatic warp specialization",
     "with tlx.async_task([0]):"),
    (_not_a_with, {}, "must be used as a context manager", "task = tlx.async_task(num_warps=4)"),
    (_bad_start, {}, "warp_group_start_id must be a non-negative compile-time int", "warp_group_start_id=-4"),
])
def test_async_task_arguments_stock_cannot_express_are_errors(kernel, constants, message, line):
    assert message in compile_error(kernel, {"out_ptr": "*i32"}, constants, line)


@triton.jit
def _runtime_warps(out_ptr, n):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=n):
            tl.store(out_ptr + 1, 2)


@compiled
def test_runtime_num_warps_is_described_by_its_type():
    """A runtime value is named by its type, as other TLX checks do, not by an object repr with an address."""
    text = compile_error(_runtime_warps, {"out_ptr": "*i32", "n": "i32"}, {}, "num_warps=n")
    assert "num_warps must be a power-of-two compile-time int, got int32" in text
    assert "object at 0x" not in text


@triton.jit
def _cta_warps(out_ptr, W: tl.constexpr, R: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default", replicate=R):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=W):
            tl.store(out_ptr + 1, 2)
        with tlx.async_task(num_warps=8):
            tl.store(out_ptr + 2, 3)


@compiled
def test_tasks_fill_a_cta_up_to_its_32_warps():
    """The kernel's warps and the partitions', padded to warp groups, are the CTA's; 1024 threads is the limit,
    found when compiling rather than at launch (the misuse cases are in test_op_checks.py)."""
    sig = {"out_ptr": "*i32"}
    assert compile_kernel(_cta_warps, sig, {"W": 16, "R": 1}, num_warps=8).metadata.num_warps == 8 + 16 + 8
    assert compile_kernel(_cta_warps, sig, {"W": 16, "R": 2}, num_warps=4).metadata.num_warps == 4 + 4 + 16 + 8
    assert compile_kernel(_cta_warps, sig, {"W": 1, "R": 1}, num_warps=4).metadata.num_warps == 4 + 12  # 1 + 8 padded
    with pytest.raises(CompilationError) as info:
        compile_kernel(_cta_warps, sig, {"W": 16, "R": 2}, num_warps=8)  # 8 + 8 (the default's replica) + 16 + 8
    assert "a CTA of 40 warps (1280 threads)" in str(info.value)
    assert "a CTA has at most 32 warps (1024 threads)" in str(info.value)


# --------------------------------------------------------------------------------------------
# async_tasks arguments
# --------------------------------------------------------------------------------------------
@triton.jit
def _region_args(out_ptr, ARGS: tl.constexpr, SUSPEND: tl.constexpr):
    if ARGS:
        with tlx.async_tasks(warp_specialize=True, exclusive=True, no_ending_cluster_sync=True,
                             mbarrier_try_wait_suspend_ns=SUSPEND):
            with tlx.async_task("default"):
                tl.store(out_ptr, 1)
            with tlx.async_task(num_warps=4):
                tl.store(out_ptr + 1, 2)
    else:
        with tlx.async_tasks():
            with tlx.async_task("default"):
                tl.store(out_ptr, 1)
            with tlx.async_task(num_warps=4):
                tl.store(out_ptr + 1, 2)


def _code(ttgir: str) -> str:
    """TTGIR without locations (they name the kernel's lines and the lowering's temporary file)."""
    return "\n".join(re.sub(r" loc\(.*\)", "", line) for line in ttgir.splitlines() if not line.startswith("#loc"))


@compiled
def test_region_arguments_are_accepted_and_change_nothing_on_sm90():
    """On sm_90 the fork's region arguments have no code effect that stock Triton lacks (tasks.region_config)."""
    plain = compile_kernel(_region_args, {"out_ptr": "*i32"}, {"ARGS": False, "SUSPEND": None})
    given = compile_kernel(_region_args, {"out_ptr": "*i32"}, {"ARGS": True, "SUSPEND": 2000})
    assert _code(given.asm["ttgir"]) == _code(plain.asm["ttgir"])
    assert "ttg.warp_specialize(" in plain.asm["ttgir"]


@triton.jit
def _two_exclusive_regions(out_ptr):
    with tlx.async_tasks(exclusive=True):
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, 2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr + 2, 1)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 3, 2)


@triton.jit
def _bad_suspend(out_ptr):
    with tlx.async_tasks(mbarrier_try_wait_suspend_ns=-1):
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)


@triton.jit
def _unknown_region_arg(out_ptr):
    with tlx.async_tasks(num_consumers=2):
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)


@compiled
@pytest.mark.parametrize("kernel, message, line", [
    (_two_exclusive_regions, "exclusive=True) requires exactly one warp-specialized region in the kernel, found 2",
     "with tlx.async_tasks():"),
    (_bad_suspend, "mbarrier_try_wait_suspend_ns must be a non-negative int", "mbarrier_try_wait_suspend_ns=-1"),
    (_unknown_region_arg, "num_consumers", "with tlx.async_tasks(num_consumers=2):"),
])
def test_region_argument_errors(kernel, message, line):
    assert message in compile_error(kernel, {"out_ptr": "*i32"}, {}, line)


# --------------------------------------------------------------------------------------------
# Region bodies: compile-time guards around tasks, values from loops and ifs before the region
# --------------------------------------------------------------------------------------------
@triton.jit
def _guarded(out_ptr, n, WITH_WORKER: tl.constexpr):
    count = n // 2
    if n % 2 == 1:  # count is the result of an scf.if
        count += 1
    a = 0
    b = 1
    for _ in range(n):  # a and b are two results of one scf.for
        a, b = b, a + b
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, count)
            tl.store(out_ptr + 2, a)
        if WITH_WORKER:  # the fork allows compile-time guards around tasks
            with tlx.async_task(num_warps=4):
                tl.store(out_ptr + 1, count + 1)
                tl.store(out_ptr + 3, b)


@compiled
def test_guarded_tasks_and_values_from_region_ops_before_the_region():
    ttgir = compile_kernel(_guarded, {"out_ptr": "*i32", "n": "i32"}, {"WITH_WORKER": True}).asm["ttgir"]
    header = re.search(r"ttg\.warp_specialize\(([^)]*)\)", ttgir).group(1).split(", ")
    assert len(header) == 3 and any("#1" in h for h in header), header  # count, and b = result #1 of the loop
    assert len(partitions(ttgir)) == 1
    ttgir = compile_kernel(_guarded, {"out_ptr": "*i32", "n": "i32"}, {"WITH_WORKER": False}).asm["ttgir"]
    assert "ttg.warp_specialize" not in ttgir


@interpreted
@pytest.mark.parametrize("with_worker", [True, False])
def test_guarded_tasks_interpreted(with_worker):
    out = torch.full((4, ), -1, dtype=torch.int32)
    _guarded[(1, )](out, 5, WITH_WORKER=with_worker)
    assert out.tolist() == ([3, 4, 5, 8] if with_worker else [3, -1, 5, -1])


# --------------------------------------------------------------------------------------------
# The interpreter checks the arguments as the compile path does
# --------------------------------------------------------------------------------------------
@triton.jit
def _region_args_interp(out_ptr):
    with tlx.async_tasks(warp_specialize=True, exclusive=True, no_ending_cluster_sync=False,
                         mbarrier_try_wait_suspend_ns=0):
        with tlx.async_task("default"):
            tl.store(out_ptr, 1)
        with tlx.async_task(num_warps=1, registers=24, warp_group_start_id=4):
            tl.store(out_ptr + 1, 2)


@interpreted
def test_region_and_task_arguments_interpreted():
    out = torch.zeros(2, dtype=torch.int32)
    _region_args_interp[(1, )](out)
    assert out.tolist() == [1, 2]


@interpreted
@pytest.mark.parametrize("kernel, error, message", [
    (_default_regs, NotImplementedError, "no register request for the default region"),
    (_both_regs, ValueError, "registers is an alias of num_regs"),
    (_task_ids, NotImplementedError, "task-id lists"),
    (_bad_suspend, ValueError, "mbarrier_try_wait_suspend_ns must be a non-negative int"),
])
def test_interpreter_rejects_what_the_compile_path_rejects(kernel, error, message):
    out = torch.zeros(4, dtype=torch.int32)
    args = {"ALIAS": True} if kernel is _default_regs else {}
    with pytest.raises(Exception) as info:
        kernel[(1, )](out, **args)
    chain, e = [], info.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    assert any(isinstance(x, error) and message in str(x) for x in chain), repr(info.value)


@compiled
def test_async_tasks_refuse_num_ctas_above_one():
    """Stock Triton's num_ctas splits one program over a cluster; its PlanCTA pass would fail on the
    warp-specialized region (the fork's test_store_ws launches that way), naming no TLX op."""
    with pytest.raises(CompilationError, match="tlx.async_tasks: num_ctas=2 splits one program over 2 CTAs"):
        compile_kernel(_replicas, {"out_ptr": "*i32"}, {"REPLICATE": 1, "BM": 64}, num_ctas=2)
