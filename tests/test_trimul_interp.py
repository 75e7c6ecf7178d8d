"""The fused trimul kernels against the fp32 reference on the CPU interpreter (run by test_trimul.py in
a TRITON_INTERPRET=1 process): N = 32 and 64, with and without mask, a Cauchy case, the incoming update against its
formula, one call traced by torch.compile(fullgraph=True), the pack kernel against pack_weights and the module after
``.data`` writes to its parameters; tolerance |y - ref| <= 2e-2 + 2e-2 |ref|, NaN/inf in the same places."""
import os

import pytest

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs TRITON_INTERPRET=1 before triton is imported; test_trimul.py runs this module "
                "in such a process", allow_module_level=True)

import torch  # noqa: E402

import tritium  # noqa: E402
from tritium.kernels import trimul
from tritium.ops import TriMul  # noqa: E402
from tritium.kernels.trimul_pack import Packer  # noqa: E402
from tritium.ops.trimul import PROJECTIONS, pack_weights  # noqa: E402
from tritium.ops.trimul import trimul as ops_trimul  # noqa: E402
from tritium.kernels.trimul_reference import (Case, TriMulReference, check_close, make_inputs,  # noqa: E402
                                              reference_model)


def _fused_and_reference(case: Case, seed: int):
    ref = reference_model(case, seed)
    fused = TriMul(case.dim)
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, seed + 1)
    with torch.no_grad():
        return fused, ref, x, mask, ref(x, mask)


@pytest.mark.parametrize("case, pair, bf16", [(Case(32, 1, 128, False, "normal"), None, False),
                                              (Case(32, 1, 128, True, "cauchy"), None, True),
                                              (Case(64, 1, 128, True, "normal"), trimul.PAIR_LARGE, False),
                                              (Case(64, 1, 64, False, "normal"), None, False)],
                         ids=lambda c: getattr(c, "label", str(c)))
def test_fused_matches_reference(case, pair, bf16, monkeypatch):
    """``pair``: force the pair GEMM's tile (the large one, wrapping its rows past N = 64); ``bf16``: the
    output path in bf16 through the op (the module picks fp16 for these weights)."""
    if pair is not None:
        monkeypatch.setattr(trimul, "pair_config", lambda N: pair)
        monkeypatch.setattr(trimul, "_plans", {})  # plans made with the default pair tile
    fused, _, x, mask, want = _fused_and_reference(case, 3)
    with torch.no_grad():
        if bf16:
            proj_t, terms, out_t = pack_weights(dict(fused.named_parameters()), torch.bfloat16)
            got = ops_trimul(x, mask, proj_t, terms, fused.to_out_norm.weight, fused.to_out_norm.bias, out_t)
        else:
            assert fused.packed_weights()[2].dtype == torch.float16
            got = fused(x, mask)
    assert got.dtype == torch.float32 and got.shape == x.shape
    assert check_close(got, want) is None, check_close(got, want)
    if case.distribution == "cauchy":
        assert x.abs().max() > 1e3  # the heavy tail is there: a plain fp16 path would overflow its sums


def _incoming_reference(ref: TriMulReference, x, mask):
    """out[b, i, j, h] = sum_k left[b, k, i, h] right[b, k, j, h], written here as per-channel matrix products
    (not the reference's einsum)."""
    xn = ref.norm(x)
    m = mask.unsqueeze(-1)
    left = ref.left_proj(xn) * m * ref.left_gate(xn).sigmoid()
    right = ref.right_proj(xn) * m * ref.right_gate(xn).sigmoid()
    out = (left.permute(0, 3, 2, 1) @ right.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)  # [b, h, i, k] @ [b, h, k, j]
    return ref.to_out(ref.to_out_norm(out) * ref.out_gate(xn).sigmoid())


def test_incoming_matches_its_formula(monkeypatch):
    """The incoming update against :func:`_incoming_reference`, on the large pair tile, whose rows wrap past
    N = 48."""
    case = Case(48, 1, 64, True, "cauchy")
    monkeypatch.setattr(trimul, "pair_config", lambda N: trimul.PAIR_LARGE)
    monkeypatch.setattr(trimul, "_plans", {})
    ref = reference_model(case, 21)
    fused = TriMul(case.dim, direction="incoming")
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 22)
    with torch.no_grad():
        want = _incoming_reference(ref, x, mask)
        got = fused(x, mask)
        outgoing = TriMul(case.dim)
        outgoing.load_state_dict(ref.state_dict())
        assert check_close(outgoing(x, mask), want) is not None  # the two updates differ on this input
    assert check_close(got, want) is None, check_close(got, want)


def test_torch_compile_fullgraph_batch_two():
    """torch.compile(fullgraph=True) traces the module through the op's fake implementation; batch 2 and
    a bool mask (loaded as 0/1) on the way."""
    case = Case(32, 2, 128, False, "normal")
    fused, _, x, mask, want = _fused_and_reference(case, 5)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fused, fullgraph=True, backend="aot_eager")(x, mask.bool())
    torch._dynamo.reset()
    assert check_close(got, want) is None, check_close(got, want)


