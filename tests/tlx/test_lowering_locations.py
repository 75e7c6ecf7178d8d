"""Source locations survive the TLX lowering: each op built in place of a placeholder keeps the placeholder's
location, so a TLX op's TTGIR (and the PTX ``.loc`` after it) points at the kernel line that called it."""
from __future__ import annotations

import inspect
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritium.tlx as tlx
from tritium.tlx.ttgir_text import source_location

SM90 = GPUTarget("cuda", 90, 32)


@triton.jit
def located_kernel(out_ptr, BLOCK: tl.constexpr):
    bars = tlx.alloc_barriers(num_barriers=2, arrive_count=1)  # line: alloc_barriers
    bar = tlx.local_view(bars, 1)  # line: local_view
    buf = tlx.local_alloc((BLOCK, ), tl.float32, 2)  # line: local_alloc
    tlx.barrier_arrive(bar)  # line: barrier_arrive
    tlx.barrier_wait(bar, 0)  # line: barrier_wait
    tlx.fence_async_shared()  # line: fence_async_shared
    tlx.local_store(tlx.local_view(buf, 0), tl.zeros((BLOCK, ), tl.float32))
    tl.store(out_ptr + tl.arange(0, BLOCK), tlx.local_load(tlx.local_view(buf, 0)))


def _line_of(tag: str) -> int:
    lines, start = inspect.getsourcelines(located_kernel.fn)
    return start + next(i for i, line in enumerate(lines) if line.rstrip().endswith(f"# line: {tag}"))


#: TTGIR op -> the TLX call whose line it must carry.
EXPECTED = {"ttng.init_barrier": "alloc_barriers", "ttg.local_dealloc": "alloc_barriers",
            "ttng.arrive_barrier": "barrier_arrive", "ttng.wait_barrier": "barrier_wait",
            "ttng.fence_async_shared": "fence_async_shared"}


@pytest.mark.parametrize("op", sorted(EXPECTED))
def test_a_tlx_op_keeps_its_kernel_line(op):
    k = triton.compile(ASTSource(located_kernel, {"out_ptr": "*fp32"}, {"BLOCK": 128}), target=SM90,
                       options={"num_warps": 4})
    ttgir = k.asm["ttgir"]
    found = [line for line in ttgir.splitlines() if re.match(rf"^\s*(?:%\S+ = )?{re.escape(op)}\b", line)]
    assert found, f"{op} is not in the TTGIR"
    loc = re.search(r" loc\(.*\)$", found[0]).group(0)
    assert source_location(ttgir, loc) == f"{located_kernel.fn.__code__.co_filename}:{_line_of(EXPECTED[op])}"
