"""The warp-specialized flash-attention kernels compiled for sm_90 on the CPU, and the launcher's input checks."""
from __future__ import annotations

import functools
import re
import subprocess

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from tritium import compat
from tritium.kernels import attention as attn
from tritium.kernels import attention_ws_hopper as ws
from tritium.kernels import attention_ws_pipelined_hopper as pp
from tritium.tlx import layouts, placeholders, triton_compat

SM90 = GPUTarget("cuda", 90, 32)
KERNELS = {"ws": ws.attn_fwd_ws_hopper, "pipelined": pp.attn_fwd_ws_pipelined_hopper}


@functools.lru_cache(maxsize=None)
def compiled(variant: str, head_dim: int, dtype: str, causal: bool):
    cfg = ws.CONFIGS[head_dim]
    half, bn = cfg.BLOCK_M // 2, cfg.BLOCK_N
    sig = {"desc_q": f"tensordesc<{dtype}[1, 1, {half}, {head_dim}]>",
           "desc_k": f"tensordesc<{dtype}[1, 1, {bn}, {head_dim}]>",
           "desc_v": f"tensordesc<{dtype}[1, 1, {bn}, {head_dim}]>",
           "desc_o": f"tensordesc<{dtype}[1, 1, {half}, {head_dim}]>", "sm_scale": "fp32", "H": "i32", "N_CTX": "i32"}
    consts = {"HEAD_DIM": head_dim, "CAUSAL": causal, **cfg._asdict()}
    sig.update(dict.fromkeys(consts, "constexpr"))
    return triton.compile(ASTSource(KERNELS[variant], sig, consts), target=SM90, options={"num_warps": 4})


CASES = [(v, d, dt, c) for v in KERNELS for d, dt in ((64, "bf16"), (128, "fp16")) for c in (False, True)]


