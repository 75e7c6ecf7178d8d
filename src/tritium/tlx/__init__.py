"""TLX (Triton Language Extensions) for stock Triton: ``import tritium.tlx as tlx`` in a kernel module.

Importing this package registers the TLX plugin, whose pipelines apply only to kernels that use
TLX ops (docs/tlx-design.md). Kernels without TLX ops compile exactly as on bare Triton.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

# The op families: each op registers itself where it is written (``@tlx_builtin``, tlx/emit.py).
from . import (alias, async_copy, barriers, buffer_ops, cluster, mem, misc, mma, tasks, tma, warp,  # noqa: F401
               warp_pipeline)
from .alias import storage_alias_spec_type, storage_alias_spec_value as storage_alias_spec_type_class
from .emit import BUILTINS
from .layouts import NVMMASharedLayout, SwizzledSharedLayout
from .layouts import (amd_mfma_layout, dot_operand_layout, layout, layout_encoding, nv_mma_shared_layout_encoding,
                      padded_shared_layout_encoding, shared_layout_encoding, shared_linear_layout_encoding,
                      storage_kind, swizzled_layout, swizzled_shared_layout_encoding)
from .triton_compat import (accept_bf16_interpreted_dots, accept_constexpr_launch_args, accept_fork_aggregates,
                            accept_fork_load_cache_modifier, accept_interpreted_closures,
                            round_interpreted_bf16_casts)
from .tma import tensor_descriptor_ptr, tensor_descriptor_ptr_type
from .types import async_token, buffered_tensor, buffered_tensor_type, reuse_group, reuse_group_type, tensor_descriptor

__version__ = "0.1.0"

#: Storage kinds accepted by ``local_alloc`` (shared memory only on the targets implemented here).
smem = "smem"

#: Every TLX op, by name (the plugin's ops, and this namespace's).
OPS = dict(sorted(BUILTINS.items()))
globals().update(OPS)

#: The fork's layout and storage types (tritium/tlx/layouts.py maps them onto stock TritonGPU attributes).
LAYOUT_TYPES = ["layout_encoding", "shared_layout_encoding", "swizzled_shared_layout_encoding",
                "nv_mma_shared_layout_encoding", "padded_shared_layout_encoding", "shared_linear_layout_encoding",
                "swizzled_layout", "amd_mfma_layout", "dot_operand_layout", "layout", "storage_kind",
                "buffered_tensor_type", "reuse_group", "reuse_group_type", "storage_alias_spec_type",
                "storage_alias_spec_type_class"]


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
    from tritium import compat
    from .cluster_launch import CTAS_PER_CGA
    from .fn_attrs import LLVM_FN_ATTRS, fn_attrs_pipeline
    from .pipeline import make_pipelines
    pipelines = {**make_pipelines(), "tlx-llvm-fn-attrs": fn_attrs_pipeline()}
    compat.install_cluster_launch(CTAS_PER_CGA.name)
    load_plugin(Plugin(name="tlx", version=__version__, ops=OPS, pipelines=pipelines,
                       options=[LLVM_FN_ATTRS, CTAS_PER_CGA],
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
accept_fork_load_cache_modifier()
accept_fork_aggregates()
accept_bf16_interpreted_dots()
accept_constexpr_launch_args()
accept_interpreted_closures()
round_interpreted_bf16_casts()
