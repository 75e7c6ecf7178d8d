"""The README's main job runs end to end on a CPU-only machine."""
import subprocess
import sys


def test_demo_compiles_both_targets_and_checks_numerics():
    proc = subprocess.run([sys.executable, "-m", "tritium.demo"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    for row in ("| Hopper GEMM -> sm_90 |", "| AMD GEMM -> gfx950 |", "| TLX GEMMs on the CPU interpreter |"):
        line = next(line for line in out.splitlines() if line.startswith(row))
        assert line.endswith("| ok |"), line
    assert "disabled ttgpuir.pipeline (tlx:tlx-cuda-sm8x-sm9x)" in out
