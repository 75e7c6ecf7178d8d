"""``torch.ops.tritium.attention``: the TLX flash attention as a differentiable torch operator.

Contract:

* ``q`` [batch, heads, seq, head_dim]; ``k`` and ``v`` of q's shape, or with ``enable_gqa=True``
  (grouped-query attention, SDPA's convention) with a divisor Hkv of q's heads Hq, query head h using
  KV head h // (Hq // Hkv). All float16 or all bfloat16, on one CUDA device of compute capability 9.0
  (or on the CPU under ``TRITON_INTERPRET=1``, where float64 is accepted too, so that
  ``torch.autograd.gradcheck`` can run through the kernels); head_dim 64 or 128, any sequence length
  >= 1, the same for q and k (different query and key lengths are refused with an error that says so),
  any strides (a layout TMA cannot read in place is copied).
* ``causal``: the lower-triangular mask of ``scaled_dot_product_attention(is_causal=True)``;
  ``sm_scale`` defaults to 1/sqrt(head_dim).
* The result is a new contiguous tensor of q's shape and dtype. Where no input requires a gradient, the
  kernel is chosen per shape by :func:`tritium.kernels.attention.pick_kernel` (persistent ping-pong, or
  pipelined for long causal sequences at head dim 128), as :func:`tritium.kernels.attention.attention`
  does; otherwise the persistent kernel runs, which also writes the logsumexp the backward reads
  (:func:`tritium.kernels.attention.attention_forward`).
* Differentiable: the forward saves its base-2 logsumexp, and the backward runs
  :mod:`tritium.kernels.attention_bwd_hopper` (a delta = rowsum(O * dO) kernel, then one
  warp-specialized kernel for dQ, dK and dV; with GQA, dK and dV are summed over each KV head's query
  heads inside the kernel). dQ is accumulated with fp32 atomic TMA adds, so its last bits may differ
  from run to run. The backward is not itself differentiable (no double backward).
* Bad input raises ``ValueError``/``TypeError`` naming the argument; the fake (meta) implementations
  of the forward and the backward run the same checks, so ``torch.compile`` reports them while tracing.

Shape: ``tritium::attention`` is a composite op (as SDPA is) over opaque custom ops, each with its fake
implementation: ``tritium::_attention_inference`` -> o where no gradient is needed;
``tritium::_attention_forward`` -> (o, lse), whose autograd registration saves what the backward needs, and
``tritium::_attention_backward`` -> (dq, dk, dv).
"""
from __future__ import annotations

import math
import numbers
from typing import Optional

import torch

from ..kernels.attention import run as run_attention
from ..kernels.attention_persistent_hopper import forward as persistent_forward
from ..kernels.attention_bwd_hopper import check_backward, launch_backward
from ..kernels.attention_ws_hopper import check_inputs, check_shapes
from . import launch as ops_launch
from . import registration

_OP = "tritium.ops.attention"


def _check_scale(sm_scale: Optional[float]) -> None:
    if sm_scale is not None and not math.isfinite(sm_scale):
        raise ValueError(f"{_OP}: sm_scale must be a finite number or None, got {sm_scale}")


def _check_real(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: Optional[float], enable_gqa: bool) -> None:
    """The forward ops' argument checks on real tensors (their fakes run :func:`_check_fake`)."""
    check_inputs(q, k, v, _OP, enable_gqa)
    ops_launch.check_not_cpu(_OP, "q", q)  # TRITON_INTERPRET=1 set after import passes check_inputs
    _check_scale(sm_scale)


def _check_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: Optional[float], enable_gqa: bool) -> None:
    check_shapes(q, k, v, _OP, enable_gqa)
    _check_scale(sm_scale)


def _on_device(q: torch.Tensor, fn, *args):
    """``fn(*args)`` with q's CUDA device current (the kernels launch on the current device)."""
    if q.device.type == "cuda" and q.device.index != torch.cuda.current_device():
        with torch.cuda.device(q.device):
            return fn(*args)
    return fn(*args)


def _attention_inference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: Optional[float],
                         enable_gqa: bool) -> torch.Tensor:
    _check_real(q, k, v, sm_scale, enable_gqa)
    return _on_device(q, run_attention, q, k, v, causal, sm_scale)


def _attention_inference_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                              sm_scale: Optional[float], enable_gqa: bool) -> torch.Tensor:
    _check_fake(q, k, v, sm_scale, enable_gqa)
    return q.new_empty(q.shape)


# Registered per dispatch key, not by custom_op: an eager inference call is host-bound at short sequences, and
# custom_op's Python layers cost more host time than the rest of the call (docs/benchmarks.md, 2026-12-02).
registration.define("tritium::_attention_inference", "(Tensor q, Tensor k, Tensor v, bool causal, float? sm_scale, "
                    "bool enable_gqa) -> Tensor", _attention_inference, _attention_inference_fake, 3,
                    no_backward=f"{_OP}: the inference op has no backward; tritium::attention runs "
                                "tritium::_attention_forward where a gradient is needed")


