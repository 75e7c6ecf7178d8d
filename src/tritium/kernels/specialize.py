"""Ahead-of-time sources for the GEMM kernels, specialized the way the JIT does for aligned tensors.

Compile-only checks (tests, the demo) must see what a launch would compile: the JIT marks pointers
and integer arguments divisible by 16 with ``tt.divisibility``, and without that sm_90 cannot use
16-byte cp.async. One definition here keeps every ahead-of-time compile of these kernels the same.
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..plugins.inspection import make_source

SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
             "stride_cm": "i32", "stride_cn": "i32"}
#: Arguments of a row-major problem whose sizes are multiples of 16, as the JIT would see them.
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")


def gemm_source(kernel: Any, cfg: Any, **constexprs: Any) -> Any:
    """A source for a pointer-based GEMM kernel with the tile config ``cfg`` (a kernel ``Config``)."""
    meta = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name != "num_warps"}
    if "STRIDE_ALIGN" in kernel.arg_names:
        meta["STRIDE_ALIGN"] = 8
    consts = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, **meta, **constexprs}
    signature = {**SIGNATURE, **{name: "constexpr" for name in consts}}
    return make_source(kernel, signature, consts, aligned=ALIGNED)
