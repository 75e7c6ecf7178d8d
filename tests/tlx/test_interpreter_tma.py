"""Interpreter numerics of the fork's TMA usage (test_conformance_tma.py compiles the same patterns):
descriptors from tl/tlx.make_tensor_descriptor and helpers, descriptor slots, TMA reductions."""
import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from interp_shim import require_interpret_mode, tlx
from test_conformance_tma import _slot_load_store  # the kernel whose sm_90 code that file checks

require_interpret_mode()


@triton.jit
def _load_tile(desc, buf, bar, off_m, off_n):
    tlx.async_descriptor_load(desc, buf, [off_m, off_n], bar)


@triton.jit
def _make_desc(ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])


@triton.jit
def _copy(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr, MODE: tl.constexpr):
    if MODE == "slots":
        ptrs = tlx.allocate_tensor_descriptor(num=2)
        tlx.make_tensor_descriptor(desc_ptr=ptrs[0], base=x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        tlx.make_tensor_descriptor(desc_ptr=ptrs[1], base=y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        desc_in = tlx.reinterpret_tensor_descriptor(desc_ptr=ptrs[0], block_shape=[BM, BN], dtype=tl.float16)
        desc_out = tlx.reinterpret_tensor_descriptor(desc_ptr=ptrs[1], block_shape=[BM, BN], dtype=tl.float16)
    elif MODE == "helpers":
        desc_in = _make_desc(x, M, N, BM, BN)
        desc_out = tlx.make_tensor_descriptor(None, y, [M, N], [N, 1], [BM, BN])
    else:
        desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, BM * BN * 2)
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    _load_tile(desc_in, buf, bar, off_m, off_n)
    tlx.barrier_wait(bar, 0)
    tlx.async_descriptor_store(desc_out, buf, [off_m, off_n])
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("mode", ["tl", "helpers", "slots"])
def test_device_descriptors_copy_ragged_tensors(mode):
    M, N, BM, BN = 40, 24, 16, 16
    x = torch.randn(M, N, dtype=torch.float16)
    y = torch.zeros_like(x)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    _copy[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, y, M, N, BM, BN, mode)
    torch.testing.assert_close(y, x)


@triton.jit
def _reduce(in_desc, out_desc, KIND: tl.constexpr):
    buf = tlx.local_alloc((16, 16), tl.int32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 16 * 16 * 4)
    tlx.async_descriptor_load(in_desc, buf, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.async_descriptor_store(out_desc, buf, [0, 0], store_reduce=KIND)
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("kind,ref", [("add", torch.add), ("min", torch.minimum), ("max", torch.maximum),
                                      ("and", torch.bitwise_and), ("or", torch.bitwise_or),
                                      ("xor", torch.bitwise_xor)])
def test_store_reduce_kinds(kind, ref):
    x = torch.randint(-1000, 1000, (16, 16), dtype=torch.int32)
    out = torch.randint(-1000, 1000, (16, 16), dtype=torch.int32)
    want = ref(out, x)
    _reduce[(1, )](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(out, [16, 16]), kind)
    torch.testing.assert_close(out, want)


@triton.jit
def _unwritten_slot(x):
    ptrs = tlx.allocate_tensor_descriptor(num=1)
    tlx.reinterpret_tensor_descriptor(desc_ptr=ptrs[0], block_shape=[16, 16], dtype=tl.float16)


def test_reading_an_unwritten_slot_is_an_error():
    with pytest.raises(Exception, match="descriptor slot 0 was never written"):
        _unwritten_slot[(1, )](torch.zeros(16, 16, dtype=torch.float16))


@triton.jit
def _hinted_copy(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """The fork's L2-hint and prefetch tests: hints change no value."""
    desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    tlx.async_descriptor_prefetch_tensor(desc_in, [off_m, off_n], eviction_policy="evict_last")
    tlx.barrier_expect_bytes(bar, BM * BN * 2)
    tlx.async_descriptor_load(desc_in, buf, [off_m, off_n], bar, eviction_policy="evict_first")
    tlx.barrier_wait(bar, 0)
    tlx.async_descriptor_store(desc_out, buf, [off_m, off_n], eviction_policy="evict_last")
    tlx.async_descriptor_store_wait(0)


def test_prefetch_and_l2_hints_copy_exactly():
    M, N = 48, 40
    x = torch.randn(M, N, dtype=torch.float16)
    y = torch.zeros_like(x)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    _hinted_copy[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, y, M, N, 16, 16)
    torch.testing.assert_close(y, x)


@triton.jit
def _bulk_roundtrip(src_ptr, dst_ptr, CHUNK: tl.constexpr, SIZE: tl.constexpr):
    buf = tlx.local_alloc((CHUNK, ), tl.uint8, num=1)[0]
    tlx.local_store(buf, tl.load(src_ptr + tl.arange(0, CHUNK)))
    tlx.fence("async_shared")
    tlx.async_store(dst_ptr, buf, SIZE)
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("chunk,size", [(256, 256), (1024, 1024), (256, 128)])
def test_async_store_copies_size_bytes(chunk, size):
    src = torch.randint(0, 256, (chunk, ), dtype=torch.uint8)
    dst = torch.zeros(chunk, dtype=torch.uint8)
    _bulk_roundtrip[(1, )](src, dst, chunk, size)
    torch.testing.assert_close(dst[:size], src[:size])
    assert not dst[size:].any()


def test_async_store_size_must_be_a_multiple_of_16():
    with pytest.raises(Exception, match="size=24 must be a positive multiple of 16"):
        _bulk_roundtrip[(1, )](torch.zeros(64, dtype=torch.uint8), torch.zeros(64, dtype=torch.uint8), 64, 24)


def test_load_and_store_methods_of_a_slot_descriptor():
    x = torch.arange(200, dtype=torch.int16)
    y = torch.zeros_like(x)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    _slot_load_store[(triton.cdiv(200, 64), )](x, y, 200, 64)
    assert torch.equal(y, x + 1)
