"""The fused trimul on the CPU without the interpreter: the three kernels compiled for sm_90 (wgmma,
cp.async, no spills), argument errors (real and fake implementation), state_dict compatibility with
the reference, the packed-weight cache; and test_trimul_interp.py run in a TRITON_INTERPRET=1 process."""
import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from tritium import compat  # noqa: E402
from tritium.ops import TriMul  # noqa: E402
from tritium.kernels import trimul as K  # noqa: E402
from tritium.kernels.trimul_reference import TriMulReference, check_close  # noqa: E402
from tritium.ops.trimul import PROJECTIONS, pack_weights, trimul  # noqa: E402
from tritium.plugins.inspection import make_source  # noqa: E402
from tritium.tlx import triton_compat  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)
INTS = {"center": ("M", "C"), "proj": ("M", "NN", "C"), "proj_x": ("M", "NN", "C"), "pair": ("N", ),
        "pair_incoming": ("N", ), "out": ("M", "NN", "C")}


def _pointers(kernel: str, dt: str, C: int = 384) -> dict:
    """Pointer and descriptor types as ``launch`` passes them when the output path computes in ``dt`` (the
    projection GEMM, left, right and the pair product are bf16, the out gate fp16)."""
    hs, half, bk, fbk = K.PROJ_HS, K.BM // 2, K.BK, K.FUSED_BK
    return {"center": {"x_ptr": "*fp32", "xc_ptr": "*bf16", "rstd_ptr": "*fp32"},
            "proj": {"x_desc": f"tensordesc<bf16[{half}, {bk}]>", "wq_desc": f"tensordesc<bf16[{bk}, {4 * hs}]>",
                     "wo_desc": f"tensordesc<bf16[{bk}, {hs}]>", "left_desc": f"tensordesc<bf16[{hs}, {half}]>",
                     "right_desc": f"tensordesc<bf16[{hs}, {half}]>", "og_desc": f"tensordesc<fp16[{half}, {hs}]>",
                     "rstd_ptr": "*fp32", "mask_ptr": "*i64", "terms_ptr": "*fp32"},
            "proj_x": {"x_desc": f"tensordesc<fp32[{half}, {fbk}]>", "x_ptr": "*fp32",
                       "wq_desc": f"tensordesc<bf16[{fbk}, {4 * hs}]>", "wo_desc": f"tensordesc<bf16[{fbk}, {hs}]>",
                       "left_desc": f"tensordesc<bf16[{hs}, {half}]>", "right_desc": f"tensordesc<bf16[{hs}, {half}]>",
                       "og_desc": f"tensordesc<fp16[{half}, {hs}]>", "mask_ptr": "*i64", "terms_ptr": "*fp32"},
            "pair": {"l_ptr": "*bf16", "r_ptr": "*bf16", "o_ptr": "*bf16"},
            "pair_incoming": {"l_ptr": "*bf16", "r_ptr": "*bf16", "o_ptr": "*bf16"},
            "out": {"p_ptr": "*bf16", "og_ptr": "*fp16", "ln_w_ptr": "*fp32", "ln_b_ptr": "*fp32", "w_ptr": f"*{dt}",
                    "y_desc": f"tensordesc<fp32[{K.out_config(C).BM}, {K.out_config(C).BN}]>"}}[kernel]


