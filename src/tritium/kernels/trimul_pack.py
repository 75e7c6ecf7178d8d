"""TriMul's weight packing as one kernel launch, into buffers the caller owns.

:func:`trimul_pack_kernel` writes what ``tritium.ops.trimul.pack_weights`` computes, bit for bit, from the
raw parameters: ``proj_weight_t`` [C, 5 H] bf16 (each projection weight times the input LayerNorm's
weight, rounded once from fp32, in the kernels' column order), ``proj_terms`` [5, H] fp32 (each
projection of the LayerNorm's bias, summed in the fixed order that ``pack_weights`` spells out in
torch) and ``out_weight_t`` [H, C] = Wo^T in the output path's type. Every parameter is read as fp32
first, as ``pack_weights`` reads it. No host-side stack or copy: the program id selects the weight.

A module that runs it before each call (:class:`tritium.ops.TriMul`) computes with its parameters'
values at that call, whatever wrote them (``.data`` writes included, which no version counter sees),
for the price of one small launch, made straight through its compiled launcher after the first
(:class:`tritium.kernels.trimul.Launcher`).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

import tritium.tlx as tlx

from .launch import interpreting
from .trimul import PROJ_HS, Launcher

#: The widest chunk of C a program holds, and the elements it holds (32 a thread at 4 warps).
PACK_CHUNK = 1024
PACK_ELEMS = 4096


def pack_block(C: int) -> tuple[int, int]:
    """(rows per program, chunk width) of :func:`trimul_pack_kernel`: C rounded up to a power of two, at most
    PACK_CHUNK, and PACK_ELEMS elements a program."""
    chunk = min(triton.next_power_of_2(C), PACK_CHUNK)
    return PACK_ELEMS // chunk, chunk


@triton.jit
def _rounded(x, DTYPE: tl.constexpr):
    """fp32 ``x`` rounded to nearest (ties to even) in DTYPE, as torch rounds. bfloat16 is rounded here on
    the bits (NaN to the canonical 0x7FC0, as torch): the interpreter truncates on ``.to(tl.bfloat16)``."""
    if DTYPE == tl.bfloat16:
        u = x.to(tl.uint32, bitcast=True)
        u = tl.where(x != x, 0x7FC00000, u + 0x7FFF + ((u >> 16) & 1))
        return (u >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        return x.to(DTYPE)


@triton.jit
def _pack_projection(w_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, j: tl.constexpr, C, H: tl.constexpr,
                     HS: tl.constexpr, HB: tl.constexpr, BC: tl.constexpr, LOG_BC: tl.constexpr):
    """Rows [program_id(1) * HB, + HB) of projection j, BC columns at a time: ``(W_j * gamma)^T`` into its
    columns of ``proj_ptr`` and ``W_j @ beta`` into ``terms_ptr[j]``, in ``tritium.ops.trimul.projected_bias``'
    order: per chunk the products (zero past C) added pairwise, element 2i with 2i + 1, down to one; the chunks'
    sums added left to right."""
    hs = tl.program_id(1) * HB + tl.arange(0, HB)
    if j < 4:  # per HS-wide hidden slice, the four left/right projections side by side
        cols = (hs // HS) * (4 * HS) + j * HS + hs % HS
    else:  # then the out gate's H columns
        cols = 4 * H + hs
    acc = tl.zeros((HB, ), dtype=tl.float32)
    for c0 in range(0, C, BC):
        c = c0 + tl.arange(0, BC)
        ok = c < C
        w = tl.load(w_ptr + hs[:, None] * C + c[None, :], mask=ok[None, :], other=0.0).to(tl.float32)
        g = tl.load(gamma_ptr + c, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(beta_ptr + c, mask=ok, other=0.0).to(tl.float32)
        tl.store(proj_ptr + c[None, :] * (5 * H) + cols[:, None], _rounded(w * g[None, :], tl.bfloat16),
                 mask=ok[None, :])
        p = w * b[None, :]  # rounded before any sum: the launch turns fp fusion (fma) off
        for level in tl.static_range(LOG_BC):
            even, odd = tl.split(tl.reshape(p, (HB, BC >> (level + 1), 2)))
            p = even + odd
        acc = acc + tl.reshape(p, (HB, ))
    tl.store(terms_ptr + j * H + hs, acc)


@triton.jit
def trimul_pack_kernel(wl_ptr, wlg_ptr, wr_ptr, wrg_ptr, wog_ptr, gamma_ptr, beta_ptr, wo_ptr, proj_ptr, terms_ptr,
                       out_ptr, C, H: tl.constexpr, HS: tl.constexpr, HB: tl.constexpr, BC: tl.constexpr,
                       LOG_BC: tl.constexpr):
    """Program (j, r): for j < 5 rows [r HB, (r + 1) HB) of projection j (left_proj, left_gate, right_proj,
    right_gate, out_gate: ``pack_weights``' order), for j = 5 those rows of ``out_ptr`` = Wo^T [H, C], Wo being
    ``wo_ptr`` [C, H], in ``out_ptr``'s type. Every weight is contiguous and read as fp32; C is taken BC = 2^LOG_BC
    columns at a time."""
    j = tl.program_id(0)
    if j == 0:
        _pack_projection(wl_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, 0, C, H, HS, HB, BC, LOG_BC)
    elif j == 1:
        _pack_projection(wlg_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, 1, C, H, HS, HB, BC, LOG_BC)
    elif j == 2:
        _pack_projection(wr_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, 2, C, H, HS, HB, BC, LOG_BC)
    elif j == 3:
        _pack_projection(wrg_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, 3, C, H, HS, HB, BC, LOG_BC)
    elif j == 4:
        _pack_projection(wog_ptr, gamma_ptr, beta_ptr, proj_ptr, terms_ptr, 4, C, H, HS, HB, BC, LOG_BC)
    else:
        hs = tl.program_id(1) * HB + tl.arange(0, HB)
        for c0 in range(0, C, BC):
            c = c0 + tl.arange(0, BC)
            ok = (c < C)[None, :]
            wo = tl.load(wo_ptr + c[None, :] * H + hs[:, None], mask=ok, other=0.0).to(tl.float32)
            tl.store(out_ptr + hs[:, None] * C + c[None, :], _rounded(wo, tlx.dtype_of(out_ptr)), mask=ok)


class Packer:
    """Packs one set of parameter tensors into one set of buffers, by :func:`trimul_pack_kernel`, each time it
    is called. Its arguments are fixed, so after the first launch (through the JIT) it launches straight
    through the compiled launcher. ``weights``: left_proj, left_gate, right_proj, right_gate and out_gate's
    weights [H, C], the input LayerNorm's weight and bias [C], to_out's weight [C, H], all contiguous, on
    ``proj``'s device."""

    kernel = trimul_pack_kernel

    def __init__(self, weights: list, proj, terms, out) -> None:
        C, H5 = proj.shape
        H = H5 // 5
        self.device = proj.device
        self.args = [*weights, proj, terms, out, C]
        rows, chunk = pack_block(C)
        self.grid = (6, H // rows)
        self.consts = dict(H=H, HS=PROJ_HS, HB=rows, BC=chunk, LOG_BC=chunk.bit_length() - 1, num_warps=4,
                           enable_fp_fusion=False)
        self.launcher = Launcher(self.device)

    def __call__(self) -> None:
        if self.device.type == "cuda" and self.device.index != torch.cuda.current_device():
            with torch.cuda.device(self.device):
                self.launcher.run(trimul_pack_kernel, self.grid, self.args, self.consts)
        else:
            self.launcher.run(trimul_pack_kernel, self.grid, self.args, self.consts)

    def ready(self) -> bool:
        """Whether the pack kernel launches directly (compiled under the pipelines now in effect)."""
        return self.launcher.ready((trimul_pack_kernel, ))


def runs_on(device) -> bool:
    """Whether the pack kernel can run on tensors of ``device`` (CUDA, or the CPU under the interpreter)."""
    return device.type == "cuda" or (device.type == "cpu" and interpreting())
