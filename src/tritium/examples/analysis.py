"""Example plugin: a per-kernel resource and instruction-mix report, from passes only.

Three passes feed one report, kept in the kernel's metadata (``kernel.metadata.tritium_analysis``)
and returned as the output of an extra ``analysis`` stage, so the CLI prints it
(``tritium pipeline ... --pipeline analysis:report --show analysis``):

* start of ``ttgir`` (the TTIR, before software pipelining copies loads into a prologue): a static
  arithmetic-intensity estimate, dot FLOPs over bytes loaded from global memory, counting each op
  once, so for a loop it is per iteration (bodies are not multiplied by trip counts);
* end of ``ptx`` / ``amdgcn``: the matrix and copy instruction mix;
* the ``analysis`` stage, appended after the binary whatever the backend calls that stage:
  registers, spills and shared memory (ptxas' view via ``cuobjdump --dump-resource-usage`` on
  NVIDIA; the AMDGCN metadata on AMD; Triton's own ``shared`` bytes on both).
"""
import json
import os
import re
import subprocess
import tempfile

from tritium.plugins import Pipeline, Plugin, mlir_pass, text_pass

_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f8E4M3FN": 1, "f8E5M2": 1}
_SHAPED = r"(?:tensor|!ttg\.memdesc)<((?:\d+x)+)(\w+)"
_DOT = re.compile(r"= (?:tt\.dot|ttng\.warp_group_dot) .*?: " + _SHAPED + r".*?\* " + _SHAPED + r".*?-> " + _SHAPED)
_GLOBAL_LOADS = re.compile(r"(?:tt\.load|ttg\.async_copy_global_to_local) [^:]*: tensor<((?:\d+x)+)!tt\.ptr<(\w+)>")
_BLOCK_PTR_LOADS = re.compile(r"tt\.load [^:]*: !tt\.ptr<tensor<((?:\d+x)+)(\w+)")
_DESC_LOADS = re.compile(r"(?:tt\.descriptor_load|ttng\.async_tma_copy_global_to_local).*?-> " + _SHAPED)

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
    """Dot FLOPs, global bytes loaded and their ratio, each op of the IR counted once."""
    flops = 0
    for m in _DOT.finditer(ttgir):
        a_dims, c_dims = m.group(1), m.group(5)
        flops += 2 * _elems(c_dims) * int(a_dims.rstrip("x").split("x")[-1])
    loaded = sum(_elems(d) * _BYTES.get(t, 4)
                 for pattern in (_GLOBAL_LOADS, _BLOCK_PTR_LOADS, _DESC_LOADS) for d, t in pattern.findall(ttgir))
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


def _append_report(stages, ctx):
    stages["analysis"] = lambda binary, metadata: report_stage(binary, metadata, ctx)


REPORT = (Pipeline("report")
          .insert("ttgir", estimate_intensity, at="start")
          .insert("ptx", _mix("ptx"), at="end")
          .insert("amdgcn", _mix("amdgcn"), at="end")
          .override_pipeline(_append_report))

tritium_plugin = Plugin("analysis", "0.1.0", pipelines={"report": REPORT},
                        description="registers, shared memory, instruction mix, intensity estimate")
