"""``torch.ops.tritium.trimul``: the fused triangle multiplicative update as a torch operator.

Contract:

* ``x`` [B, N, N, dim] float32; ``mask`` [B, N, N] of any real or bool dtype (multiplied in as fp32).
* The weights packed once by :func:`pack_weights` from the reference module's parameters:
  ``proj_weight_t`` [dim, 5 * hidden] bfloat16 (left_proj, left_gate, right_proj, right_gate and
  out_gate, transposed, with the input LayerNorm's weight folded in, in the column order of
  :func:`pack_weights`), ``proj_terms`` [5, hidden] float32 (the projections of the input LayerNorm's
  bias, added after the GEMM) and ``out_weight_t`` [hidden, dim] in float16 or bfloat16: the type the
  output path computes in (:func:`choose_dtype`). ``out_norm_weight``/``out_norm_bias`` [hidden] float32.
  Packing is the caller's: :class:`tritium.ops.TriMul` repacks into buffers it owns by one small
  kernel launch per call (:mod:`tritium.kernels.trimul_pack`, equal to :func:`pack_weights` bit for bit),
  so that its packing follows every write to its parameters.
* Tiling limits: dim a multiple of 64 and at most 16384, N a multiple of 16, hidden 64 or 128
  (:func:`tritium.kernels.trimul.check_shapes`).
* ``direction``: ``"outgoing"`` (``out[i, j] = sum_k left[i, k] right[j, k]``, the GPU MODE task's) or
  ``"incoming"`` (``out[i, j] = sum_k left[k, i] right[k, j]``), AlphaFold3's two triangle updates.
* Returns a new float32 [B, N, N, dim] tensor. Forward only (no autograd formula).
* Bad input raises ``ValueError``/``TypeError`` naming the argument; the fake implementation runs the
  same checks, so ``torch.compile(fullgraph=True)`` reports them while tracing.
"""
from __future__ import annotations

from typing import Mapping, Optional

import torch

from ..kernels import trimul as kernels
from ..kernels.trimul_pack import pack_block
from .registration import direct_ok
from .launch import check_not_cpu

_OP = "tritium.ops.trimul"
#: The order of the five projections in ``proj_weight_t``.
PROJECTIONS = ("left_proj", "left_gate", "right_proj", "right_gate", "out_gate")


#: fp16 is used for the output path only while this bounds its values (half of fp16's largest finite value).
FP16_BOUND = 32768.0
_PARAMS = ("norm.weight", "norm.bias", "left_proj.weight", "right_proj.weight", "left_gate.weight",
           "right_gate.weight", "out_gate.weight", "to_out_norm.weight", "to_out_norm.bias", "to_out.weight")


#: Each parameter's shape in the reference module, in its ``dim`` and ``hidden_dim``.
_SHAPES = {"norm.weight": ("dim", ), "norm.bias": ("dim", ),
           **{f"{n}.weight": ("hidden_dim", "dim") for n in PROJECTIONS},
           "to_out_norm.weight": ("hidden_dim", ), "to_out_norm.bias": ("hidden_dim", ),
           "to_out.weight": ("dim", "hidden_dim")}


def _require(weights: Mapping[str, torch.Tensor], caller: str) -> None:
    missing = [k for k in _PARAMS if k not in weights]
    if missing:
        raise KeyError(f"tritium.ops.trimul.{caller}: the weights lack {missing}; pass the reference module's "
                       f"parameters by name (its state_dict or named_parameters()), which are {list(_PARAMS)}")


def _check_weight_shapes(weights: Mapping[str, torch.Tensor]) -> None:
    """Every weight has the reference module's shape for one ``dim`` and ``hidden_dim``, else the packing
    fails in torch's words, naming no weight. The sizes are those most weights agree on, so a wrong weight
    is the one named, not the right ones it disagrees with."""
    votes: dict[str, list[int]] = {"dim": [], "hidden_dim": []}
    for name, dims in _SHAPES.items():
        shape = tuple(weights[name].shape)
        if len(shape) == len(dims):
            for d, n in zip(dims, shape):
                votes[d].append(n)
    size = {d: max(v, key=v.count) if v else None for d, v in votes.items()}  # no Counter: Dynamo traces this
    bad = [f"{name} must be [{', '.join(dims)}] = {[size[d] for d in dims]}, got {list(weights[name].shape)}"
           for name, dims in _SHAPES.items() if tuple(weights[name].shape) != tuple(size[d] for d in dims)]
    if bad:
        raise ValueError(f"tritium.ops.trimul.pack_weights: {'; '.join(bad)} (dim={size['dim']} and "
                         f"hidden_dim={size['hidden_dim']}: what most weights have)")


