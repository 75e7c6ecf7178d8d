"""Launching a compiled kernel straight through its launcher, for the kernels' host code and for ops/.

``kernel[grid](...)`` binds and specializes every argument and looks the kernel up on every call, and a host
TensorDescriptor becomes a new CUtensorMap on every launch. :func:`jit_launch` makes the first launch
through the JIT (compiling, caching and the tritium pipelines as always) and returns what later launches
need to skip it (:func:`tritium.compat.direct_launch`); :class:`DescriptorLaunch` does that for a kernel
whose operands are TMA descriptors, and keeps the encoded descriptors by address. Under
``TRITON_INTERPRET=1`` (read at import, as Triton reads it when the kernels are decorated) every launch goes
through the JIT (:func:`interpreting`).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional, Sequence

import triton

from .. import compat
from .tiles import num_sms

#: Triton's ``TRITON_INTERPRET`` knob, read once, at import, not on every call: Triton decides interpreter
#: or compiler when a kernel is decorated (``@triton.jit`` reads the knob then), so tritium's answer must
#: be the one of that moment; setting it later does not turn decorated kernels into interpreted ones.
_INTERPRET = triton.knobs.runtime.interpret


def interpreting() -> bool:
    """Whether Triton runs kernels on the CPU interpreter (``TRITON_INTERPRET=1`` at import)."""
    return _INTERPRET


def jit_launch(kernel, grid: tuple, args: list, consts: dict) -> Optional[tuple[compat.DirectLaunch, list]]:
    """``kernel[grid](*args, **consts)`` through the JIT (compiling if needed), and what later launches of the
    compiled kernel straight through its launcher need: the :class:`tritium.compat.DirectLaunch` and the
    values of the constexpr parameters after ``args`` (the launcher takes every parameter in order,
    constexprs included, and skips their values). None where the call must keep going through the JIT: a
    defaulted constexpr the call did not name, or a launcher compat cannot drive."""
    compiled = kernel[grid](*args, **consts)
    rest = kernel.arg_names[len(args):]
    if compiled is None or any(n not in consts for n in rest):
        return None
    direct = compat.direct_launch(compiled)
    return None if direct is None else (direct, [consts[n] for n in rest])


_sms: dict[Any, int] = {}


def sm_count(device) -> int:
    """Streaming multiprocessors of ``device`` (cached; 4 stands in for the CPU interpreter)."""
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = num_sms(device)
    return n


#: Cached launches kept per cache (least recently used dropped first), and encoded descriptors per operand.
LAUNCH_CACHE_SIZE = 1024
DESCRIPTORS_PER_OPERAND = 8


class LaunchCache(OrderedDict):
    """Up to :data:`LAUNCH_CACHE_SIZE` launch objects by key, the least recently used dropped first. Every cache of
    launches is one of these, so that :func:`clear_launch_caches` reaches them all."""
    _all: list["LaunchCache"] = []

    def __init__(self) -> None:
        super().__init__()
        LaunchCache._all.append(self)

    def get(self, key: Any, default: Any = None) -> Any:
        value = super().get(key, default)
        if value is not default:
            self.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> Any:
        self[key] = value
        if len(self) > LAUNCH_CACHE_SIZE:
            self.popitem(last=False)
        return value


def clear_launch_caches() -> None:
    """Forget every cached launch, with its compiled kernels and descriptors (tests; after freeing many tensors)."""
    for cache in LaunchCache._all:
        cache.clear()


class DescriptorCache:
    """The launcher arguments of encoded TMA descriptors, per descriptor slot of one compiled kernel, by the
    address of the tensor each describes (the rest of what a descriptor encodes is fixed by the caller per
    slot): a tensor at a reused address, as the caching allocator hands out, costs no new CUtensorMap. Up to
    :data:`DESCRIPTORS_PER_OPERAND` addresses per slot, the least recently added dropped first."""

    def __init__(self, slots: int) -> None:
        self.slots: list[OrderedDict] = [OrderedDict() for _ in range(slots)]

    def args(self, slot: int, tensor: Any, host: Any, meta: Any) -> list:
        """Slot ``slot``'s launcher arguments over ``tensor`` (anything with a ``data_ptr()``); on a new address
        ``host(slot, tensor)`` makes its host TensorDescriptor, encoded with ``meta``, the TMA metadata Triton
        computed for the kernel's parameter (:attr:`tritium.compat.DirectLaunch.descriptor_meta`)."""
        cache, ptr = self.slots[slot], tensor.data_ptr()
        args = cache.get(ptr)
        if args is None:
            args = cache[ptr] = compat.descriptor_args(host(slot, tensor), meta)
            if len(cache) > DESCRIPTORS_PER_OPERAND:
                cache.popitem(last=False)
        return args


class DescriptorLaunch:
    """One specialization of a kernel whose leading parameters are TMA descriptors, launched directly.

    Everything but the operands' addresses is fixed per instance: the grid, the constexprs, and the operands'
    shapes, strides and block shapes (the caller keys instances by them). ``launch(device, operands, args)``
    runs ``kernel[grid](*descriptors over operands, *args, **consts)``: the first time per pipeline digest
    through the JIT, later straight through the compiled kernel's launcher, with each operand's encoded
    descriptor kept by address (the caching allocator hands the same addresses out again). A launch hook
    (a profiler) or the interpreter sends every launch through the JIT.
    """

    def __init__(self, kernel: Any, grid: tuple, blocks: Sequence[Sequence[int]], consts: dict) -> None:
        self.kernel, self.grid, self.consts = kernel, tuple(grid) + (1, ) * (3 - len(grid)), consts
        self.blocks = [list(b) for b in blocks]
        self.compiled: dict[str, tuple[compat.DirectLaunch, list, DescriptorCache]] = {}  # digest -> its launch

    def launch(self, device: int, operands: Sequence[Any], args: Sequence[Any]) -> None:
        if _INTERPRET or compat.launch_hooks_active():
            self.kernel[self.grid](*self._host_descriptors(operands), *args, **self.consts)
            return
        digest = compat.pipeline_digest(self.kernel)
        entry = self.compiled.get(digest)
        if entry is None:
            launched = jit_launch(self.kernel, self.grid, [*self._host_descriptors(operands), *args], self.consts)
            if launched is not None:
                self.compiled[digest] = (*launched, DescriptorCache(len(operands)))
            return
        direct, constexprs, descriptors = entry
        expanded = []
        for i, t in enumerate(operands):
            expanded += descriptors.args(i, t, self._host_descriptor, direct.descriptor_meta[i])
        direct(self.grid, compat.current_stream(device), [*expanded, *args, *constexprs])

    def _host_descriptor(self, i: int, t: Any) -> Any:
        from triton.tools.tensor_descriptor import TensorDescriptor
        return TensorDescriptor(t, list(t.shape), list(t.stride()), self.blocks[i])

    def _host_descriptors(self, operands: Sequence[Any]) -> list:
        return [self._host_descriptor(i, t) for i, t in enumerate(operands)]
