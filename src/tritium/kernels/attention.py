"""``attention(q, k, v)``: flash-attention forward on Hopper with the TLX kernels, picking the variant.

Rule: the pipelined ping-pong kernel (``attention_ws_pipelined_hopper``), unless the sequence fits
in one K/V block (seq <= BLOCK_N): then each consumer has a single S = Q K^T and a single P V with
nothing to overlap them with, and the plain kernel (``attention_ws_hopper``) does the same work
without the turn barriers.
"""
from __future__ import annotations

from .attention_persistent_hopper import forward as persistent_forward
from .attention_ws_hopper import CONFIGS, attn_fwd_ws_hopper, check_inputs, launch
from .attention_ws_pipelined_hopper import attn_fwd_ws_pipelined_hopper


def pick_kernel(seq: int, head_dim: int):
    """The kernel :func:`attention` runs for sequence length ``seq`` and ``head_dim`` (the rule above)."""
    return attn_fwd_ws_hopper if seq <= CONFIGS[head_dim].BLOCK_N else attn_fwd_ws_pipelined_hopper


def attention(q, k, v, causal: bool = False, sm_scale: float | None = None):
    """softmax(q k^T * sm_scale [+ causal mask]) v for [batch, heads, seq, head_dim] fp16/bf16 CUDA tensors.

    Head dim 64 or 128, any sequence length; ``sm_scale`` defaults to 1/sqrt(head_dim). The causal
    mask is the lower-triangular one of ``scaled_dot_product_attention(is_causal=True)``. Returns a
    new contiguous tensor of q's shape and dtype.
    """
    check_inputs(q, k, v, "attention")
    return launch(pick_kernel(q.shape[2], q.shape[3]), q, k, v, causal, sm_scale, None)


def attention_forward(q, k, v, causal: bool = False, sm_scale: float | None = None, enable_gqa: bool = False):
    """``(o, lse)``: the attention output and its rows' logsumexp, what a backward needs, from the persistent
    kernel (``attention_persistent_hopper``). k and v may have fewer heads than q with ``enable_gqa``
    (query head h reads key/value head h // (Hq // Hkv), as SDPA's ``enable_gqa=True``). lse is float32
    [B, Hq, S], in base 2: log2 of sum_j exp2(q_i . k_j * sm_scale * log2(e)) over the unmasked j."""
    check_inputs(q, k, v, "attention", enable_gqa)
    return persistent_forward(q, k, v, causal, sm_scale)