@pytest.mark.parametrize("variant, head_dim, dtype, causal", CASES)
def test_attention_compiles_to_tma_mbarriers_wgmma_and_setmaxnreg(variant, head_dim, dtype, causal):
    k = compiled(variant, head_dim, dtype, causal)
    cfg = ws.CONFIGS[head_dim]
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert f'tt.elementwise_inline_asm "{placeholders.PREFIX}' not in ttgir  # every TLX placeholder lowered
    # The producer in the default region, two 4-warp consumer warpgroups with setmaxnreg.
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\(.*\) num_warps\(4\)", ttgir)) == 2
    assert f"requestedRegisters = array<i32: {cfg.NUM_REGS}, {cfg.NUM_REGS}>" in ttgir
    assert k.metadata.num_warps == 12 and k.metadata.shared <= 232448  # Hopper's 227 KB per block
    assert f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    # 4-D TMA: loads completing on mbarriers, and the output's TMA store.
    assert triton_compat.ptx_tma_load(4) in ptx
    assert "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group" in ptx
    assert "mbarrier.arrive.expect_tx" in ptx and "mbarrier.try_wait.parity" in ptx
    # Q, K, V, O boxes: 128B-swizzled rows of 64 elements (a 128-wide head is two boxes), as the buffers.
    q_box, kv_box = [1, 1, cfg.BLOCK_M // 2, 64], [1, 1, cfg.BLOCK_N, 64]
    assert [m["block_size"] for m in k.metadata.tensordesc_meta] == [q_box, kv_box, kv_box, q_box]
    assert all(m["swizzle"] == 3 for m in k.metadata.tensordesc_meta)
    # S = Q K^T from shared memory (N = BLOCK_N); O += P V with P in registers (N = head dim).
    ty = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n{cfg.BLOCK_N}k16.f32.{ty}.{ty}" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{head_dim}k16.f32.{ty}.{ty}" in ptx
    assert re.search(rf"ttng\.warp_group_dot %\S+, %\S+, %\S+ {{[^}}]*}} : tensor<64x{cfg.BLOCK_N}x{ty}, "
                     r"#ttg\.dot_op<\{opIdx = 0", ttgir)
    assert "ex2.approx" in ptx  # the softmax in base 2
    turns = {"bar.sync 9, 256", "bar.sync 10, 256", "bar.arrive 9, 256", "bar.arrive 10, 256"}
    if variant == "pipelined":
        # Ping-pong turns on named barriers 9/10; S_j waited for while P_{j-1} V_{j-1} runs.
        assert all(t in ptx for t in turns)
        assert "wgmma.wait_group.sync.aligned 1;" in ptx
    else:
        assert not any(t in ptx for t in turns) and "wgmma.wait_group.sync.aligned 1;" not in ptx


#: Triton 3.8.0 only (3.6, 3.7 and 3.9 are clean): ptxas serializes this kernel's wgmmas (C7513, "non wgmma
#: instructions defining input registers of a wgmma between start and end of the pipeline stage"); not diagnosed.
SERIALIZED_ON_38 = pytest.mark.xfail(compat.TRITON_VERSION[:2] == (3, 8), strict=True,
                                     reason="known gap: on Triton 3.8 ptxas serializes the pipelined causal fp16 "
                                            "head-128 kernel's wgmmas (C7513); not diagnosed")


@pytest.mark.parametrize("variant, head_dim, dtype, causal", [
    pytest.param(*c, marks=SERIALIZED_ON_38) if c == ("pipelined", 128, "fp16", True) else c for c in CASES if c[3]])
def test_attention_fits_its_registers(variant, head_dim, dtype, causal, tmp_path):
    """ptxas places everything in registers: no spills (which would also serialize the wgmma pipeline)."""
    ptx = tmp_path / "k.ptx"
    ptx.write_text(compiled(variant, head_dim, dtype, causal).asm["ptx"])
    out = subprocess.run([compat.ptxas_path(90), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, check=True).stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in out, out
    assert "wgmma.mma_async instructions are serialized" not in out, out


def test_nvmma_buffers_reshape_keeping_rows():
    nvmma = layouts.NVMMASharedLayout(128, 16, 4)
    assert layouts.reshaped(nvmma, (1, 1, 64, 64), (64, 64)) == layouts.NVMMASharedLayout(128, 16, 2)
    with pytest.raises(NotImplementedError, match="keeping their last dimension"):
        layouts.reshaped(nvmma, (1, 1, 64, 64), (1, 64, 2, 32))


def test_the_launcher_picks_persistent_but_for_long_causal_hd128_forward_only():
    from tritium.kernels.attention_persistent_hopper import attn_fwd_persistent_hopper as persistent
    assert attn.pick_kernel(128, 64, False) is persistent
    assert attn.pick_kernel(16384, 64, True) is persistent
    assert attn.pick_kernel(16384, 128, False) is persistent
    assert attn.pick_kernel(16384, 128, True) is pp.attn_fwd_ws_pipelined_hopper
    assert attn.pick_kernel(16384, 128, True, gqa=True) is persistent
    assert attn.pick_kernel(16384, 128, True, lse=True) is persistent


def _qkv(shape=(1, 2, 16, 64), dtype=torch.float16):
    return [torch.zeros(shape, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize("args, error, message", [
    (lambda q, k, v: (q.numpy(), k, v), TypeError, "attention: q must be a torch.Tensor, got ndarray"),
    (lambda q, k, v: (q[0], k, v), ValueError, r"attention: q must be 4-D \[batch, heads, seq, head_dim\]"),
    (lambda q, k, v: (q, k.float(), v), TypeError, "attention: k must be float16 or bfloat16, got torch.float32"),
    (lambda q, k, v: (q, k, v[:, :, :8]), ValueError, "q, k and v must have the same shape"),
    (lambda q, k, v: (q, k, v.bfloat16()), TypeError, "q, k and v must have the same dtype"),
    (lambda q, k, v: [x[..., :32] for x in (q, k, v)], ValueError, r"head_dim must be one of \(64, 128\), got 32"),
    (lambda q, k, v: [x[:, :, :0] for x in (q, k, v)], ValueError, "batch, heads and seq must be >= 1"),
    (lambda q, k, v: [x.expand(2, 40000, 16, 64) for x in (q[:1, :1], k[:1, :1], v[:1, :1])], ValueError,
     "batch \\* heads = 80000 exceeds the grid limit of 65535"),
    (lambda q, k, v: (q, k, v), ValueError, "must be CUDA tensors \\(or CPU tensors under TRITON_INTERPRET=1\\)"),
])
def test_bad_inputs_are_named(args, error, message, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(error, match=message):
        attn.attention(*args(*_qkv()))


@functools.lru_cache(maxsize=None)
def compiled_persistent(cfg, head_dim: int, dtype: str, causal: bool):
    import dataclasses
    from tritium.kernels.attention_persistent_hopper import attn_fwd_persistent_hopper
    rows = cfg.BLOCK_M // cfg.CONSUMERS
    sig = {f"desc_{n}": f"tensordesc<{dtype}[1, 1, {r}, {head_dim}]>"
           for n, r in (("q", rows), ("k", cfg.BLOCK_N), ("v", cfg.BLOCK_N), ("o", rows))}
    sig.update({"lse": "*fp32", "sm_scale": "fp32", "B": "i32", "H": "i32", "GROUP": "i32", "N_CTX": "i32"})
    consts = {"HEAD_DIM": head_dim, "CAUSAL": causal, "STORE_LSE": True, **dataclasses.asdict(cfg)}
    sig.update(dict.fromkeys(consts, "constexpr"))
    return triton.compile(ASTSource(attn_fwd_persistent_hopper, sig, consts), target=SM90, options={"num_warps": 4})


#: The ping-pong config (on 3.8 ptxas serializes its wgmmas, as it does the pipelined kernel's: C7513 above) and
#: three free-running consumers at 160 registers, whose few spilled words (8 bytes on 3.6, 24 on 3.8) are allowed:
#: the config measured fastest as it is.
PERSISTENT = [pytest.param(128, "fp16", True, 0, marks=SERIALIZED_ON_38), (64, "bf16", False, 32)]


@pytest.mark.parametrize("head_dim, dtype, causal, spilled", PERSISTENT)
def test_persistent_attention_structure_and_registers(head_dim, dtype, causal, spilled, tmp_path):
    """The shipped configs of the persistent kernel: a producer and CONSUMERS warpgroups at NUM_REGS, turns on
    named barriers only in ping-pong, the logsumexp stored, and ptxas keeps (almost) everything in registers."""
    from tritium.kernels.attention_persistent_hopper import pick_config
    cfg = pick_config(4096, head_dim, causal)
    assert cfg.CONSUMERS == (2 if head_dim == 128 else 3)
    k = compiled_persistent(cfg, head_dim, dtype, causal)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert len(re.findall(r"partition\d\(.*\) num_warps\(4\)", ttgir)) == cfg.CONSUMERS
    assert k.metadata.num_warps == 4 * (1 + cfg.CONSUMERS) and k.metadata.shared <= 232448
    assert f"setmaxnreg.inc.sync.aligned.u32 \t{cfg.NUM_REGS};" in ptx
    turns = {"bar.sync 9, 256", "bar.sync 10, 256", "bar.arrive 9, 256", "bar.arrive 10, 256"}
    assert all(t in ptx for t in turns) == cfg.PINGPONG and any(t in ptx for t in turns) == cfg.PINGPONG
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # S_j waited for while P_{j-1} V_{j-1} runs
    assert "st.global" in ptx  # the logsumexp
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    out = subprocess.run([compat.ptxas_path(90), "-arch=sm_90a", "-v", str(path), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, check=True).stderr
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", out)]
    assert spills and max(spills) <= spilled, out
    assert "wgmma.mma_async instructions are serialized" not in out, out
