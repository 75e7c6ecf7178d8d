"""The TLX compilation pipelines: the stock ones, edited for kernels that use TLX ops.

* Right after ``convert_to_ttgpuir``, TLX placeholders become TritonGPU ops (see :mod:`.placeholders`).
* Triton's own software pipeliner and warp specializer are off: TLX kernels pipeline by hand, and
  the stock passes would re-pipeline (or reject) loops full of hand-placed async ops and waits.
Everything else (coalescing, layout-conversion removal, dot-operand optimization, fence insertion,
lowering) runs as stock. Which pipelining passes a stage has depends on the target, so there is one
pipeline per target family, each gated on it.
"""
from __future__ import annotations

from typing import Any, Callable

from triton._C.libtriton import ir

from tritium import compat
from tritium.plugins import Pipeline, mlir_pass

from .placeholders import is_tlx_module, lower

#: Target family -> (does a compile target belong to it, stock passes that pipeline or warp-specialize loops).
FAMILIES: dict[str, tuple[Callable[[str, Any], bool], tuple[str, ...]]] = {
    "cuda-sm8x-sm9x": (lambda backend, arch: backend == "cuda" and 80 <= arch < 100,
                       ("nvidia.hopper.hopper_warpspec", "ttgpuir.assign_latencies", "ttgpuir.schedule_loops",
                        "ttgpuir.pipeline")),
    "cuda-sm10x+": (lambda backend, arch: backend == "cuda" and arch >= 100,
                    ("ttgpuir.assign_latencies", "ttgpuir.schedule_loops", "ttgpuir.warp_specialize",
                     "ttgpuir.pipeline")),
    "cuda-pre-sm80": (lambda backend, arch: backend == "cuda" and arch < 80, ()),
    "hip": (lambda backend, arch: backend == "hip", ("amd.ttgpuir.schedule_loops", "amd.ttgpuir.pipeline")),
}


@mlir_pass(name="tlx.lower_placeholders")
def lower_placeholders(mod: ir.module, ctx: Any) -> ir.module:
    """TLX placeholders -> TritonGPU ops (needs the conversion's layouts, so runs right after it)."""
    return compat.parse_module(lower(mod.str()), mod.context)


def _gate(in_family: Callable[[str, Any], bool]) -> Callable[[Any, dict], bool]:

    def applies(src: Any, metadata: dict) -> bool:
        target = (metadata or {}).get("target")
        if target is None or not is_tlx_module(src):
            return False
        arch = target.arch if target.backend != "cuda" else int(target.arch)
        return in_family(target.backend, arch)

    return applies


def make_pipeline(family: str) -> Pipeline:
    """The TLX pipeline for one target family (a key of :data:`FAMILIES`)."""
    in_family, disabled = FAMILIES[family]
    p = Pipeline(f"tlx-{family}", when=_gate(in_family))
    p.insert("ttgir", lower_placeholders, after="ttir.convert_to_ttgpuir")
    for name in disabled:
        p.disable("ttgir", name)
    return p


def make_pipelines() -> dict[str, Pipeline]:
    return {f"tlx-{family}": make_pipeline(family) for family in FAMILIES}
