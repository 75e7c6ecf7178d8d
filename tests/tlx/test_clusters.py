"""Clusters of CTAs (``ctas_per_cga=(n, 1, 1)``, tlx/cluster_launch.py), compiled for sm_90 on the CPU: the peer
barrier arrive and the TMA multicast reach PTX, the barriers' initialization is published to the cluster, and
misuse names the option, the op or the argument. The launch itself runs in tests/gpu/test_tlx_clusters_gpu.py."""
import re
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritium.tlx as tlx
from tritium.plugins import OptionError

sys.path.insert(0, str(Path(__file__).parent))
import cluster_kernels as ck  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)
GFX950 = GPUTarget("hip", "gfx950", 64)
PAIR = {"ctas_per_cga": (2, 1, 1)}


def pair_exchange(options: dict, target=SM90):
    src = ASTSource(ck.pair_exchange, {"x_desc": "tensordesc<fp16[64, 64]>", "out_ptr": "*fp16", "BLOCK": "constexpr"},
                    {"BLOCK": 64})
    return triton.compile(src, target=target, options={"num_warps": 4, **options})


def test_peer_arrive_and_multicast_reach_ptx_and_barriers_are_published_to_the_cluster():
    k = pair_exchange(PAIR)
    ptx = k.asm["ptx"]
    assert k.metadata.ctas_per_cga == (2, 1, 1)  # a tuple, as given (the fork's), not the JSON's list
    # The arrive on the peer's barrier: its address mapped into the peer's shared memory, released at cluster scope.
    assert re.search(r"mapa\.shared::cluster\.u32 (\w+), %r\d+, %r\d+; @%p\d+ "
                     r"mbarrier\.arrive\.shared::cluster\.b64 _, \[\1\];", ptx)
    # The TMA load multicast to the CTAs of a run-time mask, narrowed to PTX's 16-bit ctaMask.
    assert re.search(r"cvt\.u16\.u32 (\w+), %r\d+; @%p\d+ cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\."
                     r"mbarrier::complete_tx::bytes\.multicast::cluster \[[^]]+\], \[[^]]+\], \[[^]]+\], \1;", ptx)
    # Each alloc_barriers: the init fence at cluster scope, then a barrier of the whole cluster.
    assert ptx.count("fence.mbarrier_init.release.cluster;") == 2 and ptx.count("barrier.cluster.wait") == 2
    assert "tlx.ptx" not in ptx  # the links' marks are gone


