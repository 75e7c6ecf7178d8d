"""Example plugin: a per-kernel software-pipelining policy, without touching kernel source.

``stages(n)`` re-runs Triton's latency assignment and pipeliner with ``n`` stages whatever the
kernel's ``num_stages`` option says; ``no-swp`` turns software pipelining off (on sm_8x/9x).

    TRITIUM_PLUGIN_PATHS=examples/plugins/pipeline_policy.py \\
        tritium pipeline my.py:kernel --pipeline policy:no-swp ...

or bind one kernel: ``tritium.plugins.bind(pipeline_policy.stages(2))(kernel)``.
"""
from tritium.plugins import Pipeline, Plugin, StockPass


def stages(n: int) -> Pipeline:
    """Software-pipeline loops ``n`` deep (NVIDIA sm_8x/9x pass names)."""
    return (Pipeline(f"stages-{n}")
            .replace("ttgir", "ttgpuir.assign_latencies", StockPass("ttgpuir.assign_latencies", n))
            .replace("ttgir", "ttgpuir.pipeline", StockPass("ttgpuir.pipeline", n, False)))


NO_SWP = (Pipeline("no-swp")
          .disable("ttgir", "ttgpuir.assign_latencies")
          .disable("ttgir", "ttgpuir.schedule_loops")
          .disable("ttgir", "ttgpuir.pipeline"))

tritium_plugin = Plugin("policy", "0.1.0", pipelines={"no-swp": NO_SWP, "stages-2": stages(2), "stages-4": stages(4)},
                        description="per-kernel software pipelining depth")
