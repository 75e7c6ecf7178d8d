"""The host path of tritium.ops.matmul: operands made launchable, and launches without per-call binding.

``JITFunction.__getitem__(grid)(...)`` binds and specializes every argument, computes the cache key
and looks the kernel up on every call; host TensorDescriptors are then turned into CUtensorMaps on
every launch. Here a :class:`Call` holds what every call of one (plan, operand shapes and strides,
16-byte alignment of the bases, dtypes, device) shares, worked out once: whether A and B are read in
place or copied, C's shape, dtype and zero-fill, the grid, the launch arguments that do not depend
on addresses, and per pipeline digest the compiled kernel. Its first launch (per digest) goes
through the JIT, so compilation, caching and the tritium pipelines behave as always; later launches
call that compiled kernel directly (:func:`tritium.kernels.launch.jit_launch`). A TMA descriptor encodes
the tensor's address, so each Call keeps the launcher arguments of the last few descriptors per
operand keyed by address (the rest of what a descriptor encodes is fixed by the Call): a tensor at a
reused address, as the caching allocator hands out, costs no new CUtensorMap.

Small problems (up to :data:`PDL_MAX_WORK`) launch with programmatic dependent launch: the kernel's
launch and prologue overlap the previous kernel's tail, and its first instruction waits for that kernel
to complete (the kernels' ``PDL`` constexpr, always set together with the ``launch_pdl`` option).

Honoured on every call: the device (part of the key, launches go to the current stream of the
operands' device), the pipelines in effect for the kernel (:func:`tritium.compat.pipeline_digest`:
another pipeline means another compiled kernel, compiled through the JIT), and launch hooks (when a
profiler hook is set, calls go through the JIT, which runs it). Under ``TRITON_INTERPRET=1`` (read
at import, as Triton reads it when the kernels are decorated) every call goes through the JIT.

Layouts: a dimension of size 1 has no meaningful stride (``torch.randn(200, 1).t()`` has strides
(1, 1)), so it is given the stride of a dense row-major matrix with 16-byte rows before anything is
decided; this is what lets such an operand be read in place by TMA, whose row strides must be
multiples of 16 bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import triton

from .. import compat
from ..kernels import gemm_pipelined_hopper as pipelined
from ..kernels.launch import DescriptorCache, LaunchCache, clear_launch_caches, interpreting, jit_launch, sm_count
from ..kernels.tiles import cluster_launch, ws_programs
from .plans import VARIANTS, Plan

#: Problems up to this much work (M * N * K) launch with programmatic dependent launch: the kernel waits
#: for the previous one in the stream (``tiles.sync_grid_dependency``) while its own launch and prologue
#: overlap that kernel's tail. On the H200, in CUDA-graph replay of back-to-back calls, this made 256^3 to
#: 2048^3 2 to 21% faster and 4096^3 and 8192^3 0.2 to 3% slower (docs/benchmarks.md, fifth session).
PDL_MAX_WORK = 2048 ** 3

def check_not_cpu(op: str, name: str, tensor: Any) -> None:
    """Refuse a CPU tensor unless Triton was imported interpreting: setting ``TRITON_INTERPRET=1`` later changes
    nothing (Triton chose its driver at import), and launching then fails with "0 active drivers"."""
    if tensor.device.type == "cpu" and not interpreting():
        raise ValueError(f"{op}: {name} is a CPU tensor; the kernels run on CUDA devices, or on the CPU only under "
                         "TRITON_INTERPRET=1 (set before triton is imported)")


@dataclass
class _Compiled:
    direct: compat.DirectLaunch
    constexpr_values: list  # the kernel's constexpr parameters, in order, after its runtime ones
    # TMA kernels: the encoded descriptors of A, B and C (slots 0-2) by address (the descriptor metadata belongs
    # to this compiled kernel, so the cache lives with it)
    descriptors: DescriptorCache | None = None


def _padded_cols(cols: int, elem_size: int) -> int:
    """``cols`` rounded up so that a row is a multiple of 16 bytes (TMA strides)."""
    per = 16 // elem_size
    return triton.cdiv(cols, per) * per


def layout(x) -> tuple[int, int]:
    """``x``'s (row, column) strides with a size-1 dimension given the stride of a dense matrix with
    16-byte rows (its stride is never used to address anything)."""
    rows, cols = x.shape
    rs, cs = x.stride()
    if cols == 1:
        cs = 1
    if rows == 1:
        rs = _padded_cols(cols, x.element_size())
    return rs, cs


def tma_in_place(x) -> bool:
    """Whether TMA can read ``x`` as it is: unit column stride, 16-byte row stride and base."""
    rs, cs = layout(x)
    return cs == 1 and (rs * x.element_size()) % 16 == 0 and x.data_ptr() % 16 == 0


def pointer_in_place(x) -> bool:
    """Whether the cp.async kernel can read ``x`` as it is: unit column stride, 16-byte aligned base."""
    return layout(x)[1] == 1 and x.data_ptr() % 16 == 0


def kernel_row_stride(x, tma: bool) -> int:
    """The row stride ``x`` has as the kernel reads it (the copy's when it is copied)."""
    if tma:
        return layout(x)[0] if tma_in_place(x) else _padded_cols(x.shape[1], x.element_size())
    return layout(x)[0] if pointer_in_place(x) else x.shape[1]


def _tma_copy(x):
    """``x`` copied to row-major with zero columns up to 16-byte rows (TMA strides)."""
    import torch
    return torch.nn.functional.pad(x, (0, _padded_cols(x.shape[1], x.element_size()) - x.shape[1])).contiguous()


def _pointer_copy(x):
    import torch
    return torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)


