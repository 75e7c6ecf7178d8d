"""torch.compile chooses tritium's ops where they are at least as fast: an opt-in graph pass for Inductor.

``use_kernels(mm=True, attention=True)`` makes Inductor's post-grad graph call ``torch.ops.tritium.matmul``
in place of ``aten.mm``/``aten.addmm`` and ``torch.ops.tritium._attention_inference`` (what the composite
``torch.ops.tritium.attention`` runs where no gradient is needed) in place of the SDPA kernels
(``aten._scaled_dot_product_{flash,efficient,cudnn}_attention``), node by node, only where the measured
rules say tritium's kernel is at least as fast for that shape, dtype, layout and device
(:func:`tritium.ops.plans.at_least_cublas`, :func:`tritium.ops.attention.at_least_sdpa`; the GEMM rule
depends on whether the graph runs under CUDA graphs, which Inductor's cache key holds); every other
node stays as Inductor made it. Inductor then runs the tritium op as an extern kernel, so its name is in
the output code.

The pass runs in Inductor's own extension point, ``torch._inductor.config.post_grad_custom_post_pass``:
tritium's pass there (:mod:`tritium.torch_integration`) calls :func:`rewrite` while the switch is on and
puts :func:`cache_key` into its ``uuid``, so a graph compiled with the switch on is not served to a
compilation with it off, or the other way round.

``aten.bmm`` stays Inductor's: tritium's GEMMs are 2-D, and there is no measurement of a batched
form. An ``addmm`` whose ``beta`` or ``alpha`` is not 1, an SDPA with a mask, dropout or a used
log-sum-exp (training), and any operand on another device or of another dtype fall back too.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional

import torch

from . import attention as attention_op  # noqa: F401  (registers torch.ops.tritium._attention_inference)
from . import gemm as gemm_op  # noqa: F401  (registers torch.ops.tritium.matmul)
from . import plans
from .attention import at_least_sdpa

#: Changes whenever the rules below or those they call change what is replaced: part of :func:`cache_key`.
RULES_VERSION = 2

aten = torch.ops.aten
#: Inductor's SDPA kernel nodes (the CPU one too: it is never replaced, attention_qualifies wants CUDA, but it
#: lets the CPU tests follow a replacement through Inductor's lowering).
_SDPA = (aten._scaled_dot_product_flash_attention.default, aten._scaled_dot_product_efficient_attention.default,
         aten._scaled_dot_product_cudnn_attention.default, aten._scaled_dot_product_flash_attention_for_cpu.default)


@dataclass(frozen=True)
class KernelChoice:
    """Which of Inductor's ops tritium may take over."""
    mm: bool = False
    attention: bool = False


_lock = threading.Lock()
_choice = KernelChoice()


def use_kernels(mm: bool = True, attention: bool = True) -> KernelChoice:
    """Let torch.compile (Inductor) run tritium's GEMM for ``aten.mm``/``aten.addmm`` (``mm``) and its
    flash attention for SDPA (``attention``) where they are at least as fast; ``use_kernels(False, False)``
    turns it off. Returns the previous choice. Applies to graphs compiled from now on: Dynamo does not guard
    on it, so a function already compiled keeps its graph until ``torch._dynamo.reset()``."""
    global _choice
    for name, value in (("mm", mm), ("attention", attention)):
        if not isinstance(value, bool):
            raise TypeError(f"tritium.ops.inductor.use_kernels: {name} must be True or False, got "
                            f"{type(value).__name__} {value!r}")
    from .. import torch_integration
    torch_integration.install()  # idempotent: tritium's pass is in Inductor's slot
    with _lock:
        previous, _choice = _choice, KernelChoice(mm, attention)
    return previous


def cache_key() -> str:
    """What the switch adds to Inductor's cache key ("" while it is off)."""
    c = _choice
    if not (c.mm or c.attention):
        return ""
    return f"tritium.kernels:v{RULES_VERSION}:mm={int(c.mm)}:attention={int(c.attention)}"


def _val(node: Any) -> Optional[torch.Tensor]:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _arg(node: torch.fx.Node, name: str, default: Any = None) -> Any:
    """The argument ``name`` of an ATen call node, positional or keyword, by the op's schema."""
    for i, a in enumerate(node.target._schema.arguments):  # type: ignore[union-attr]
        if a.name == name:
            if i < len(node.args) and not a.kwarg_only:
                return node.args[i]
            return node.kwargs.get(name, default)
    return default


def _row_major(t: torch.Tensor) -> bool:
    return t.dim() == 2 and (t.stride(1) == 1 or t.shape[1] <= 1)