def test_a_launch_with_ctas_per_cga_compiles_as_triton_compile_does():
    """kernel[grid](..., ctas_per_cga=) under the stand-in driver of scripts/fork_unit_tests.py's compile modes: the
    option reaches the compile, as on the GPU."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor
    import fork_conformance as fc
    with fc.device_stand_in(fc.SM90) as stand_in:
        desc = TensorDescriptor.from_tensor(torch.zeros(256, 64, dtype=torch.float16), [64, 64])
        k = ck.pair_exchange[(4,)](desc, torch.empty(4 * 2 * 64 * 64, dtype=torch.float16), BLOCK=64, **PAIR)
        assert stand_in.launched
    assert k.metadata.ctas_per_cga == (2, 1, 1) and k.metadata.num_ctas == 1
    assert "multicast::cluster" in k.asm["ptx"]


def test_without_ctas_per_cga_peers_are_refused():
    with pytest.raises(Exception, match="multicast_targets names CTAs of a cluster, but the kernel runs as clusters of "
                                        r"one CTA: launch it with ctas_per_cga=\(n, 1, 1\)"):
        pair_exchange({})


@triton.jit
def _arrive_on(RANK: tl.constexpr):
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_arrive(bars[0], 1, remote_cta_rank=RANK)


def test_a_constant_rank_must_be_in_the_cluster():
    src = ASTSource(_arrive_on, {"RANK": "constexpr"}, {"RANK": 2})
    with pytest.raises(Exception, match=r"tlx.barrier_arrive: remote_cta_rank=2 is not a CTA of a cluster of 2 "
                                        r"\(ctas_per_cga\)"):
        triton.compile(src, target=SM90, options={"num_warps": 4, **PAIR})
    ptx = triton.compile(ASTSource(_arrive_on, {"RANK": "constexpr"}, {"RANK": 1}), target=SM90,
                         options={"num_warps": 4, **PAIR}).asm["ptx"]
    assert "mapa.shared::cluster.u32" in ptx


@pytest.mark.parametrize("value, message", [
    ((1, 2, 1), r"\(1, 2, 1\): Triton's launcher forms clusters along x only"),
    ((2, 1), r"expected three positive ints \(x, y, z\), got \(2, 1\)"),
    ((12, 1, 1), r"a cluster holds at most 8 CTAs \(or 16, non-portable\)"),
    ("2", r"expects tuple or list, got str"),
])
def test_bad_cluster_shapes_name_the_option_and_the_plugin(value, message):
    with pytest.raises(OptionError, match=r"option 'ctas_per_cga' of plugin 'tlx'.*" + message):
        pair_exchange({"ctas_per_cga": value})


def test_amd_takes_only_the_one_cta_cluster():
    src = ASTSource(ck.cluster_registers, {"out_ptr": "*i32"}, {})
    triton.compile(src, target=GFX950, options={"num_warps": 4, "ctas_per_cga": (1, 1, 1)})
    with pytest.raises(OptionError, match="option 'ctas_per_cga' of plugin 'tlx' applies to cuda targets only"):
        triton.compile(src, target=GFX950, options={"num_warps": 4, **PAIR})


@triton.jit
def _ws_pair(out_ptr, MEET: tl.constexpr):
    bars = tlx.alloc_barriers(1, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            if MEET:
                tlx.cluster_barrier()
            tlx.barrier_arrive(bars[0], 1, remote_cta_rank=tlx.cluster_cta_rank() ^ 1)
        with tlx.async_task(num_warps=4):
            if MEET:
                tlx.cluster_barrier()
            tlx.barrier_wait(bars[0], 0)
            tl.store(out_ptr + tl.program_id(0), 1)


@triton.jit
def _ws_rank_before_tasks(out_ptr):
    rank = tlx.cluster_cta_rank()
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, rank)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, rank)


def test_a_register_read_before_the_tasks_is_passed_to_them():
    """cluster_cta_rank() read before async_tasks (an inline asm with side effects) reaches every task as a value
    of the warp_specialize, read once."""
    k = triton.compile(ASTSource(_ws_rank_before_tasks, {"out_ptr": "*i32"}, {}), target=SM90,
                       options={"num_warps": 4, **PAIR})
    assert k.asm["ttgir"].count("%cluster_ctarank") == 1
    assert k.asm["ptx"].count("%cluster_ctarank") == 1


def test_warp_specialized_kernels_publish_their_barriers_in_every_task():
    """The task warps wait in Triton's task switch outside the tasks, so there every task opens with a cluster
    barrier that publishes the initialization (the one after the allocation is dropped); the kernel's own cluster
    barriers come on top."""
    for meet, waits in ((False, 2), (True, 4)):
        ptx = triton.compile(ASTSource(_ws_pair, {"out_ptr": "*i32", "MEET": "constexpr"}, {"MEET": meet}),
                             target=SM90, options={"num_warps": 4, **PAIR}).asm["ptx"]
        assert ptx.count("barrier.cluster.wait") == waits, meet
        assert "mbarrier.arrive.shared::cluster.b64" in ptx
    ptx = triton.compile(ASTSource(_ws_pair, {"out_ptr": "*i32", "MEET": "constexpr"}, {"MEET": False}), target=SM90,
                         options={"num_warps": 4}).asm["ptx"]
    assert "barrier.cluster" not in ptx  # a kernel of one-CTA clusters publishes nothing


def test_the_interpreter_refuses_clusters_of_several_ctas():
    """Under TRITON_INTERPRET=1 every program runs alone, so a cluster op in a launch with ctas_per_cga > 1 says so
    (run in a fresh process: the interpreter is chosen when triton is imported)."""
    import os
    import subprocess
    code = ("import torch, cluster_kernels as ck\n"
            "out = torch.zeros(8, 2, dtype=torch.int32)\n"
            "ck.cluster_registers[(8,)](out)\n"
            "assert out.tolist() == [[0, 1]] * 8\n"
            "try:\n"
            "    ck.cluster_registers[(8,)](out, ctas_per_cga=(2, 1, 1))\n"
            "except Exception as e:\n"
            "    print(e)\n")
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert "tlx.cluster_cta_rank: the TLX interpreter runs each program as a cluster of one CTA, so " \
           "ctas_per_cga=(2, 1, 1) needs the GPU" in out.stdout + out.stderr, out.stderr[-2000:]


@triton.jit
def _late_barriers(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(out_ptr, 0)
        with tlx.async_task(num_warps=4):
            tl.store(out_ptr + 1, 1)
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_arrive(bars[0], 1, remote_cta_rank=tlx.cluster_cta_rank() ^ 1)


def test_barriers_allocated_after_the_tasks_have_started_are_refused():
    """No task opens after them to publish their initialization to the peers, so the kernel would race."""
    with pytest.raises(Exception, match=r"tlx.alloc_barriers at .*: in clusters of several CTAs \(ctas_per_cga\) a "
                                        r"warp-specialized kernel publishes .* as its tasks start; allocate the "
                                        r"barriers before the async_tasks region"):
        triton.compile(ASTSource(_late_barriers, {"out_ptr": "*i32"}, {}), target=SM90,
                       options={"num_warps": 4, **PAIR})
