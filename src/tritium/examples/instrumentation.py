"""Example plugin: per-kernel timing probes inserted by a pass, read back from Python after a launch.

Nothing in the kernel's source changes.  ``instrumentation:timing`` adds one LLVM-IR text pass at the
start of the ``ptx`` stage (NVIDIA only: AMD compilations have no ``ptx`` stage and are left alone):

* two module globals, ``tritium_region_ns`` and ``tritium_region_count`` (``.u64`` in global memory);
* at kernel entry, every thread reads ``%globaltimer`` (nanoseconds, inline PTX, so no intrinsic
  declarations to clash with the module's own);
* before each ``ret`` of the kernel, the timer is read again and thread 0 of each CTA (``%tid.x``
  is 0: Triton launches one-dimensional CTAs) atomically adds its elapsed time to
  ``tritium_region_ns`` and 1 to ``tritium_region_count``.

So after a launch ``tritium_region_ns / tritium_region_count`` is the mean time a CTA ran, as its
thread 0 saw it (first instruction to return), and ``count`` is the number of CTAs that ran.  The
globals live in the kernel's CUDA module; :func:`read` and :func:`reset` reach them through the CUDA
driver API (``cuModuleGetGlobal``) on the module handle of the ``CompiledKernel`` a launch returns,
so they need no buffer argument and no change to how the kernel is launched.  They accumulate over
launches until :func:`reset`.  The probes cost two timer reads per thread and two atomics per CTA.

    timing = tritium.plugins.get_plugin("instrumentation")  # an entry point, loaded on first use
    tritium.plugins.bind("instrumentation:timing", kernel)
    compiled = kernel[grid](...)
    print(instrumentation.read(compiled))     # RegionTime(ns=..., count=...)
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

from tritium.plugins import Pipeline, Plugin, text_pass

NS, COUNT = "tritium_region_ns", "tritium_region_count"
_TIMER = 'call i64 asm sideeffect "mov.u64 $0, %globaltimer;", "=l"()'
_TID = 'call i32 asm "mov.u32 $0, %tid.x;", "=r"()'


def insert_probes(llir: str) -> str:
    """The LLVM IR with the globals added and the kernel (the ``ptx_kernel`` function: Triton makes
    one per module) timed from entry to each return."""
    out: list[str] = []
    inside, exits = False, 0
    for line in llir.splitlines():
        if line.startswith("define ptx_kernel void @"):
            inside = True
            out += [f"@{NS} = addrspace(1) global i64 0, align 8", f"@{COUNT} = addrspace(1) global i64 0, align 8",
                    line, f"  %tritium.t0 = {_TIMER}"]
            continue
        if inside and line == "}":
            inside = False
        if inside and re.match(r"\s+ret void\b", line):
            i = exits
            exits += 1
            out += [f"  %tritium.t1.{i} = {_TIMER}",
                    f"  %tritium.dt.{i} = sub i64 %tritium.t1.{i}, %tritium.t0",
                    f"  %tritium.tid.{i} = {_TID}",
                    f"  %tritium.first.{i} = icmp eq i32 %tritium.tid.{i}, 0",
                    f"  br i1 %tritium.first.{i}, label %tritium.record.{i}, label %tritium.done.{i}",
                    f"tritium.record.{i}:",
                    f"  %tritium.old_ns.{i} = atomicrmw add ptr addrspace(1) @{NS}, i64 %tritium.dt.{i} monotonic, align 8",
                    f"  %tritium.old_n.{i} = atomicrmw add ptr addrspace(1) @{COUNT}, i64 1 monotonic, align 8",
                    f"  br label %tritium.done.{i}",
                    f"tritium.done.{i}:"]
        out.append(line)
    if not exits:
        raise ValueError("no ptx_kernel function returning void in this LLVM IR")
    return "\n".join(out) + "\n"


@text_pass("llir", name="timing_probes")
def timing_probes(llir: str, ctx: Any) -> str:
    return insert_probes(llir)


TIMING = Pipeline("timing").insert("ptx", timing_probes, at="start")

tritium_plugin = Plugin("instrumentation", "0.1.0", pipelines={"timing": TIMING},
                        description="per-kernel %globaltimer probes, read back with read(compiled_kernel)")


# ------------------------------------------------------------------------------------------------
# Reading the globals back (CUDA driver API through ctypes)
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RegionTime:
    """Summed nanoseconds over CTAs (thread 0's view) and how many CTAs added to it."""
    ns: int
    count: int

    @property
    def mean_ns(self) -> float:
        return self.ns / self.count if self.count else 0.0


def _driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with CUDA error {status}")


def _address(cuda: ctypes.CDLL, kernel: Any, name: str) -> ctypes.c_uint64:
    if getattr(kernel, "module", None) is None:
        raise RuntimeError("the kernel's CUDA module is not loaded yet: pass the CompiledKernel a launch returned")
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(cuda.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), ctypes.c_void_p(kernel.module),
                                     name.encode()), f"cuModuleGetGlobal({name}): was the kernel compiled with "
                                                     "instrumentation:timing?")
    return ptr


def read(kernel: Any) -> RegionTime:
    """The timing globals of a launched, instrumented ``CompiledKernel`` (waits for the GPU first)."""
    cuda = _driver()
    _check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    values = []
    for name in (NS, COUNT):
        host = ctypes.c_uint64()
        _check(cuda.cuMemcpyDtoH_v2(ctypes.byref(host), _address(cuda, kernel, name), ctypes.c_size_t(8)),
               f"reading {name}")
        values.append(host.value)
    return RegionTime(*values)


def reset(kernel: Any) -> None:
    """Zero the timing globals of a launched, instrumented ``CompiledKernel``."""
    cuda = _driver()
    _check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    for name in (NS, COUNT):
        _check(cuda.cuMemsetD8_v2(_address(cuda, kernel, name), ctypes.c_ubyte(0), ctypes.c_size_t(8)),
               f"zeroing {name}")