class Call:
    """``plan``'s kernel on operands of one layout (see the module docstring): ``call(a, b)`` is ``a @ b``.

    Built from a representative pair (a, b); it serves every pair with the same shapes, strides,
    16-byte alignment of the bases, dtypes and device (:func:`call_key`). For a variant that reads B
    K-major (``Variant.b_k_major``), ``b`` is B's transpose, N x K. A TMA kernel with runtime arguments
    after M, N, K (scale pointers, a workspace) gets them per call (``call(a, b, *extra)``), and
    ``constexprs`` of the call (the scale kinds) besides the plan's.
    """

    def __init__(self, plan: Plan, a, b, out_dtype, constexprs: dict | None = None):
        import torch
        if interpreting() and getattr(plan.config, "CLUSTER", 1) > 1:  # the interpreter runs clusters of one CTA
            plan = Plan(plan.kernel, replace(plan.config, CLUSTER=1))
        self.plan = plan
        self.variant = variant = VARIANTS[plan.kernel]
        self.M, self.K = M, K = a.shape
        self.N = N = b.shape[0] if variant.b_k_major else b.shape[1]
        self.out_dtype = out_dtype
        self.call_constexprs = constexprs or {}
        self.device = a.device
        self.compiled: dict[str, _Compiled] = {}  # pipeline digest -> direct launch
        if variant.tma:
            split = variant.units(plan.config) > 1
            self.c_dtype = torch.float32 if split else out_dtype
            self.c_shape = (M, _padded_cols(N, self.c_dtype.itemsize))
            self.zero = split
            self.in_place = (tma_in_place(a), tma_in_place(b))
            self.strides = tuple(layout(x) if ok else (_padded_cols(x.shape[1], x.element_size()), 1)
                                 for x, ok in zip((a, b), self.in_place))
            self.blocks = tuple(tuple(blk) for blk in variant.descriptor_blocks(plan.config))
            self.templates = [None, None, None]  # the first host TensorDescriptor of each operand
            cluster = getattr(plan.config, "CLUSTER", 1)  # CTAs of a cluster sharing B: the grid counts CTAs
            sms = sm_count(a.device)
            self.grid = (variant.programs(M, N, K, plan.config, sms) if variant.programs
                         else ws_programs(M, N, plan.config.BM, plan.config.BN, variant.units(plan.config), sms,
                                          cluster), 1, 1)
            self.cluster = cluster_launch(cluster)
        else:
            self.c_dtype, self.c_shape, self.zero = out_dtype, (M, N), False
            self.in_place = (pointer_in_place(a), pointer_in_place(b))
            self.strides = tuple(layout(x) if ok else (x.shape[1], 1) for x, ok in zip((a, b), self.in_place))
            cfg = plan.config
            self.grid = (triton.cdiv(M, cfg.BLOCK_SIZE_M) * triton.cdiv(N, cfg.BLOCK_SIZE_N), 1, 1)
            self.pointer_args = [M, N, K, *self.strides[0], *self.strides[1], N, 1]
        self.pdl = not interpreting() and M * N * K <= PDL_MAX_WORK
        # C is returned as it is when it already is the result: N columns of out_dtype
        self.c_is_result = self.c_shape[1] == N and self.c_dtype == out_dtype

    def __call__(self, a, b, *extra):
        a, b, c = self.prepare(a, b)
        self.launch(a, b, c, *extra)
        return self.finish(c)

    def prepare(self, a, b):
        """The operands as the kernel reads them (copied where the Call says so) and a new C buffer."""
        import torch
        copy = _tma_copy if self.variant.tma else _pointer_copy
        if not self.in_place[0]:
            a = copy(a)
        if not self.in_place[1]:
            b = copy(b)
        c = (torch.zeros if self.zero else torch.empty)(self.c_shape, dtype=self.c_dtype, device=self.device)
        return a, b, c

    def finish(self, c):
        """The op's result from the kernel's C: the first N columns, contiguous, in the output dtype."""
        if self.c_is_result:
            return c
        return c[:, :self.N].to(self.out_dtype).contiguous()

    def launch(self, a, b, c, *extra) -> None:
        """Run the kernel on operands from :meth:`prepare` (and the op's ``extra`` arguments), directly when it
        can."""
        kernel = self.variant.kernel
        if interpreting() or compat.launch_hooks_active():
            args, consts = self._jit_args(a, b, c, *extra)
            kernel[self.grid](*args, **consts)
            return
        digest = compat.pipeline_digest(kernel)
        entry = self.compiled.get(digest)
        if entry is None:
            self._first_launch(digest, a, b, c, *extra)
            return
        if self.variant.tma:
            descriptors, host, metas = entry.descriptors, self._host_descriptor, entry.direct.descriptor_meta
            args = [*descriptors.args(0, a, host, metas[0]), *descriptors.args(1, b, host, metas[1]),
                    *descriptors.args(2, c, host, metas[2]), self.M, self.N, self.K, *extra, *entry.constexpr_values]
        else:
            args = [a, b, c, *self.pointer_args, *entry.constexpr_values]
        entry.direct(self.grid, compat.current_stream(self.device.index), args)

    def _host_descriptor(self, i: int, t):
        """A host TensorDescriptor of operand ``i`` over ``t``. Everything but the address is fixed by the
        Call, so after the first (validated) one of each operand, the next are copies with a new base."""
        template = self.templates[i]
        if template is None:
            from triton.tools.tensor_descriptor import TensorDescriptor
            strides = list(self.strides[i]) if i < 2 else [self.c_shape[1], 1]
            desc = TensorDescriptor(t, list(t.shape), strides, list(self.blocks[i]))
            self.templates[i] = template = object.__new__(TensorDescriptor)
            template.__dict__.update(desc.__dict__, base=None)  # the Call must not keep a tensor alive
            return desc
        desc = object.__new__(type(template))  # a copy without the dataclass's validation
        desc.__dict__.update(template.__dict__, base=t)
        return desc

    def _jit_args(self, a, b, c, *extra) -> tuple[list, dict]:
        """Positional arguments and keyword constexprs of the kernel, as ``kernel[grid](...)`` takes them."""
        consts = {**self.variant.constexprs(self.plan.config), **self.call_constexprs, "PDL": self.pdl,
                  "launch_pdl": self.pdl}
        if self.variant.tma:
            consts.update(self.cluster)
            return [*(self._host_descriptor(i, t) for i, t in enumerate((a, b, c))), self.M, self.N, self.K,
                    *extra], consts
        align = pipelined._stride_align(self.strides[0][0], self.strides[1][0], self.K, self.N)
        return [a, b, c, *self.pointer_args], {**consts, "STRIDE_ALIGN": align}

    def _first_launch(self, digest: str, a, b, c, *extra) -> None:
        """Launch through the JIT (compiling if needed) and keep what later direct launches need."""
        launched = jit_launch(self.variant.kernel, self.grid, *self._jit_args(a, b, c, *extra))
        if launched is not None:
            descriptors = DescriptorCache(3) if self.variant.tma else None
            self.compiled[digest] = _Compiled(*launched, descriptors)


def call_key(a, b, out_dtype) -> tuple:
    """What a :class:`Call` is specific to (besides its plan)."""
    return (a.shape, a.stride(), b.shape, b.stride(), a.dtype, out_dtype, a.device, a.data_ptr() % 16 == 0,
            b.data_ptr() % 16 == 0)


#: Every cache of calls in the ops layer is a :class:`tritium.kernels.launch.LaunchCache`, so that
#: :func:`clear_caches` reaches them all (the kernels' own launch caches too).
CallCache = LaunchCache


_calls = CallCache()


def call_for(plan: Plan, a, b, out_dtype, key: tuple | None = None, constexprs: dict | None = None) -> Call:
    """The cached :class:`Call` of ``plan`` on this layout of (a, b) (made on first use), with the call's
    ``constexprs`` (part of ``key`` when given)."""
    key = (plan, key or call_key(a, b, out_dtype))
    call = _calls.get(key)
    return call if call is not None else _calls.put(key, Call(plan, a, b, out_dtype, constexprs))


def clear_caches() -> None:
    """Forget every cached call, with its compiled launches and descriptors: :func:`call_for`'s,
    ``tritium.ops.matmul``'s and the kernels' own (tests; after freeing many tensors)."""
    clear_launch_caches()
