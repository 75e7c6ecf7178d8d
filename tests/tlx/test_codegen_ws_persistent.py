"""Compile-path tests (CPU, sm_90) of the cooperative, ping-pong and dual-K persistent WS GEMMs: the PTX
has what each design needs (TMA loads on mbarriers, wgmma with one group in flight, setmaxnreg, sub-tiled
TMA stores, for ping-pong the named-barrier turns, for dual-K the named-barrier reduction), no register
spills, and the shared memory fits an H100/H200 SM."""
from __future__ import annotations

from dataclasses import replace
import re

import pytest
import triton
from triton.backends.compiler import GPUTarget
from tritium.plugins.inspection import make_source

from tritium.kernels import gemm_ws_cooperative_hopper as coop
from tritium.kernels import gemm_ws_dualk_hopper as dualk
from tritium.kernels import gemm_ws_pingpong_hopper as pingpong
from tritium.kernels import partitions
from tritium.kernels.tiles import WSConfig
from tritium.tlx import triton_compat
from tritium.tlx.placeholders import placeholders

SM90 = GPUTarget("cuda", 90, 32)
MAX_SHARED = 232448  # bytes of shared memory one block may use on sm_90
KERNELS = {"cooperative": (coop, coop.matmul_kernel_ws_cooperative),
           "pingpong": (pingpong, pingpong.matmul_kernel_ws_pingpong)}
TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
COMPILED = {**KERNELS, "dualk": (dualk, dualk.matmul_kernel_ws_dualk)}


def compile_gemm(name: str, cfg, dtype: str = "fp16"):
    module, kernel = COMPILED[name]
    a, b, c = module.descriptor_blocks(cfg)
    sig = {"a_desc": f"tensordesc<{dtype}{a}>", "b_desc": f"tensordesc<{dtype}{b}>",
           "c_desc": f"tensordesc<{dtype}{c}>", "M": "i32", "N": "i32", "K": "i32"}
    consts = module.constexprs(cfg)
    sig.update({f: "constexpr" for f in consts})
    return triton.compile(make_source(kernel, sig, consts), target=SM90, options={"num_warps": 4})


CASES = [("cooperative", coop.LARGE, "fp16"), ("cooperative", coop.SMALL, "bf16"),
         ("pingpong", pingpong.LARGE, "fp16"), ("pingpong", pingpong.SMALL, "bf16")]


@pytest.mark.parametrize("name,cfg,dtype", CASES, ids=[f"{n}-{c.BM}x{c.BN}-{d}" for n, c, d in CASES])
def test_compiles_to_the_persistent_ws_design(name, cfg, dtype):
    k = compile_gemm(name, cfg, dtype)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert not list(placeholders(ttgir))  # every TLX op lowered
    # One warp_specialize: the producer in the default region, two 4-warp consumer replicas.
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\(.*\) num_warps\(4\)", ttgir)) == 2
    assert k.metadata.num_warps == 12 and k.metadata.shared <= MAX_SHARED
    # Register reallocation: consumers grow to NUM_REGS, the producer shrinks.
    if cfg.NUM_REGS is None:
        assert "setmaxnreg" not in ptx
    else:
        assert f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32 \t(\d+);", ptx)
    # TMA loads completing on the full barriers; waits on the full and empty barriers.
    assert triton_compat.ptx_tma_load(2) in ptx
    assert "mbarrier.arrive.expect_tx" in ptx and "mbarrier.try_wait.parity" in ptx
    # wgmma of each consumer's rows (64 per instruction), one group left in flight in the K loop.
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.{ptx_type}\.{ptx_type}", ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    # The epilogue: EPILOGUE_SUBTILES TMA stores per consumer, a staging buffer reused once its store read it.
    assert ptx.count(TMA_STORE) == 2 * cfg.EPILOGUE_SUBTILES
    assert re.search(r"cp\.async\.bulk\.wait_group\.read \t1;", ptx)
    assert [m["swizzle"] for m in k.metadata.tensordesc_meta][:2] == [3, 3]  # 128-byte swizzled operand tiles


