"""The pipelining-policy example plugin at run time: one kernel, four pipelines, same process.

A plain ``tl.dot`` GEMM whose loop carries no ``num_stages`` of its own is compiled under stock
Triton (3 stages) and under the example plugin's ``no-swp``, ``stages-2`` and ``stages-4``
pipelines, chosen per launch with ``use_pipeline``; the kernel source never changes.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .. import plugins
from .report import bar_plot, table

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
BM, BN, BK = 128, 128, 64


@triton.jit
def policy_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):  # no num_stages here: the pipeline decides
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def pipelines() -> dict[str, plugins.Pipeline | None]:
    """The pipelines compared: stock and those of the example plugin ``policy`` (tritium's own entry point,
    src/tritium/examples/pipeline_policy.py), by label."""
    policy = plugins.get_plugin("policy")
    return {"stock (3 stages)": None, **{name: policy.pipelines[name] for name in ("no-swp", "stages-2", "stages-4")}}


def main(out: str, only: str = "") -> int:
    import torch
    from triton.testing import do_bench
    variants = pipelines()
    rows = []
    for M, N, K in SHAPES:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        grid = (M // BM, N // BN)
        tflops = {}
        for name, pipeline in variants.items():
            with plugins.use_pipeline(pipeline):
                run = lambda: policy_matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=4)  # noqa: E731
                run()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                if not err < 1e-2:
                    raise AssertionError(f"{name} {M}x{N}x{K}: relative error {err:.2e}")
                tflops[name] = 2 * M * N * K / do_bench(run, warmup=25, rep=150, return_mode="median") * 1e-9
        base = tflops["stock (3 stages)"]
        rows += [(f"{M}x{N}x{K}", name, t, t / base) for name, t in tflops.items()]
    print(f"## Pipelining policy plugin: {BM}x{BN}x{BK} tl.dot GEMM, fp16, TFLOPS (ratio to stock)")
    print(table(["shape", "pipeline", "TFLOPS", "ratio"], rows))
    labels = [f"{r[0]} {r[1]}" for r in rows]
    print(f"\nplot: {bar_plot(f'{out}/policy.png', 'pipelining policy', labels, {'TFLOPS': [r[2] for r in rows]}, 'TFLOPS')}")
    return 0