@torch.library.custom_op("tritium::_attention_forward", mutates_args=())
def _attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: Optional[float],
                       enable_gqa: bool) -> tuple[torch.Tensor, torch.Tensor]:
    _check_real(q, k, v, sm_scale, enable_gqa)
    return _on_device(q, persistent_forward, q, k, v, causal, sm_scale)


@_attention_forward.register_fake
def _attention_forward_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                            sm_scale: Optional[float], enable_gqa: bool) -> tuple[torch.Tensor, torch.Tensor]:
    _check_fake(q, k, v, sm_scale, enable_gqa)
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("tritium::_attention_backward", mutates_args=())
def _attention_backward(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                        lse: torch.Tensor, causal: bool, sm_scale: Optional[float]
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    check_inputs(q, k, v, _OP, enable_gqa=True)  # the forward checked its enable_gqa
    check_backward(q, o, lse, grad_out, _OP)
    ops_launch.check_not_cpu(_OP, "q", q)
    return _on_device(q, launch_backward, q, k, v, o, lse, grad_out, causal, sm_scale)


@_attention_backward.register_fake
def _attention_backward_fake(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             o: torch.Tensor, lse: torch.Tensor, causal: bool, sm_scale: Optional[float]
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    check_shapes(q, k, v, _OP, enable_gqa=True)
    check_backward(q, o, lse, grad_out, _OP)
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output) -> None:
    q, k, v, causal, sm_scale, _ = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.sm_scale = causal, sm_scale
    ctx.mark_non_differentiable(lse)


def _backward(ctx, grad_out: torch.Tensor, _grad_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.tritium._attention_backward(grad_out, q, k, v, o, lse, ctx.causal, ctx.sm_scale)
    return dq, dk, dv, None, None, None


_attention_forward.register_autograd(_backward, setup_context=_setup_context)

torch.library.define("tritium::attention", "(Tensor q, Tensor k, Tensor v, bool causal=False, float? sm_scale=None, "
                     "bool enable_gqa=False) -> Tensor")


@torch.library.impl("tritium::attention", "CompositeImplicitAutograd")
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
               sm_scale: Optional[float] = None, enable_gqa: bool = False) -> torch.Tensor:
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return torch.ops.tritium._attention_forward(q, k, v, causal, sm_scale, enable_gqa)[0]
    return torch.ops.tritium._attention_inference(q, k, v, causal, sm_scale, enable_gqa)


def at_least_sdpa(seq: int, head_dim: int) -> bool:
    """Whether the H200 measurements rate this op at least as fast as PyTorch's fastest SDPA backend (cuDNN)
    for q, k, v of sequence length ``seq`` and ``head_dim``, which is what ``torch.compile`` with
    ``tritium.ops.inductor.use_kernels`` asks before replacing SDPA. Head dim 128 from sequence 8192 on, with
    the persistent kernel (docs/benchmarks.md, 2026-12-02): 0.996-1.165x in seven of the eight fp16/bf16,
    causal/non-causal cases, and 0.925x in one (bf16, non-causal, 8192, where cuDNN ran 674 TFLOPS against
    582-606 at its neighbours); shorter sequences and head dim 64 fall to 0.74-0.98x in some cases."""
    return head_dim == 128 and seq >= 8192


def _check_flags(causal: object, sm_scale: object, enable_gqa: object) -> None:
    """The schema's types of the non-tensor arguments, which the dispatcher checks (in words naming none of
    them) and the direct path must check itself."""
    for name, flag in (("causal", causal), ("enable_gqa", enable_gqa)):
        if type(flag) is not bool:
            raise TypeError(f"{_OP}: {name} must be a bool, got the {type(flag).__name__} {flag!r}")
    if sm_scale is not None and (type(sm_scale) is bool or not isinstance(sm_scale, numbers.Real)):
        raise TypeError(f"{_OP}: sm_scale must be a float or None, got the {type(sm_scale).__name__} {sm_scale!r}")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              sm_scale: Optional[float] = None, enable_gqa: bool = False) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v with tritium's attention kernels, differentiable (the module
    docstring has the contract): the op ``torch.ops.tritium.attention``, or its inference implementation
    directly where nothing would observe the dispatch (:func:`tritium.ops.registration.direct_ok`: two passes
    through the dispatcher cost more host time than the launch)."""
    if registration.direct_ok(q, k, v):
        _check_flags(causal, sm_scale, enable_gqa)
        return _attention_inference(q, k, v, causal, sm_scale, enable_gqa)
    return torch.ops.tritium.attention(q, k, v, causal, sm_scale, enable_gqa)