@functools.lru_cache(maxsize=None)
def compiled(kernel: str, dt: str, C: int = 384):
    """A kernel as ``launch`` compiles it for the ranked cases' shapes (aligned pointers and sizes; ``C``
    picks the centring pass's block)."""
    fn = {"center": K.trimul_center_kernel, "proj": K.trimul_proj_kernel, "proj_x": K.trimul_proj_x_kernel,
          "pair": K.trimul_pair_kernel, "pair_incoming": K.trimul_pair_kernel, "out": K.trimul_out_kernel}[kernel]
    cfg, out = K.PAIR_LARGE, K.out_config(C)
    center_bm, cp, center_warps = K.center_block(C)
    consts, warps = {"center": (dict(BM=center_bm, CP=cp), center_warps),
                     "proj": (dict(H=128, BM=K.BM, BK=K.BK, HS=K.PROJ_HS, NUM_STAGES=K.PROJ_STAGES,
                                   NUM_REGS=K.PROJ_REGS, FAST_SIGMOID=True), 4),
                     "proj_x": (dict(H=128, BM=K.BM, BK=K.FUSED_BK, HS=K.PROJ_HS, NUM_STAGES=K.FUSED_STAGES,
                                     NUM_REGS=K.FUSED_REGS, FAST_SIGMOID=True), 4),
                     **{name: (dict(BM=cfg.BM, BN=cfg.BN, BK=cfg.BK, GROUP_SIZE_M=cfg.GROUP_SIZE_M,
                                      NUM_STAGES=cfg.NUM_STAGES, INCOMING=name == "pair_incoming"), cfg.num_warps)
                        for name in ("pair", "pair_incoming")},
                     "out": (dict(H=128, BM=out.BM, BN=out.BN, NUM_STAGES=out.NUM_STAGES, Y_STAGES=out.Y_STAGES),
                             out.num_warps)}[kernel]
    ptrs = _pointers(kernel, dt, C)
    sig = {**ptrs, **dict.fromkeys(INTS[kernel], "i32")}
    if kernel in ("center", "proj_x", "out"):
        sig["eps"] = "fp32"
    sig.update(dict.fromkeys(consts, "constexpr"))
    aligned = [n for n in [*ptrs, *INTS[kernel]] if not n.endswith("_desc")]
    src = make_source(fn, sig, consts, aligned=aligned)
    options = {"num_warps": warps, **({"maxnreg": out.maxnreg} if kernel == "out" else {})}
    return triton.compile(src, target=SM90, options=options)


