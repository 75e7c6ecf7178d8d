"""Views chosen by a run-time ``if`` (chosen_view_kernels.py), compiled for sm_90 and gfx950 on the CPU: each
``if`` selects between its branches' buffer addresses, Triton's barriers see a chosen view alias both buffers,
a TMA load (written as text by the lowering) lands in the chosen half, and the fork's hopper_gemm_ws in pairs of
CTAs (NUM_CTAS=2, which picks its multicast half of B by CTA rank) compiles. Numerics:
test_interpreter_chosen_views.py."""
import re
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritium.tlx as tlx

sys.path.insert(0, str(Path(__file__).parent))
import chosen_view_kernels as ck  # noqa: E402
import fork_conformance as fc  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)
GFX950 = GPUTarget("hip", "gfx950", 64)
VIEWS_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "w_ptr": "*fp32", "v_ptr": "*fp32",
                   "c": "i32", "N": "constexpr"}


def _compile(fn, signature, target, **constants):
    return triton.compile(ASTSource(fn, signature, constants), target=target, options={"num_warps": 4})


def _code(asm: str) -> str:
    """The instructions of a PTX or AMDGCN listing, one space between words, without location and comment lines."""
    return "\n".join(" ".join(line.split()) for line in asm.splitlines()
                     if line.strip() and not line.strip().startswith((".loc", "//", ";")))


def test_views_chosen_by_a_runtime_if_select_their_buffer_on_sm90():
    k = _compile(ck.chosen_views_kernel, VIEWS_SIGNATURE, SM90, N=64)
    assert "tlx:" not in k.asm["ttgir"]
    ptx = _code(k.asm["ptx"])
    # bufs[1] (256 bytes on) or bufs[0]; the other allocation (512 on) or bufs[0]; bytes 128 or 0 of bufs[1]
    assert re.search(r"add\.s32 (%r\d+), (%r\d+), 256;\nselp\.b32 %r\d+, \1, \2, %p\d+;", ptx)
    assert re.search(r"add\.s32 (%r\d+), (%r\d+), 512;\nselp\.b32 %r\d+, \1, \2, %p\d+;", ptx)
    assert re.search(r"selp\.b32 %r\d+, 128, 0, %p\d+;", ptx)
    # The store through the chosen view waits for both zero stores (it may write either buffer), and the
    # reads of both buffers wait for it: the alias analysis joins the buffers an if yields.
    between = r"(?:(?!stmatrix|ldmatrix)[^\n]*\n)*?"  # lines that touch no shared memory
    assert re.search(rf"stmatrix[^\n]*\[%r\d+\+256\], \{{%r\d+\}};\n{between}bar\.sync 0;\nstmatrix[^\n]*\[%r\d+\], "
                     rf"\{{%r\d+\}};\n{between}bar\.sync 0;\nldmatrix", ptx)


def test_views_chosen_by_a_runtime_if_select_their_buffer_on_gfx950():
    gcn = _code(_compile(ck.chosen_views_kernel, VIEWS_SIGNATURE, GFX950, N=64).asm["amdgcn"])
    for offset in ("0x100", "0x200", "0x80"):
        assert re.search(rf"s_cselect_b32 s\d+, (s\d+|{offset}), 0", gcn), offset
    assert re.search(r"s_barrier\nds_write_b32 v\d+, v\d+\n(s_waitcnt[^\n]*\n)?s_barrier\nds_read", gcn)


def test_a_tma_load_lands_in_the_half_a_runtime_if_chose():
    ptx = _code(_compile(ck.chosen_tma_kernel, {"x_desc": "tensordesc<fp16[32, 64]>", "y_ptr": "*fp16", "c": "i32",
                                               "N": "constexpr"}, SM90, N=64).asm["ptx"])
    assert re.search(r"selp\.b32 %r\d+, 4096, 0, %p\d+;", ptx)  # 32 rows of 64 fp16 on, or none
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cluster|cta)\.global\.mbarrier::complete_tx::bytes", ptx)


@triton.jit
def _returning(x_ptr, c):
    bufs = tlx.local_alloc((64, ), tl.float32, 2)
    if c > 0:
        v = bufs[1]
    else:
        if c < -3:
            return
        v = bufs[0]
    tl.store(x_ptr + tl.arange(0, 64), tlx.local_load(v))


