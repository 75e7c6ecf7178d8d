"""Compile-path tests (CPU, sm_90) of mbarriers, TMA and warp specialization, and the WS GEMM."""
from __future__ import annotations

from dataclasses import replace
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx
from tritium.kernels import gemm_ws_hopper as ws
from tritium.kernels.tiles import WSConfig
from tritium.plugins.errors import PassError
from tritium.plugins.inspection import compile_kernel
from tritium.tlx import triton_compat

SM90 = GPUTarget("cuda", 90, 32)


def ws_source(cfg: WSConfig) -> ASTSource:
    epi_n = cfg.BN // cfg.EPILOGUE_SUBTILES
    sig = {"a_desc": f"tensordesc<fp16[{cfg.BM // 2}, {cfg.BK}]>", "b_desc": f"tensordesc<fp16[{cfg.BK}, {cfg.BN}]>",
           "c_desc": f"tensordesc<fp16[{cfg.BM // 2}, {epi_n}]>", "M": "i32", "N": "i32", "K": "i32"}
    consts = ws.constexprs(cfg)
    sig.update({f: "constexpr" for f in consts})
    return ASTSource(ws.matmul_kernel_ws_hopper, sig, consts)


@pytest.mark.parametrize("cfg", [ws.LARGE, ws.SMALL], ids=["128x256-split", "128x128"])
def test_ws_gemm_compiles_to_tma_mbarriers_wgmma_and_setmaxnreg(cfg):
    k = triton.compile(ws_source(cfg), target=SM90, options={"num_warps": 4})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "tt.elementwise_inline_asm" not in ttgir and "scf.if" not in ttgir
    # One warp_specialize: the producer in the default region, two 4-warp consumer replicas.
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\(.*\) num_warps\(4\)", ttgir)) == 2
    assert "requestedRegisters = array<i32: 232, 232>" in ttgir
    assert k.metadata.num_warps == 12
    # The descriptors carry the buffers' 128B-swizzled encoding into the host-side tensor maps.
    assert [m["swizzle"] for m in k.metadata.tensordesc_meta] == [3, 3, 3]
    assert triton_compat.ptx_tma_load(2) in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx  # the TMA-store epilogue
    assert "mbarrier.arrive.expect_tx" in ptx and "mbarrier.try_wait.parity" in ptx and "mbarrier.arrive." in ptx
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.f16\.f16", ptx)
    assert "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx


def test_setmaxnreg_only_when_num_regs_is_given():
    k = triton.compile(ws_source(replace(ws.SMALL, NUM_REGS=None)), target=SM90, options={"num_warps": 4})
    assert "requestedRegisters" not in k.asm["ttgir"] and "setmaxnreg" not in k.asm["ptx"]
    assert "wgmma.mma_async" in k.asm["ptx"] and "mbarrier.try_wait" in k.asm["ptx"]


def test_replicas_get_their_own_replica_id():
    ttgir = triton.compile(ws_source(ws.SMALL), target=SM90, options={"num_warps": 4}).asm["ttgir"]
    p0, p1 = ttgir.split("partition0(")[1].split("partition1(")

    def a_index(part: str) -> str:
        """How a consumer computes the index of its A buffer (2 * stage + replica id)."""
        index = re.search(r"ttg\.memdesc_index %\w+\[(%\w+)\] : !ttg\.memdesc<8x64x64xf16", part).group(1)
        return re.search(rf"{re.escape(index)} = (\S+) ([^:]*) :", part).group(1, 2)

    # Replica 0: 2 * stage (the "+ 0" folded away); replica 1: 2 * stage + 1.
    assert a_index(p0)[0] == "arith.muli"
    op, args = a_index(p1)
    assert op == "arith.addi" and re.search(rf"{re.escape(args.split(', ')[1])} = arith.constant 1 : i32", p1)


@triton.jit
def _tma_roundtrip(in_desc, out_desc, p, M, N, DEVICE_DESC: tl.constexpr):
    """TMA load -> mbarrier -> TMA store, without warp specialization."""
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    if DEVICE_DESC:
        desc = tlx.make_tensor_descriptor(None, p, [M, N], [N, 1], [64, 64])
        tlx.async_descriptor_load(desc, buf, [0, 64], bar)
    else:
        tlx.async_descriptor_load(in_desc, buf, [0, 64], bar)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(out_desc, buf, [64, 0])
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("device_desc", [False, True], ids=["host-descriptor", "device-descriptor"])
def test_tma_and_mbarriers_without_warp_specialization(device_desc):
    sig = {"in_desc": "tensordesc<fp16[64, 64]>", "out_desc": "tensordesc<fp16[64, 64]>", "p": "*fp16", "M": "i32",
           "N": "i32", "DEVICE_DESC": "constexpr"}
    k = triton.compile(ASTSource(_tma_roundtrip, sig, {"DEVICE_DESC": device_desc}), target=SM90)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttng.init_barrier" in ttgir and "ttng.barrier_expect" in ttgir and "ttng.wait_barrier" in ttgir
    assert "ttng.async_tma_copy_global_to_local" in ttgir and "ttng.async_tma_copy_local_to_global" in ttgir
    assert ("ttng.tensormap_create" in ttgir) == device_desc
    assert "mbarrier.init.shared::cta.b64" in ptx and "mbarrier.try_wait.parity" in ptx
    assert triton_compat.ptx_tma_load(2) in ptx
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)


