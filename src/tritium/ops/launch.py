"""The host path of tritium.ops.matmul: operands made launchable, and launches without per-call binding.

``JITFunction.__getitem__(grid)(...)`` binds and specializes every argument, computes the cache key
and looks the kernel up on every call; host TensorDescriptors are then turned into CUtensorMaps on
every launch. Here, per (plan, shapes, strides, 16-byte alignment, dtypes, device, pipelines in
effect) the first call goes through the JIT (so compilation, caching and the tritium pipelines
behave as always) and keeps the CompiledKernel it returned together with the grid; later calls
launch that compiled kernel directly (:func:`tritium.compat.direct_launch`). CUtensorMaps are cached
per (address, shape, strides, dtype, block), which is exactly what they encode, so a tensor at a
reused address costs no new descriptor.

Honoured on every call: the device (part of the key, launches go to the current stream of the
operands' device), the pipelines in effect for the kernel (:func:`tritium.compat.pipeline_digest`,
part of the key: another pipeline means another compiled kernel, compiled through the JIT), and
launch hooks (when a profiler hook is set, calls go through the JIT, which runs it).
Under ``TRITON_INTERPRET=1`` every call goes through the JIT (the interpreter).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import triton

from .. import compat
from ..kernels import gemm_pipelined_hopper as pipelined
from ..kernels.tiles import num_sms
from .plans import VARIANTS, Plan

#: CUtensorMaps kept (least recently used dropped first).
DESCRIPTOR_CACHE_SIZE = 256


def interpreting() -> bool:
    import os
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@dataclass
class _Compiled:
    direct: compat.DirectLaunch
    grid: tuple[int, int, int]
    constexpr_values: list  # the kernel's constexpr parameters, in order, after its runtime ones
    blocks: tuple  # TMA kernels: the A, B and C descriptor block shapes


_launches: dict[tuple, _Compiled] = {}
_descriptors: OrderedDict[tuple, list] = OrderedDict()
_sms: dict[Any, int] = {}


def sm_count(device) -> int:
    """Streaming multiprocessors of ``device`` (cached; 4 stands in for the CPU interpreter)."""
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = num_sms(device)
    return n


def _padded_cols(cols: int, elem_size: int) -> int:
    """``cols`` rounded up so that a row is a multiple of 16 bytes (TMA strides)."""
    per = 16 // elem_size
    return triton.cdiv(cols, per) * per


def _tma_operand(x):
    """``x`` as TMA can read it: unit column stride, 16-byte row stride and base; a copy only when needed."""
    import torch
    cols = _padded_cols(x.shape[1], x.element_size())
    if x.stride(1) == 1 and x.stride(0) % (16 // x.element_size()) == 0 and x.data_ptr() % 16 == 0:
        return x
    return torch.nn.functional.pad(x, (0, cols - x.shape[1])).contiguous()


def _pointer_operand(x):
    """``x`` row-major with a 16-byte aligned base (what the cp.async kernel reads), copying only if needed."""
    import torch
    if x.stride(1) == 1 and x.data_ptr() % 16 == 0:
        return x
    return torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)


def _descriptor_args(t, block: tuple[int, ...], meta) -> list:
    """Launcher arguments of a TMA descriptor over ``t`` with ``block``, from the cache when possible."""
    key = (t.data_ptr(), t.shape, t.stride(), t.dtype, block, id(meta))  # meta lives with its compiled kernel
    args = _descriptors.get(key)
    if args is None:
        from triton.tools.tensor_descriptor import TensorDescriptor
        args = compat.descriptor_args(TensorDescriptor.from_tensor(t, list(block)), meta)
        _descriptors[key] = args
        if len(_descriptors) > DESCRIPTOR_CACHE_SIZE:
            _descriptors.popitem(last=False)
    else:
        _descriptors.move_to_end(key)
    return args


def prepare(plan: Plan, a, b, out_dtype):
    """The operands as ``plan``'s kernel reads them and the buffer C it writes: (a, b, c).

    TMA kernels: A and B padded to 16-byte rows only when they are not already (a copy), C with
    16-byte rows; split-K: C is a zeroed fp32 buffer the K slices are added into. The cp.async
    kernel: A and B row-major with 16-byte aligned bases (else copied). :func:`finish` turns C into
    the op's result.
    """
    import torch
    M = a.shape[0]
    N = b.shape[1]
    variant = VARIANTS[plan.kernel]
    if not variant.tma:
        return _pointer_operand(a), _pointer_operand(b), torch.empty((M, N), device=a.device, dtype=out_dtype)
    split = variant.units(plan.config) > 1
    acc = torch.float32 if split else out_dtype
    cols = _padded_cols(N, acc.itemsize)
    c = (torch.zeros if split else torch.empty)((M, cols), device=a.device, dtype=acc)
    return _tma_operand(a), _tma_operand(b), c


def finish(c, N: int, out_dtype):
    """The op's result from the kernel's C: the first N columns, contiguous, in ``out_dtype``."""
    if c.shape[1] != N:
        c = c[:, :N]
    return c.to(out_dtype).contiguous()


def _grid(plan: Plan, M: int, N: int, device) -> tuple[int, int, int]:
    variant, cfg = VARIANTS[plan.kernel], plan.config
    if variant.tma:
        tiles = triton.cdiv(M, cfg.BM) * triton.cdiv(N, cfg.BN) * variant.units(cfg)
        return (min(sm_count(device), tiles), 1, 1)
    return (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), 1, 1)


def _jit_args(plan: Plan, a, b, c, M: int, N: int, K: int) -> tuple[list, dict]:
    """Positional arguments and keyword constexprs of the kernel, as ``kernel[grid](...)`` takes them."""
    variant, cfg = VARIANTS[plan.kernel], plan.config
    consts = variant.constexprs(cfg)
    if variant.tma:
        from triton.tools.tensor_descriptor import TensorDescriptor
        blocks = variant.descriptor_blocks(cfg)
        descs = [TensorDescriptor.from_tensor(t, list(blk)) for t, blk in zip((a, b, c), blocks)]
        return [*descs, M, N, K], consts
    align = pipelined._stride_align(a.stride(0), b.stride(0), K, N)
    return [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)], \
        {**consts, "STRIDE_ALIGN": align}


def _key(plan: Plan, a, b, c, digest: str) -> tuple:
    return (plan, a.shape, a.stride(), b.shape, b.stride(), c.shape, c.stride(), a.dtype, c.dtype, a.device,
            a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0, c.data_ptr() % 16 == 0, digest)


def launch(plan: Plan, a, b, c, M: int, N: int, K: int) -> None:
    """Run ``plan``'s kernel on operands from :func:`prepare` (``b`` and ``c`` may have padding
    columns past N), directly when it can."""
    variant = VARIANTS[plan.kernel]
    if interpreting() or compat.launch_hooks_active():
        args, consts = _jit_args(plan, a, b, c, M, N, K)
        variant.kernel[_grid(plan, M, N, a.device)](*args, **consts)
        return
    key = _key(plan, a, b, c, compat.pipeline_digest(variant.kernel))
    entry = _launches.get(key)
    if entry is None:
        _first_launch(key, plan, a, b, c, M, N, K)
        return
    if variant.tma:
        meta, blocks = entry.direct.descriptor_meta, entry.blocks
        args = [*_descriptor_args(a, blocks[0], meta[0]), *_descriptor_args(b, blocks[1], meta[1]),
                *_descriptor_args(c, blocks[2], meta[2]), M, N, K, *entry.constexpr_values]
    else:
        args = [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                *entry.constexpr_values]
    entry.direct(entry.grid, compat.current_stream(a.device.index), args)


def _first_launch(key: tuple, plan: Plan, a, b, c, M: int, N: int, K: int) -> None:
    """Launch through the JIT (compiling if needed) and keep what later direct launches need."""
    variant = VARIANTS[plan.kernel]
    args, consts = _jit_args(plan, a, b, c, M, N, K)
    grid = _grid(plan, M, N, a.device)
    compiled = variant.kernel[grid](*args, **consts)
    # The launcher takes every parameter in order, constexprs included (it skips their values).
    rest = variant.kernel.arg_names[len(args):]
    if compiled is None or any(n not in consts for n in rest):
        return  # a defaulted constexpr the call did not name: keep launching through the JIT
    direct = compat.direct_launch(compiled)
    if direct is not None:
        blocks = tuple(tuple(blk) for blk in variant.descriptor_blocks(plan.config)) if variant.tma else ()
        _launches[key] = _Compiled(direct, grid, [consts[n] for n in rest], blocks)


def clear_caches() -> None:
    """Forget compiled launches and descriptors (tests; after freeing many tensors)."""
    _launches.clear()
    _descriptors.clear()
