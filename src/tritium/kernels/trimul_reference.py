"""The fp32 PyTorch reference of the trimul operator (GPU MODE task), its inputs and weights.

The tests and ``tritium bench trimul`` compare against this module; :class:`tritium.ops.TriMul`
has the same submodules and parameter names, so its ``state_dict`` loads into the fused module.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from .trimul import check_direction


#: The pair products of the two triangle updates: outgoing (the task's) sums over the k of rows i and j,
#: incoming over the k of columns i and j.
PAIR_EINSUM = {"outgoing": "... i k d, ... j k d -> ... i j d", "incoming": "... k i d, ... k j d -> ... i j d"}


class TriMulReference(nn.Module):
    """Triangle multiplicative update, eager fp32: outgoing is what the task's reference computes."""

    def __init__(self, dim: int, hidden_dim: int = 128, direction: str = "outgoing") -> None:
        super().__init__()
        check_direction(direction, type(self).__name__)
        self.direction = direction
        self.norm = nn.LayerNorm(dim)
        self.left_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.right_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.left_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.right_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.out_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.to_out_norm = nn.LayerNorm(hidden_dim)
        self.to_out = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.norm(x)
        mask = mask.unsqueeze(-1)
        left = self.left_proj(x) * mask * self.left_gate(x).sigmoid()
        right = self.right_proj(x) * mask * self.right_gate(x).sigmoid()
        out = torch.einsum(PAIR_EINSUM[self.direction], left, right)
        out = self.to_out_norm(out) * self.out_gate(x).sigmoid()
        return self.to_out(out)


class Case(NamedTuple):
    """One case of the task: (seqlen, batch, dim, nomask, distribution)."""
    seqlen: int
    bs: int
    dim: int
    nomask: bool
    distribution: str  # "normal" or "cauchy"

    @property
    def label(self) -> str:
        return (f"N{self.seqlen} B{self.bs} C{self.dim} {'nomask' if self.nomask else 'mask'} "
                f"{self.distribution}")


def _cases(spec: str, dist: str) -> list[Case]:
    out = []
    for item in spec.split(";"):
        n, b, c, masks = item.split(",")
        out += [Case(int(n), int(b), int(c), m == "T", dist) for m in masks.split("/")]
    return out


#: Every test case of the task (docs: targets.md), normal and Cauchy.
TEST_CASES = tuple(_cases("32,1,128,T/F;64,2,256,T/F;128,1,768,T;256,1,128,T/F;768,2,128,T;1024,1,384,F;"
                     "1024,1,768,T/F", "normal")
              + _cases("32,1,128,T;64,2,256,T;128,1,768,T;256,1,128,T;768,2,128,T;1024,1,384,F;1024,1,768,F",
                       "cauchy"))
#: The 7 ranked cases, scored by the geometric mean of their times.
RANKED_CASES = (Case(256, 2, 128, True, "normal"), Case(768, 1, 128, True, "cauchy"),
                Case(256, 2, 384, False, "normal"), Case(512, 1, 128, True, "normal"),
                Case(1024, 1, 128, True, "cauchy"), Case(768, 1, 384, False, "normal"),
                Case(1024, 1, 384, True, "normal"))
HIDDEN = 128


def init_weights(module: nn.Module, seed: int) -> nn.Module:
    """The task's weights: LayerNorm weights and biases ~ randn, projections randn / sqrt(H), Wo randn / sqrt(C)."""
    gen = torch.Generator().manual_seed(seed)
    hidden, dim = module.left_proj.weight.shape
    with torch.no_grad():
        for name, p in module.named_parameters():
            scale = 1.0 if "norm" in name else 1 / math.sqrt(dim if name == "to_out.weight" else hidden)
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return module


def make_inputs(case: Case, seed: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """x [B, N, N, C] fp32 (randn, or Cauchy(0, 2)) and mask [B, N, N] (ones, or random 0/1 int64)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (case.bs, case.seqlen, case.seqlen, case.dim)
    if case.distribution == "cauchy":
        x = torch.empty(shape, device=device).cauchy_(0.0, 2.0, generator=gen)
    else:
        x = torch.randn(shape, device=device, generator=gen)
    mask_shape = shape[:3]
    if case.nomask:
        mask = torch.ones(mask_shape, device=device)
    else:
        mask = torch.randint(0, 2, mask_shape, device=device, generator=gen)
    return x, mask


def reference_model(case: Case, seed: int, device="cpu") -> TriMulReference:
    return init_weights(TriMulReference(case.dim, HIDDEN), seed).to(device)


def check_close(y: torch.Tensor, ref: torch.Tensor, atol: float = 2e-2, rtol: float = 2e-2) -> str | None:
    """None when ``|y - ref| <= atol + rtol |ref|`` everywhere with NaN/inf in the same places, else why not."""
    if y.shape != ref.shape:
        return f"shape {tuple(y.shape)} != {tuple(ref.shape)}"
    y, ref = y.float(), ref.float()
    nonfinite_ref, nonfinite_y = ~torch.isfinite(ref), ~torch.isfinite(y)
    kinds = lambda t: t[nonfinite_ref].nan_to_num(0.0, 1.0, -1.0)  # noqa: E731  NaN, +inf, -inf
    if not torch.equal(nonfinite_ref, nonfinite_y) or not torch.equal(kinds(y), kinds(ref)):
        return (f"NaN/inf placement differs: {int(nonfinite_y.sum())} non-finite values, the reference has "
                f"{int(nonfinite_ref.sum())}")
    fin = ~nonfinite_ref
    err = (y[fin] - ref[fin]).abs()
    bad = err > atol + rtol * ref[fin].abs()
    if bad.any():
        i = int(torch.argmax((err - rtol * ref[fin].abs()).double()))
        return (f"{int(bad.sum())} of {bad.numel()} elements outside {atol} + {rtol}|ref| (worst: got "
                f"{y[fin][i].item():.6g}, want {ref[fin][i].item():.6g}); max abs error {err.max().item():.3g}")
    return None
