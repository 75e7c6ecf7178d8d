"""Source locations survive the TLX lowering: each op built or written in place of a placeholder keeps the
placeholder's location, and the arguments of loop bodies keep theirs through the round trips of the text
lowering and the copy fallback (printed, they carry none), of the AMD text passes (dot_operands,
warp_pipeliner) and of tma_llvm on the LLVM dialect, so a TLX op's TTGIR (and the PTX ``.loc`` after it) points
at the kernel line that called it and no location names the lowering's temporary file."""
from __future__ import annotations

import inspect
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritium.tlx as tlx
from tritium.plugins.inspection import pipeline_report
from tritium.tlx.ttgir_text import source_location

SM90 = GPUTarget("cuda", 90, 32)


@triton.jit
def located_kernel(out_ptr, BLOCK: tl.constexpr):
    bars = tlx.alloc_barriers(num_barriers=2, arrive_count=1)  # line: alloc_barriers
    bar = tlx.local_view(bars, 1)  # line: local_view
    buf = tlx.local_alloc((BLOCK, ), tl.float32, 2)  # line: local_alloc
    tlx.barrier_arrive(bar)  # line: barrier_arrive
    tlx.barrier_wait(bar, 0)  # line: barrier_wait
    tlx.fence_async_shared()  # line: fence_async_shared
    tlx.local_store(tlx.local_view(buf, 0), tl.zeros((BLOCK, ), tl.float32))
    tl.store(out_ptr + tl.arange(0, BLOCK), tlx.local_load(tlx.local_view(buf, 0)))