def test_a_view_chosen_by_an_if_that_returns_is_refused():
    with pytest.raises(Exception, match=r"the buffer view chosen by the run-time if at .*test_chosen_views\.py:\d+ "
                                        r"does not come from an scf\.if whose branches both yield a view"):
        _compile(_returning, {"x_ptr": "*fp32", "c": "i32"}, SM90)


@triton.jit
def _rebound_in_a_loop(x_ptr, c):
    bufs = tlx.local_alloc((64, ), tl.float32, 2)
    v = bufs[0]
    for i in range(c):
        if i % 2 == 1:
            v = bufs[1]
        else:
            v = bufs[0]
    tl.store(x_ptr + tl.arange(0, 64), tlx.local_load(v))


def test_a_view_chosen_in_a_loop_and_carried_by_it_stays_refused():
    with pytest.raises(Exception, match="initial value for `v` is of type buffered_tensor"):
        _compile(_rebound_in_a_loop, {"x_ptr": "*fp32", "c": "i32"}, SM90)


HOPPER_PAIR = {"BM": 128, "BN": 256, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3, "NUM_MMA_WARPS": 8,
               "NUM_MMA_GROUPS": 2, "EPILOGUE_SUBTILE": True, "NUM_CTAS": 2, "USE_WARP_BARRIER": False,
               "num_warps": 4, "num_stages": 1, "ctas_per_cga": (2, 1, 1)}


def _hopper_gemm_ws_pair(tutorials: Path) -> list[str]:
    """The PTX of the tutorial's kernels compiled for a pair of CTAs, read from the JIT's in-memory cache (a kernel
    compiled earlier in the process comes from there, not from a compile that writes the on-disk cache)."""
    import torch
    fc._INPUT_DEVICE[0] = "cpu"
    with fc.device_stand_in(fc.SM90), fc.tutorials_package(tutorials):
        mod = fc.load_tutorial(tutorials, "hopper_gemm_ws.py")
        a, b = torch.randn(512, 512, dtype=torch.float16), torch.randn(512, 512, dtype=torch.float16)
        mod.matmul(a, b, config=HOPPER_PAIR)
        return [k.asm["ptx"] for cache in mod.matmul_kernel_tlx_ws.fn.device_caches.values()
                for k in cache[0].values() if tuple(getattr(k.metadata, "ctas_per_cga", ()) or ()) == (2, 1, 1)]


def test_fork_hopper_gemm_ws_in_pairs_of_ctas_compiles():
    """The tutorial as the fork ships it, NUM_CTAS=2: the view it chooses by CTA rank, the multicast into that half
    of B, the peer arrive and the cluster barrier each task opens with (tlx/tasks.py) reach its PTX."""
    tutorials, why = fc.find_tutorials()
    if tutorials is None:
        pytest.skip(why)
    ptx, = _hopper_gemm_ws_pair(tutorials)
    assert "multicast::cluster" in ptx and "mapa.shared::cluster" in ptx
    assert re.search(r"selp\.b32\s+%r\d+, 0, 16384, %p\d+;", ptx)  # rows 0 or 128 of the 256 x 64 B tile
    assert ptx.count("barrier.cluster.wait") >= 2  # one per task (the producer and the consumers)

@triton.jit
def _member_choice(out_ptr, c, B: tl.constexpr):
    spec = tlx.storage_alias_spec(buffer_size_bytes=4 * B * B * 2)
    a = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec)
    b = tlx.local_alloc((B, B), tl.float16, 2, reuse=spec)
    spec.set_buffer_overlap(tlx.reuse_group(a, b, group_type=tlx.reuse_group_type.distinct))
    if c > 0:
        m = a
    else:
        m = b
    offs = tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :]
    tl.store(out_ptr + offs, tlx.local_load(tlx.local_view(m, 1)))


def test_indexing_a_choice_of_aliased_allocations_placed_differently_is_refused():
    with pytest.raises(Exception, match=r"tlx\.local_view at .*test_chosen_views\.py:\d+: the buffers are chosen by a "
                                        r"run-time if among allocations of a storage_alias_spec placed differently"):
        _compile(_member_choice, {"out_ptr": "*fp16", "c": "i32", "B": "constexpr"}, SM90, B=32)
