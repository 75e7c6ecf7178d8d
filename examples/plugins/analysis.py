"""Example plugin: a per-kernel resource and instruction-mix report, from passes only.

Three passes feed one report, kept in the kernel's metadata (``kernel.metadata.tritium_analysis``)
and printed as its own ``analysis`` stage (``tritium pipeline ... --pipeline analysis:report
--show analysis``):

* end of ``ttgir``: a static arithmetic-intensity estimate of the IR: dot FLOPs over bytes loaded
  from global memory, counting each op once (loop bodies are not multiplied by trip counts);
* end of ``ptx`` / ``amdgcn``: the matrix and copy instruction mix;
* an ``analysis`` stage after the binary: registers, spills and shared memory (ptxas' view via
  ``cuobjdump --dump-resource-usage`` on NVIDIA; the AMDGCN metadata on AMD).
"""
import json
import os
import re
import subprocess
import tempfile

from tritium.plugins import Pipeline, Plugin, mlir_pass, text_pass

_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f8E4M3FN": 1, "f8E5M2": 1}
_TENSOR = r"tensor<((?:\d+x)+)([A-Za-z0-9]+)"
_DOT = re.compile(r"= (?:tt\.dot|ttng\.warp_group_dot) .*?: " + _TENSOR + r".*?\* " + _TENSOR + r".*?-> " + _TENSOR)
_GLOBAL_LOADS = re.compile(r"(?:tt\.load|ttg\.async_copy_global_to_local) .*?: " + r"tensor<((?:\d+x)+)!tt\.ptr<([A-Za-z0-9]+)>")
_DESC_LOADS = re.compile(r"(?:tt\.descriptor_load|ttng\.async_tma_copy_global_to_local).*?-> " + _TENSOR)

MIX = {
    "ptx": {"wgmma": r"wgmma\.mma_async", "mma.sync": r"\bmma\.sync", "cp.async": r"cp\.async\.(?:ca|cg)",
            "cp.async.bulk.tensor": r"cp\.async\.bulk\.tensor", "ld.global": r"ld\.global", "st.global": r"st\.global",
            "ld.shared": r"ld\.shared", "ldmatrix": r"ldmatrix", "mbarrier": r"mbarrier\."},
    "amdgcn": {"mfma": r"v_mfma", "wmma": r"v_wmma", "ds_read": r"ds_read", "ds_write": r"ds_write",
               "global_load": r"global_load", "buffer_load": r"buffer_load", "global_store": r"global_store"},
}


def _elems(dims: str) -> int:
    n = 1
    for d in dims.rstrip("x").split("x"):
        n *= int(d)
    return n


def intensity(ttgir: str) -> dict:
    flops = 0
    for m in _DOT.finditer(ttgir):
        a_dims, c_dims = m.group(1), m.group(5)
        flops += 2 * _elems(c_dims) * int(a_dims.rstrip("x").split("x")[-1])
    loaded = sum(_elems(d) * _BYTES.get(t, 4) for d, t in _GLOBAL_LOADS.findall(ttgir))
    loaded += sum(_elems(d) * _BYTES.get(t, 4) for d, t in _DESC_LOADS.findall(ttgir))
    return {"dot_flops": flops, "global_bytes_loaded": loaded,
            "flops_per_byte": round(flops / loaded, 2) if loaded else None}


@mlir_pass(name="estimate_intensity")
def estimate_intensity(mod, ctx):
    ctx.metadata.setdefault("tritium_analysis", {})["intensity"] = intensity(mod.str())


def _mix(kind: str):
    @text_pass(kind, name=f"{kind}_instruction_mix")
    def count(text, ctx):
        ctx.metadata.setdefault("tritium_analysis", {})["instructions"] = {
            name: len(re.findall(pattern, text)) for name, pattern in MIX[kind].items()}
        if kind == "amdgcn":
            regs = {k: int(v) for k, v in re.findall(r"\.(vgpr_count|sgpr_count|vgpr_spill_count):\s+(\d+)", text)}
            ctx.metadata["tritium_analysis"]["registers"] = regs
        return text
    return count


def _nvidia_resources(cubin: bytes) -> dict:
    import triton.backends.nvidia
    tool = os.path.join(os.path.dirname(triton.backends.nvidia.__file__), "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", out))
    return {k.lower(): int(v) for k, v in fields.items()}


def report_stage(binary, metadata, ctx):
    analysis = metadata.setdefault("tritium_analysis", {})
    analysis["shared_bytes"] = metadata.get("shared")
    if ctx.target.backend == "cuda":
        analysis["registers"] = _nvidia_resources(binary)
    analysis["kernel"] = metadata.get("name")
    return json.dumps(analysis, indent=2, sort_keys=True)


REPORT = (Pipeline("report")
          .insert("ttgir", estimate_intensity, at="end")
          .insert("ptx", _mix("ptx"), at="end")
          .insert("amdgcn", _mix("amdgcn"), at="end")
          .add_stage("analysis", report_stage, after="cubin")
          .add_stage("analysis_amd", report_stage, after="hsaco"))

tritium_plugin = Plugin("analysis", "0.1.0", pipelines={"report": REPORT},
                        description="registers, shared memory, instruction mix, intensity estimate")
