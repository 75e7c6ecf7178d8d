"""Compile-path test (CPU, sm_90) of the split-K persistent WS GEMM: the cooperative design's PTX with
the epilogue as TMA reduce-add stores of fp32 partials, in shared memory an H100/H200 SM has."""
from __future__ import annotations

import re

import pytest
import triton
from triton.backends.compiler import GPUTarget
from tritium.plugins.inspection import make_source

from tritium.kernels import gemm_splitk_hopper as splitk
from tritium.tlx import triton_compat
from tritium.tlx.placeholders import placeholders

SM90 = GPUTarget("cuda", 90, 32)
MAX_SHARED = 232448


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_split_k_compiles_to_reduce_add_stores(dtype):
    cfg = splitk.DEFAULT
    a, b, c = splitk.descriptor_blocks(cfg)
    sig = {"a_desc": f"tensordesc<{dtype}{a}>", "b_desc": f"tensordesc<{dtype}{b}>", "c_desc": f"tensordesc<fp32{c}>",
           "M": "i32", "N": "i32", "K": "i32", **{f: "constexpr" for f in splitk.constexprs(cfg)}}
    k = triton.compile(make_source(splitk.matmul_kernel_splitk, sig, splitk.constexprs(cfg)), target=SM90,
                       options={"num_warps": 4})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert not list(placeholders(ttgir)) and ttgir.count("ttg.warp_specialize(") == 1
    assert k.metadata.num_warps == 12 and k.metadata.shared <= MAX_SHARED
    assert triton_compat.ptx_tma_load(2) in ptx and f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.{ptx_type}\.{ptx_type}", ptx)
    # Every epilogue slice is added into C, none plainly stored.
    reduces = re.findall(r"cp\.reduce\.async\.bulk\.tensor\.2d\.global\.shared::cta\.add\.\S*", ptx)
    assert len(reduces) == 2 * cfg.EPILOGUE_SUBTILES, reduces
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" not in ptx
