"""The flash-attention backward kernel compiled for sm_90 on the CPU: warp specialization, wgmma, the Q/dO ring's
TMA loads, dQ's TMA reduce-add and, at head dim 128, the consumers' meeting on a named barrier."""
from __future__ import annotations

import re

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from codegen_hashes import ATTENTION_BWD_CASES, attention_bwd_signature
from tritium.kernels import attention_bwd_hopper as bwd
from tritium.tlx import placeholders, triton_compat

SM90 = GPUTarget("cuda", 90, 32)


@pytest.mark.parametrize("head_dim, dtype, causal", ATTENTION_BWD_CASES)
def test_backward_compiles_to_ws_wgmma_and_tma_reduce_add(head_dim, dtype, causal):
    cfg = bwd.CONFIGS[head_dim]
    consts = {"HEAD_DIM": head_dim, "CAUSAL": causal, **cfg._asdict()}
    sig = {**attention_bwd_signature(head_dim, dtype), **dict.fromkeys(consts, "constexpr")}
    k = triton.compile(ASTSource(bwd.attn_bwd_ws_hopper, sig, consts), target=SM90, options={"num_warps": 4})
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