def test_pingpong_consumers_take_turns_on_named_barriers():
    ptx = compile_gemm("pingpong", pingpong.LARGE).asm["ptx"]
    turn, threads = pingpong.MMA_TURN.value, partitions.CONSUMER_PAIR_THREADS.value
    waits = re.findall(rf"\bbar(?:rier)?\.sync(?:\.aligned)? \t?({turn}|{turn + 1}), {threads};", ptx)
    arrives = re.findall(rf"\bbar(?:rier)?\.arrive(?:\.aligned)? \t?({turn}|{turn + 1}), {threads};", ptx)
    # Each replica waits for its own turn and hands the other one its turn; replica 1 opens the first.
    assert sorted(waits) == [str(turn), str(turn + 1)]
    assert sorted(arrives) == [str(turn), str(turn), str(turn + 1)]


def test_cooperative_has_no_named_barrier_turns():
    ptx = compile_gemm("cooperative", coop.LARGE).asm["ptx"]
    assert not re.search(r"\bbar(?:rier)?\.arrive", ptx)
    assert not re.search(r"\bbar(?:rier)?\.sync(?:\.aligned)? \t?\d+, 256;", ptx)


@pytest.mark.parametrize("name", KERNELS)
def test_setmaxnreg_only_when_num_regs_is_given(name):
    cfg = replace(KERNELS[name][0].SMALL, NUM_REGS=None)
    ptx = compile_gemm(name, cfg).asm["ptx"]
    assert "setmaxnreg" not in ptx and "wgmma.mma_async" in ptx and "mbarrier.try_wait" in ptx


