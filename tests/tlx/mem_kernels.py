"""Kernels of the shared-memory and layout conformance tests (issue 8): compiled by
test_conformance_mem.py, interpreted by test_interpreter_mem.py, run on the GPU by
tests/gpu/test_tlx_mem_gpu.py."""
import torch
import triton
import triton.language as tl

import tritium.tlx as tlx


@triton.jit
def offs2d(R: tl.constexpr, C: tl.constexpr):
    return tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]


@triton.jit
def view_single_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plane = tlx.local_alloc((2, R, C), tl.float32, 1)[0]  # one buffer of shape (2, R, C)
    tlx.local_store(plane, tl.reshape(tl.load(x_ptr + tl.arange(0, 2 * R * C)), (2, R, C)))
    row = tlx.local_view(plane, 1)  # (R, C)
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(row))
    vec = tlx.local_alloc((C, ), tl.float32, 1)[0]
    tlx.local_store(vec, tl.load(x_ptr + tl.arange(0, C)))
    i = tl.program_id(0) + 3  # a run-time index
    tl.store(z_ptr + tl.arange(0, 1), tlx.local_load(tlx.local_view(vec, i)))


@triton.jit
def view_rows_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    v = tlx.local_alloc((R, C), tl.float32, 1, layout=plain)[0]
    tlx.local_store(v, tl.load(x_ptr + offs2d(R, C)))
    tl.store(y_ptr + tl.arange(0, C), tlx.local_load(tlx.local_view(v, 5)))


@triton.jit
def view_swizzled_row_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_view(tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.swizzled_layout(3, 3, 3))[0], 5)


@triton.jit
def view_oob_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_view(tlx.local_alloc((R, C), tl.float32, 1)[0], R)


