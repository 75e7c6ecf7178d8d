"""The flash-attention backward kernel compiled for sm_90 on the CPU: warp specialization, wgmma, the Q/dO ring's
TMA loads, dQ's TMA reduce-add and, at head dim 128, the consumers' meeting on a named barrier."""
from __future__ import annotations

import re
import subprocess

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from codegen_hashes import ATTENTION_BWD_CASES, attention_bwd_signature
from tritium import compat
from tritium.kernels import attention_bwd_hopper as bwd
from tritium.tlx import placeholders, triton_compat

SM90 = GPUTarget("cuda", 90, 32)


def compiled(cfg: bwd.Config, head_dim: int, dtype: str, causal: bool):
    consts = {"HEAD_DIM": head_dim, "CAUSAL": causal, **cfg._asdict()}
    sig = {**attention_bwd_signature(head_dim, dtype), **dict.fromkeys(consts, "constexpr")}
    return triton.compile(ASTSource(bwd.attn_bwd_ws_hopper, sig, consts), target=SM90, options={"num_warps": 4})


@pytest.mark.parametrize("head_dim, dtype, causal", ATTENTION_BWD_CASES)
def test_backward_compiles_to_ws_wgmma_and_tma_reduce_add(head_dim, dtype, causal):
    cfg = bwd.CONFIGS[head_dim]
    k = compiled(cfg, head_dim, dtype, causal)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert f'tt.elementwise_inline_asm "{placeholders.PREFIX}' not in ttgir  # every TLX placeholder lowered
    # The producer in the default region, two 4-warp consumer warpgroups with setmaxnreg.
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\(.*\) num_warps\(4\)", ttgir)) == 2
    assert f"requestedRegisters = array<i32: {cfg.NUM_REGS}, {cfg.NUM_REGS}>" in ttgir
    assert k.metadata.num_warps == 12 and k.metadata.shared <= 232448  # Hopper's 227 KB per block
    assert f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    # Five GEMMs per Q block as wgmma (dQ as two at head dim 128, one per dS^T half), in the masked and the
    # unmasked loop of each consumer: S^T and dP^T are [64, BLOCK_M], dV and dK [64, head_dim].
    gemms = 6 if cfg.SPLIT_DQ else 5
    assert ttgir.count("ttng.warp_group_dot ") == 2 * 2 * gemms
    ty = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n{cfg.BLOCK_M}k16.f32.{ty}.{ty}" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{head_dim}k16.f32.{ty}.{ty}" in ptx
    # 4-D TMA loads on mbarriers; dQ leaves by fp32 TMA reduce-add, dK and dV by TMA stores.
    assert triton_compat.ptx_tma_load(4) in ptx and "mbarrier.try_wait.parity" in ptx
    # (3.8 prints the descriptor's block type without ``tensor<...>``)
    dq = re.findall(r"ttng\.async_tma_reduce add, .* : !tt\.tensordesc<(?:tensor<)?1x1x(\d+)x(\d+)xf32", ttgir)
    assert dq and set(dq) == {(str(cfg.BLOCK_M), str(bwd.dq_cols(cfg, head_dim)))}
    assert "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.bulk_group" in ptx
    assert "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group" in ptx
    assert "ex2.approx" in ptx  # P in base 2
    assert ("bar.sync 9, 256;" in ptx) == cfg.SPLIT_DQ  # both dS^T halves stored before the split dQ reads them


#: The opt-in schedules the GPU sweep times (scripts/gpu_attention_bwd_sweep.py) on the shipped configs, with the
#: spill bytes ptxas (3.6) reports for them: none at head dim 64; at 128 about the shipped config's (464-520) with
#: DQ_FIRST, twice that with the look-ahead, which fits at all only with DK_SS (else ptxas serializes its wgmmas).
SCHEDULED = [(64, "bf16", False, {"DQ_FIRST": True}, 0), (64, "fp16", True, {"DQ_AHEAD": 1}, 0),
             (64, "bf16", True, {"DQ_AHEAD": 2}, 0), (64, "fp16", False, {"DQ_AHEAD": 1, "DQ_FIRST": True}, 0),
             (64, "bf16", False, {"DQ_AHEAD": 2, "DQ_FIRST": True}, 0), (128, "fp16", True, {"DQ_FIRST": True}, 528),
             (128, "bf16", False, {"DQ_AHEAD": 1, "DQ_FIRST": True, "DK_SS": True}, 1040)]


@pytest.mark.parametrize("head_dim, dtype, causal, schedule, spilled", SCHEDULED,
                         ids=[f"d{c[0]}-{c[1]}-{'causal' if c[2] else 'full'}-"
                              + "-".join(f"{k}={v}" for k, v in c[3].items()) for c in SCHEDULED])
def test_scheduled_backward_keeps_its_wgmmas_asynchronous(head_dim, dtype, causal, schedule, spilled, tmp_path):
    """A schedule that leaves wgmmas in flight under dQ's store compiles to the waits it counts on, and ptxas
    keeps the wgmmas asynchronous (it serializes them where an accumulator is read while a wgmma stays in flight
    across a loop's back edge, or where registers run out)."""
    cfg = bwd.CONFIGS[head_dim]._replace(**schedule)
    k = compiled(cfg, head_dim, dtype, causal)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    # The look-ahead issues S^T (and dP^T) once before the consumer's loops and in place of each step's own.
    gemms = 6 if cfg.SPLIT_DQ else 5
    assert ttgir.count("ttng.warp_group_dot ") == 2 * (2 * gemms + cfg.DQ_AHEAD)
    # dQ is waited for with the look-ahead's GEMMs (and with DQ_FIRST dK) still in flight.
    assert f"wgmma.wait_group.sync.aligned {cfg.DQ_AHEAD + cfg.DQ_FIRST};" in ptx
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    out = subprocess.run([compat.ptxas_path(90), "-arch=sm_90a", "-v", str(path), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, check=True).stderr
    assert "wgmma.mma_async instructions are serialized" not in out, out
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", out)]
    assert spills and max(spills) <= spilled, out
