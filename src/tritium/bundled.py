"""The plugins tritium ships, as the objects its ``tritium.plugins`` entry points name (pyproject.toml).

Each is a :class:`~tritium.plugins.DeferredPlugin`: importing this module is cheap and loads nothing.
TLX registers itself when a program imports ``tritium.tlx`` (its pipelines only act on kernels that
use TLX ops, which cannot exist before that import), so a program that never uses TLX never pays
for importing it (about a second). The examples load when first asked for by name.
"""
from __future__ import annotations

from .plugins.registry import DeferredPlugin

tlx = DeferredPlugin("tlx", "tritium.tlx", "TLX ops compiled through stock TritonGPU passes")
analysis = DeferredPlugin("analysis", "tritium.examples.analysis", "example: resource and instruction-mix report")
instrumentation = DeferredPlugin("instrumentation", "tritium.examples.instrumentation",
                                 "example: per-kernel timing probes")
policy = DeferredPlugin("policy", "tritium.examples.pipeline_policy", "example: software-pipelining policies")
