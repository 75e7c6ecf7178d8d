"""TLX TMA on the GPU (sm_90): descriptors from host, tl/tlx.make_tensor_descriptor, helpers and slots,
buffer layouts, TMA reductions, L2 hints, prefetches and async_store, against torch.

The kernels are those of tests/tlx/test_conformance_tma.py, which checks their codegen on the CPU.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import triton  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tlx"))
import test_conformance_tma as K  # noqa: E402

pytestmark = pytest.mark.gpu
M, N = 200, 64  # 200 rows: the last 64-row tile is partly out of bounds


@pytest.fixture(autouse=True)
def hopper():
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA: sm_90")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def _pair(dtype=torch.float16, rows=M, cols=N):
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device="cuda").to(dtype)
    return x, torch.zeros_like(x)


def _desc(t):
    return TensorDescriptor.from_tensor(t, [64, 64])


@pytest.mark.parametrize("helpers", [False, True])
def test_device_descriptors_copy(helpers):
    x, y = _pair()
    K._stock_descriptors[(triton.cdiv(M, 64), )](x, y, M, N, HELPERS=helpers)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


def test_descriptor_slots_copy_through_a_64b_buffer():
    x, y = _pair()
    K._slots[(triton.cdiv(M, 64), )](x, y, M, N)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


def test_descriptor_follows_a_64b_buffer_layout():
    x, y = _pair(cols=64)
    K._layout_64b[(1, )](x, y, M, 64, HOST=False)
    torch.testing.assert_close(y[:64], x[:64], atol=0, rtol=0)


def test_host_descriptor_through_a_helper():
    x, y = _pair(rows=128)
    K._host_desc_through_helper[(1, )](_desc(x), _desc(y))
    torch.testing.assert_close(y[:64], x[64:128], atol=0, rtol=0)


@pytest.mark.parametrize("kind", ["add", "min", "max", "and", "or", "xor"])
def test_store_reduce_int32(kind):
    torch.manual_seed(0)
    x = torch.randint(-1000, 1000, (64, 64), dtype=torch.int32, device="cuda")
    out = torch.randint(-1000, 1000, (64, 64), dtype=torch.int32, device="cuda")
    ref = {"add": torch.add, "min": torch.minimum, "max": torch.maximum, "and": torch.bitwise_and,
           "or": torch.bitwise_or, "xor": torch.bitwise_xor}[kind](out, x)
    K._reduce[(1, )](_desc(x), _desc(out), KIND=kind, DTYPE=K.tl.int32)
    torch.testing.assert_close(out, ref, atol=0, rtol=0)


def test_store_reduce_add_fp32():
    x, _ = _pair(torch.float32, 64, 64)
    out = torch.ones_like(x)
    K._reduce[(1, )](_desc(x), _desc(out), KIND="add", DTYPE=K.tl.float32)
    torch.testing.assert_close(out, x + 1)


@pytest.mark.parametrize("load,store,reduce", [("evict_first", "evict_last", ""), ("evict_last", "", "add")])
def test_l2_hints_keep_values(load, store, reduce):
    x, y = _pair(rows=64)
    y += 1
    want = x + y if reduce else x
    K._l2_hints[(1, )](x, y, 64, N, LOAD=load, STORE=store, REDUCE=reduce)
    torch.testing.assert_close(y, want)


@pytest.mark.parametrize("source", ["host", "tl", "slot"])
@pytest.mark.parametrize("policy", ["", "evict_last"])
def test_prefetch_then_load(source, policy):
    x, y = _pair()
    K._prefetch[(triton.cdiv(M, 64), )](_desc(x), x, y, M, N, SOURCE=source, POLICY=policy)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


def test_prefetch_in_a_partition():
    x, y = _pair()
    K._prefetch_ws[(triton.cdiv(M, 64), )](_desc(x), y, M, N)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


@pytest.mark.parametrize("host", [True, False])
def test_prefetch_tensormap(host):
    x, y = _pair(rows=64)
    K._prefetch_tensormap[(1, )](_desc(x), x, y, 64, N, HOST=host)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


def test_descriptors_made_outside_tasks():
    x, y = _pair()
    K._ws_stock_descriptors[(triton.cdiv(M, 64), )](x, y, M, N)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


@pytest.mark.parametrize("chunk,size", [(256, 256), (1024, 1024), (1024, 512)])
def test_async_store_copies_size_bytes(chunk, size):
    src = torch.randint(0, 256, (chunk, ), dtype=torch.uint8, device="cuda")
    dst = torch.zeros_like(src)
    K._bulk_roundtrip[(1, )](src, dst, CHUNK=chunk, SIZE=size, num_warps=1)
    torch.testing.assert_close(dst[:size], src[:size], atol=0, rtol=0)
    assert not dst[size:].any()


@pytest.mark.parametrize("dtype", [torch.int16, torch.float16, torch.int32])
def test_load_and_store_methods_of_slot_descriptors(dtype):
    x = torch.randint(-1000, 1000, (1000, ), device="cuda").to(dtype)
    y = torch.zeros_like(x)
    K._slot_load_store[(triton.cdiv(1000, 64), )](x, y, 1000, 64)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)
