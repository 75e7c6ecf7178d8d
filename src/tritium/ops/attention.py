"""``torch.ops.tritium.attention``: the TLX flash-attention forward as a torch operator.

Contract:

* ``q``, ``k``, ``v``: [batch, heads, seq, head_dim] tensors of one shape, all float16 or all bfloat16,
  on one CUDA device of compute capability 9.0 (or on the CPU under ``TRITON_INTERPRET=1``); head_dim
  64 or 128, any sequence length >= 1, any strides (a layout TMA cannot read in place is copied).
* ``causal``: the lower-triangular mask of ``scaled_dot_product_attention(is_causal=True)``;
  ``sm_scale`` defaults to 1/sqrt(head_dim).
* The result is a new contiguous tensor of q's shape and dtype. The kernel is chosen per shape by
  :func:`tritium.kernels.attention.pick_kernel` (persistent ping-pong, or pipelined for long causal
  sequences at head dim 128), as :func:`tritium.kernels.attention.attention` does.
* Forward only: differentiating through it raises an error that says so.
* Bad input raises ``ValueError``/``TypeError`` naming the argument; the fake (meta) implementation
  runs the same shape and dtype checks, so ``torch.compile`` reports them while tracing.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from ..kernels.attention import attention as kernel_attention
from ..kernels.attention_ws_hopper import check_inputs, check_shapes
from . import launch as ops_launch

_OP = "tritium.ops.attention"


def _check_scale(sm_scale: Optional[float]) -> None:
    if sm_scale is not None and not math.isfinite(sm_scale):
        raise ValueError(f"{_OP}: sm_scale must be a finite number or None, got {sm_scale}")


@torch.library.custom_op("tritium::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
               sm_scale: Optional[float] = None) -> torch.Tensor:
    check_inputs(q, k, v, _OP)
    ops_launch.check_not_cpu(_OP, "q", q)  # TRITON_INTERPRET=1 set after import passes check_inputs
    _check_scale(sm_scale)
    if q.device.type == "cuda" and q.device.index != torch.cuda.current_device():
        with torch.cuda.device(q.device):
            return kernel_attention(q, k, v, causal, sm_scale)
    return kernel_attention(q, k, v, causal, sm_scale)


@_attention.register_fake
def _attention_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: Optional[float] = None) -> torch.Tensor:
    check_shapes(q, k, v, _OP)
    _check_scale(sm_scale)
    return q.new_empty(q.shape)


def _no_backward(ctx, grad: torch.Tensor):
    raise RuntimeError(f"{_OP} has no backward kernel (tritium ships the flash-attention forward only); "
                       "use torch.nn.functional.scaled_dot_product_attention where gradients are needed")


_attention.register_autograd(_no_backward)


def at_least_sdpa(seq: int, head_dim: int) -> bool:
    """Whether the H200 measurements rate this op at least as fast as PyTorch's fastest SDPA backend (cuDNN)
    for q, k, v of sequence length ``seq`` and ``head_dim``, which is what ``torch.compile`` with
    ``tritium.ops.inductor.use_kernels`` asks before replacing SDPA. Head dim 128 from sequence 8192 on:
    1.014-1.096x in all eight fp16/bf16, causal/non-causal cases (docs/benchmarks.md, "Flash-attention
    forward"); at 4096 one case ran 0.968, and below, and at head dim 64, 0.66-0.98."""
    return head_dim == 128 and seq >= 8192


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              sm_scale: Optional[float] = None) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v with tritium's attention kernels (the module docstring
    has the contract), through the custom op ``torch.ops.tritium.attention``."""
    return torch.ops.tritium.attention(q, k, v, causal, sm_scale)
