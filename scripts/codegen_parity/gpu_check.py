"""Run one parity kernel as tritium compiles it, on the GPU, against torch: the evidence for a difference.

Where tritium's waits are weaker than uTLX's (it emits what the source asks for), the kernel must still
compute the right answer and pass compute-sanitizer's racecheck. Usage, on an H200::

    PYTHONPATH=src:scripts compute-sanitizer --tool racecheck python3 -m codegen_parity.gpu_check CASE [TUTORIALS]

CASE: fork.hopper_gemm_pipelined (needs the fork's tutorials directory), ops.async_copy, fork.vector_add2_ws.
Exit status 0 when the result matches torch.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from .dump import FORK_TLX, bind_tlx


def _tutorial(tutorials: Path, name: str):
    loader = importlib.util.spec_from_file_location(f"{FORK_TLX}.tutorials.{name.replace('-', '_')}",
                                                    tutorials / f"{name}.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def hopper_gemm_pipelined(tutorials: Path, M: int = 384, N: int = 512, K: int = 512) -> float:
    module = _tutorial(tutorials, "hopper_gemm_pipelined")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    ref = a.double() @ b.double()
    return ((module.matmul(a, b).double() - ref).norm() / ref.norm()).item()


def hopper_gemm_pipelined_drained(tutorials: Path, *shape: int) -> float:
    """The tutorial with one line added, a drain of its last prefetches before the epilogue (made in a
    temporary copy at run time): its in-loop waits stay tritium's, so a clean racecheck here shows
    that the weaker wait count is not what races."""
    import tempfile
    source = (tutorials / "hopper_gemm_pipelined.py").read_text()
    anchor = "    acc = tlx.async_dot_wait(0, acc)\n"
    if source.count(anchor) != 1:
        raise SystemExit("gpu_check: the tutorial's epilogue is not where this check expects it")
    folder = Path(tempfile.mkdtemp(prefix="drained-"))
    (folder / "hopper_gemm_pipelined.py").write_text(source.replace(anchor, anchor + "    tlx.async_load_wait_group(0)\n"))
    return hopper_gemm_pipelined(folder, *shape)


def async_copy(_: Path, *shape: int) -> float:
    from . import op_kernels
    BM, BN, STAGES = 64, 64, 2
    x = torch.randn(STAGES * BM, BN, device="cuda", dtype=torch.float16)
    y = torch.empty(BM, BN, device="cuda", dtype=torch.float16)
    op_kernels.async_copy[(1, )](x, y, BM=BM, BN=BN, STAGES=STAGES, num_warps=4)
    ref = x.view(STAGES, BM, BN).double().sum(0)
    return ((y.double() - ref).norm() / ref.norm()).item()


def vector_add2_ws(tutorials: Path, *shape: int) -> float:
    module = _tutorial(tutorials, "vector-add2")
    x, y, a, b = (torch.rand(98432, device="cuda") for _ in range(4))
    out1, out2 = module.add2_warp_specialized(x, y, a, b)
    return max(((out1 - (x + y)).abs().max()).item(), ((out2 - (a + b)).abs().max()).item())


CASES = {"fork.hopper_gemm_pipelined": hopper_gemm_pipelined,
         "fork.hopper_gemm_pipelined+drain": hopper_gemm_pipelined_drained, "ops.async_copy": async_copy,
         "fork.vector_add2_ws": vector_add2_ws}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CASES:
        print(f"usage: gpu_check CASE [TUTORIALS [M,N,K]]; CASE one of {', '.join(CASES)}", file=sys.stderr)
        return 2
    bind_tlx("tritium")
    torch.manual_seed(0)
    shape = [int(v) for v in argv[2].split(",")] if len(argv) > 2 else []
    error = CASES[argv[0]](Path(argv[1]) if len(argv) > 1 else Path("."), *shape)
    torch.cuda.synchronize()
    ok = error < 1e-2
    print(f"gpu_check {argv[0]}: error {error:.2e} {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
