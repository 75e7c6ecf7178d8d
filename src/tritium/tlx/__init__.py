"""TLX (Triton Language Extensions) for stock Triton: ``import tritium.tlx as tlx`` in a kernel module.

Importing this package registers the TLX plugin, whose pipelines apply only to kernels that use
TLX ops (docs/tlx-design.md). Kernels without TLX ops compile exactly as on bare Triton.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from .async_copy import async_load, async_load_commit_group, async_load_wait_group, prefetch
from .buffer_ops import buffer_atomic_add, buffer_load, buffer_load_to_local, buffer_store
from .barriers import alloc_barriers, barrier_arrive, barrier_expect_bytes, barrier_wait
from .barriers import alloc_warp_barrier, named_barrier_arrive, named_barrier_wait
from .cluster import cluster_barrier, cluster_cta_rank, cluster_size_1d, fence_mbarrier_init_cluster, remote_view
from .misc import get_fp8_format_name
from .warp import vote_ballot_sync, warp_redux
from .layouts import NVMMASharedLayout, SwizzledSharedLayout
from .layouts import (amd_mfma_layout, dot_operand_layout, layout, layout_encoding, nv_mma_shared_layout_encoding,
                      padded_shared_layout_encoding, shared_layout_encoding, shared_linear_layout_encoding,
                      storage_kind, swizzled_layout, swizzled_shared_layout_encoding)
from .mem import (local_alloc, local_load, local_reinterpret, local_reshape, local_slice, local_store, local_trans,
                  local_view)
from .mem import (assert_same_layout, dump_layout, local_gather, local_scatter, release_layout, require_layout,
                  storage_alias_spec, subslice, zeros)
from .types import buffered_tensor_type, reuse_group, reuse_group_type
from .alias import storage_alias_spec_type, storage_alias_spec_value as storage_alias_spec_type_class
from .misc import clock64, dtype_of, fence, fence_async_shared, size_of, thread_id
from .mma import async_dot, async_dot_wait
from .tasks import async_task, async_task_replica_id, async_tasks
from .tma import async_descriptor_load, async_descriptor_store, async_descriptor_store_wait, make_tensor_descriptor
from .tma import (allocate_tensor_descriptor, async_descriptor_prefetch_tensor, async_store,
                  reinterpret_tensor_descriptor, tensor_descriptor_ptr, tensor_descriptor_ptr_type)
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
OPS.update((fn.__name__, fn) for fn in (local_gather, local_scatter, zeros, require_layout, release_layout, subslice,
                                        assert_same_layout, dump_layout, storage_alias_spec))

#: The fork's layout and storage types (tritium/tlx/layouts.py maps them onto stock TritonGPU attributes).
LAYOUT_TYPES = ["layout_encoding", "shared_layout_encoding", "swizzled_shared_layout_encoding",
                "nv_mma_shared_layout_encoding", "padded_shared_layout_encoding", "shared_linear_layout_encoding",
                "swizzled_layout", "amd_mfma_layout", "dot_operand_layout", "layout", "storage_kind",
                "buffered_tensor_type", "reuse_group", "reuse_group_type", "storage_alias_spec_type",
                "storage_alias_spec_type_class"]
# Synchronization, warp and cluster ops.
OPS.update({fn.__name__: fn for fn in (named_barrier_wait, named_barrier_arrive, alloc_warp_barrier, cluster_barrier,
                                       cluster_cta_rank, cluster_size_1d, fence_mbarrier_init_cluster, remote_view,
                                       get_fp8_format_name, vote_ballot_sync, warp_redux)})
# Descriptor slots (tlx/tma.py).
OPS.update({fn.__name__: fn for fn in (allocate_tensor_descriptor, reinterpret_tensor_descriptor,
                                        async_descriptor_prefetch_tensor, async_store)})
OPS.update({fn.__name__: fn for fn in (prefetch, buffer_load, buffer_store, buffer_atomic_add, buffer_load_to_local)})


def _source_digest() -> str:
    """Builtins are not in Triton's cache key; the plugin declares its own code (and the compat shim its
    passes call) so edits recompile, and its passes' run-time state (caches, warnings given) does not."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for path in [*sorted(here.glob("*.py")), here.parent / "compat.py"]:
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

__all__ = [*OPS, *LAYOUT_TYPES, "buffered_tensor", "async_token", "tensor_descriptor", "tensor_descriptor_ptr",
           "tensor_descriptor_ptr_type", "NVMMASharedLayout", "SwizzledSharedLayout", "smem"]

# Fork names that cannot exist on stock Triton (tlx/unsupported.py): each raises, naming why.
# setdefault: a name this package really implements always wins.
from . import unsupported as _unsupported  # noqa: E402

for _name in _unsupported.REASONS:
    globals().setdefault(_name, getattr(_unsupported, _name))
del _name
__all__ += [n for n in _unsupported.REASONS if n not in __all__]
_unsupported.accept_ctas_per_cga()
_unsupported.accept_fork_target_queries()
