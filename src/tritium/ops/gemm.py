"""``torch.ops.tritium.matmul``: the TLX GEMMs as a torch operator (fake implementation, autograd), registered
per dispatch key by :func:`tritium.ops.registration.define`.

Contract:

* ``a`` [M, K] and ``b`` [K, N], both float16 or both bfloat16, on one CUDA device (or on the CPU
  under ``TRITON_INTERPRET=1``, where float64 inputs are accepted too, with a float64 result, so that
  ``torch.autograd.gradcheck`` can run through the kernels: float64 takes the TMA kernels, accumulating in
  fp32, never the small-problem one); any M, N, K >= 0 (ragged, K = 1, empty).
* fp32 accumulation; the result is a new contiguous [M, N] tensor of ``out_dtype`` (float16,
  bfloat16 or float32), by default the inputs' dtype.
* Layouts: row-major operands (unit column stride, any row stride) are read in place. Any other
  layout (a transposed view such as ``b.t()``, an expanded or overlapping one) is copied to
  row-major first, on purpose: the kernels' operand tiles are TMA or cp.async boxes of row-major
  rows and the kernels have no transposed-operand form. The TMA kernels also copy an operand whose
  rows are not a multiple of 16 bytes or whose base is not 16-byte aligned (zero-padding its
  columns), and write C into 16-byte rows, compacted by one copy when N is not a multiple of 8.
  A dimension of size 1 has no stride to honour (``torch.randn(N, 1).t()`` is a row-major [1, N]
  matrix with strides (1, 1)): such operands are read in place (:func:`tritium.ops.launch.layout`).
* The kernel and its config per shape: :mod:`tritium.ops.plans`. The host path: :mod:`tritium.ops.launch`.
* Autograd: ``dA = dC @ B^T`` and ``dB = A^T @ dC`` through this same op (the incoming gradient is
  first cast to the inputs' dtype; the transposed operands are the copies described above).
* Bad input raises ``ValueError``/``TypeError`` naming the argument; the fake (meta) implementation
  runs the same checks, so ``torch.compile`` reports them while tracing.
* Host cost: :func:`matmul` calls the implementation directly when nothing would observe the
  dispatch (:func:`tritium.ops.registration.direct_ok`: no autograd, tracing, mode or tensor subclass), else
  the op; the op's
  own Autograd kernel also calls the implementation directly when no gradient is recorded.
  A layout seen before skips the checks and the plan choice (:func:`_compute`) and launches the
  compiled kernel directly (:class:`tritium.ops.launch.Call`).
"""
from __future__ import annotations

import functools
from typing import Optional

import torch

from . import launch, plans, registration

_OP = "tritium.ops.matmul"
_IN_DTYPES = (torch.float16, torch.bfloat16)
_OUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_out_dtype_type(out_dtype: object) -> None:
    """``out_dtype`` is a ``torch.dtype`` or ``None``: a dtype's name (``"float32"``) is not one, and the
    dispatcher's own refusal of it names no argument."""
    if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
        raise TypeError(f"{_OP}: out_dtype must be a torch.dtype (torch.float16, torch.bfloat16 or torch.float32) "
                        f"or None, got the {type(out_dtype).__name__} {out_dtype!r}")


def _check(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype]) -> None:
    """Argument checks shared by the real and the fake implementation. The interpreter accepts what a GPU
    accepts, plus float64 inputs with a float64 result (for gradcheck) and nothing else in float64."""
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"{_OP}: {name} must be a 2-D matrix, got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{_OP}: a is {a.shape[0]}x{a.shape[1]} and b is {b.shape[0]}x{b.shape[1]}: "
                         f"a's columns (K={a.shape[1]}) must equal b's rows")
    interp = launch.interpreting()
    allowed = _IN_DTYPES + ((torch.float64, ) if interp else ())
    if a.dtype not in allowed:
        raise TypeError(f"{_OP}: a has dtype {a.dtype}; supported: float16, bfloat16"
                        + (" (float64 under the interpreter)" if interp else ""))
    if b.dtype != a.dtype:
        raise TypeError(f"{_OP}: b has dtype {b.dtype} but a has {a.dtype}; both must have the same dtype")
    _check_out_dtype_type(out_dtype)
    if a.dtype == torch.float64:
        if out_dtype not in (None, torch.float64):
            raise TypeError(f"{_OP}: float64 inputs (interpreter only) give a float64 result; out_dtype "
                            f"{out_dtype} is not supported with them")
    elif out_dtype is not None and out_dtype not in _OUT_DTYPES:
        raise TypeError(f"{_OP}: out_dtype {out_dtype} is not supported with {a.dtype} inputs; use torch.float16, "
                        "torch.bfloat16 or torch.float32" + (" (torch.float64 needs float64 inputs)" if interp else ""))
    if b.device != a.device:
        raise ValueError(f"{_OP}: b is on {b.device} but a is on {a.device}; both must be on one device")
    launch.check_not_cpu(_OP, "a", a)
    if a.device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(f"{_OP}: a is on {a.device}; the kernels run on CUDA devices")


