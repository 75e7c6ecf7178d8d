"""A kernel that exercises every buffer view op (compiled in test_codegen)."""
import triton, triton.language as tl
import tritium.tlx as tlx

@triton.jit
def views_kernel(x_ptr, y_ptr, z_ptr, w_ptr):
    r = tl.arange(0, 64)
    c = tl.arange(0, 32)
    x = tl.load(x_ptr + r[:, None] * 32 + c[None, :])
    buf = tlx.local_alloc((64, 32), tl.float16, 1)
    v = tlx.local_view(buf, 0)
    tlx.local_store(v, x)
    t = tlx.local_load(tlx.local_trans(v))
    tl.store(y_ptr + c[:, None] * 64 + r[None, :], t)
    s = tlx.local_load(tlx.local_slice(v, (16, 0), (16, 32)))
    r16 = tl.arange(0, 16)
    tl.store(z_ptr + r16[:, None] * 32 + c[None, :], s)
    q = tlx.local_load(tlx.local_reinterpret(v, tl.int16))
    tl.store(w_ptr + r[:, None] * 32 + c[None, :], q)
