"""TMA conformance with the TLX fork on the compile path (sm_90): descriptors from anywhere (kernel
arguments, ``tl``/``tlx.make_tensor_descriptor``, ``@triton.jit`` helpers, descriptor slots), their
shared layouts, TMA reductions, and the options stock Triton cannot lower. Interpreter numerics of
the same kernels: test_interpreter_tma.py."""
from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError

import tritium.tlx as tlx

SM90 = GPUTarget("cuda", 90, 32)
SIG = {"x": "*fp16", "y": "*fp16", "M": "i32", "N": "i32"}
#: A 2D TMA load in PTX (Triton 3.6 spells the destination shared::cluster, later ones shared::cta).
TMA_LOAD = re.compile(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes")


def compile_(fn, sig=SIG, constexprs=None, **options):
    sig = {**sig, **{k: "constexpr" for k in (constexprs or {})}}
    return triton.compile(ASTSource(fn, sig, constexprs or {}), target=SM90, options=options)


def compile_error(fn, sig=SIG, constexprs=None) -> str:
    with pytest.raises(Exception) as info:
        compile_(fn, sig, constexprs)
    return str(info.value)


@triton.jit
def _load_tile(desc, buf, bar, off_m, off_n):
    tlx.async_descriptor_load(desc, buf, [off_m, off_n], bar)


@triton.jit
def _make_desc(ptr, M, N):
    return tl.make_tensor_descriptor(ptr, shape=[M, N], strides=[N, 1], block_shape=[64, 64])


@triton.jit
def _stock_descriptors(x, y, M, N, HELPERS: tl.constexpr):
    """The fork's test_descriptor_load: descriptors from tl.make_tensor_descriptor, in the kernel or a helper."""
    if HELPERS:
        desc_in = _make_desc(x, M, N)
    else:
        desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    desc_out = tlx.make_tensor_descriptor(None, y, [M, N], [N, 1], [64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    off_m = tl.program_id(0) * 64
    if HELPERS:
        _load_tile(desc_in, buf, bar, off_m, 0)
    else:
        tlx.async_descriptor_load(desc_in, buf, [off_m, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(desc_out, buf, [off_m, 0])
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("helpers", [False, True], ids=["in-kernel", "in-helpers"])
def test_device_descriptors_from_tl_and_helpers(helpers):
    k = compile_(_stock_descriptors, constexprs={"HELPERS": helpers})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    # Both descriptors made on the device by stock tma_lowering; the carriers are gone.
    assert ttgir.count("ttng.tensormap_create") == 2 and "swizzle_mode = 3" in ttgir
    assert "tt.descriptor_store" not in ttgir and "tt.elementwise_inline_asm" not in ttgir
    assert ttgir.count("ttng.async_tma_copy_global_to_local") == 1
    assert ttgir.count("ttng.async_tma_copy_local_to_global") == 1
    assert TMA_LOAD.search(ptx) and "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "st.global" not in ptx  # no carrier store survived


@triton.jit
def _host_desc_through_helper(in_desc, out_desc):
    buf = tlx.local_alloc((64, 64), tl.float16, 2, layout=tlx.nv_mma_shared_layout_encoding(
        shape=[64, 64], order=[1, 0], elemType=tl.float16))
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 2 * 64 * 64 * 2)
    _load_tile(in_desc, buf[0], bar, 0, 0)
    _load_tile(in_desc, buf[1], bar, 64, 0)  # the same descriptor, twice: one layout
    tlx.barrier_wait(bar, 0)
    tlx.async_descriptor_store(out_desc, buf[1], [0, 0])
    tlx.async_descriptor_store_wait(0)


def test_host_descriptor_through_a_helper():
    sig = {"in_desc": "tensordesc<fp16[64, 64]>", "out_desc": "tensordesc<fp16[64, 64]>"}
    k = compile_(_host_desc_through_helper, sig)
    ttgir = k.asm["ttgir"]
    assert ttgir.count("ttng.async_tma_copy_global_to_local %in_desc") == 2
    assert k.metadata.tensordesc_meta[0]["swizzle"] == 3 and k.metadata.tensordesc_meta[1]["swizzle"] == 3


@triton.jit
def _layout_64b(x, y, M, N, HOST: tl.constexpr):
    """A buffer whose layout is not the default one: the descriptor must follow it."""
    buf = tlx.local_alloc((64, 64), tl.float16, 1, layout=tlx.NVMMASharedLayout(64, 16, 2))[0]
    bar = tlx.alloc_barriers(1)[0]
    desc = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    tlx.async_descriptor_load(desc, buf, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    tl.store(y + tl.arange(0, 64)[:, None] * N + tl.arange(0, 64)[None, :], tlx.local_load(buf))


def test_descriptor_takes_the_layout_of_its_buffer():
    ttgir = compile_(_layout_64b, constexprs={"HOST": False}).asm["ttgir"]
    assert "swizzle_mode = 2" in ttgir and "swizzle_mode = 3" not in ttgir
    assert re.search(r"ttng.async_tma_copy_global_to_local %\S+\[.*\] %\S+, %\S+, %\S+ : "
                     r"!tt.tensordesc<(tensor<)?64x64xf16, #shared\d*>", ttgir)


@triton.jit
def _two_layouts(x, M, N):
    a = tlx.local_alloc((64, 64), tl.float16, 1, layout=tlx.NVMMASharedLayout(64, 16, 2))[0]
    b = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    desc = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    tlx.async_descriptor_load(desc, a, [0, 0], bar)
    tlx.async_descriptor_load(desc, b, [0, 64], bar)


def test_one_descriptor_two_buffer_layouts_is_an_error():
    text = compile_error(_two_layouts, {"x": "*fp16", "M": "i32", "N": "i32"})
    assert "tlx.async_descriptor_load at " in text and "test_conformance_tma.py:" in text
    assert "another shared layout" in text and "swizzlingByteWidth = 64" in text


@triton.jit
def _reduce(in_desc, out_desc, KIND: tl.constexpr, DTYPE: tl.constexpr):
    buf = tlx.local_alloc((64, 64), DTYPE, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * DTYPE.primitive_bitwidth // 8)
    tlx.async_descriptor_load(in_desc, buf, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.async_descriptor_store(out_desc, buf, [0, 0], store_reduce=KIND)
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("kind,dtype", [("add", "fp32"), ("add", "fp16"), ("min", "i32"), ("max", "i32"),
                                        ("and", "i32"), ("or", "i32"), ("xor", "i32")])
def test_store_reduce_is_a_tma_reduction(kind, dtype):
    sig = {"in_desc": f"tensordesc<{dtype}[64, 64]>", "out_desc": f"tensordesc<{dtype}[64, 64]>"}
    k = compile_(_reduce, sig, {"KIND": kind, "DTYPE": {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32}[dtype]})
    assert f"ttng.async_tma_reduce {kind}, %out_desc" in k.asm["ttgir"]
    assert re.search(rf"cp\.reduce\.async\.bulk\.tensor\.2d\.global\.shared::cta\.{kind}\.", k.asm["ptx"])


@triton.jit
def _options(x, M, N, OPTION: tl.constexpr):
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    desc = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    if OPTION == "cache":
        tlx.async_descriptor_load(desc, buf, [0, 0], bar, cache_modifier=".cg")
    elif OPTION == "multicast":
        tlx.async_descriptor_load(desc, buf, [0, 0], bar, multicast_targets=[0, 1])
    elif OPTION == "bad_policy":
        tlx.async_descriptor_store(desc, buf, [0, 0], eviction_policy="evict_sometimes")
    elif OPTION == "bad_reduce":
        tlx.async_descriptor_store(desc, buf, [0, 0], store_reduce="mul")
    else:
        tlx.async_descriptor_load(desc, buf, [0, 0], bar, eviction_policy="")


@pytest.mark.parametrize("option,message", [
    ("cache", "async_descriptor_load: cache_modifier='.cg' has no PTX form on a TMA load"),
    ("multicast", "async_descriptor_load: multicast_targets names CTAs of a cluster, but the kernel runs as clusters of one CTA"),
    ("bad_policy", "async_descriptor_store: eviction_policy must be one of ['', 'evict_first', 'evict_last']"),
    ("bad_reduce", "async_descriptor_store: store_reduce must be one of"),
])
def test_options_stock_triton_cannot_lower_raise_at_the_kernel_line(option, message):
    text = compile_error(_options, {"x": "*fp16", "M": "i32", "N": "i32"}, {"OPTION": option})
    assert message in text and "tlx.async_descriptor_" in text


@triton.jit
def _l2_hints(x, y, M, N, LOAD: tl.constexpr, STORE: tl.constexpr, REDUCE: tl.constexpr):
    """The fork's test_descriptor_load/store_l2_cache_hint."""
    desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    tlx.async_descriptor_load(desc_in, buf, [0, 0], bar, eviction_policy=LOAD)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(desc_out, buf, [0, 0], eviction_policy=STORE, store_reduce=REDUCE)
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("load,store,reduce", [("evict_first", "", ""), ("evict_last", "", ""), ("", "evict_first", ""),
                                               ("", "evict_last", "add"), ("", "", ""), ("", "", "add")])
def test_eviction_policy_becomes_an_l2_cache_hint(load, store, reduce):
    k = compile_(_l2_hints, constexprs={"LOAD": load, "STORE": store, "REDUCE": reduce})
    ptx = k.asm["ptx"]
    loads = [l for l in ptx.splitlines() if "cp.async.bulk.tensor" in l and "mbarrier::complete_tx" in l]
    stores = [l for l in ptx.splitlines() if ".global.shared::cta" in l and "bulk.tensor" in l]
    assert len(loads) == 1 and len(stores) == 1
    for lines, policy in ((loads, load), (stores, store)):
        hinted = policy in ("evict_first", "evict_last")
        assert ("L2::cache_hint" in lines[0]) == hinted
        assert (f"createpolicy.fractional.L2::{policy}.b64" in ptx) == hinted
    if not load and not store:
        assert "createpolicy" not in ptx and "L2::cache_hint" not in ptx
    assert ("cp.reduce.async.bulk.tensor" in stores[0]) == bool(reduce)


@triton.jit
def _prefetch(in_desc, x, y, M, N, SOURCE: tl.constexpr, POLICY: tl.constexpr):
    """The fork's test_descriptor_load with USE_PREFETCH, for each kind of descriptor."""
    if SOURCE == "host":
        desc_in = in_desc
    elif SOURCE == "tl":
        desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    else:
        ptrs = tlx.allocate_tensor_descriptor(num=1)
        tlx.make_tensor_descriptor(ptrs[0], x, [M, N], [N, 1], [64, 64])
        desc_in = tlx.reinterpret_tensor_descriptor(ptrs[0], [64, 64], tl.float16)
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    off_m = tl.program_id(0) * 64
    tlx.async_descriptor_prefetch_tensor(desc_in, [off_m, 0], eviction_policy=POLICY)
    tlx.async_descriptor_load(desc_in, buf, [off_m, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(desc_out, buf, [off_m, 0])
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("source", ["host", "tl", "slot"])
@pytest.mark.parametrize("policy", ["", "evict_last"])
def test_descriptor_prefetch(source, policy):
    sig = {"in_desc": "tensordesc<fp16[64, 64]>", **SIG}
    k = compile_(_prefetch, sig, {"SOURCE": source, "POLICY": policy})
    ptx = k.asm["ptx"]
    prefetches = [l for l in ptx.splitlines() if "cp.async.bulk.prefetch.tensor" in l]
    assert len(prefetches) == 1 and "cp.async.bulk.prefetch.tensor.2d.L2.global.tile" in prefetches[0]
    assert ("L2::cache_hint" in prefetches[0]) == bool(policy)
    assert "elect.sync" in ptx and TMA_LOAD.search(ptx)
    if source == "host":  # the tensor map is the kernel parameter
        assert re.search(r"cp\.async\.bulk\.prefetch\.tensor\.2d\.L2\.global\.tile\S* \[%rd\d+, ", prefetches[0])


@triton.jit
def _prefetch_ws(in_desc, y, M, N):
    """The fork's test_descriptor_load_prefetch_ws, with a host descriptor."""
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    full = tlx.alloc_barriers(1)[0]
    empty = tlx.alloc_barriers(1)[0]
    off_m = tl.program_id(0) * 64
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_arrive(empty)
            tlx.barrier_wait(full, 0)
            tlx.fence_async_shared()
            tlx.async_descriptor_store(desc_out, buf, [off_m, 0])
            tlx.async_descriptor_store_wait(0)
        with tlx.async_task(num_warps=1):
            tlx.async_descriptor_prefetch_tensor(in_desc, [off_m, 0])
            tlx.barrier_wait(empty, 0)
            tlx.barrier_expect_bytes(full, 64 * 64 * 2)
            tlx.async_descriptor_load(in_desc, buf, [off_m, 0], full)


def test_descriptor_prefetch_in_a_partition():
    k = compile_(_prefetch_ws, {"in_desc": "tensordesc<fp16[64, 64]>", "y": "*fp16", "M": "i32", "N": "i32"})
    assert "ttg.warp_specialize" in k.asm["ttgir"]
    assert k.asm["ptx"].count("cp.async.bulk.prefetch.tensor.2d.L2.global.tile") == 1


@triton.jit
def _bulk_roundtrip(src_ptr, dst_ptr, CHUNK: tl.constexpr, SIZE: tl.constexpr):
    """The fork's test_async_bulk_copy_roundtrip, with the load done by TMA-free local_store."""
    buf = tlx.local_alloc((CHUNK, ), tl.uint8, num=1)[0]
    tlx.local_store(buf, tl.load(src_ptr + tl.arange(0, CHUNK)))
    tlx.fence("async_shared")
    tlx.async_store(dst_ptr, buf, SIZE)
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("chunk", [256, 1024])
def test_async_store_is_a_bulk_copy(chunk):
    k = compile_(_bulk_roundtrip, {"src_ptr": "*u8", "dst_ptr": "*u8"}, {"CHUNK": chunk, "SIZE": chunk},
                 num_warps=1)
    ptx = k.asm["ptx"]
    copies = [l for l in ptx.splitlines() if "cp.async.bulk." in l and "shared::cta" in l]
    assert len(copies) == 1 and "cp.async.bulk.global.shared::cta.bulk_group [" in copies[0]
    assert "bulk.tensor" not in ptx and "cp.async.bulk.commit_group" in ptx
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)


@triton.jit
def _bulk_misuse(dst_ptr, CASE: tl.constexpr):
    buf = tlx.local_alloc((64, ), tl.uint8, num=1)[0]
    if CASE == "size":
        tlx.async_store(dst_ptr, buf, 24)
    else:
        tlx.async_store(dst_ptr + tl.arange(0, 16), buf, 16)


@pytest.mark.parametrize("case,message", [("size", "tlx.async_store: size=24 must be a positive multiple of 16"),
                                          ("ptr", "tlx.async_store: dst_global_ptr must be a scalar pointer")])
def test_async_store_misuse(case, message):
    assert message in compile_error(_bulk_misuse, {"dst_ptr": "*u8"}, {"CASE": case})


def test_default_options_compile():
    ttgir = compile_(_options, {"x": "*fp16", "M": "i32", "N": "i32"}, {"OPTION": "none"}).asm["ttgir"]
    assert "ttng.async_tma_copy_global_to_local" in ttgir


@triton.jit
def _slots(x, y, M, N):
    """The fork's test_make_tensor_descriptor_with_desc_ptr: descriptors written to slots, read back."""
    desc_ptrs = tlx.allocate_tensor_descriptor(num=2)
    tlx.make_tensor_descriptor(desc_ptr=desc_ptrs[0], base=x, shape=[M, N], strides=[N, tl.constexpr(1)],
                               block_shape=[64, 64])
    tlx.make_tensor_descriptor(desc_ptr=desc_ptrs[1], base=y, shape=[M, N], strides=[N, tl.constexpr(1)],
                               block_shape=[64, 64])
    desc_in = tlx.reinterpret_tensor_descriptor(desc_ptr=desc_ptrs[0], block_shape=[64, 64], dtype=tl.float16)
    desc_out = tlx.reinterpret_tensor_descriptor(desc_ptr=desc_ptrs[1], block_shape=[64, 64], dtype=tl.float16)
    buf = tlx.local_alloc((64, 64), tl.float16, 1, layout=tlx.NVMMASharedLayout(64, 16, 2))[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    tlx.async_descriptor_load(desc_in, buf, [tl.program_id(0) * 64, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(desc_out, buf, [tl.program_id(0) * 64, 0])
    tlx.async_descriptor_store_wait(0)


def test_descriptor_slots():
    k = compile_(_slots)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttg.global_scratch_alloc {alignment = 128 : i32, nbytes = 256 : i32}") == 1
    assert ttgir.count("ttng.tensormap_create") == 2 and ttgir.count("ttng.tensormap_fenceproxy_acquire") == 2
    assert ttgir.count("ttng.reinterpret_tensor_descriptor") == 2
    # The slot written with the swizzle its readers' buffer has (64B: mode 2), box 32 x fp16 wide.
    assert ttgir.count("swizzle_mode = 2") == 2 and "swizzle_mode = 3" not in ttgir
    assert "tensormap.replace" in ptx and "fence.proxy.tensormap" in ptx
    assert TMA_LOAD.search(ptx)
    assert k.metadata.global_scratch_size >= 256


@triton.jit
def _slot_misuse(x, M, N, CASE: tl.constexpr):
    if CASE == "ptr":
        tlx.reinterpret_tensor_descriptor(desc_ptr=x, block_shape=[64, 64], dtype=tl.float16)
    elif CASE == "index":
        desc_ptrs = tlx.allocate_tensor_descriptor(num=2)
        tlx.reinterpret_tensor_descriptor(desc_ptr=desc_ptrs[2], block_shape=[64, 64], dtype=tl.float16)
    elif CASE == "num":
        tlx.allocate_tensor_descriptor(num=M)
    else:
        tlx.make_tensor_descriptor(x, x, [M, N], [N, 1], [64, 64])


@pytest.mark.parametrize("case,message", [
    ("ptr", "tlx.reinterpret_tensor_descriptor: desc_ptr must come from tlx.allocate_tensor_descriptor"),
    ("index", "slot 2 out of range for 2 descriptors"),
    ("num", "tlx.allocate_tensor_descriptor: num must be a compile-time int"),
    ("base", "tlx.make_tensor_descriptor: desc_ptr must come from tlx.allocate_tensor_descriptor"),
])
def test_slot_misuse_is_reported_at_the_kernel_line(case, message):
    with pytest.raises(CompilationError) as info:
        compile_(_slot_misuse, {"x": "*fp16", "M": "i32", "N": "i32"}, {"CASE": case})
    assert message in str(info.value) and "_slot_misuse" not in str(info.value).splitlines()[-1]


@triton.jit
def _ws_stock_descriptors(x, y, M, N):
    """The fork's test_descriptor_load_prefetch_ws (without the prefetch): descriptors made before the tasks."""
    desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    full = tlx.alloc_barriers(1)[0]
    empty = tlx.alloc_barriers(1)[0]
    off_m = tl.program_id(0) * 64
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_arrive(empty)
            tlx.barrier_wait(full, 0)
            tlx.fence_async_shared()
            tlx.async_descriptor_store(desc_out, buf, [off_m, 0])
            tlx.async_descriptor_store_wait(0)
        with tlx.async_task(num_warps=1):
            tlx.barrier_wait(empty, 0)
            tlx.barrier_expect_bytes(full, 64 * 64 * 2)
            tlx.async_descriptor_load(desc_in, buf, [off_m, 0], full)


def test_descriptors_made_outside_tasks_reach_the_partitions():
    k = compile_(_ws_stock_descriptors)
    ttgir = k.asm["ttgir"]
    assert "ttg.warp_specialize" in ttgir and ttgir.count("ttng.tensormap_create") == 2
    part = ttgir[ttgir.index("partition0"):]
    assert "ttng.async_tma_copy_global_to_local" in part
    assert TMA_LOAD.search(k.asm["ptx"])


@triton.jit
def _prefetch_tensormap(in_desc, x, y, M, N, HOST: tl.constexpr):
    """The fork's test_prefetch_tensormap (host and device descriptors)."""
    if HOST:
        desc_in = in_desc
    else:
        desc_in = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    desc_out = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    tlx.prefetch(desc_in, tensormap=True)
    tlx.prefetch(desc_out, tensormap=True)
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, 64 * 64 * 2)
    tlx.async_descriptor_load(desc_in, buf, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.fence("async_shared")
    tlx.async_descriptor_store(desc_out, buf, [0, 0])
    tlx.async_descriptor_store_wait(0)


@pytest.mark.parametrize("host", [True, False], ids=["host", "device"])
def test_prefetch_tensormap(host):
    k = compile_(_prefetch_tensormap, {"in_desc": "tensordesc<fp16[64, 64]>", **SIG}, {"HOST": host})
    assert k.asm["ptx"].count("prefetch.tensormap [") == 2


@triton.jit
def _amd(x, M, N, OP: tl.constexpr):
    desc = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[64, 64])
    buf = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    if OP == "prefetch":
        tlx.async_descriptor_prefetch_tensor(desc, [0, 0])
    elif OP == "store":
        tlx.async_store(x, buf, 64)
    else:
        tlx.allocate_tensor_descriptor(1)


@pytest.mark.parametrize("op,name", [("prefetch", "async_descriptor_prefetch_tensor"), ("store", "async_store"),
                                     ("slots", "allocate_tensor_descriptor")])
def test_amd_targets_have_no_tma(op, name):
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(_amd, {"x": "*fp16", "M": "i32", "N": "i32", "OP": "constexpr"}, {"OP": op}),
                       target=GPUTarget("hip", "gfx950", 64))
    assert f"tlx.{name} needs NVIDIA sm_90 or newer" in str(info.value)


@triton.jit
def _slot_load_store(x, y, SIZE, BLOCK: tl.constexpr):
    """The fork's test_make_tensor_descriptor: desc.load / desc.store on descriptors read from slots."""
    ptrs = tlx.allocate_tensor_descriptor(num=2)
    tlx.make_tensor_descriptor(desc_ptr=ptrs[0], base=x, shape=[SIZE], strides=[tl.constexpr(1)], block_shape=[BLOCK])
    tlx.make_tensor_descriptor(desc_ptr=ptrs[1], base=y, shape=[SIZE], strides=[tl.constexpr(1)], block_shape=[BLOCK])
    desc_in = tlx.reinterpret_tensor_descriptor(desc_ptr=ptrs[0], block_shape=[BLOCK], dtype=tlx.dtype_of(x))
    desc_out = tlx.reinterpret_tensor_descriptor(desc_ptr=ptrs[1], block_shape=[BLOCK], dtype=tlx.dtype_of(y))
    offset = tl.program_id(0) * BLOCK
    desc_out.store([offset], desc_in.load([offset]) + 1)


def test_load_and_store_methods_of_a_slot_descriptor_are_tma_copies():
    ptx = compile_(_slot_load_store, {"x": "*i16", "y": "*i16", "SIZE": "i32"}, {"BLOCK": 64}).asm["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.1d\.shared::(cta|cluster)\.global\.mbarrier", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.1d\.global\.shared::cta", ptx) and "fence.proxy.async" in ptx


@pytest.mark.parametrize("dtype,code", [("i16", 1), ("i32", 3), ("u32", 2), ("i64", 5), ("fp16", 6), ("fp32", 7)])
def test_device_descriptors_of_integers_get_their_tensor_map_type(dtype, code):
    """Integer descriptors made from a TLX dtype print as si16/ui32...; each must still map to its
    CUtensorMapDataType, or the copy moves the wrong number of bytes (and its barrier never completes)."""
    ptx = compile_(_slot_load_store, {"x": f"*{dtype}", "y": f"*{dtype}", "SIZE": "i32"}, {"BLOCK": 64}).asm["ptx"]
    assert set(re.findall(r"tensormap\.replace\.tile\.elemtype\.\S+ \[[^]]+\], 0x(\w+);", ptx)) == {f"{code:x}"}