def choose_dtype(weights: Mapping[str, torch.Tensor]) -> torch.dtype:
    """The 16-bit type of the output path (LayerNorm_H(out) * sigmoid, and Wo): float16 (3 more mantissa
    bits) where the weights bound every value it holds below FP16_BOUND for any input, else bfloat16
    (fp32's range). ``|z_h| <= max|gamma'| sqrt(H) + max|beta'|`` and ``|Wo|`` bound it. (The projection
    GEMM multiplies raw x, which nothing bounds, so it is always bf16.)
    """
    _require(weights, "choose_dtype")
    if any(weights[k].device.type == "meta" for k in _PARAMS):  # values unknown: fp32's range
        return torch.bfloat16
    ln_w, ln_b, wo = (weights[k].detach().float() for k in ("to_out_norm.weight", "to_out_norm.bias", "to_out.weight"))
    bound = max(ln_w.abs().max() * ln_w.numel() ** 0.5 + ln_b.abs().max(), wo.abs().max())
    return torch.float16 if bool(bound < FP16_BOUND) else torch.bfloat16  # NaN: bf16


def pack_weights(weights: Mapping[str, torch.Tensor], out_dtype: Optional[torch.dtype] = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(``proj_weight_t``, ``proj_terms``, ``out_weight_t``) from the reference module's parameters by name
    (a ``state_dict``, or the task's weights dict); ``out_weight_t`` in ``out_dtype`` (default
    :func:`choose_dtype`). Every weight is read as fp32; ``proj_terms`` is summed in
    :func:`projected_bias`' order, so :mod:`tritium.kernels.trimul_pack`'s kernel gives the same bits."""
    _require(weights, "pack_weights")
    _check_weight_shapes(weights)
    out_dtype = out_dtype or choose_dtype(weights)
    gamma, beta = weights["norm.weight"].float(), weights["norm.bias"].float()
    w = torch.stack([weights[f"{n}.weight"] for n in PROJECTIONS]).float()  # [5, H, C]
    _, H, C = w.shape
    if H % kernels.PROJ_HS:
        raise ValueError(f"tritium.ops.trimul.pack_weights: hidden_dim={H} is not supported; the kernels tile "
                         f"hidden_dim in {kernels.HIDDEN_DIMS}")
    wt = (w * gamma).transpose(1, 2)  # [5, C, H]
    # Per hidden slice of PROJ_HS columns, the four left/right projections side by side (the kernel's one
    # [BK, 4 * PROJ_HS] tile), then the out gate's H columns.
    quads = wt[:4].reshape(4, C, H // kernels.PROJ_HS, kernels.PROJ_HS).permute(1, 2, 0, 3).reshape(C, 4 * H)
    proj = torch.cat([quads, wt[4]], dim=1).to(torch.bfloat16).contiguous()
    return proj, projected_bias(w, beta), weights["to_out.weight"].float().t().to(out_dtype).contiguous()


def projected_bias(w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``w @ beta`` ([5, H, C] fp32 by [C] fp32) summed in the order :mod:`tritium.kernels.trimul_pack`'s kernel
    sums it, so that the two agree bit for bit: per chunk of C (:func:`~tritium.kernels.trimul_pack.pack_block`)
    the products, padded with zeros, added pairwise (element 2i with 2i + 1) down to one; then the chunks'
    sums added left to right (at most 16 chunks: C is at most 16384)."""
    chunk = pack_block(w.shape[-1])[1]
    p = torch.nn.functional.pad(w * beta, (0, -w.shape[-1] % chunk)).unflatten(-1, (-1, chunk))
    while p.shape[-1] > 1:
        even, odd = p.unflatten(-1, (-1, 2)).unbind(-1)
        p = even + odd
    acc = torch.zeros(p.shape[:-2], dtype=p.dtype, device=p.device)
    for k in range(p.shape[-2]):
        acc = acc + p[..., k, 0]
    return acc.contiguous()


def _check(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t, direction) -> None:
    """Argument checks shared by the real and the fake implementation."""
    kernels.check_direction(direction, _OP)
    if x.dim() != 4 or x.shape[1] != x.shape[2]:
        raise ValueError(f"{_OP}: x must be [B, N, N, dim], got shape {tuple(x.shape)}")
    if x.dtype != torch.float32:
        raise TypeError(f"{_OP}: x has dtype {x.dtype}; it must be float32")
    B, N, _, C = x.shape
    if tuple(mask.shape) != (B, N, N):
        raise ValueError(f"{_OP}: mask must be [B, N, N] = {[B, N, N]} for x of shape {tuple(x.shape)}, "
                         f"got {tuple(mask.shape)}")
    if mask.is_complex():
        raise TypeError(f"{_OP}: mask has dtype {mask.dtype}; use a real or bool mask")
    weights_dim = proj_weight_t.shape[0] if proj_weight_t.dim() == 2 else None
    if out_weight_t.dim() == 2 and out_weight_t.shape[1] == weights_dim != C:  # the weights agree: x is off
        raise ValueError(f"{_OP}: x's last dimension {C} does not match the weights' dim {weights_dim} "
                         f"(proj_weight_t is {list(proj_weight_t.shape)}, out_weight_t {list(out_weight_t.shape)})")
    if out_weight_t.dim() != 2 or out_weight_t.shape[1] != C:
        raise ValueError(f"{_OP}: out_weight_t must be [hidden, dim={C}], got {tuple(out_weight_t.shape)}")
    H = out_weight_t.shape[0]
    if tuple(proj_weight_t.shape) != (C, 5 * H):
        raise ValueError(f"{_OP}: proj_weight_t must be [dim, 5 * hidden] = {[C, 5 * H]} (see pack_weights), "
                         f"got {tuple(proj_weight_t.shape)}")
    if proj_weight_t.dtype != torch.bfloat16:
        raise TypeError(f"{_OP}: proj_weight_t has dtype {proj_weight_t.dtype}; it must be bfloat16 (see pack_weights)")
    if out_weight_t.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"{_OP}: out_weight_t has dtype {out_weight_t.dtype}; it must be float16 or bfloat16 "
                        "(see pack_weights)")
    if tuple(proj_terms.shape) != (5, H):
        raise ValueError(f"{_OP}: proj_terms must be [5, hidden] = {[5, H]} (see pack_weights), "
                         f"got {tuple(proj_terms.shape)}")
    for name, p, n in (("out_norm_weight", out_norm_weight, H), ("out_norm_bias", out_norm_bias, H)):
        if tuple(p.shape) != (n, ):
            raise ValueError(f"{_OP}: {name} must have shape [{n}], got {tuple(p.shape)}")
    for name, p in (("proj_terms", proj_terms), ("out_norm_weight", out_norm_weight), ("out_norm_bias", out_norm_bias)):
        if p.dtype != torch.float32:
            raise TypeError(f"{_OP}: {name} has dtype {p.dtype}; it must be float32")
    kernels.check_shapes(B, N, C, H, _OP)
    args = {"mask": mask, "proj_weight_t": proj_weight_t, "proj_terms": proj_terms,
            "out_norm_weight": out_norm_weight, "out_norm_bias": out_norm_bias, "out_weight_t": out_weight_t}
    for name, t in args.items():
        if t.device != x.device:
            raise ValueError(f"{_OP}: {name} is on {t.device} but x is on {x.device}; all must be on one device")
    check_not_cpu(_OP, "x", x)
    if x.device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(f"{_OP}: x is on {x.device}; the kernels run on CUDA devices")


