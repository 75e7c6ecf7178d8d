"""``tritium.ops.scaled_matmul`` (``torch.ops.tritium.scaled_matmul``): the FP8 GEMM with dequantising scales.

Contract (``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...)``'s semantics):

* ``a`` [M, K] and ``b`` [K, N], both float8_e4m3fn, on one CUDA device (or on the CPU under
  ``TRITON_INTERPRET=1``); any M, N, K >= 0 (ragged, K = 1, empty).
* ``scale_a`` and ``scale_b``: float32 tensors on the same device, each either one element (a 0-dim,
  [1] or [1, 1] tensor: per-tensor) or a vector: ``scale_a`` [M, 1] (one scale per row of A),
  ``scale_b`` [1, N] (one per column of B). The two kinds can be mixed.
* The result is ``(a.float() @ b.float()) * scale_a * scale_b``, accumulated in fp32 and scaled in the
  epilogue, a new contiguous [M, N] tensor of ``out_dtype``: torch.bfloat16 (the default; None means
  it too) or torch.float16.
* Layouts: wgmma reads 8-bit operands only K-major, so the kernel reads A row-major and B column-major.
  Read in place: A row-major (unit column stride) with a row stride and base that are multiples of 16
  bytes, and B column-major (``b.t()`` row-major, as ``torch._scaled_mm`` requires) likewise; any other
  layout, a row-major B included, is copied to that layout first (zero-padding K to 16 bytes where
  needed). A scale vector with a non-unit stride is copied too.
* No backward: differentiating through it raises an error that says so.
* Bad input raises ``ValueError``/``TypeError`` naming the argument; the fake implementation runs the
  same checks, so ``torch.compile`` reports them while tracing.
* The kernel (gemm_fp8_hopper) and its config per shape: :func:`tritium.ops.plans.choose_fp8`. Host path:
  as ``tritium.ops.matmul``'s, a layout seen before reuses its :class:`tritium.ops.launch.Call`.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import launch, plans, registration
from .registration import direct_ok

_OP = "tritium.ops.scaled_matmul"
_OUT_DTYPES = (torch.bfloat16, torch.float16)
FP8 = torch.float8_e4m3fn


def _check_out_dtype(out_dtype: object) -> None:
    if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
        raise TypeError(f"{_OP}: out_dtype must be a torch.dtype (torch.bfloat16 or torch.float16), got the "
                        f"{type(out_dtype).__name__} {out_dtype!r}")
    if out_dtype is not None and out_dtype not in _OUT_DTYPES:
        raise TypeError(f"{_OP}: out_dtype {out_dtype} is not supported; use torch.bfloat16 or torch.float16")


def _check_argument_types(scale_a: object, scale_b: object, out_dtype: object) -> None:
    """What the dispatcher would refuse in its own words, naming no argument: checked before it."""
    for name, scale in (("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(scale, torch.Tensor):
            raise TypeError(f"{_OP}: {name} must be a float32 tensor, got the {type(scale).__name__} {scale!r}")
    _check_out_dtype(out_dtype)


def _scale_kind(name: str, scale: torch.Tensor, vector: tuple[int, int], a: torch.Tensor) -> bool:
    """Check one scale; True for a vector of ``vector``'s shape, False for a per-tensor scale."""
    what = "per-row" if name == "scale_a" else "per-column"
    if scale.dtype != torch.float32:
        raise TypeError(f"{_OP}: {name} has dtype {scale.dtype}; scales must be float32")
    if scale.device != a.device:
        raise ValueError(f"{_OP}: {name} is on {scale.device} but a is on {a.device}; both must be on one device")
    if scale.numel() == 1 and scale.dim() <= 2:
        return False
    if tuple(scale.shape) != vector:
        raise ValueError(f"{_OP}: {name} has shape {tuple(scale.shape)}; it must have one element (per-tensor) "
                         f"or shape {list(vector)} ({what})")
    return True


