"""``attention(q, k, v)``: flash-attention forward on Hopper with the TLX kernels, picking the kernel.

Rule (H200 sweeps of 2026-12-02, docs/benchmarks.md): the persistent ping-pong kernel
(``attention_persistent_hopper``), which is also the one that writes the logsumexp a backward reads and
reads GQA's fewer key/value heads. The non-persistent pipelined kernel (``attention_ws_pipelined_hopper``)
only where it measured faster and neither is needed: causal, head dim 128, sequences from 16384 on (its
hardware-scheduled grid of 2048 heaviest-first programs balances better than the persistent grid's last
round: fp16 1.13-1.17x cuDNN against 1.10-1.11x, bf16 level).
"""
from __future__ import annotations

from .attention_persistent_hopper import attn_fwd_persistent_hopper
from .attention_persistent_hopper import forward as persistent_forward
from .attention_ws_hopper import check_inputs, launch
from .attention_ws_pipelined_hopper import attn_fwd_ws_pipelined_hopper


def pick_kernel(seq: int, head_dim: int, causal: bool, gqa: bool = False, lse: bool = False):
    """The kernel :func:`attention` runs (the rule above); ``gqa``: fewer key/value heads than query heads,
    ``lse``: the logsumexp is wanted."""
    if causal and head_dim == 128 and seq >= 16384 and not (gqa or lse):
        return attn_fwd_ws_pipelined_hopper
    return attn_fwd_persistent_hopper


def attention(q, k, v, causal: bool = False, sm_scale: float | None = None, enable_gqa: bool = False):
    """softmax(q k^T * sm_scale [+ causal mask]) v for [batch, heads, seq, head_dim] fp16/bf16 CUDA tensors.

    Head dim 64 or 128, any sequence length; ``sm_scale`` defaults to 1/sqrt(head_dim). The causal
    mask is the lower-triangular one of ``scaled_dot_product_attention(is_causal=True)``; with
    ``enable_gqa`` k and v may have fewer heads than q, as in SDPA. Returns a new contiguous tensor of
    q's shape and dtype.
    """
    check_inputs(q, k, v, "attention", enable_gqa)
    return run(q, k, v, causal, sm_scale)


def run(q, k, v, causal: bool, sm_scale: float | None):
    """:func:`attention` on inputs the caller has checked (``tritium.ops.attention`` checks them in its own name,
    and a second check costs host time on every call)."""
    kernel = pick_kernel(q.shape[2], q.shape[3], causal, k.shape[1] != q.shape[1])
    if kernel is attn_fwd_persistent_hopper:
        return persistent_forward(q, k, v, causal, sm_scale, store_lse=False)[0]
    return launch(kernel, q, k, v, causal, sm_scale, None)


def attention_forward(q, k, v, causal: bool = False, sm_scale: float | None = None, enable_gqa: bool = False):
    """``(o, lse)``: the attention output and its rows' logsumexp, what a backward needs, from the persistent
    kernel. lse is float32 [B, Hq, S], in base 2: log2 of sum_j exp2(q_i . k_j * sm_scale * log2(e)) over
    the unmasked j (query head h reads key/value head h // (Hq // Hkv) with ``enable_gqa``)."""
    check_inputs(q, k, v, "attention", enable_gqa)
    return persistent_forward(q, k, v, causal, sm_scale)