def _compute(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t,
             eps, out_eps, direction, prologue=None) -> torch.Tensor:
    """The op's real implementation; ``prologue`` as :func:`tritium.kernels.trimul.launch` takes it."""
    _check(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t, direction)
    if x.numel() == 0:
        if prologue is not None:
            prologue()
        return torch.zeros_like(x)
    args = [t.contiguous() for t in (x, mask, proj_weight_t, proj_terms, out_norm_weight,
                                     out_norm_bias, out_weight_t)]
    incoming = direction == "incoming"
    if x.device.type == "cuda" and x.device.index != torch.cuda.current_device():
        with torch.cuda.device(x.device):
            return kernels.launch(*args, eps, out_eps, incoming, prologue=prologue)
    return kernels.launch(*args, eps, out_eps, incoming, prologue=prologue)


@torch.library.custom_op("tritium::trimul", mutates_args=())
def _trimul(x: torch.Tensor, mask: torch.Tensor, proj_weight_t: torch.Tensor, proj_terms: torch.Tensor,
            out_norm_weight: torch.Tensor, out_norm_bias: torch.Tensor,
            out_weight_t: torch.Tensor, eps: float = 1e-5, out_eps: float = 1e-5,
            direction: str = "outgoing") -> torch.Tensor:
    return _compute(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t,
                    eps, out_eps, direction)


@_trimul.register_fake
def _trimul_fake(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t,
                 eps=1e-5, out_eps=1e-5, direction="outgoing"):
    _check(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t, direction)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def trimul(x: torch.Tensor, mask: torch.Tensor, proj_weight_t: torch.Tensor, proj_terms: torch.Tensor,
           out_norm_weight: torch.Tensor, out_norm_bias: torch.Tensor,
           out_weight_t: torch.Tensor, eps: float = 1e-5, out_eps: float = 1e-5,
           direction: str = "outgoing") -> torch.Tensor:
    """The fused trimul forward (see the module docstring for the contract): ``torch.ops.tritium.trimul``,
    or its implementation directly where nothing would observe the dispatch (:func:`tritium.ops.registration.direct_ok`:
    the dispatcher costs microseconds of host time before the first kernel starts)."""
    return trimul_after(None, x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t, eps,
                        out_eps, direction)


def trimul_after(prologue, x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias, out_weight_t,
                 eps: float = 1e-5, out_eps: float = 1e-5, direction: str = "outgoing") -> torch.Tensor:
    """:func:`trimul` after ``prologue``, a launch that writes the packed weights (``TriMul``'s packing): on the
    direct path it goes to the kernels' launch, which replays it in a small call's graph, else it runs
    first."""
    if direct_ok(x, mask):
        return _compute(x, mask, proj_weight_t, proj_terms, out_norm_weight, out_norm_bias,
                        out_weight_t, eps, out_eps, direction, prologue)
    if prologue is not None:
        prologue()
    kernels.check_direction(direction, _OP)  # before the dispatcher, which refuses a non-str in its own words
    return torch.ops.tritium.trimul(x, mask, proj_weight_t, proj_terms, out_norm_weight,
                                    out_norm_bias, out_weight_t, eps, out_eps, direction)