def _ptxas(ptx: str, tmp_path) -> str:
    """ptxas -v's report on ``ptx`` (sm_90a)."""
    ptx_file = tmp_path / "k.ptx"
    ptx_file.write_text(ptx)
    out = subprocess.run([compat.ptxas_path(90), "-arch=sm_90a", "-v", str(ptx_file), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stderr


#: Spill bytes ptxas leaves in the fused projection on 3.7 (one register, stored in the epilogue and reloaded
#: after the K loop) and 3.9 (reloaded before each slice's K loop), neither inside the K loop (SASS read on the
#: CPU); 3.6 and 3.8 have none. Not measured on a GPU.
PROJ_X_SPILLS = {(3, 7): 8, (3, 9): 60}
#: (kernel, its wgmma shapes, the output path's type, the wgmma operands' type).
KERNEL_CASES = [*[(proj, {"m64n256k16", "m64n64k16"}, "fp16", "bf16") for proj in ("proj", "proj_x")],
                ("pair", {"m64n128k16"}, "fp16", "bf16"),
                ("pair_incoming", {"m64n128k16"}, "fp16", "bf16"),
                *[("out", {f"m64n{K.out_config(384).BN}k16"}, dt, dt) for dt in ("fp16", "bf16")]]


@pytest.mark.parametrize("kernel, wgmma, dt, mma_dt", KERNEL_CASES)
def test_kernels_compile_to_wgmma(kernel, wgmma, dt, mma_dt, tmp_path):
    k = compiled(kernel, dt)
    ptx = k.asm["ptx"]
    ty = {"fp16": "f16", "bf16": "bf16"}[mma_dt]
    assert set(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.(\w+)\.f32\.{ty}\.{ty}", ptx)) == wgmma
    assert ptx.count("wgmma.mma_async") == len(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.\w+\.f32\.{ty}", ptx))
    assert "wgmma.commit_group.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned" in ptx
    assert k.metadata.shared <= 232448  # Hopper's 227 KB per block
    if kernel.startswith("proj"):
        # Operands arrive by TMA into an mbarrier ring and both come from shared memory; the results leave by
        # TMA stores; producer and consumers trade registers.
        assert triton_compat.ptx_tma_load(2) in ptx and "mbarrier.try_wait" in ptx
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
        regs = K.FUSED_REGS if kernel == "proj_x" else K.PROJ_REGS
        assert f"setmaxnreg.inc.sync.aligned.u32 \t{regs};" in ptx
        assert not re.search(r"wgmma\.mma_async\.sync\.aligned\.\w+\.f32\.bf16\.bf16 \{[^}]+\}, \{", ptx)
        # The gates' sigmoids on one MUFU tanh each, not ex2 and rcp.
        assert "tanh.approx.f32" in ptx and "ex2.approx" not in ptx
        if kernel == "proj_x":  # the consumers read their chunks of fp32 x in 16-byte vectors
            assert "ld.global.v4.b32" in ptx
    else:  # weight (and, for the pair GEMM, operand) tiles arrive by 16-byte cp.async, retired by group
        assert re.search(r"cp\.async\.cg\.shared\.global(\.L2::128B)? \[[^\]]+\], \[[^\]]+\], 0x10", ptx)
        assert "cp.async.wait_group" in ptx
    if kernel.startswith("pair"):  # outgoing: B is the transposed view of right's K-contiguous tile;
        assert "ttg.memdesc_trans" in k.asm["ttgir"]  # incoming: A, of left's M-contiguous one
    report = _ptxas(ptx, tmp_path)
    spills = PROJ_X_SPILLS.get(compat.TRITON_VERSION[:2], 0) if kernel == "proj_x" else 0
    assert int(re.search(r"(\d+) bytes spill stores", report).group(1)) <= spills, report
    assert "C7515" not in report, report  # ptxas would serialize the wgmmas
    if kernel == "out":  # three programs per SM: 128 threads * 128 registers each, and shared memory fits
        cfg = K.out_config(384)
        assert int(re.search(r"Used (\d+) registers", report).group(1)) <= cfg.maxnreg, report
        assert 3 * (k.metadata.shared + 1024) <= 233472  # Hopper's 228 KB per SM, 1 KB reserved per block


@pytest.mark.parametrize("C", [128, 384, 768, K.MAX_DIM])
def test_center_kernel_is_one_pass_over_x_in_16_byte_vectors(C, tmp_path):
    """The centring pass is a bandwidth pass over x: 16-byte loads of fp32 and stores of bf16, no spills,
    and no second read of x (the row block stays in registers)."""
    ptx = compiled("center", "fp16", C).asm["ptx"]
    assert "ld.global.v4.b32" in ptx and not re.search(r"ld\.global\.(b32|f32) ", ptx)
    rows, cp, warps = K.center_block(C)
    assert len(re.findall(r"ld\.global\.v4\.b32", ptx)) * 4 * 32 * warps == cp * rows
    assert "st.global.v4.b32" in ptx
    assert "0 bytes spill stores" in _ptxas(ptx, tmp_path)


@pytest.mark.parametrize("C", [384, K.MAX_DIM])
def test_pack_kernel_sums_without_fma(C, tmp_path):
    """The pack kernel, compiled for sm_90 with the options it launches with, keeps every product rounded
    before its sum (no fma), as pack_weights computes it: that is what makes the two agree to the bit on a
    GPU. Its bf16 roundings are done on the bits, so no cvt either. A whole row of C in registers, unspilled."""
    from tritium.kernels import trimul_pack
    H = 128
    packer = trimul_pack.Packer([torch.empty(0)] * 8, torch.empty(C, 5 * H, dtype=torch.bfloat16),
                                torch.empty(5, H), torch.empty(H, C, dtype=torch.bfloat16))
    consts = {k: v for k, v in packer.consts.items() if k in trimul_pack.trimul_pack_kernel.arg_names}
    ptrs = [n for n in trimul_pack.trimul_pack_kernel.arg_names if n.endswith("_ptr")]
    sig = {**dict.fromkeys(ptrs, "*fp32"), "proj_ptr": "*bf16", "out_ptr": "*bf16", "C": "i32",
           **dict.fromkeys(consts, "constexpr")}
    options = {k: v for k, v in packer.consts.items() if k not in consts}
    assert options == {"num_warps": 4, "enable_fp_fusion": False}
    ptx = triton.compile(make_source(trimul_pack.trimul_pack_kernel, sig, consts, aligned=[*ptrs, "C"]),
                         target=SM90, options=options).asm["ptx"]
    assert re.search(r"mul(\.rn)?\.f32", ptx) and re.search(r"add(\.rn)?\.f32", ptx)
    assert "fma" not in ptx and "cvt.rn.bf16" not in ptx
    assert "0 bytes spill stores" in _ptxas(ptx, tmp_path)


def _reference(dim=128, hidden=128, seed=0):
    torch.manual_seed(seed)
    ref = TriMulReference(dim, hidden)
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
    return ref


def _op_args(x, mask, ref):
    proj_t, terms, out_t = pack_weights(dict(ref.named_parameters()), torch.bfloat16)
    return [x, mask, proj_t, terms, ref.to_out_norm.weight, ref.to_out_norm.bias, out_t]


def test_state_dict_of_the_reference_loads_unchanged():
    ref = _reference(256)
    fused = TriMul(256)
    assert list(fused.state_dict()) == list(ref.state_dict())
    fused.load_state_dict(ref.state_dict())  # strict
    assert all(torch.equal(a, b) for a, b in zip(fused.state_dict().values(), ref.state_dict().values()))


def _packed_reference(fused):
    """What pack_weights must give for ``fused``'s parameters: the input LayerNorm's weight folded into the
    five transposed projections (bf16), its bias projected (fp32), Wo^T in fp16 (the task's weights). The
    projections' columns: per PROJ_HS-wide hidden slice, the four left/right ones side by side, then the out
    gate's."""
    w = torch.stack([getattr(fused, n).weight for n in PROJECTIONS]).float()
    wt = (w * fused.norm.weight.float()).transpose(1, 2)  # [5, C, H]
    hs, slices = K.PROJ_HS, w.shape[1] // K.PROJ_HS
    columns = [wt[j][:, s * hs:(s + 1) * hs] for s in range(slices) for j in range(4)] + [wt[4]]
    return torch.cat(columns, dim=1).bfloat16(), w @ fused.norm.bias.float(), fused.to_out.weight.t().half()


def _same_packing(got, want) -> bool:
    """16-bit weights to the bit; the projected bias (fp32, summed in another order) to fp32's precision."""
    return all(torch.equal(g, w) if g.dtype != torch.float32 else torch.allclose(g, w, rtol=1e-5, atol=1e-5)
               for g, w in zip(got, want))


def test_packed_weights_follow_the_parameters_in_buffers_kept_with_their_storage():
    """The packed weights are the module's own buffers, kept (the same tensors, so a captured graph's addresses
    hold) while the parameters keep their storage, and rewritten from the parameters' values on every call:
    ``.data`` writes included, which no version counter sees (they used to leave the first packing in use).
    Here through pack_weights (the CPU without the interpreter); test_trimul_interp.py runs the pack kernel."""
    fused = TriMul(128)
    first = fused.packed_weights()
    proj_t, terms, out_t = first
    assert proj_t.shape == (128, 640) and terms.shape == (5, 128) and out_t.shape == (128, 128)
    assert (proj_t.dtype, terms.dtype, out_t.dtype) == (torch.bfloat16, torch.float32, torch.float16)
    # The column order the kernel expects (left_proj, left_gate, right_proj, right_gate per slice, out_gate).
    assert _same_packing(first, _packed_reference(fused))
    for write in (lambda: fused.right_gate.weight.data.mul_(2), lambda: fused.norm.bias.data.add_(1),
                  lambda: fused.to_out.weight.data.copy_(torch.randn(128, 128) / 16),
                  lambda: fused.load_state_dict(_reference(128).state_dict())):  # copies in place
        old = [t.clone() for t in first]
        write()
        assert fused.packed_weights() is first and _same_packing(first, _packed_reference(fused))
        assert not _same_packing(old, first)
    fused.double()  # a dtype move: new storage, same version counters
    second = fused.packed_weights()
    assert second is not first and torch.equal(second[2], first[2])
    fused.left_proj = torch.nn.Linear(128, 128, bias=False)  # a replaced submodule is seen
    assert _same_packing(fused.packed_weights(), _packed_reference(fused))
    with torch.no_grad():
        fused.to_out_norm.weight.fill_(1e4)  # LayerNorm_H(out) could now reach 1e4 * sqrt(128): past fp16's range
    assert fused.packed_weights()[2].dtype == torch.bfloat16


def test_dtype_choice_bounds_the_output_path():
    from tritium.ops.trimul import choose_dtype
    params = dict(_reference(128).named_parameters())
    assert choose_dtype(params) == torch.float16  # randn weights, as the task's
    assert choose_dtype({**params, "to_out.weight": params["to_out.weight"] * 1e5}) == torch.bfloat16
    assert choose_dtype({**params, "to_out_norm.bias": params["to_out_norm.bias"] + 4e4}) == torch.bfloat16
    # The projections no longer matter: their GEMM is bf16 whatever the weights.
    assert choose_dtype({**params, "left_gate.weight": params["left_gate.weight"] * 1e5}) == torch.float16
    assert choose_dtype({k: v.to("meta") for k, v in params.items()}) == torch.bfloat16


def test_packing_names_missing_weights():
    from tritium.ops.trimul import choose_dtype
    params = dict(_reference(128).named_parameters())
    del params["right_gate.weight"]
    for fn in (pack_weights, choose_dtype):
        with pytest.raises(KeyError, match=r"the weights lack \['right_gate.weight'\]"):
            fn(params)


def test_packing_names_misshapen_weights():
    """Each wrong weight is named with the shape it needs, in the sizes the other weights agree on."""
    params = dict(_reference(128, 64).named_parameters())
    for edits, msg in [({"left_proj.weight": params["left_proj.weight"][:, :32]},
                        r"left_proj.weight must be \[hidden_dim, dim\] = \[64, 128\], got \[64, 32\] "
                        r"\(dim=128 and hidden_dim=64"),
                       ({"norm.weight": params["norm.weight"][:10]},
                        r"norm.weight must be \[dim\] = \[128\], got \[10\]"),
                       ({"to_out.weight": params["to_out.weight"].t(), "to_out_norm.bias": params["norm.bias"]},
                        r"to_out_norm.bias must be \[hidden_dim\] = \[64\], got \[128\]; "
                        r"to_out.weight must be \[dim, hidden_dim\] = \[128, 64\], got \[64, 128\]")]:
        with pytest.raises(ValueError, match=r"tritium.ops.trimul.pack_weights: " + msg):
            pack_weights({**params, **edits})


def test_x_of_another_dim_than_the_weights_is_named():
    """x is what disagrees with the weights, not the packed out_weight_t the module passes on."""
    x, mask = torch.zeros(1, 16, 16, 128), torch.ones(1, 16, 16)
    with pytest.raises(ValueError, match=r"^TriMul: x's last dimension 128 does not match the module's dim 64$"):
        TriMul(64, hidden_dim=64)(x, mask)
    with pytest.raises(ValueError, match=r"tritium.ops.trimul: x's last dimension 128 does not match the weights' "
                       r"dim 64 \(proj_weight_t is \[64, 320\], out_weight_t \[64, 64\]\)"):
        trimul(*_op_args(x.to("meta"), mask.to("meta"), _reference(64, 64).to("meta")))


def test_module_rejects_shapes_the_kernels_cannot_tile():
    with pytest.raises(ValueError, match="dim=100 must be a multiple of 64"):
        TriMul(100)
    with pytest.raises(ValueError, match="hidden_dim=96 is not supported"):
        TriMul(128, 96)


BAD = [
    (lambda x, m: (x[0], m), ValueError, r"x must be \[B, N, N, dim\], got shape \(32, 32, 128\)"),
    (lambda x, m: (x[:, :, :16], m[:, :, :16]), ValueError, r"x must be \[B, N, N, dim\]"),
    (lambda x, m: (x.double(), m), TypeError, "x has dtype torch.float64; it must be float32"),
    (lambda x, m: (x.half(), m), TypeError, "x has dtype torch.float16"),
    (lambda x, m: (x, m[:, :16]), ValueError, r"mask must be \[B, N, N\] = \[1, 32, 32\] .* got \(1, 16, 32\)"),
    (lambda x, m: (x, m[0]), ValueError, "mask must be"),
]


@pytest.mark.parametrize("edit, exc, msg", BAD)
@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_bad_input_names_the_argument(edit, exc, msg, device):
    """Meta tensors run the fake implementation (what torch.compile traces); CPU ones the real one."""
    ref = _reference().to(device)
    x = torch.zeros(1, 32, 32, 128, device=device)
    mask = torch.ones(1, 32, 32, device=device)
    x, mask = edit(x, mask)
    with pytest.raises(exc, match=msg):
        trimul(*_op_args(x, mask, ref))
    with pytest.raises(exc, match=msg):
        TriMul(128).to(device)(x, mask)


@pytest.mark.parametrize("shape, msg", [((1, 24, 24, 128), r"N=24\) must be a multiple of 16"),
                                        ((1, 32, 32, 96), r"dim=96\) must be a multiple of 64"),
                                        ((1, 16, 16, K.MAX_DIM + 64), rf"dim={K.MAX_DIM + 64}\) is above")])
def test_untileable_shapes_name_x(shape, msg):
    C = shape[-1]
    ref = _reference(C if C % 64 == 0 else 128)
    args = _op_args(torch.zeros(shape, device="meta"), torch.ones(shape[:3], device="meta"), ref.to("meta"))
    if C % 64:  # weights of the right width for this dim, so the tiling check is what fails
        args[2] = torch.zeros(C, 5 * 128, dtype=torch.bfloat16, device="meta")
        args[6] = torch.zeros(128, C, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match=msg):
        trimul(*args)


def test_bad_weights_name_the_argument():
    ref = _reference().to("meta")
    x, mask = torch.zeros(1, 32, 32, 128, device="meta"), torch.ones(1, 32, 32, device="meta")
    args = _op_args(x, mask, ref)
    for i, value, exc, msg in [(2, args[2].float(), TypeError, "proj_weight_t has dtype torch.float32"),
                               (2, args[2].half(), TypeError, "proj_weight_t has dtype torch.float16"),
                               (2, args[2][:, :512], ValueError, r"proj_weight_t must be \[dim, 5 \* hidden\]"),
                               (3, args[3][:, :64], ValueError, r"proj_terms must be \[5, hidden\]"),
                               (3, args[3].half(), TypeError, "proj_terms has dtype torch.float16"),
                               (6, args[6][:, :64], ValueError, r"out_weight_t must be \[hidden, dim=128\]"),
                               (6, args[6].float(), TypeError, "out_weight_t has dtype torch.float32"),
                               (4, args[4][:64], ValueError, r"out_norm_weight must have shape \[128\]"),
                               (5, args[5].half(), TypeError, "out_norm_bias has dtype torch.float16")]:
        bad = list(args)
        bad[i] = value
        with pytest.raises(exc, match=msg):
            trimul(*bad)


@pytest.mark.parametrize("direction", ["sideways", "Outgoing", 1])
def test_unknown_direction_is_named(direction):
    """The module, the op's real implementation (CPU tensors) and its fake one (meta) all name it."""
    msg = r"direction must be one of \('outgoing', 'incoming'\), got " + repr(direction).replace("'", ".")
    with pytest.raises(ValueError, match="TriMul: " + msg):
        TriMul(128, direction=direction)
    for device in ("cpu", "meta"):
        ref = _reference().to(device)
        x, mask = torch.zeros(1, 32, 32, 128, device=device), torch.ones(1, 32, 32, device=device)
        with pytest.raises(ValueError, match="tritium.ops.trimul: " + msg):
            trimul(*_op_args(x, mask, ref), direction=direction)


def test_backward_says_there_is_none_instead_of_dropping_gradients():
    """Parameters that require grad (the default) with an x that does not: the output used to have no grad_fn,
    so a training step left every .grad at None without a word."""
    m = TriMul(128).to("meta")
    x, mask = torch.zeros(1, 32, 32, 128, device="meta"), torch.ones(1, 32, 32, device="meta")
    y = m(x, mask)
    with pytest.raises(RuntimeError, match=r"TriMul has no backward: .* torch.no_grad\(\)"):
        y.sum().backward()
    with torch.no_grad():
        assert m(x, mask).grad_fn is None
    m.requires_grad_(False)
    assert m(x, mask).grad_fn is None
    with pytest.raises(RuntimeError, match="TriMul has no backward"):
        m(x.requires_grad_(), mask).sum().backward()


@pytest.mark.parametrize("args, msg", [(("64", 64), "dim must be an int, got str '64'"),
                                       ((64, 128.0), "hidden_dim must be an int, got float 128.0"),
                                       ((True, 64), "dim must be an int, got bool True")])
def test_module_sizes_must_be_ints(args, msg):
    with pytest.raises(TypeError, match=f"TriMul: {msg}"):
        TriMul(*args)


def test_fake_implementation_gives_the_output_shape():
    ref = _reference().to("meta")
    x, mask = torch.zeros(2, 32, 32, 128, device="meta"), torch.ones(2, 32, 32, device="meta")
    y = trimul(*_op_args(x, mask, ref))
    assert y.shape == x.shape and y.dtype == torch.float32 and y.device.type == "meta"


def test_launches_go_direct_after_the_first_call_per_pipeline(monkeypatch):
    """A plan's first launch of a kernel under a pipeline goes through the JIT; later ones straight to the
    compiled launcher, with host TMA descriptors expanded (once per buffer address) and the constexpr values
    appended; another pipeline digest goes back to the JIT, as does a set launch hook."""
    import tritium.ops.launch as ops_launch

    jit_calls, direct_calls, encoded = [], [], []

    class Kernel:
        arg_names = ["a_ptr", "a_desc", "n", "BLOCK"]

        def __getitem__(self, grid):
            return lambda *args, **consts: jit_calls.append((grid, args, consts)) or "compiled"

    class Direct:
        descriptor_meta = ["meta"]

        def __init__(self, compiled):
            self.compiled = compiled

        def __call__(self, grid, stream, args):
            direct_calls.append((self.compiled, grid, stream, args))

    digest, hooks = ["d1"], [False]
    monkeypatch.setattr(ops_launch, "interpreting", lambda: False)
    monkeypatch.setattr(compat, "launch_hooks_active", lambda: hooks[0])
    monkeypatch.setattr(compat, "pipeline_digest", lambda kernel: digest[0])
    monkeypatch.setattr(compat, "current_stream", lambda device: 7)
    monkeypatch.setattr(compat, "direct_launch", Direct)
    monkeypatch.setattr(compat, "descriptor_args",
                        lambda desc, meta: encoded.append(desc) or [meta, desc.base.data_ptr()])
    plan = K.Plan(1, 16, 64, 64, torch.device("cpu"))
    kernel, buf, mats = Kernel(), torch.zeros(64), [torch.zeros(16, 16), torch.zeros(16, 16)]

    def run(mat):
        plan.run(kernel, (4, ), [buf, K._Desc(mat, (8, 8), 5), 16], dict(BLOCK=32, num_warps=4))

    run(mats[0])
    assert len(jit_calls) == 1 and type(jit_calls[0][1][1]).__name__ == "TensorDescriptor"
    for mat in (mats[0], mats[1], mats[0]):
        run(mat)
    assert len(jit_calls) == 1 and [c[3] for c in direct_calls] == [[buf, "meta", m.data_ptr(), 16, 32]
                                                                    for m in (mats[0], mats[1], mats[0])]
    assert direct_calls[0][:3] == ("compiled", (4, 1, 1), 7) and len(encoded) == 2  # one encoding per address
    digest[0] = "d2"
    run(mats[0])
    hooks[0] = True
    run(mats[0])
    assert len(jit_calls) == 3 and len(direct_calls) == 3


def test_the_centring_is_chosen_in_one_place(monkeypatch):
    """trimul.fused_centering decides, for every plan: the fused projection up to FUSED_MAX_DIM, the centring
    pass above it, and tritium.knobs.ops.trimul_fused_centering (TRITIUM_TRIMUL_FUSED_CENTERING) overrides the
    rule both ways; the knob takes only a bool or None."""
    from tritium import knobs

    monkeypatch.delenv("TRITIUM_TRIMUL_FUSED_CENTERING", raising=False)
    fused = (K.trimul_proj_x_kernel, K.trimul_pair_kernel, K.trimul_out_kernel)
    separate = (K.trimul_center_kernel, K.trimul_proj_kernel, K.trimul_pair_kernel, K.trimul_out_kernel)
    cpu = torch.device("cpu")
    with knobs.ops.scope():
        assert K.fused_centering(K.FUSED_MAX_DIM) and not K.fused_centering(K.FUSED_MAX_DIM + 64)
        assert K.Plan(1, 16, 128, 128, cpu).kernels == fused and K.Plan(1, 16, 1024, 128, cpu).kernels == separate
        assert K.Plan(1, 16, 128, 128, cpu).proj_grid == (2, )  # programs take whole 128-row blocks
        knobs.ops.trimul_fused_centering = False
        assert K.Plan(1, 16, 128, 128, cpu).kernels == separate
        monkeypatch.setenv("TRITIUM_TRIMUL_FUSED_CENTERING", "1")
        del knobs.ops.trimul_fused_centering
        assert K.fused_centering(1024) and K.Plan(1, 16, 1024, 128, cpu).kernels == fused
        with pytest.raises(TypeError, match="trimul_fused_centering .* must be a bool or None, not str"):
            knobs.ops.trimul_fused_centering = "on"


def test_cpu_tensors_need_the_interpreter():
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process is interpreted")
    ref = _reference()
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        trimul(*_op_args(torch.zeros(1, 32, 32, 128), torch.ones(1, 32, 32), ref))


def test_check_close_compares_values_and_nonfinite_placement():
    ref = torch.tensor([1.0, float("inf"), float("nan"), -2.0])
    assert check_close(ref + 0.01, ref) is None
    assert "outside" in check_close(ref + torch.tensor([0.1, 0, 0, 0]), ref)
    assert "NaN/inf placement" in check_close(torch.tensor([1.0, float("nan"), float("nan"), -2.0]), ref)
    assert "NaN/inf placement" in check_close(torch.tensor([1.0, float("-inf"), float("nan"), -2.0]), ref)


def test_interpreted_suite_in_own_process():
    """test_trimul_interp.py needs TRITON_INTERPRET=1 before triton is imported."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process is interpreted: the module runs directly")
    here = Path(__file__).parent
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(here.parent / "src"), env.get("PYTHONPATH")]))
    # --noconftest: the module needs none of conftest.py's setup, and conftest compiles probe kernels,
    # which an interpreted process cannot.
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
                          str(here / "test_trimul_interp.py")], cwd=here.parent, env=env, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "skipped" not in out.stdout.split("\n")[-2]


def test_bench_selects_cases_and_implementations():
    from tritium.bench import trimul as bench
    from tritium.kernels.trimul_reference import RANKED_CASES
    assert bench.select("") == (list(RANKED_CASES), bench.IMPLS)
    assert bench.select("quick")[0] == list(RANKED_CASES[:3])
    cases, impls = bench.select("fast N1024")
    assert impls == ("compile TF32", "tritium") and [c.seqlen for c in cases] == [1024, 1024]
    assert [c.seqlen for c in bench.select("1-3 7")[0]] == [256, 768, 256, 1024]
    assert [c.seqlen for c in bench.select("2-7 C384")[0]] == [256, 768, 1024]
    with pytest.raises(SystemExit, match="no ranked case matches --only 'N999'"):
        bench.select("N999")


def test_bench_report_on_made_up_timings(monkeypatch, tmp_path, capsys):
    from tritium.bench import trimul as bench

    def fake_run_case(case, impls, bar=None):
        ms = {name: (i + 1) * case.seqlen / 256 for i, name in enumerate(reversed(impls))}  # tritium: the fastest
        stages = {"center": 0.02, "proj": 0.1, "pair": 0.2, "out": 0.05}
        r = {**case._asdict(), "label": case.label, "ms": ms, "check": None, "tritium_stages_ms": stages,
             "tritium_stages_tbps": {k: bench.stage_bytes(case)[k] / v / 1e9 for k, v in stages.items()},
             "tritium_host_us": 40.0 + case.dim / 8}
        r.update({f"{n} / tritium": ms[n] / ms["tritium"] for n in impls})
        return r

    monkeypatch.setattr(bench, "run_case", fake_run_case)
    monkeypatch.setattr(bench, "environment", lambda: {"gpu": "GPU", "torch": "t", "triton": "t"})
    assert bench.main(str(tmp_path), "fast quick") == 0
    out = capsys.readouterr().out
    assert ("| case | compile TF32 | tritium | compile TF32 / tritium | tritium center / proj / pair / out (ms) "
            "| check |") in out
    assert "| N256 B2 C128 nomask normal | 2.000 | 1.000 | 2.000 | 0.020 / 0.100 / 0.200 / 0.050 | ok |" in out
    assert "geomean compile TF32 / tritium: 2.000" in out and "geomean tritium: 1.442 ms" in out
    # The largest case is N768 B1 C128 (M C = 2^26 * 1.125): out moves 2 M H 2 + M C 4 bytes in 0.05 ms.
    assert "per kernel on the largest case (N768 B1 C128 nomask cauchy)" in out
    assert f"out 0.050 ms ({(4 * 768 ** 2 * 128 + 4 * 768 ** 2 * 128) / 0.05 / 1e9:.2f} TB/s)" in out
    assert "host time per call (median, us): N256 2x128: 56, N768 1x128: 56, N256 2x384: 88" in out
    assert (tmp_path / "trimul.png").exists() and (tmp_path / "trimul.json").exists()


def test_public_names():
    import tritium.kernels
    import tritium.ops
    assert tritium.ops.trimul is trimul and tritium.ops.TriMul is TriMul
    assert not hasattr(tritium.kernels, "TriMul")  # the module calls the op: it lives on the ops floor
    assert torch.ops.tritium.trimul.default._schema.name == "tritium::trimul"
