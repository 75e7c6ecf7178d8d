"""The TLX compilation pipelines: the stock ones, edited for kernels that use TLX ops.

* Right after ``convert_to_ttgpuir``, TLX placeholders become TritonGPU ops (see :mod:`.lowering`).
* Triton's own software pipeliner and warp specializer are off: TLX kernels pipeline by hand, and
  the stock passes would re-pipeline (or reject) loops full of hand-placed async ops and waits.
Everything else (coalescing, layout-conversion removal, dot-operand optimization, fence insertion,
lowering) runs as stock. Which pipelining passes a stage has depends on the target, so there is one
pipeline per target family, each gated on it.
"""
from __future__ import annotations

from typing import Any, Callable

from tritium import compat
from tritium.plugins import Pipeline, mlir_pass

from . import triton_compat
from .diagnostics import reporting_stage
from .dot_operands import dot_operand_layouts
from .copy_fallback import amd_coalesce_async_copy, async_copy_fallback
from .lowering import build, lower, selects_as_ifs
from .placeholders import is_tlx_module
from .tma_llvm import finish_tma
from .triton_compat import ir
from .warp_pipeliner import warp_pipeline

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
    """TLX placeholders -> TritonGPU ops (needs the conversion's layouts, so runs right after it): built in place
    where the bindings can (:func:`.lowering.build`), the rest written as text (:func:`.lowering.lower`)."""
    if build(mod):
        triton_compat.keep_argument_locations(mod)
        lowered = compat.parse_module(lower(mod.str()), mod.context)
        triton_compat.restore_argument_locations(lowered)
        return lowered
    return mod


@mlir_pass(name="tlx.view_selects")
def view_selects(mod: ir.module, ctx: Any) -> Any:
    """Selects between views (views chosen by a run-time ``if``) as ``scf.if``s again, before the shared-memory
    analyses of the LLVM stage (:func:`.lowering.selects_as_ifs`); a module without one is left as it is."""
    if not any(op.get_name() == "arith.select" and str(op.get_result(0).get_type()).startswith("!ttg.memdesc")
               for op in triton_compat.module_ops(mod)):
        return None
    return compat.parse_module(selects_as_ifs(mod.str()), mod.context)


#: Stock pass that gives every ``!tt.tensordesc`` its shared encoding (NVIDIA only).
DESCRIPTOR_ENCODING = "nvidia.ttnvgpuir.optimize_descriptor_encoding"


@mlir_pass(name="tlx.descriptor_encodings")
def descriptor_encodings(mod: ir.module, ctx: Any) -> None:
    """Stock ``optimize_descriptor_encoding``, moved before the lowering. Run in its place, it resets every
    descriptor used only by TLX's TMA ops to the default encoding of its block shape, although the
    lowering gave it its buffer's (tlx/tma.py). Run first, it types the descriptors TLX does not
    use (from their stock uses), and the lowering then retypes the ones TLX uses."""
    pm = compat.new_pass_manager(mod.context, False)
    compat.stock_pass_builder(DESCRIPTOR_ENCODING).fn(pm)
    compat.run_plain(pm, mod, "tlx.descriptor_encodings")


def _gate(in_family: Callable[[str, Any], bool]) -> Callable[[Any, dict], bool]:

    def applies(src: Any, metadata: dict) -> bool:
        target = (metadata or {}).get("target")
        if target is None or not is_tlx_module(src):
            return False
        arch = target.arch if target.backend != "cuda" else int(target.arch)
        return in_family(target.backend, arch)

    return applies


def _report_errors(in_family: Callable[[str, Any], bool]) -> Callable[[dict, Any], None]:
    """Wrap every stage so that a Triton pass failure on a TLX kernel reads as one paragraph naming the
    kernel line and the TLX op (tlx/diagnostics.py); kernels without TLX ops run the stages untouched."""

    def wrap(stages: dict, ctx: Any) -> None:
        target = ctx.target
        if not in_family(target.backend, target.arch if target.backend != "cuda" else int(target.arch)):
            return
        state: dict = {}
        for name in list(stages):
            stages[name] = reporting_stage(name, stages[name], is_tlx_module, state)

    return wrap


def make_pipeline(family: str) -> Pipeline:
    """The TLX pipeline for one target family (a key of :data:`FAMILIES`)."""
    in_family, disabled = FAMILIES[family]
    p = Pipeline(f"tlx-{family}", when=_gate(in_family))
    if family.startswith("cuda-sm"):  # the families with TMA; this pass must come before the lowering
        p.insert("ttgir", descriptor_encodings, after="ttir.convert_to_ttgpuir")
        p.disable("ttgir", DESCRIPTOR_ENCODING)
        # TMA PTX that stock TTGIR cannot ask for (tlx/tma_llvm.py), once partitions are in the kernel.
        p.insert("llir", finish_tma, after="nvidia.ttnvgpuir.warp_specialize_to_llvm")
    p.insert("ttgir", lower_placeholders, async_copy_fallback, after="ttir.convert_to_ttgpuir")
    p.insert("llir", view_selects, at="start")
    for name in disabled:
        p.disable("ttgir", name)
    if family == "hip":
        p.insert("ttgir", amd_coalesce_async_copy, after=triton_compat.AMD_LAST_LAYOUT_PASS)
        p.insert("ttgir", dot_operand_layouts, before="ttgpuir.reduce_data_duplication")
        p.insert("ttgir", warp_pipeline, at="end")
    p.override_pipeline(_report_errors(in_family))
    return p


def make_pipelines() -> dict[str, Pipeline]:
    return {f"tlx-{family}": make_pipeline(family) for family in FAMILIES}
