"""``ctas_per_cga=``, the fork's launch option for clusters of independent CTAs, as a TLX plugin option.

``kernel[grid](..., ctas_per_cga=(2, 1, 1))`` (or ``triton.Config(..., ctas_per_cga=...)``) compiles the
kernel for one CTA, as always, and launches its grid (which counts CTAs, as in the fork) as clusters of two
along x: ``tritium.compat.install_cluster_launch`` hands the cluster size to Triton's own launcher. Each CTA
is its own program; ``tlx.cluster_cta_rank()`` tells it apart from its peers. Stock Triton's launcher forms
clusters along x only, so ``(1, 2, 1)`` and the like are refused.

What crosses CTAs takes a run-time value (a peer's rank, a multicast mask) into PTX that Triton's TMA and
mbarrier lowerings write: :func:`ptx_link` hands it to tlx/tma_llvm.py through a marked inline asm.
"""
from __future__ import annotations

from typing import Any

import triton.language as tl

from tritium.plugins import PluginOption

from .tma_llvm import MARK
from .triton_compat import compile_options, kernel_state

#: The largest portable cluster; 16 CTAs need the GPU's non-portable cluster size, which Triton's launcher
#: enables for exactly 16.
MAX_PORTABLE = 8


def parse_ctas_per_cga(value: Any) -> tuple[int, int, int]:
    """The option's value as ``(n, 1, 1)``; raises ValueError for any other shape."""
    shape = tuple(value)
    if len(shape) != 3 or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape):
        raise ValueError(f"expected three positive ints (x, y, z), got {value!r}")
    if shape[1:] != (1, 1):
        raise ValueError(f"{shape}: Triton's launcher forms clusters along x only, (n, 1, 1)")
    if shape[0] > MAX_PORTABLE and shape[0] != 16:
        raise ValueError(f"{shape}: a cluster holds at most {MAX_PORTABLE} CTAs (or 16, non-portable)")
    return shape


CTAS_PER_CGA = PluginOption(
    "ctas_per_cga", (tuple, list), default=(1, 1, 1), targets=("cuda",), convert=parse_ctas_per_cga,
    help="CTAs per thread-block cluster, (n, 1, 1); the grid counts CTAs, as in the fork")


def cluster_ctas(_semantic: Any) -> int:
    """CTAs per cluster of the kernel being compiled (1 without ``ctas_per_cga``)."""
    return int(CTAS_PER_CGA.value(compile_options(_semantic))[0])


def ptx_link(_semantic: Any, value: tl.tensor) -> int:
    """Pass the i32 scalar ``value`` to the PTX of an op marked with the returned number (tlx/tma_llvm.py): an
    inline asm with side effects keeps it in place, and the LLVM-dialect pass hands its result to the op."""
    state = kernel_state(_semantic)
    n = state["ptx_links"] = state.get("ptx_links", -1) + 1
    tl.inline_asm_elementwise(f"{MARK}val:{n}; mov.b32 $0, $1;", "=r,r", [value], dtype=tl.int32, is_pure=False,
                              pack=1, _semantic=_semantic)
    return n