def _check(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
           out_dtype: Optional[torch.dtype]) -> tuple[bool, bool]:
    """Argument checks shared by the real and the fake implementation; returns whether each scale is a
    vector (per-row of A, per-column of B)."""
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"{_OP}: {name} must be a 2-D matrix, got shape {tuple(t.shape)}")
        if t.dtype != FP8:
            raise TypeError(f"{_OP}: {name} has dtype {t.dtype}; supported: float8_e4m3fn")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{_OP}: a is {a.shape[0]}x{a.shape[1]} and b is {b.shape[0]}x{b.shape[1]}: "
                         f"a's columns (K={a.shape[1]}) must equal b's rows")
    if b.device != a.device:
        raise ValueError(f"{_OP}: b is on {b.device} but a is on {a.device}; both must be on one device")
    _check_argument_types(scale_a, scale_b, out_dtype)
    rows = _scale_kind("scale_a", scale_a, (a.shape[0], 1), a)
    cols = _scale_kind("scale_b", scale_b, (1, b.shape[1]), a)
    launch.check_not_cpu(_OP, "a", a)
    if a.device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(f"{_OP}: a is on {a.device}; the kernels run on CUDA devices")
    return rows, cols


#: The op's calls by layout (operands, scales, output dtype): (Call, copy scale_a, copy scale_b).
_calls = launch.CallCache()


def _compute(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
             out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The op's real implementation; a layout seen before reuses its Call at once."""
    bt = b.t()  # the kernel's B operand: N x K, read in place when row-major (b column-major)
    key = (*launch.call_key(a, bt, out_dtype), b.dtype, scale_a.shape, scale_a.stride(), scale_a.dtype,
           scale_a.device, scale_b.shape, scale_b.stride(), scale_b.dtype, scale_b.device)
    entry = _calls.get(key)
    if entry is None:
        rows, cols = _check(a, b, scale_a, scale_b, out_dtype)
        out_dtype = out_dtype or torch.bfloat16
        M, K = a.shape
        N = b.shape[1]
        if M == 0 or N == 0 or K == 0:
            return torch.zeros((M, N), dtype=out_dtype, device=a.device)
        plan = plans.fit(plans.choose_fp8(M, N, K, launch.sm_count(a.device)), 1, out_dtype.itemsize)
        call = launch.Call(plan, a, bt, out_dtype, {"ROW_SCALES": rows, "COL_SCALES": cols})
        # a vector's elements must be adjacent (the kernel indexes it by row or column)
        copy_a = rows and scale_a.stride(0) != 1
        copy_b = cols and scale_b.stride(1) != 1
        entry = _calls.put(key, (call, copy_a, copy_b))
    call, copy_a, copy_b = entry
    scale_a = scale_a.contiguous() if copy_a else scale_a
    scale_b = scale_b.contiguous() if copy_b else scale_b
    if a.is_cuda and a.device.index != torch.cuda.current_device():
        with torch.cuda.device(a.device):
            return call(a, bt, scale_a, scale_b)
    return call(a, bt, scale_a, scale_b)


def _fake(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
          out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    _check(a, b, scale_a, scale_b, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or torch.bfloat16)


registration.define("tritium::scaled_matmul",
                    "(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, ScalarType? out_dtype=None) -> Tensor",
                    _compute, _fake, 4,
                    no_backward=f"{_OP} has no backward (FP8 inference GEMM); dequantise and use tritium.ops.matmul "
                                "or torch.matmul where gradients are needed")


def scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                  out_dtype: Optional[torch.dtype] = torch.bfloat16) -> torch.Tensor:
    """``(a @ b) * scale_a * scale_b`` for float8_e4m3fn ``a`` [M, K] and ``b`` [K, N] with fp32 accumulation
    (the module docstring has the contract): ``torch.ops.tritium.scaled_matmul``, or its implementation
    directly where nothing would observe the dispatch (:func:`tritium.ops.registration.direct_ok`)."""
    if direct_ok(a, b):
        return _compute(a, b, scale_a, scale_b, out_dtype)
    _check_argument_types(scale_a, scale_b, out_dtype)
    return torch.ops.tritium.scaled_matmul(a, b, scale_a, scale_b, out_dtype)