@triton.jit
def reinterpret_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    plain2: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    bufs = tlx.local_alloc((R, C), tl.float16, 4, layout=plain2)
    for i in tl.static_range(4):
        tlx.local_store(bufs[i], tl.load(x_ptr + i * R * C + offs2d(R, C)))
    flat = tlx.local_reinterpret(bufs, tl.int16, [1, 4 * R * C], layout=plain2)  # all four buffers
    tl.store(y_ptr + tl.arange(0, 4 * R * C)[None, :], tlx.local_load(flat))
    wide = tlx.local_reinterpret(bufs[1], tl.float32, [R, C // 2], layout=plain2)
    tl.store(z_ptr + offs2d(R, C // 2), tlx.local_load(wide))


@triton.jit
def reinterpret_size_kernel(x_ptr, y_ptr, z_ptr, R: tl.constexpr, C: tl.constexpr):
    tlx.local_reinterpret(tlx.local_alloc((R, C), tl.float16, 1)[0], tl.float32, [R, C])


@triton.jit
def gather_scatter_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    x = tl.load(x_ptr + offs2d(R, C))
    idx = tl.load(idx_ptr + offs2d(R, C))
    tlx.local_store(buf, x)
    tl.store(g_ptr + offs2d(R, C), tlx.local_gather(buf, idx, AXIS))
    tlx.local_store(buf, tl.zeros((R, C), tl.float32))
    tlx.local_scatter(buf, x + 100.0, idx, axis=AXIS)
    tl.store(s_ptr + offs2d(R, C), tlx.local_load(buf))


@triton.jit
def gather_1d_kernel(x_ptr, idx_ptr, g_ptr, N: tl.constexpr, M: tl.constexpr):
    buf = tlx.local_alloc((N * M, ), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + tl.arange(0, N * M)))
    tl.store(g_ptr + tl.arange(0, N), tlx.local_gather(buf, tl.load(idx_ptr + tl.arange(0, N)), 0))


def gs_indices(R, C, axis):
    rows, cols = torch.arange(R)[:, None], torch.arange(C)[None, :]
    n = R if axis == 0 else C
    return ((n - 1 - rows - cols) % n).int()  # a permutation along axis for every line


@triton.jit
def gather_bad_axis_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_gather(buf, tl.load(idx_ptr + offs2d(R, C)), AXIS)


@triton.jit
def scatter_too_big_kernel(x_ptr, idx_ptr, g_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_scatter(buf, tl.load(x_ptr + offs2d(R, C)), tl.load(idx_ptr + offs2d(R, C)), AXIS)


ROW_MAJOR_64x32 = tl.constexpr(tlx.shared_linear_layout_encoding(
    [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [32, 0]]))
#: The same with rows 4..32 XOR-swizzled into the columns: the bases' sums exceed the shape, their bits do not.
SWIZZLED_64x32 = tl.constexpr(tlx.shared_linear_layout_encoding(
    [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0], [4, 2], [8, 4], [16, 8], [32, 16]]))
#: CuTe thread-value layout: lanes along columns, 4 warps of 16 rows, 16 rows each.
LANES_ALONG_COLUMNS = tlx.layout(shape=((64, 4), (16, )), stride=((1, 16 * 64), (64, )))


@triton.jit
def shared_layouts_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "swizzled":
        lay: tl.constexpr = tlx.swizzled_shared_layout_encoding(8, 2, 4, [1, 0], [1, 1], [1, 1], [1, 1], [1, 0])
    elif KIND == "cute":
        lay: tl.constexpr = tlx.swizzled_layout(3, 3, 3)
    elif KIND == "nvmma":
        lay: tl.constexpr = tlx.nv_mma_shared_layout_encoding.make_default([R, C], tl.float16)
    elif KIND == "padded":
        lay: tl.constexpr = tlx.padded_shared_layout_encoding.with_identity_for([[C, 8]], [R, C])
    elif KIND == "linear_xor":
        lay: tl.constexpr = SWIZZLED_64x32
    else:  # a row-major image with rows 0..R-1, as a shared linear layout held in a global constexpr
        lay: tl.constexpr = ROW_MAJOR_64x32
    buf = tlx.local_alloc((R, C), tl.float16, 2, layout=lay)
    tlx.local_store(buf[1], tl.load(x_ptr + offs2d(R, C)))
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(buf[1]))


@triton.jit
def register_layouts_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "mfma":
        lay: tl.constexpr = tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1])
    elif KIND == "dot":
        lay: tl.constexpr = tlx.dot_operand_layout(0, tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1]), 4)
    elif KIND == "linear64":  # a layout held in a plain module global, as the fork's kernels do
        lay: tl.constexpr = LANES_ALONG_COLUMNS
    else:  # the same for 32-lane warps: two column halves per thread
        lay: tl.constexpr = tlx.layout(shape=((32, 4), (2, 16)), stride=((1, 16 * 64), (32, 64)))
    buf = tlx.local_alloc((R, C), tl.float16, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + offs2d(R, C)))
    x = tlx.local_load(buf, layout=lay)
    acc = tlx.zeros((R, C), tl.float32, layout=lay)
    y = tlx.release_layout(tlx.require_layout(x.to(tl.float32) + acc, lay))
    tl.store(y_ptr + offs2d(R, C), y.to(tl.float16))


@triton.jit
def bad_layout_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr):
    if KIND == "register_as_shared":
        tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.amd_mfma_layout(3, [32, 32, 8], True, [4, 1]))
    elif KIND == "cute_period":
        tlx.local_alloc((R, C), tl.float16, 1, layout=tlx.swizzled_layout(3, 1, 1))
    elif KIND == "tmem":
        tlx.local_alloc((R, C), tl.float16, 1, tlx.storage_kind.tmem)
    elif KIND == "warps":
        tlx.local_load(tlx.local_alloc((R, C), tl.float16, 1)[0],
                       layout=tlx.amd_mfma_layout(3, [32, 32, 8], True, [8, 1]))
    else:
        tlx.local_load(tlx.local_alloc((R, C), tl.float16, 1)[0],
                       layout=tlx.swizzled_shared_layout_encoding.make_default(2))


@triton.jit
def _store_into(buf, x):
    tlx.local_store(buf, x)


@triton.jit
def _roundtrip(bufs, i, x_ptr, R: tl.constexpr, C: tl.constexpr):
    one = tlx.local_view(bufs, i)
    _store_into(one, tl.load(x_ptr + offs2d(R, C)))  # the second level
    return tlx.local_load(one)