def mm_qualifies(a: Optional[torch.Tensor], b: Optional[torch.Tensor], out: Optional[torch.Tensor]) -> bool:
    """``a @ b`` goes to tritium: CUDA, fp16/bf16 operands and result of one dtype, both operands row-major
    (read in place; another layout would cost a copy per call), and a shape the plan rates at least as
    fast as cuBLAS in the graph being compiled: with or without CUDA graphs (Inductor's
    ``triton.cudagraphs``, which ``mode="reduce-overhead"`` sets)."""
    if a is None or b is None or out is None:
        return False
    if not (a.device.type == b.device.type == "cuda" and a.dtype == b.dtype == out.dtype
            and a.dtype in (torch.float16, torch.bfloat16) and _row_major(a) and _row_major(b)):
        return False
    (M, K), N = a.shape, b.shape[1]
    if not all(isinstance(d, int) for d in (M, N, K)):
        return False  # a dynamic shape: no one plan
    from torch._inductor import config
    return plans.at_least_cublas(M, N, K, plans.even_layout(a.stride(0), b.stride(0), K, N),
                                 graphs=bool(config.triton.cudagraphs))


def attention_qualifies(q: Optional[torch.Tensor], k: Optional[torch.Tensor], v: Optional[torch.Tensor]) -> bool:
    """SDPA goes to tritium: CUDA, fp16/bf16, q, k and v of one shape [B, H, S, D], and a sequence length
    and head dim where tritium's kernel measured at least SDPA's speed."""
    if q is None or k is None or v is None or q.dim() != 4:
        return False
    if not (q.device.type == k.device.type == v.device.type == "cuda" and q.dtype == k.dtype == v.dtype
            and q.dtype in (torch.float16, torch.bfloat16) and q.shape == k.shape == v.shape):
        return False
    S, D = q.shape[2], q.shape[3]
    return isinstance(S, int) and isinstance(D, int) and at_least_sdpa(S, D)


def rewrite(graph: torch.fx.Graph) -> int:
    """Replace the nodes of ``graph`` (Inductor's post-grad ATen graph) that qualify; returns how many."""
    c = _choice
    replaced = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if c.mm and node.target in (aten.mm.default, aten.addmm.default):
            replaced += _rewrite_mm(graph, node)
        elif c.attention and node.target in _SDPA:
            replaced += _rewrite_sdpa(graph, node)
    if replaced:
        graph.eliminate_dead_code()
        graph.lint()
    return replaced


def _rewrite_mm(graph: torch.fx.Graph, node: torch.fx.Node) -> int:
    addmm = node.target == aten.addmm.default
    a_node, b_node = (node.args[1], node.args[2]) if addmm else (node.args[0], node.args[1])
    if addmm and (node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1):
        return 0
    if not mm_qualifies(_val(a_node), _val(b_node), _val(node)):
        return 0
    with graph.inserting_before(node):
        mm = graph.call_function(torch.ops.tritium.matmul.default, (a_node, b_node))
        mm.meta["val"] = _val(node).new_empty(_val(node).shape)  # a new contiguous [M, N] tensor
        new = mm
        if addmm:
            new = graph.call_function(aten.add.Tensor, (mm, node.args[0]))
            new.meta["val"] = _val(node)
    node.replace_all_uses_with(new)
    graph.erase_node(node)
    return 1


def _rewrite_sdpa(graph: torch.fx.Graph, node: torch.fx.Node) -> int:
    import operator
    users = list(node.users)
    if not users or any(u.target is not operator.getitem or u.args[1] != 0 for u in users):
        return 0  # the log-sum-exp or the RNG state is used (a backward, dropout): SDPA keeps it
    if _arg(node, "dropout_p", 0.0) != 0.0 or any(_arg(node, name) is not None for name in ("attn_bias", "attn_mask")) \
            or _arg(node, "return_debug_mask", False) or _arg(node, "compute_log_sumexp", False):
        return 0
    q, k, v = node.args[:3]
    if not attention_qualifies(_val(q), _val(k), _val(v)):
        return 0
    causal, scale = bool(_arg(node, "is_causal", False)), _arg(node, "scale")
    with graph.inserting_before(node):  # the op a no-grad post-grad graph holds for the composite tritium.attention
        new = graph.call_function(torch.ops.tritium._attention_inference.default, (q, k, v, causal, scale, False))
        new.meta["val"] = _val(q).new_empty(_val(q).shape)
    for user in users:
        user.replace_all_uses_with(new)
        graph.erase_node(user)
    graph.erase_node(node)
    return 1
