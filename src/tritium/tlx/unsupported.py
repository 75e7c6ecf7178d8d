"""Names of the TLX fork that cannot exist on stock Triton for Hopper and AMD CDNA.

The fork exports them from ``triton.language.extra.tlx``; kernels written for it may mention them.
Here each one is a stand-in that raises, wherever it is used (in a kernel being compiled, where
Triton reports the kernel line; under the interpreter; or from host code), an error naming the op
and the hardware feature it needs, and saying that stock Triton 3.6 has no path to it.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, NoReturn

import triton
from triton.runtime.errors import OutOfResources

from .. import compat

_STOCK = "stock Triton 3.6 has no path for it (no such op or pass), so tritium cannot provide it"
_TCGEN05 = ("needs Blackwell (sm_100) tensor memory and tcgen05 instructions; Hopper (sm_90) and AMD CDNA have "
            "neither")
_CLC = ("needs Blackwell (sm_100) cluster launch control (clusterlaunchcontrol.try_cancel), which Hopper (sm_90) "
        "and AMD CDNA lack")
_TDM = "needs the AMD Tensor Data Mover of gfx1250; CDNA3/CDNA4 (gfx942, gfx950) have no TDM"


class UnsupportedOp:
    """A fork name that raises :class:`NotImplementedError` on any use: call or attribute access."""

    __triton_builtin__ = True  # so that Triton calls it while compiling, and reports the kernel line

    def __init__(self, name: str, why: str) -> None:
        self.__name__ = self.__qualname__ = name
        self.why = why

    def error(self) -> NotImplementedError:
        return NotImplementedError(f"tlx.{self.__name__} is not available in tritium: it {self.why}; {_STOCK}")

    def __call__(self, *args: Any, _semantic: Any = None, **kwargs: Any) -> NoReturn:
        raise self.error()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self.error()

    def __repr__(self) -> str:
        return f"<tlx.{self.__name__}: unavailable on stock Triton>"


#: name -> why it cannot be provided (the first half of the error message).
REASONS: dict[str, str] = {
    # Blackwell tensor memory, tcgen05 MMA and its layouts
    "tcgen05_commit": _TCGEN05,
    "tmem_copy": _TCGEN05,
    "async_dot_scaled": _TCGEN05 + " (block-scaled MMA is tcgen05.mma with scale factors in tensor memory)",
    "tensor_memory_layout_encoding": _TCGEN05,
    "TMemCTAMode": _TCGEN05,
    "_to_mxfp8_block": ("makes MXFP8 operands with E8M0 block scales for Blackwell's block-scaled tcgen05 MMA "
                        "(async_dot_scaled); " + _TCGEN05),
    "stoch_round": "needs the stochastic-rounding conversion cvt.rs of Blackwell (sm_100a); Hopper has none",
    # Blackwell cluster launch control (dynamic persistent scheduling)
    "_alloc_clc_responses": _CLC,
    "_clc_issue": _CLC,
    "_clc_query": _CLC,
    "clc_create_context": _CLC,
    "clc_producer": _CLC,
    "clc_consumer": _CLC,
    "clc_response": _CLC,
    "clc_response_type": _CLC,
    "CLCPipelineContext": _CLC,
    "CLCPipeliner": ("is listed in the fork's __all__ but the fork defines no such name (its use fails there "
                     "too); the fork's CLC pipelining " + _CLC),
    # AMD gfx1250 Tensor Data Mover
    "async_amd_descriptor_load": _TDM,
    "async_amd_descriptor_store": _TDM,
    "async_amd_descriptor_wait": _TDM,
    "amd_descriptor_prefetch_tensor": _TDM,
}

_UNSUPPORTED = {name: UnsupportedOp(name, why) for name, why in REASONS.items()}

CTAS_PER_CGA = ("stock Triton's launcher forms clusters of CTAs along x only: tritium launches ctas_per_cga=(n, 1, 1) "
                "(tlx/cluster_launch.py), not clusters that extend along y or z")


class ClusterLaunchUnsupported(OutOfResources):
    """A config asks for a cluster shape Triton's launcher cannot form. An ``OutOfResources``, so that the
    autotuner skips the config (as it skips one that needs too much shared memory) and tunes over the rest."""

    def __init__(self, shape: tuple, name: str = "CTAs per cluster (ctas_per_cga)") -> None:
        super().__init__(math.prod(shape), shape[0], name)
        self.shape = shape

    def __str__(self) -> str:
        return f"triton.Config(ctas_per_cga={self.shape}) asks for a cluster along y or z: {CTAS_PER_CGA}"


def _refuse_cluster(shape: tuple) -> Callable[[dict], None]:
    def refuse(nargs: dict) -> None:
        raise ClusterLaunchUnsupported(shape)

    return refuse


def _config_init(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def __init__(self: Any, kwargs: dict, *args: Any, **extra: Any) -> None:
        # The plugin option moves ctas_per_cga into the meta-parameters (the launch's keywords) while TLX is
        # loaded; a shape the launcher cannot form stays in the list and is skipped when the autotuner tries it.
        shape = extra.get("ctas_per_cga", kwargs.get("ctas_per_cga"))
        launchable = shape is None or tuple(shape)[1:] == (1, 1)
        if not launchable:
            kwargs = {k: v for k, v in kwargs.items() if k != "ctas_per_cga"}
            extra.pop("ctas_per_cga", None)
        init(self, kwargs, *args, **extra)
        if not launchable:
            self.ctas_per_cga = tuple(shape)
            self.pre_hook = _refuse_cluster(tuple(shape))

    return __init__


def accept_fork_target_queries() -> None:
    """Give ``GPUTarget`` the fork's ``is_cuda_backend()``: fork kernels call it on the driver's target at
    import (``driver.active.get_current_target().is_cuda_backend()``), and stock Triton's has no such method."""
    from triton.backends.compiler import GPUTarget
    if not hasattr(GPUTarget, "is_cuda_backend"):
        GPUTarget.is_cuda_backend = lambda self: self.backend == "cuda"


def accept_ctas_per_cga() -> None:
    """Let ``triton.Config`` take every ``ctas_per_cga`` of the fork: an x-only cluster is TLX's launch option
    (tlx/cluster_launch.py); a config with another shape is kept, and the autotuner skips it with
    :class:`ClusterLaunchUnsupported`.

    Fork kernels put it in their autotune configs, which are built when the module is imported; stock
    Triton's ``Config`` would fail there with a bare ``TypeError`` (and TLX's option with an error).
    """
    compat.wrap_config_init(_config_init)


globals().update(_UNSUPPORTED)

__all__ = ["UnsupportedOp", "REASONS", *REASONS]