@triton.jit
def helpers_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    a = tlx.local_alloc((R, C), tl.float32, 2)
    b = tlx.local_alloc((R, C), tl.float32, 2)
    y = _roundtrip(a, 0, x_ptr, R, C)
    y += _roundtrip(b, 1, x_ptr, R, C)
    for i in range(2):  # the same helper again, with a run-time index
        y += _roundtrip(a, i, x_ptr, R, C)
    tl.store(y_ptr + offs2d(R, C), y)


@triton.jit(noinline=True)
def _not_inlined(buf, y_ptr, R: tl.constexpr, C: tl.constexpr):
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(buf))


@triton.jit
def noinline_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    a = tlx.local_alloc((R, C), tl.float32, 1)
    _not_inlined(a[0], y_ptr, R, C)


@triton.jit
def _new_buffer(R: tl.constexpr, C: tl.constexpr):
    return tlx.local_alloc((R, C), tl.float32, 1)


@triton.jit
def _view_of(bufs, i):
    return tlx.local_view(bufs, i)


@triton.jit
def returned_buffers_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    # two calls of one helper return two buffers (one inlined body, so one id): they must stay apart
    a = _new_buffer(R, C)
    b = _new_buffer(R, C)
    tlx.local_store(a[0], tl.load(x_ptr + offs2d(R, C)))
    tlx.local_store(b[0], tl.load(x_ptr + offs2d(R, C)) + 1.0)
    bufs = tlx.local_alloc((R, C), tl.float32, 2)
    v0 = _view_of(bufs, tl.program_id(0))  # run-time indices: one body for both calls
    v1 = _view_of(bufs, tl.program_id(0) + 1)
    tlx.local_store(v0, tlx.local_load(a[0]) * 2.0)
    tlx.local_store(v1, tlx.local_load(b[0]))
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(v0) + tlx.local_load(tlx.local_view(bufs, 1)))


@triton.jit
def reuse_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    a = tlx.local_alloc((R, C), tl.float32, 2, layout=plain)
    tlx.local_store(a[1], tl.load(x_ptr + offs2d(R, C)))
    bits = tlx.local_alloc((R, C), tl.int32, 2, reuse=a, layout=plain)
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(bits[1]))


@triton.jit
def unsupported_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    if R == 1:
        spec = tlx.storage_alias_spec()
        a = tlx.local_alloc((C, C), tl.float16, 2, reuse=spec)
        b = tlx.local_alloc((C, C), tl.float16, 2, reuse=spec)
        spec.set_buffer_overlap(tlx.reuse_group(a, tlx.reuse_group(b, group_size=2)))
    elif R == 2:
        a = tlx.local_alloc((C, ), tl.float32, 1)
        tlx.local_alloc((C, C), tl.float32, 1, reuse=a)
    elif R == 3:
        tlx.subslice(tlx.local_alloc((C, C), tl.float32, 1)[0], 0, 16)
    else:
        a = tlx.local_alloc((C, C), tl.float32, 1)
        tlx.assert_same_layout(a, tlx.swizzled_shared_layout_encoding(4, 1, 8, [1, 0]))


