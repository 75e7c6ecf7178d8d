"""One kernel per TLX misuse case of test_op_checks.py; each takes ``x_ptr`` (fp32, 4096 elements).

Triton needs kernels in a real source file, and the interpreted half of the test imports this module
in a process started with TRITON_INTERPRET=1, so the kernels live here rather than in the test.
"""
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def _tile(x_ptr, R: tl.constexpr, C: tl.constexpr):
    return tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])


# -- shared-memory buffers (tlx/mem.py) --------------------------------------------------------
@triton.jit
def alloc_zero_dim(x_ptr):
    tlx.local_alloc((16, 0), tl.float32, 1)


@triton.jit
def alloc_pointer_dtype(x_ptr):
    tlx.local_alloc((16, ), x_ptr.dtype, 1)


@triton.jit
def alloc_zero_buffers(x_ptr):
    tlx.local_alloc((16, 16), tl.float32, 0)


@triton.jit
def alloc_bad_storage(x_ptr):
    tlx.local_alloc((16, 16), tl.float32, 1, storage="gmem")


@triton.jit
def alloc_reuse_too_small(x_ptr):
    small = tlx.local_alloc((16, 16), tl.float16, 1)
    tlx.local_alloc((16, 16), tl.float32, 1, reuse=small)


@triton.jit
def view_index_out_of_range(x_ptr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.local_view(bufs, 2)


@triton.jit
def view_float_index(x_ptr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.local_view(bufs, 1.5)


@triton.jit
def view_of_a_tensor(x_ptr):
    tlx.local_view(tl.load(x_ptr + tl.arange(0, 16)), 0)


@triton.jit
def load_multi_buffer(x_ptr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.local_load(bufs)


@triton.jit
def load_relaxed_not_bool(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_load(buf, relaxed=1)


@triton.jit
def load_from_barrier(x_ptr):
    bars = tlx.alloc_barriers(2)
    tlx.local_load(bars[0])


@triton.jit
def store_multi_buffer(x_ptr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.local_store(bufs, _tile(x_ptr, 16, 16))


@triton.jit
def store_wrong_shape(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + tl.arange(0, 16)))


@triton.jit
def store_wrong_dtype(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float16, 1)[0]
    tlx.local_store(buf, _tile(x_ptr, 16, 16))


@triton.jit
def slice_wrong_rank(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_slice(buf, [0], [8])


@triton.jit
def slice_outside(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_slice(buf, [8, 0], [16, 16])


@triton.jit
def trans_bad_dims(x_ptr):
    buf = tlx.local_alloc((16, 32), tl.float32, 1)[0]
    tlx.local_trans(buf, (0, 0))


@triton.jit
def reshape_wrong_size(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_reshape(buf, (16, 8))


@triton.jit
def reinterpret_wrong_size(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_reinterpret(buf, tl.float16)


@triton.jit
def reinterpret_pointer_dtype(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_reinterpret(buf, x_ptr.dtype)


@triton.jit
def gather_float_indices(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_gather(buf, _tile(x_ptr, 16, 16), 0)


@triton.jit
def gather_bad_axis(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_gather(buf, tl.zeros((16, 16), tl.int32), 2)


@triton.jit
def gather_wrong_shape(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_gather(buf, tl.zeros((16, 8), tl.int32), 0)


@triton.jit
def scatter_wrong_src(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_scatter(buf, tl.zeros((16, 16), tl.float16), tl.zeros((16, 16), tl.int32), 0)


@triton.jit
def zeros_bad_shape(x_ptr):
    tlx.zeros((16, -1), tl.float32)


@triton.jit
def zeros_bad_dtype(x_ptr):
    tlx.zeros((16, 16), x_ptr.dtype)


@triton.jit
def require_layout_of_a_buffer(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.require_layout(buf, tlx.swizzled_shared_layout_encoding.make_default(2))


@triton.jit
def require_layout_pin_not_bool(x_ptr):
    tlx.require_layout(_tile(x_ptr, 16, 16), None, pin=2)


@triton.jit
def release_layout_of_a_scalar(x_ptr):
    tlx.release_layout(tl.load(x_ptr))


@triton.jit
def subslice_tensor_memory(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.subslice(buf, 0, 8)


@triton.jit
def same_layout_of_a_tensor(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.assert_same_layout(_tile(x_ptr, 16, 16), buf)


@triton.jit
def alias_spec_in_tensor_memory(x_ptr):
    tlx.storage_alias_spec(storage=tlx.storage_kind.tmem)


# -- mbarriers and named barriers (tlx/barriers.py) ---------------------------------------------
@triton.jit
def barriers_zero(x_ptr):
    tlx.alloc_barriers(0)


@triton.jit
def barriers_zero_arrivals(x_ptr):
    tlx.alloc_barriers(2, arrive_count=0)


@triton.jit
def expect_bytes_on_a_buffer(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.barrier_expect_bytes(buf, 1024)


@triton.jit
def expect_negative_bytes(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, -4)


@triton.jit
def wait_on_barrier_array(x_ptr):
    bars = tlx.alloc_barriers(2)
    tlx.barrier_wait(bars, 0)


@triton.jit
def wait_float_phase(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_wait(bar, tl.load(x_ptr))


@triton.jit
def arrive_zero_times(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_arrive(bar, 0)


@triton.jit
def arrive_on_another_cta(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_arrive(bar, 1, remote_cta_rank=1)


@triton.jit
def wait_on_remote_view(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_wait(tlx.remote_view(bar, 0), 0)


@triton.jit
def remote_view_of_another_cta(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.remote_view(bar, 2)


@triton.jit
def warp_barrier_zero_warps(x_ptr):
    tlx.alloc_warp_barrier(1, num_warps=0)


@triton.jit
def named_barrier_16(x_ptr):
    tlx.named_barrier_wait(16, 128)


@triton.jit
def named_barrier_odd_count(x_ptr):
    tlx.named_barrier_arrive(1, 48)


# -- async copies (tlx/async_copy.py) -----------------------------------------------------------
@triton.jit
def async_load_wrong_shape(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.async_load(x_ptr + tl.arange(0, 16), buf)


@triton.jit
def async_load_wrong_dtype(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float16, 1)[0]
    tlx.async_load(x_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], buf)


@triton.jit
def async_load_multi_buffer(x_ptr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 2)
    tlx.async_load(x_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], bufs)


@triton.jit
def async_load_size_without_bulk(x_ptr):
    buf = tlx.local_alloc((256, ), tl.float32, 1)[0]
    tlx.async_load(x_ptr + tl.arange(0, 256), buf, bulk_size=512)


@triton.jit
def async_load_other_without_mask(x_ptr):
    buf = tlx.local_alloc((256, ), tl.float32, 1)[0]
    tlx.async_load(x_ptr + tl.arange(0, 256), buf, other=1.0)


@triton.jit
def bulk_load_2d(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_load(x_ptr, buf, bulk=True, barrier=bar)


@triton.jit
def wait_group_negative(x_ptr):
    tlx.async_load_wait_group(-1)


@triton.jit
def commit_group_not_tokens(x_ptr):
    tlx.async_load_commit_group(tokens=[1])


@triton.jit
def prefetch_level_l3(x_ptr):
    tlx.prefetch(x_ptr + tl.arange(0, 16), level="L3")


@triton.jit
def prefetch_int_mask(x_ptr):
    tlx.prefetch(x_ptr + tl.arange(0, 16), mask=tl.arange(0, 16))


# -- TMA (tlx/tma.py) ---------------------------------------------------------------------------
@triton.jit
def _desc(x_ptr):
    return tl.make_tensor_descriptor(x_ptr, shape=[64, 64], strides=[64, 1], block_shape=[16, 16])


@triton.jit
def tma_load_block_mismatch(x_ptr):
    buf = tlx.local_alloc((16, 32), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), buf, [0, 0], bar)


@triton.jit
def tma_load_cache_modifier(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), buf, [0, 0], bar, cache_modifier=".cg")


@triton.jit
def tma_load_bad_eviction(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), buf, [0, 0], bar, eviction_policy="evict_never")


@triton.jit
def tma_load_multicast(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), buf, [0, 0], bar, multicast_targets=[1])


@triton.jit
def tma_load_into_barrier(x_ptr):
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), bar, [0, 0], bar)


@triton.jit
def tma_load_offsets_rank(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_descriptor_load(_desc(x_ptr), buf, [0], bar)


@triton.jit
def tma_store_bad_reduce(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.async_descriptor_store(_desc(x_ptr), buf, [0, 0], store_reduce="mul")


@triton.jit
def tma_store_wait_negative(x_ptr):
    tlx.async_descriptor_store_wait(-1)


@triton.jit
def tma_prefetch_not_a_descriptor(x_ptr):
    tlx.async_descriptor_prefetch_tensor(x_ptr, [0, 0])


@triton.jit
def bulk_store_odd_size(x_ptr):
    buf = tlx.local_alloc((64, ), tl.float32, 1)[0]
    tlx.async_store(x_ptr, buf, 24)


@triton.jit
def descriptors_zero(x_ptr):
    tlx.allocate_tensor_descriptor(0)


@triton.jit
def descriptor_bad_padding(x_ptr):
    tlx.make_tensor_descriptor(None, x_ptr, [64, 64], [64, 1], [16, 16], padding_option="inf")


@triton.jit
def descriptor_rank_mismatch(x_ptr):
    tlx.make_tensor_descriptor(None, x_ptr, [64, 64], [64, 1], [16])


# -- wgmma (tlx/mma.py) -------------------------------------------------------------------------
@triton.jit
def dot_small_m(x_ptr):
    a = tlx.local_alloc((32, 64), tl.float16, 1)[0]
    b = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    tlx.async_dot(a, b)


@triton.jit
def dot_inner_mismatch(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    b = tlx.local_alloc((32, 64), tl.float16, 1)[0]
    tlx.async_dot(a, b)


@triton.jit
def dot_mixed_dtypes(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    b = tlx.local_alloc((64, 64), tl.bfloat16, 1)[0]
    tlx.async_dot(a, b)


@triton.jit
def dot_b_in_registers(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    tlx.async_dot(a, tl.zeros((64, 64), tl.float16))


@triton.jit
def dot_wrong_acc(x_ptr):
    a = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    b = tlx.local_alloc((64, 64), tl.float16, 1)[0]
    tlx.async_dot(a, b, tl.zeros((64, 32), tl.float32))


@triton.jit
def dot_wait_negative(x_ptr):
    tlx.async_dot_wait(-1, tl.zeros((64, 64), tl.float32))


# -- utilities, warp ops (tlx/misc.py, tlx/warp.py) ---------------------------------------------
@triton.jit
def thread_id_axis_3(x_ptr):
    tlx.thread_id(3)


@triton.jit
def fence_cta(x_ptr):
    tlx.fence("cta")


@triton.jit
def dtype_of_an_int(x_ptr):
    tlx.dtype_of(3)


@triton.jit
def size_of_an_int(x_ptr):
    tlx.size_of(3)


@triton.jit
def fp8_name_of_fp16(x_ptr):
    tlx.get_fp8_format_name(tl.float16)


@triton.jit
def ballot_bad_mask(x_ptr):
    tlx.vote_ballot_sync(2**40, tl.load(x_ptr) > 0)


@triton.jit
def ballot_tensor_pred(x_ptr):
    tlx.vote_ballot_sync(0xFFFFFFFF, tl.load(x_ptr + tl.arange(0, 32)) > 0)


# -- layouts and views that stock Triton cannot make --------------------------------------------
@triton.jit
def alloc_register_layout(x_ptr):
    tlx.local_alloc((16, 16), tl.float32, 1, layout="blocked")


@triton.jit
def alloc_layout_of_other_rank(x_ptr):
    tlx.local_alloc((256, ), tl.float32, 1, layout=tlx.swizzled_shared_layout_encoding.make_default(2))


@triton.jit
def load_in_shared_layout(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_load(buf, layout=tlx.swizzled_shared_layout_encoding.make_default(2))


@triton.jit
def view_of_one_barrier(x_ptr):
    bar = tlx.alloc_barriers(2)[0]
    tlx.local_view(bar, 0)


@triton.jit
def reinterpret_a_slice(x_ptr):
    buf = tlx.local_alloc((16, 16), tl.float32, 1)[0]
    tlx.local_reinterpret(tlx.local_slice(buf, [0, 0], [8, 16]), tl.int32)


# -- storage_alias_spec (tlx/alias.py) ----------------------------------------------------------
@triton.jit
def alias_spec_too_small(x_ptr):
    spec = tlx.storage_alias_spec(buffer_size_bytes=1024)
    tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)


@triton.jit
def alias_alloc_after_overlap(x_ptr):
    spec = tlx.storage_alias_spec()
    a = tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)
    spec.set_buffer_overlap(tlx.reuse_group(a))
    tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)


@triton.jit
def alias_overlap_not_a_group(x_ptr):
    spec = tlx.storage_alias_spec()
    a = tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)
    spec.set_buffer_overlap(a)


@triton.jit
def alias_group_of_other_counts(x_ptr):
    spec = tlx.storage_alias_spec()
    a = tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)
    b = tlx.local_alloc((16, 16), tl.float32, 3, reuse=spec)
    spec.set_buffer_overlap(tlx.reuse_group(a, b))


@triton.jit
def alias_member_left_out(x_ptr):
    spec = tlx.storage_alias_spec()
    a = tlx.local_alloc((16, 16), tl.float32, 2, reuse=spec)
    tlx.local_alloc((16, 16), tl.float16, 2, reuse=spec)
    spec.set_buffer_overlap(tlx.reuse_group(a))


# -- warp specialization (tlx/tasks.py) ---------------------------------------------------------
@triton.jit
def task_warps_over_cta_limit(x_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr, 1.0)
        with tlx.async_task(num_warps=64):
            tl.store(x_ptr + 1, 2.0)


@triton.jit
def task_replicas_over_cta_limit(x_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default", replicate=2):
            tl.store(x_ptr, 1.0)
        with tlx.async_task(num_warps=8, replicate=4):
            tl.store(x_ptr + 1, 2.0)


@triton.jit
def task_runtime_warps(x_ptr):
    n = tl.load(x_ptr).to(tl.int32)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr, 1.0)
        with tlx.async_task(num_warps=n):
            tl.store(x_ptr + 1, 2.0)
