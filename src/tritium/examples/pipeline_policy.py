"""Example plugin: a per-kernel software-pipelining policy, without touching kernel source.

``stages(n)`` re-runs Triton's loop scheduling and pipeliner with ``n`` stages whatever the kernel's
``num_stages`` option says; ``no_swp()`` turns software pipelining off.  Each backend schedules
loops with its own passes (NVIDIA: ``ttgpuir.assign_latencies`` + ``ttgpuir.pipeline``; AMD:
``amd.ttgpuir.schedule_loops`` feeding ``amd.ttgpuir.pipeline``), so each policy is made for one
backend and gated by ``when`` on the compilation's target: activating an NVIDIA policy globally
leaves AMD compilations alone instead of failing on pass names they do not have.

    tritium pipeline my.py:kernel --pipeline policy:no-swp ...   # an entry point of tritium

or bind one kernel: ``tritium.plugins.bind(pipeline_policy.stages(2))(kernel)``.
"""
from typing import Any, Callable

from tritium.plugins import Pipeline, Plugin, StockPass


def _on(backend: str) -> Callable[[Any, dict], bool]:
    return lambda src, metadata: metadata["target"].backend == backend


def _name(base: str, backend: str) -> str:
    return base if backend == "cuda" else f"{backend}-{base}"


def stages(n: int, backend: str = "cuda") -> Pipeline:
    """Software-pipeline loops ``n`` deep on ``backend`` (``"cuda"``: sm_8x/9x, or ``"hip"``)."""
    p = Pipeline(_name(f"stages-{n}", backend), when=_on(backend))
    if backend == "hip":
        return p.replace("ttgir", "amd.ttgpuir.schedule_loops", StockPass("amd.ttgpuir.schedule_loops", n))
    return (p.replace("ttgir", "ttgpuir.assign_latencies", StockPass("ttgpuir.assign_latencies", n))
             .replace("ttgir", "ttgpuir.pipeline", StockPass("ttgpuir.pipeline", n, False)))


def no_swp(backend: str = "cuda") -> Pipeline:
    """No software pipelining on ``backend``: loops keep one buffer and synchronous loads."""
    p = Pipeline(_name("no-swp", backend), when=_on(backend))
    if backend == "hip":
        return p.disable("ttgir", "amd.ttgpuir.schedule_loops").disable("ttgir", "amd.ttgpuir.pipeline")
    return (p.disable("ttgir", "ttgpuir.assign_latencies")
             .disable("ttgir", "ttgpuir.schedule_loops")
             .disable("ttgir", "ttgpuir.pipeline"))


tritium_plugin = Plugin("policy", "0.2.0", pipelines={p.name: p for p in (
    no_swp("cuda"), stages(2, "cuda"), stages(4, "cuda"), no_swp("hip"), stages(2, "hip"), stages(3, "hip"))},
    description="per-kernel software pipelining depth")