@triton.jit
def alias_kernel(out_ptr, B: tl.constexpr):
    """The fork's storage-alias cases in one kernel: each member reads what another wrote.

    Members that read each other's bytes as other dtypes/shapes are unswizzled, so the bytes map to
    elements in row-major order on every target (and in the interpreter)."""
    offs = offs2d(B, B)
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    spec = tlx.storage_alias_spec(storage=tlx.storage_kind.smem)
    qk = tlx.local_alloc((B, B), tl.float32, 2, reuse=spec, layout=plain)
    p = tlx.local_alloc((B, B), tl.float16, 4, reuse=spec, layout=plain)
    alpha = tlx.local_alloc((B, B // 2), tl.float32, 4, reuse=spec, layout=plain)
    # qk[i] shares slot i with (p[2i], p[2i+1]) side by side, and with alpha[2i], alpha[2i+1]
    spec.set_buffer_overlap(tlx.reuse_group(qk, tlx.reuse_group(p, group_size=2),
                                            tlx.reuse_group(alpha, group_size=2)))
    tlx.local_store(qk[1], tl.full((B, B), 1.0, tl.float32) + offs.to(tl.float32))
    tl.store(out_ptr + offs, tlx.local_load(p[3]).to(tl.float32))  # the second half of qk[1]'s bytes
    tl.store(out_ptr + B * B + offs2d(B, B // 2), tlx.local_load(alpha[2]))  # the first half of qk[1]
    spec2 = tlx.storage_alias_spec(buffer_size_bytes=4 * B * B * 2)
    a = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec2)
    b = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec2)
    spec2.set_buffer_overlap(tlx.reuse_group(a, b, group_type=tlx.reuse_group_type.distinct))
    for i in tl.static_range(2):
        tlx.local_store(a[i], tl.full((B, B), 1.0 + i, tl.float16))
        tlx.local_store(b[i], tl.full((B, B), 3.0 + i, tl.float16))
    tl.store(out_ptr + 2 * B * B + offs2d(B, B), tlx.local_load(b[0]).to(tl.float32))
    tl.store(out_ptr + 3 * B * B + offs2d(B, B), tlx.local_load(a[1]).to(tl.float32))
    spec3 = tlx.storage_alias_spec()  # no set_buffer_overlap: the members share one offset
    c = tlx.local_alloc((B, B), tl.int32, 1, reuse=spec3)
    d = tlx.local_alloc((B, B), tl.float32, 1, reuse=spec3)
    tlx.local_store(d[0], tl.full((B, B), 1.0, tl.float32))
    tl.store(out_ptr + 4 * B * B + offs2d(B, B), tlx.local_load(c[0]).to(tl.float32))


def alias_expected(B=32):
    qk1 = torch.ones(B, B) + torch.arange(B * B).float().reshape(B, B)
    raw = qk1.flatten().view(torch.float16)
    return [raw[B * B:].reshape(B, B).float(), qk1.flatten()[:B * B // 2].reshape(B, B // 2),
            torch.full((B, B), 3.0), torch.full((B, B), 2.0)]


@triton.jit
def misc_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)
    a = tlx.local_alloc((R, C), tl.float32, 2, layout=plain)
    tlx.assert_same_layout(a[0], a[1])
    tlx.assert_same_layout(a[0], plain)
    tlx.dump_layout(a)
    x = tl.load(x_ptr + offs2d(R, C))
    tlx.dump_layout(x)
    tlx.local_store(a[0], x + tlx.zeros((R, C), tl.float32))
    tl.store(y_ptr + offs2d(R, C), tlx.local_load(a[0]))


@triton.jit
def fork_keywords_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    # the view ops called with the fork's parameter names, as fork kernels may call them
    plain: tl.constexpr = tlx.swizzled_shared_layout_encoding.make_default(2)  # the compile path flattens these
    bufs = tlx.local_alloc((R, C), tlx.dtype_of(v=x_ptr), 2, layout=plain)
    view = tlx.local_view(local_allocated_buffers=bufs, buffer_idx=1)
    tlx.local_store(view, tl.load(x_ptr + offs2d(R, C)))
    top = tlx.local_slice(buffer=view, offset=[0, 0], shape=[R // 2, C])
    flipped = tlx.local_trans(input=view, dims=(1, 0))
    flat = tlx.local_reshape(src=view, shape=[R * C])
    same = tlx.local_reinterpret(src=bufs, dtype=tl.float32, shape=[2, R, C])  # one view over both buffers
    tl.store(y_ptr + tl.arange(0, R // 2)[:, None] * C + tl.arange(0, C)[None, :], tlx.local_load(top))
    tl.store(y_ptr + 3 * R * C + tl.arange(0, R * C), tlx.local_load(flat))
    tl.store(y_ptr + R * C + tl.arange(0, C)[:, None] * R + tl.arange(0, R)[None, :], tlx.local_load(flipped))
    tl.store(y_ptr + 2 * R * C + offs2d(R, C), tlx.local_load(tlx.local_view(same, 1)))  # its row 1: buffer 1


@triton.jit
def slice_at_runtime_row_kernel(x_ptr, y_ptr, row, R: tl.constexpr, C: tl.constexpr):
    buf = tlx.local_alloc((R, C), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + offs2d(R, C)))
    tl.store(y_ptr + offs2d(1, C), tlx.local_load(tlx.local_slice(buf, [row, 0], [1, C])))