# --------------------------------------------------------------------------------------------
# Misuse: compile-time errors pointing at the kernel line
# --------------------------------------------------------------------------------------------
@triton.jit
def _task_outside_tasks(x_ptr):
    with tlx.async_task(num_warps=4):
        tl.store(x_ptr, 1.0)


@triton.jit
def _two_default_tasks(x_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr, 1.0)
        with tlx.async_task("default"):
            tl.store(x_ptr + 1, 1.0)


@triton.jit
def _regs_for_some_tasks(x_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr, 1.0)
        with tlx.async_task(num_warps=4, num_regs=232):
            tl.store(x_ptr + 1, 1.0)
        with tlx.async_task(num_warps=4):
            tl.store(x_ptr + 2, 1.0)


@triton.jit
def _wait_on_buffer(x_ptr):
    buf = tlx.local_alloc((1, ), tl.int64, 2)
    tlx.barrier_wait(buf[0], 0)


@triton.jit
def _replica_id_outside_tasks(x_ptr):
    tl.store(x_ptr + tlx.async_task_replica_id(), 1.0)


@pytest.mark.parametrize("kernel, message, line", [
    (_task_outside_tasks, "tlx.async_task must be used inside `with tlx.async_tasks():`",
     "with tlx.async_task(num_warps=4):"),
    (_two_default_tasks, "there can be only one async_task('default')", "with tlx.async_tasks():"),
    (_regs_for_some_tasks, "num_regs (registers) must be given for every non-default task or for none "
     "(1 of 2 task copies have it)", "with tlx.async_tasks():"),
    (_wait_on_buffer, "tlx.barrier_wait expects an mbarrier (from tlx.alloc_barriers)", "tlx.barrier_wait(buf[0], 0)"),
    (_replica_id_outside_tasks, "must be called inside a tlx.async_task", "tlx.async_task_replica_id()"),
])
def test_misuse_errors_name_the_kernel_line(kernel, message, line):
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(kernel, {"x_ptr": "*fp32"}, {}), target=SM90)
    assert message in str(info.value) and line in str(info.value)


@triton.jit
def _tma_block_mismatch(desc):
    buf = tlx.local_alloc((64, 32), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(desc, buf, [0, 0], bar)


def test_tma_block_shape_must_match_the_buffer():
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(_tma_block_mismatch, {"desc": "tensordesc<fp16[64, 64]>"}, {}), target=SM90)
    text = str(info.value)
    assert "descriptor block fp16[64, 64] does not match result buffer fp16[64, 32]" in text
    assert "tlx.async_descriptor_load(desc, buf, [0, 0], bar)" in text


@triton.jit
def _loaded_value_captured(x_ptr):
    v = tl.load(x_ptr)  # not recomputable inside a task
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr + 1, v)
        with tlx.async_task(num_warps=4):
            tl.store(x_ptr + 2, v)


def test_values_a_task_cannot_receive_are_reported():
    with pytest.raises(PassError, match=r"used inside a task but defined before it by tt.load"):
        triton.compile(ASTSource(_loaded_value_captured, {"x_ptr": "*fp32"}, {}), target=SM90)


@triton.jit
def _desc_load(desc, offset):
    return desc.load([offset])


@triton.jit
def _desc_store(desc, offset, data):
    desc.store([offset], data)


@triton.jit
def _device_descs_in_a_task(input_ptr, output_ptr, SIZE, BLOCK: tl.constexpr):
    """The fork's test_tensor_descriptor_ws_capture: descriptors made before the region, used by a task through
    inlined helpers."""
    desc_in = tl.make_tensor_descriptor(input_ptr, shape=[SIZE], strides=[tl.constexpr(1)], block_shape=[BLOCK])
    desc_out = tl.make_tensor_descriptor(output_ptr, shape=[SIZE], strides=[tl.constexpr(1)], block_shape=[BLOCK])
    offset = tl.program_id(0) * BLOCK
    with tlx.async_tasks():
        with tlx.async_task("default"):
            pass
        with tlx.async_task(num_warps=4):
            _desc_store(desc_out, offset, _desc_load(desc_in, offset))


def test_a_device_descriptor_made_before_the_region_is_made_again_in_the_task():
    k = compile_kernel(_device_descs_in_a_task, {"input_ptr": "*fp32", "output_ptr": "*fp32", "SIZE": "i32"}, "sm90",
                       constexprs={"BLOCK": 64}, aligned=("input_ptr", "output_ptr"))
    ttgir = k.asm["ttgir"]
    assert ttgir[ttgir.index("partition0"):].count("ttng.tensormap_create") == 2
    assert "cp.async.bulk.tensor.1d" in k.asm["ptx"]