@pytest.mark.parametrize("centring", ["separate", "fused"])
def test_rows_with_a_large_common_offset(centring):
    """The GEMM multiplies x centred on its row means (in bf16) and LayerNorm's scale is applied after it:
    rows at 1e4 with unit spread keep their accuracy (uncentred, bf16 would keep ~1e4 * 2^-9 of it), with
    the centring pass and inside the projection kernel."""
    case = Case(32, 1, 128, True, "normal")
    ref = reference_model(case, 11)
    fused = TriMul(case.dim)
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 12)
    x = x + 1e4
    with tritium.knobs.ops.scope(), torch.no_grad():
        tritium.knobs.ops.trimul_fused_centering = centring == "fused"
        got, want = fused(x, mask), ref(x, mask)
    assert check_close(got, want) is None, check_close(got, want)


@pytest.mark.parametrize("case, direction, offset", [(Case(16, 1, 384, False, "normal"), "incoming", 1e4),
                                                     (Case(32, 1, 128, True, "cauchy"), "outgoing", 0.0)],
                         ids=["C384-incoming-mask-offset", "C128-outgoing-cauchy"])
def test_projection_centring_x_itself(case, direction, offset, monkeypatch):
    """The fused projection (:func:`trimul.trimul_proj_x_kernel`: no centring pass) against the fp32 formulas:
    its mean pass, its centred squares (rstd) and its bf16 operands, over two and eight 128-row blocks, with
    x offset or heavy-tailed."""
    monkeypatch.setattr(trimul, "_plans", {})
    ref = reference_model(case, 31)
    fused = TriMul(case.dim, direction=direction)
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 32)
    x = x + offset
    with tritium.knobs.ops.scope(), torch.no_grad():
        tritium.knobs.ops.trimul_fused_centering = True
        got = fused(x, mask)
        want = _incoming_reference(ref, x, mask) if direction == "incoming" else ref(x, mask)
        (plan, ) = trimul._plans.values()
    assert plan.kernels[0] is trimul.trimul_proj_x_kernel and trimul.trimul_center_kernel not in plan.kernels
    assert check_close(got, want) is None, check_close(got, want)


def _reference_weights(C: int, H: int, dtype: torch.dtype, seed: int) -> dict:
    torch.manual_seed(seed)
    ref = TriMulReference(C, H)
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
    return {name: p.detach().to(dtype) for name, p in ref.named_parameters()}


@pytest.mark.parametrize("C, H, out_dtype, dtype", [(64, 64, torch.float16, torch.float32),
                                                    (192, 128, torch.bfloat16, torch.float32),
                                                    (64, 128, torch.bfloat16, torch.bfloat16),
                                                    (1088, 64, torch.float16, torch.float32)])
def test_pack_kernel_equals_pack_weights_bit_for_bit(C, H, out_dtype, dtype):
    """One launch of the pack kernel writes what pack_weights computes, to the bit: bf16 roundings to nearest
    even, the projected bias summed in the same order (C = 192 padded to a power of two, 1088 in two chunks),
    Wo^T in either output type, parameters read as fp32."""
    weights = _reference_weights(C, H, dtype, C + H)
    want = pack_weights(weights, out_dtype)
    got = [torch.full_like(t, float("nan")) for t in want]
    names = [f"{n}.weight" for n in PROJECTIONS] + ["norm.weight", "norm.bias", "to_out.weight"]
    Packer([weights[n] for n in names], *got)()
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w), (g - w).abs().max()


def test_module_follows_data_writes():
    """Writes through ``.data`` (EMA updates, init code) bump no version counter: the module used to keep
    computing with its first packing. Each write here changes the output beyond the tolerance."""
    case = Case(16, 1, 64, True, "normal")
    ref, new = reference_model(case, 51), reference_model(case, 52)
    fused = TriMul(case.dim)
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 53)
    params, refs = dict(fused.named_parameters()), dict(ref.named_parameters())
    news = dict(new.named_parameters())
    with torch.no_grad():
        before = fused(x, mask)
        buffers = fused.packed_weights()
        for name, write in [("left_proj.weight", lambda p: p.data.copy_(news["left_proj.weight"])),
                            ("norm.weight", lambda p: p.data.mul_(-0.5)),
                            ("to_out.weight", lambda p: p.data.copy_(news["to_out.weight"])),
                            ("to_out.weight", lambda p: p.data.mul_(-0.75))]:
            write(params[name])
            refs[name].copy_(params[name])
            got, want = fused(x, mask), ref(x, mask)
            assert check_close(before, want) is not None, name  # the write matters
            assert check_close(got, want) is None, (name, check_close(got, want))
            before = got
        assert all(a is b for a, b in zip(fused.packed_weights(), buffers))  # the same buffers, rewritten
