"""The main job: compile TLX kernels through the plugin pipeline, check numerics, benchmark on a GPU.

``python -m tritium.demo`` runs four steps:
1. compile the TLX Hopper GEMM for sm_90 and show the TLX pipeline's edits and the PTX it yields;
2. compile the TLX AMD GEMM for gfx950 and count LDS and MFMA instructions in its AMDGCN;
3. run both kernels on the CPU interpreter (a child process with ``TRITON_INTERPRET=1``) against
   a float64 reference on ragged shapes;
4. if a CUDA GPU is present, run ``tritium bench gemm``.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Any, Optional, Sequence

INTERPRET_SHAPES = [(64, 64, 64), (100, 70, 90), (130, 200, 160)]


def _compile(kernel: Any, cfg: Any, target: str) -> tuple[Any, Any]:
    import triton

    from .kernels.specialize import gemm_source
    from .plugins.inspection import parse_target
    from .plugins import CompileReport, recording
    report = CompileReport()
    with recording(report), triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        compiled = triton.compile(gemm_source(kernel, cfg), target=parse_target(target),
                                  options={"num_warps": cfg.num_warps})
    return compiled, report


def _edits(report: Any) -> list[str]:
    return [f"{stage.name}: {p.status} {p.name} ({p.origin})" for stage in report.stages for p in stage.passes
            if p.status != "stock"]


def compile_step() -> list[tuple[str, str, str]]:
    from .kernels import gemm_pipelined_amd as amd
    from .kernels import gemm_pipelined_hopper as hopper
    rows = []
    k, report = _compile(hopper.matmul_kernel_pipelined_hopper, hopper.LARGE, "sm90")
    ptx = k.asm["ptx"]
    print("TLX pipeline edits for the Hopper GEMM (sm_90):\n  " + "\n  ".join(_edits(report)))
    ok = "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx
    rows.append(("Hopper GEMM -> sm_90", f"cp.async x{ptx.count('cp.async.cg')}, wgmma x{ptx.count('wgmma.mma_async')}",
                 "ok" if ok else "FAILED"))
    k, report = _compile(amd.matmul_kernel_pipelined_amd, amd.DEFAULT, "gfx950")
    gcn = k.asm["amdgcn"]
    counts = {name: len(re.findall(pattern, gcn)) for name, pattern in
              (("ds_write", r"\bds_(?:write|store)"), ("ds_read", r"\bds_(?:read|load)"), ("v_mfma", r"\bv_mfma"))}
    rows.append(("AMD GEMM -> gfx950", ", ".join(f"{n} x{c}" for n, c in counts.items()),
                 "ok" if all(counts.values()) else "FAILED"))
    return rows


def interpret_check() -> int:
    """Runs inside the TRITON_INTERPRET=1 child: the shipped kernels against float64 on the CPU."""
    import torch

    from .kernels import gemm_pipelined_amd as amd
    from .kernels import gemm_pipelined_hopper as hopper
    worst = 0.0
    tile = dict(BLOCK_SIZE_K=32, GROUP_SIZE_M=4, NUM_STAGES=3, num_warps=4)
    for name, matmul, cfg in (("hopper", hopper.matmul, hopper.Config(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, **tile)),
                              ("amd", amd.matmul, amd.Config(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, **tile))):
        for M, N, K in INTERPRET_SHAPES:
            a = torch.randn(M, K, dtype=torch.float16)
            b = torch.randn(K, N, dtype=torch.float16)
            ref = a.double() @ b.double()
            err = ((matmul(a, b, cfg).double() - ref).norm() / ref.norm()).item()
            worst = max(worst, err)
            print(f"interpreter {name} {M}x{N}x{K}: relative error {err:.2e}")
    return 0 if worst < 2e-3 else 1


def interpret_step() -> tuple[str, str, str]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-m", "tritium.demo", "--interpret-check"], env=env, text=True,
                          capture_output=True)
    print(proc.stdout.rstrip())
    if proc.returncode:
        print(proc.stderr[-3000:])
    return ("TLX GEMMs on the CPU interpreter", f"{2 * len(INTERPRET_SHAPES)} shapes vs float64",
            "ok" if proc.returncode == 0 else "FAILED")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tritium.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interpret-check", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="results", help="folder for benchmark plots")
    args = parser.parse_args(argv)
    if args.interpret_check:
        return interpret_check()
    from .bench.report import table
    rows = compile_step()
    rows.append(interpret_step())
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    print("\n" + table(["step", "what was checked", "result"], rows))
    if gpu:
        from .bench import gemm
        gemm.main(args.out)
    else:
        print("\nno CUDA GPU: benchmarks skipped (run `tritium bench gemm` on a Hopper GPU)")
    return 0 if all(r[2] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