@pytest.mark.parametrize("subtiles", [1, 2, 4])
def test_epilogue_subtiles(subtiles):
    cfg = replace(coop.SMALL, EPILOGUE_SUBTILES=subtiles)
    k = compile_gemm("cooperative", cfg)
    assert k.asm["ptx"].count(TMA_STORE) == 2 * subtiles
    # The C descriptor's block is one slice of one consumer's rows.
    assert coop.descriptor_blocks(cfg)[2] == [cfg.BM // 2, cfg.BN // subtiles]


@pytest.mark.parametrize("name", KERNELS)
def test_bad_input_is_refused_before_launch(name):
    torch = pytest.importorskip("torch")
    matmul = KERNELS[name][0].matmul
    with pytest.raises(ValueError, match=r"matmul: incompatible shapes \(4, 8\) and \(4, 8\)"):
        matmul(torch.zeros(4, 8, dtype=torch.float16), torch.zeros(4, 8, dtype=torch.float16))
    with pytest.raises(TypeError, match="a and b must both be float16 or both bfloat16, got torch.float32"):
        matmul(torch.zeros(4, 8), torch.zeros(8, 4))
    with pytest.raises(TypeError, match="got torch.float16 and torch.bfloat16"):
        matmul(torch.zeros(4, 8, dtype=torch.float16), torch.zeros(8, 4, dtype=torch.bfloat16))


DUALK_CASES = [(dualk.DEFAULT, "fp16"), (WSConfig(BM=64, BN=64, NUM_STAGES=6, EPILOGUE_SUBTILES=1), "bf16"),
               (WSConfig(BM=64, BN=128, NUM_STAGES=4, EPILOGUE_SUBTILES=2), "bf16"),
               (WSConfig(BM=64, BN=128, NUM_STAGES=6, EPILOGUE_SUBTILES=2, NUM_REGS=None), "fp16")]


def test_dualk_refuses_an_odd_ring_depth():
    """3 stages failed on the H200 (unspecified launch failure at 4097x4095x513), so odd depths are refused."""
    with pytest.raises(Exception, match="NUM_STAGES must be even and at least 4"):
        compile_gemm("dualk", WSConfig(BM=64, BN=64, NUM_STAGES=3, EPILOGUE_SUBTILES=1), "fp16")


@pytest.mark.parametrize("cfg,dtype", DUALK_CASES, ids=[f"{c.BM}x{c.BN}-s{c.NUM_STAGES}-{d}" for c, d in DUALK_CASES])
def test_dualk_compiles_without_spills(cfg, dtype):
    """Dual-K: both replicas issue wgmma on whole BM-row tiles, one group in flight; replica 1 hands its
    partial over on named barriers RED_FULL/RED_FREE (each waited once and arrived on twice: the
    initial free and the per-tile hand-backs); only replica 0 stores C; nothing spills to local memory."""
    k = compile_gemm("dualk", cfg, dtype)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert not list(placeholders(ttgir)) and ttgir.count("ttg.warp_specialize(") == 1
    assert k.metadata.num_warps == 12 and k.metadata.shared <= MAX_SHARED
    assert ".local" not in ptx and "st.local" not in ptx  # no spills
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.{ptx_type}\.{ptx_type}", ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    if cfg.NUM_REGS is None:
        assert "setmaxnreg" not in ptx
    else:
        assert f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    full, free, threads = dualk.RED_FULL.value, dualk.RED_FREE.value, partitions.CONSUMER_PAIR_THREADS.value
    waits = re.findall(rf"\bbar(?:rier)?\.sync(?:\.aligned)? \t?({full}|{free}), {threads};", ptx)
    arrives = re.findall(rf"\bbar(?:rier)?\.arrive(?:\.aligned)? \t?({full}|{free}), {threads};", ptx)
    assert sorted(waits) == [str(full), str(free)] and sorted(arrives) == [str(full), str(free), str(free)]
    assert ptx.count(TMA_STORE) == cfg.EPILOGUE_SUBTILES
    assert dualk.descriptor_blocks(cfg)[2] == [cfg.BM, cfg.BN // cfg.EPILOGUE_SUBTILES]


@pytest.mark.parametrize("name,cfg", [("cooperative", coop.SMALL), ("pingpong", pingpong.SMALL),
                                      ("dualk", dualk.DEFAULT)])
@pytest.mark.parametrize("pdl", [True, False])
def test_programmatic_dependent_launch_waits_before_any_memory_access(name, cfg, pdl):
    """With PDL (launched with ``launch_pdl``), the kernel's first instructions wait for the previous grid
    (griddepcontrol.wait) before any global memory access or TMA, then let the next grid launch; without it,
    neither instruction is there."""
    module, kernel = COMPILED[name]
    a, b, c = module.descriptor_blocks(cfg)
    sig = {"a_desc": f"tensordesc<fp16{a}>", "b_desc": f"tensordesc<fp16{b}>", "c_desc": f"tensordesc<fp16{c}>",
           "M": "i32", "N": "i32", "K": "i32", **{f: "constexpr" for f in module.constexprs(cfg)}, "PDL": "constexpr"}
    ptx = triton.compile(make_source(kernel, sig, {**module.constexprs(cfg), "PDL": pdl}), target=SM90,
                         options={"num_warps": 4, "launch_pdl": pdl}).asm["ptx"]
    body = ptx[ptx.index(".entry"):]
    if not pdl:
        assert "griddepcontrol" not in body
        return
    wait, first_access = body.index("griddepcontrol.wait"), re.search(r"cp\.async|ld\.global|st\.global|red\.", body)
    assert wait < first_access.start() and wait < body.index("griddepcontrol.launch_dependents")


def test_stream_k_compiles_with_its_fix_up_in_shared_memory():
    """The stream-K candidate (bf16, its default tile): wgmma, partial sums stored and read back through L2
    (``ld.global.cg``), each thread's count released and the owner's wait an acquire at GPU scope, no
    spills, and shared memory within an SM's (its fix-up converts the accumulator's layout)."""
    from tritium.kernels import gemm_streamk_hopper as streamk
    cfg = streamk.DEFAULT
    a, b, c = streamk.descriptor_blocks(cfg)
    sig = {"a_desc": f"tensordesc<bf16{a}>", "b_desc": f"tensordesc<bf16{b}>", "c_desc": f"tensordesc<bf16{c}>",
           "M": "i32", "N": "i32", "K": "i32", "ws_ptr": "*fp32", "flags_ptr": "*i32"}
    consts = streamk.constexprs(cfg)
    sig.update({f: "constexpr" for f in consts})
    k = triton.compile(make_source(streamk.matmul_kernel_streamk, sig, consts), target=SM90, options={"num_warps": 4})
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx and ".local" not in ptx
    # the release add: an atom, or (3.9, its result unused) a red
    assert re.search(r"\b(atom|red)\.global\.gpu\.release\.add\.u32", ptx) and "ld.global.gpu.acquire.b32" in ptx
    assert "ld.global.cg" in ptx and k.metadata.shared <= MAX_SHARED and k.metadata.num_warps == 12