@triton.jit
def ws_kernel(a_desc, c_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr):
    """A producer task TMA-loads A tiles that the default task multiplies by their transpose (async_dot), then
    stores through shared memory by TMA and reads back with local_load: built ops, text-lowered TMA ops and
    outlined tasks, with loops in both tasks."""
    a_bufs = tlx.local_alloc((BM, BK), tl.float16, 2)  # line: a_bufs
    c_bufs = tlx.local_alloc((BM, BM), tl.float16, 1)  # line: c_bufs
    full = tlx.alloc_barriers(num_barriers=2, arrive_count=1)  # line: full
    empty = tlx.alloc_barriers(num_barriers=2, arrive_count=1)  # line: empty
    with tlx.async_tasks():
        with tlx.async_task("default"):
            acc = tl.zeros((BM, BM), tl.float32)
            for k in range(0, K, BK):
                s = (k // BK) % 2
                tlx.barrier_wait(tlx.local_view(full, s), (k // BK // 2) & 1)  # line: wait full
                a = tlx.local_view(a_bufs, s)
                acc = tlx.async_dot(a, tlx.local_trans(a), acc)  # line: async_dot
                acc = tlx.async_dot_wait(0, acc)  # line: async_dot_wait
                tlx.barrier_arrive(tlx.local_view(empty, s))  # line: arrive empty
            c = tlx.local_view(c_bufs, 0)
            tlx.local_store(c, acc.to(tl.float16))  # line: local_store
            tlx.fence_async_shared()  # line: fence
            tlx.async_descriptor_store(c_desc, c, [0, 0])  # line: tma store
            tlx.async_descriptor_store_wait(0)  # line: store wait
            offs = tl.arange(0, BM)
            tl.store(out_ptr + offs[:, None] * BM + offs[None, :], tlx.local_load(c))  # line: local_load
        with tlx.async_task(num_warps=1, registers=24):
            for k in range(0, K, BK):
                s = (k // BK) % 2
                tlx.barrier_wait(tlx.local_view(empty, s), ((k // BK // 2) & 1) ^ 1)  # line: wait empty
                bar = tlx.local_view(full, s)
                tlx.barrier_expect_bytes(bar, BM * BK * 2)  # line: expect
                tlx.async_descriptor_load(a_desc, tlx.local_view(a_bufs, s), [0, k], bar,  # line: tma load
                                          eviction_policy="evict_last")


WS_SIGNATURE = {"a_desc": "tensordesc<fp16[64, 64]>", "c_desc": "tensordesc<fp16[64, 64]>", "out_ptr": "*fp16",
                "K": "i32", "BM": "constexpr", "BK": "constexpr"}
WS_CONSTS = {"BM": 64, "BK": 64}


def _line_of(kernel, tag: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if line.rstrip().endswith(f"# line: {tag}"))


def _op_lines(ttgir: str, op: str) -> list[str]:
    return [line for line in ttgir.splitlines() if re.match(rf"^\s*(?:%\S+ = )?{re.escape(op)}\b", line)]


def _where(ttgir: str, line: str) -> str:
    return source_location(ttgir, re.search(r" loc\(.*\)$", line).group(0))


#: TTGIR op -> the TLX call whose line it must carry (located_kernel).
EXPECTED = {"ttng.init_barrier": "alloc_barriers", "ttg.local_dealloc": "alloc_barriers",
            "ttng.arrive_barrier": "barrier_arrive", "ttng.wait_barrier": "barrier_wait",
            "ttng.fence_async_shared": "fence_async_shared"}


@pytest.mark.parametrize("op", sorted(EXPECTED))
def test_a_tlx_op_keeps_its_kernel_line(op):
    k = triton.compile(ASTSource(located_kernel, {"out_ptr": "*fp32"}, {"BLOCK": 128}), target=SM90,
                       options={"num_warps": 4})
    ttgir = k.asm["ttgir"]
    found = _op_lines(ttgir, op)
    assert found, f"{op} is not in the TTGIR"
    path = located_kernel.fn.__code__.co_filename
    assert _where(ttgir, found[0]) == f"{path}:{_line_of(located_kernel, EXPECTED[op])}"


#: TTGIR op -> the TLX calls of ws_kernel whose lines its instances carry, all of them and no other.
WS_EXPECTED = {
    "ttg.local_alloc": ("a_bufs", "c_bufs", "full", "empty"),
    "ttng.init_barrier": ("full", "empty"),
    "ttg.local_dealloc": ("full", "empty"),
    "ttng.wait_barrier": ("wait full", "wait empty"),
    "ttg.memdesc_trans": ("async_dot", ),
    "ttng.warp_group_dot": ("async_dot", ),
    "ttng.warp_group_dot_wait": ("async_dot_wait", ),
    "ttng.arrive_barrier": ("arrive empty", ),
    "ttg.local_store": ("local_store", ),
    "ttg.local_load": ("local_load", ),
    "ttng.fence_async_shared": ("fence", ),
    "ttng.async_tma_copy_local_to_global": ("tma store", ),  # text lowerings from here
    "ttng.async_tma_store_wait": ("store wait", ),
    "ttng.barrier_expect": ("expect", ),
    "ttng.async_tma_copy_global_to_local": ("tma load", ),  # under the L2 hint's name location
}


@pytest.fixture(scope="module")
def ws_compiled():
    return pipeline_report(ws_kernel, WS_SIGNATURE, SM90, constexprs=WS_CONSTS, options={"num_warps": 4},
                           diff_around=("tlx.lower_placeholders", "tlx.finish_tma"))


@pytest.mark.parametrize("op", sorted(WS_EXPECTED))
def test_every_op_of_a_tlx_call_carries_its_line(ws_compiled, op):
    ttgir = ws_compiled[0].asm["ttgir"]
    found = _op_lines(ttgir, op)
    assert found, f"{op} is not in the TTGIR"
    path = ws_kernel.fn.__code__.co_filename
    assert {_where(ttgir, line) for line in found} == {f"{path}:{_line_of(ws_kernel, t)}" for t in WS_EXPECTED[op]}


def _header_names(ir: str) -> list[list[str]]:
    """The argument names of every ``scf.for`` header (induction variable, then iter_args), without the
    printer's ``_N`` suffix: a name comes from the argument's name location, ``%argN`` from none."""
    headers = (re.search(r"\bscf\.for (.*?)(?: -> \(| : )", line) for line in ir.splitlines())
    return [[re.sub(r"_\d+$", "", n) for n in re.findall(r"(%[\w$.-]+) = ", h.group(1))] for h in headers if h]


def test_loop_arguments_keep_their_locations_through_the_lowering(ws_compiled):
    stage = ws_compiled[1].stage("ttgir")
    key = next(k for k in stage.snapshots if k.startswith("after ") and "tlx.lower_placeholders" in k)
    before, after = stage.snapshots["before" + key[len("after"):]], stage.snapshots[key]
    assert _header_names(before) == [["%k", "%acc"], ["%k"]]
    assert _header_names(after) == _header_names(before)
    assert "tritium-" not in after and ".mlir\"" not in after


def test_no_location_names_a_temporary_file(ws_compiled):
    k = ws_compiled[0]
    for asm in ("ttgir", "llir", "ptx"):
        assert "tritium-" not in k.asm[asm] and ".mlir\"" not in k.asm[asm], asm
    assert _header_names(k.asm["ttgir"])[1] == ["%k"]  # the producer's loop, which no stock pass rewrites


#: PTX instruction -> the TLX call of ws_kernel on whose line the ``.loc`` before it is.
PTX_EXPECTED = {"wgmma.mma_async": "async_dot", "fence.proxy.async": "fence", "mbarrier.arrive.expect_tx": "expect",
                "cp.async.bulk.tensor.2d.global.shared": "tma store", "cp.async.bulk.tensor.2d.shared": "tma load"}


@pytest.mark.parametrize("instruction", sorted(PTX_EXPECTED))
def test_ptx_line_info_points_at_the_tlx_call(ws_compiled, instruction):
    ptx, line, seen = ws_compiled[0].asm["ptx"], None, set()
    for text in ptx.splitlines():
        m = re.match(r"\s*\.loc\s+\d+\s+(\d+)\s", text)
        if m:
            line = int(m.group(1))
        elif re.search(rf"(?:^|\s){re.escape(instruction)}[.:\s]", text):
            seen.add(line)
    assert seen == {_line_of(ws_kernel, PTX_EXPECTED[instruction])}


def test_loop_arguments_keep_their_locations_through_the_copy_fallback():
    """tlx/copy_fallback.py rewrites a module as text too when it makes copies synchronous (here: strides
    that the JIT does not mark divisible by 16)."""
    from async_copy_kernels import TILE, unaligned_gemm

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in (
        "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}}
    consts = {**TILE, "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    sig.update({n: "constexpr" for n in consts})
    with pytest.warns(UserWarning, match="runs as a synchronous copy"):
        _, report = pipeline_report(unaligned_gemm, sig, SM90, constexprs=consts, options={"num_warps": 4},
                                    aligned=("a_ptr", "b_ptr", "c_ptr"), diff_around=("tlx.async_copy_fallback", ))
    stage = report.stage("ttgir")
    key = next(k for k in stage.snapshots if k.startswith("after ") and "tlx.async_copy_fallback" in k)
    before, after = stage.snapshots["before" + key[len("after"):]], stage.snapshots[key]
    assert before != after and _header_names(before) and all(n != "%arg" for h in _header_names(before) for n in h)
    assert _header_names(after) == _header_names(before)


def _around(report, stage: str, pass_name: str) -> tuple[str, str]:
    snapshots = report.stage(stage).snapshots
    key = next(k for k in snapshots if k.startswith("after ") and pass_name in k)
    return snapshots["before" + key[len("after"):]], snapshots[key]


def test_loop_arguments_keep_their_locations_through_the_amd_text_passes():
    """dot_operands retypes the operand buffers of this gfx950 GEMM and warp_pipeliner splits its loop into
    stages, each as text; the warp pipeliner runs last in the stage, with no canonicalizer after it."""
    from warp_pipeline_kernels import staged_gemm

    k, report = pipeline_report(staged_gemm, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K_ITERS": "i32"},
                                GPUTarget("hip", "gfx950", 64), constexprs={"BM": 64, "BN": 64, "BK": 32},
                                options={"num_warps": 8}, aligned=("a_ptr", "b_ptr", "c_ptr"),
                                diff_around=("tlx.dot_operand_layouts", ))
    before, after = _around(report, "ttgir", "tlx.dot_operand_layouts")
    assert before != after and _header_names(before) and all(n != "%arg" for h in _header_names(before) for n in h)
    assert _header_names(after) == _header_names(before)
    ttgir = k.asm["ttgir"]
    assert "rocdl.s.setprio" in ttgir and "tlx.arg_loc" not in ttgir  # pipelined; no marker left
    assert _header_names(ttgir) == _header_names(before)
    for asm in ("ttgir", "llir"):
        assert "tritium-" not in k.asm[asm] and ".mlir\"" not in k.asm[asm], asm


def _block_headers(llvm: str) -> list[str]:
    """The argument lists of the LLVM dialect's blocks, numbered values and name suffixes left out."""
    return [re.sub(r"%\d+|(%[\w$.-]+?)_\d+\b", lambda m: m.group(1) or "%", m.group(1))
            for m in re.finditer(r"^\s*\^bb\d+\((.*)\):", llvm, re.M)]


def test_loop_arguments_keep_their_locations_through_tma_llvm(ws_compiled):
    """tma_llvm edits the producer loop's TMA load (its L2 hint) as text on the LLVM dialect, where the
    printer writes every block argument's location: the loop's blocks come back with theirs."""
    before, after = _around(ws_compiled[1], "llir", "tlx.finish_tma")
    assert "tlx.ptx:l2:evict_last" in before and before != after
    headers = _block_headers(before)
    assert any('%k: i32 loc("k"' in h for h in headers) and _block_headers(after) == headers
