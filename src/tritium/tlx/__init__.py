"""TLX (Triton Language Extensions) for stock Triton: ``import tritium.tlx as tlx`` in a kernel module.

Importing this package registers the TLX plugin, whose pipelines apply only to kernels that use
TLX ops (docs/tlx-design.md). Kernels without TLX ops compile exactly as on bare Triton.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from .async_copy import async_load, async_load_commit_group, async_load_wait_group
from .barriers import alloc_barriers, barrier_arrive, barrier_expect_bytes, barrier_wait
from .layouts import NVMMASharedLayout, SwizzledSharedLayout
from .mem import (local_alloc, local_load, local_reinterpret, local_reshape, local_slice, local_store, local_trans,
                  local_view)
from .misc import clock64, dtype_of, fence, fence_async_shared, size_of, thread_id
from .mma import async_dot, async_dot_wait
from .tasks import async_task, async_task_replica_id, async_tasks
from .tma import async_descriptor_load, async_descriptor_store, async_descriptor_store_wait, make_tensor_descriptor
from .types import async_token, buffered_tensor, tensor_descriptor

__version__ = "0.1.0"

#: Storage kinds accepted by ``local_alloc`` (shared memory only on the targets implemented here).
smem = "smem"

OPS = {
    fn.__name__: fn
    for fn in (local_alloc, local_view, local_slice, local_trans, local_reshape, local_reinterpret, local_load,
               local_store, async_load, async_load_commit_group, async_load_wait_group, async_dot, async_dot_wait,
               alloc_barriers, barrier_expect_bytes, barrier_wait, barrier_arrive, async_descriptor_load,
               async_descriptor_store, async_descriptor_store_wait, make_tensor_descriptor, async_tasks, async_task,
               async_task_replica_id, fence, fence_async_shared, dtype_of, size_of, thread_id, clock64)
}


def _source_digest() -> str:
    """Builtins are not in Triton's cache key; the plugin declares its own code so edits recompile."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _register() -> None:
    try:
        from tritium.plugins import Plugin, load_plugin
    except ImportError:
        return
    from .pipeline import make_pipelines
    pipelines = make_pipelines()
    load_plugin(Plugin(name="tlx", version=__version__, ops=OPS, pipelines=pipelines,
                       auto_pipelines=list(pipelines.values()), content=_source_digest(),
                       description="TLX ops compiled through stock TritonGPU passes"))


_register()

__all__ = [*OPS, "buffered_tensor", "async_token", "tensor_descriptor", "NVMMASharedLayout", "SwizzledSharedLayout", "smem"]