@functools.lru_cache(maxsize=4096)
def _heuristic(M: int, N: int, K: int, sms: int, even: bool) -> plans.Plan:
    return plans.choose(M, N, K, sms, even)


def select_plan(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> plans.Plan:
    """The plan for ``a @ b``: the autotuned one when autotuning is on (tuning on a first sight), else
    the heuristic's."""
    M, K = a.shape
    N = b.shape[1]
    # the small path is a cp.async kernel: what counts is the row strides it would read. Its fp16/bf16 dot has no
    # float64 form (an fp64 accumulator, garbage results), so float64 (interpreter only) takes the TMA kernels.
    even = a.dtype != torch.float64 and plans.even_layout(launch.kernel_row_stride(a, False),
                                                          launch.kernel_row_stride(b, False), K, N)
    sms = launch.sm_count(a.device)
    if not plans.autotune_enabled() or a.device.type != "cuda":
        return _heuristic(M, N, K, sms, even)
    key = plans.cache_key(torch.cuda.get_device_name(a.device), str(a.dtype), str(out_dtype), M, N, K)
    plan = plans.cached_plan(key)
    if plan is None:
        from triton.testing import do_bench
        plan = plans.tune(lambda p: run_plan(p, a, b, out_dtype), plans.candidates(M, N, K, sms, even),
                          lambda fn: do_bench(fn, warmup=5, rep=20, return_mode="median"))
        plans.record_plan(key, plan)
    return plan


def run_plan(plan: plans.Plan, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """``a @ b`` with ``plan``'s kernel (checked, non-empty operands), adapted to the problem
    (:func:`tritium.ops.plans.adapt`: non-empty split-K slices, shared memory)."""
    plan = plans.adapt(plan, a.shape[1], a.element_size(), out_dtype.itemsize)
    return launch.call_for(plan, a, b, out_dtype)(a, b)


#: The op's calls by (layout key, autotuning on): checks passed and plan chosen (see :func:`_compute`).
_calls = launch.CallCache()


def _compute(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The op's real implementation. A layout seen before (same shapes, strides, base alignment,
    dtypes, device: what the checks and the plan depend on) reuses its :class:`launch.Call` at once."""
    key = (*launch.call_key(a, b, out_dtype), b.dtype, b.device, plans.autotune_enabled())
    call = _calls.get(key)
    if call is None:
        _check(a, b, out_dtype)
        out_dtype = out_dtype or a.dtype
        M, K = a.shape
        N = b.shape[1]
        if M == 0 or N == 0 or K == 0:
            return torch.zeros((M, N), dtype=out_dtype, device=a.device)
        plan = plans.adapt(select_plan(a, b, out_dtype), K, a.element_size(), out_dtype.itemsize)
        call = _calls.put(key, launch.call_for(plan, a, b, out_dtype))
    if a.is_cuda and a.device.index != torch.cuda.current_device():
        with torch.cuda.device(a.device):
            return call(a, b)
    return call(a, b)


def _fake(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    _check(a, b, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or a.dtype)


def _setup_context(ctx, inputs, output) -> None:
    a, b = inputs[:2]
    ctx.save_for_backward(a, b)


def _backward(ctx, grad: torch.Tensor):
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)
    grad_a = torch.ops.tritium.matmul(grad, b.t(), a.dtype) if ctx.needs_input_grad[0] else None
    grad_b = torch.ops.tritium.matmul(a.t(), grad, b.dtype) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None


registration.define("tritium::matmul", "(Tensor a, Tensor b, ScalarType? out_dtype=None) -> Tensor", _compute,
                    _fake, 2, _backward, _setup_context)

def matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``a @ b`` with tritium's GEMM kernels (see the module docstring for the contract): the op
    ``torch.ops.tritium.matmul``, or its implementation directly where
    :func:`tritium.ops.registration.direct_ok` allows."""
    if registration.direct_ok(a, b):
        return _compute(a, b, out_dtype)
    _check_out_dtype_type(out_dtype)  # before the dispatcher, which refuses a non-dtype in its own words
    return torch.ops.tritium.matmul(a, b, out_dtype)
