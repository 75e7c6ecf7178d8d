"""A misused TLX op raises the same error compiled (for sm_90) and under TRITON_INTERPRET=1.

Each op's argument checks are one function in the op's module (tlx/mem.py, barriers.py, ...), called by
both its builtin and its interpreter function (docs/tlx-design.md, "Where an op lives"). Each case below is a
kernel in op_check_kernels.py. It is compiled here and run in a process started with
TRITON_INTERPRET=1 (the interpreter cannot share a process with compiled kernels; see interp_shim). The
innermost error must have the same type and text on both paths, and contain the expected words.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

#: kernel in op_check_kernels.py -> (error type, words the message must contain)
CASES = {
    # shared-memory buffers
    "alloc_zero_dim": ("ValueError", "tlx.local_alloc: shape must be a tuple of positive compile-time ints"),
    "alloc_pointer_dtype": ("TypeError", "tlx.local_alloc: dtype must be a scalar Triton dtype, got pointer<fp32>"),
    "alloc_zero_buffers": ("ValueError", "tlx.local_alloc: num must be a compile-time int >= 1, got 0"),
    "alloc_bad_storage": ("ValueError", "tlx.local_alloc: storage must be tlx.storage_kind.smem here"),
    "alloc_reuse_too_small": ("ValueError", "reuse= allocation has 512 bytes, 1024 needed"),
    "alloc_register_layout": ("TypeError", "tlx.local_alloc: layout must be a TLX shared layout"),
    "alloc_layout_of_other_rank": ("LayoutError", "tlx.local_alloc: layout= tlx.swizzled_shared_layout_encoding"),
    "view_index_out_of_range": ("IndexError", "tlx.local_view: index 2 out of range for 2 buffers"),
    "view_float_index": ("TypeError", "tlx.local_view: index must be an integer, got float"),
    "view_of_a_tensor": ("TypeError", "tlx.local_view expects a TLX buffer or barrier array, got tensor"),
    "view_of_one_barrier": ("TypeError", "tlx.local_view: the barrier is a single barrier already"),
    "load_multi_buffer": ("TypeError", "tlx.local_load: pick one buffer with tlx.local_view first"),
    "load_relaxed_not_bool": ("TypeError", "tlx.local_load: relaxed must be a compile-time bool, got 1"),
    "load_from_barrier": ("TypeError", "tlx.local_load expects a TLX buffer (from tlx.local_alloc), got mbarrier"),
    "load_in_shared_layout": ("TypeError", "tlx.local_load: layout must be a TLX register layout"),
    "store_multi_buffer": ("TypeError", "tlx.local_store: pick one buffer with tlx.local_view first"),
    "store_wrong_shape": ("ValueError", "tlx.local_store: value of shape [16] does not match buffer shape [16, 16]"),
    "store_wrong_dtype": ("TypeError", "tlx.local_store: value dtype fp32 does not match buffer dtype fp16"),
    "slice_wrong_rank": ("ValueError", "tlx.local_slice: offset (0,) and shape (8,) must have rank 2"),
    "slice_outside": ("ValueError", "tlx.local_slice: slice (8, 0)+(16, 16) is outside the buffer (16, 16)"),
    "trans_bad_dims": ("ValueError", "tlx.local_trans: dims (0, 0) is not a permutation"),
    "reshape_wrong_size": ("ValueError", "tlx.local_reshape: cannot reshape (16, 16) into (16, 8)"),
    "reinterpret_wrong_size": ("ValueError", "(1024 bytes) and [16, 16] fp16 (512 bytes) differ in size"),
    "reinterpret_pointer_dtype": ("TypeError", "tlx.local_reinterpret: dtype must be a scalar Triton dtype"),
    "reinterpret_a_slice": ("NotImplementedError", "tlx.local_reinterpret: stock Triton 3.6 reinterprets whole"),
    "gather_float_indices": ("TypeError", "tlx.local_gather: indices must be an integer tensor, got a [16, 16] fp32"),
    "gather_bad_axis": ("ValueError", "tlx.local_gather: axis must be a compile-time int in [-2, 2), got 2"),
    "gather_wrong_shape": ("ValueError", "tlx.local_gather: indices [16, 8] must have the buffer's rank"),
    "scatter_wrong_src": ("ValueError", "tlx.local_scatter: src must be a [16, 16] fp32 tensor like indices"),
    "zeros_bad_shape": ("ValueError", "tlx.zeros: shape must be a tuple of positive compile-time ints"),
    "zeros_bad_dtype": ("TypeError", "tlx.zeros: dtype must be a scalar Triton dtype"),
    "require_layout_of_a_buffer": ("TypeError", "tlx.require_layout: x must be a register tensor, got buffer"),
    "require_layout_pin_not_bool": ("TypeError", "tlx.require_layout: pin must be a compile-time bool, got 2"),
    "release_layout_of_a_scalar": ("TypeError", "tlx.release_layout: x must be a register tensor, got fp32"),
    "subslice_tensor_memory": ("NotImplementedError", "tlx.subslice slices Blackwell tensor memory"),
    "same_layout_of_a_tensor": ("NotImplementedError", "tlx.assert_same_layout: register layouts are chosen"),
    "alias_spec_in_tensor_memory": ("NotImplementedError", "tlx.storage_alias_spec: storage=tmem is not shared"),
    "alias_spec_too_small": ("ValueError", "tlx.local_alloc: the allocations need 2048 bytes, more than"),
    "alias_alloc_after_overlap": ("ValueError", "tlx.local_alloc: reuse=<storage_alias_spec> after its"),
    "alias_overlap_not_a_group": ("TypeError", "set_buffer_overlap: overlap_def must be a tlx.reuse_group"),
    "alias_group_of_other_counts": ("ValueError", "the elements of a group must have one buffer count"),
    "alias_member_left_out": ("ValueError", "every allocation made with reuse=<this spec> must be in the reuse_group"),
    # mbarriers, named barriers, clusters
    "barriers_zero": ("ValueError", "tlx.alloc_barriers: num_barriers must be a compile-time int >= 1, got 0"),
    "barriers_zero_arrivals": ("ValueError", "tlx.alloc_barriers: arrive_count must be a compile-time int >= 1"),
    "expect_bytes_on_a_buffer": ("TypeError", "tlx.barrier_expect_bytes expects an mbarrier"),
    "expect_negative_bytes": ("ValueError", "tlx.barrier_expect_bytes: size must be a non-negative compile-time int"),
    "wait_on_barrier_array": ("TypeError", "tlx.barrier_wait: pick one barrier of the array"),
    "wait_float_phase": ("TypeError", "tlx.barrier_wait: phase must be an integer scalar, got fp32"),
    "wait_on_remote_view": ("TypeError", "tlx.barrier_wait does not take a remote_view of an mbarrier"),
    "arrive_zero_times": ("ValueError", "tlx.barrier_arrive: arrive_count must be a compile-time int >= 1"),
    "arrive_on_another_cta": ("ValueError", "tlx.barrier_arrive: remote_cta_rank=1 names another CTA"),
    "remote_view_of_another_cta": ("ValueError", "tlx.remote_view: remote_cta_rank=2 names another CTA"),
    "warp_barrier_zero_warps": ("ValueError", "tlx.alloc_warp_barrier: num_warps must be a compile-time int >= 1"),
    "named_barrier_16": ("ValueError", "tlx.named_barrier_wait: bar must be an int in [0, 15], got 16"),
    "named_barrier_odd_count": ("ValueError", "arrive_count counts threads and must be a multiple of the warp size"),
    # async copies
    "async_load_wrong_shape": ("ValueError", "tlx.async_load: src shape [16] != buffer shape [16, 16]"),
    "async_load_wrong_dtype": ("TypeError", "tlx.async_load: src points to fp32, buffer holds fp16"),
    "async_load_multi_buffer": ("TypeError", "tlx.async_load: pick one buffer with tlx.local_view first"),
    "async_load_size_without_bulk": ("ValueError", "tlx.async_load: bulk_size requires bulk=True"),
    "async_load_other_without_mask": ("ValueError", "tlx.async_load: other requires mask"),
    "bulk_load_2d": ("ValueError", "tlx.async_load(bulk=True): the result buffer must be 1-D"),
    "wait_group_negative": ("ValueError", "tlx.async_load_wait_group: pendings must be a non-negative"),
    "commit_group_not_tokens": ("TypeError", "tlx.async_load_commit_group: tokens must be async tokens"),
    "prefetch_level_l3": ("ValueError", "tlx.prefetch: level must be 'L1' or 'L2', got 'L3'"),
    "prefetch_int_mask": ("TypeError", "tlx.prefetch: mask must be boolean, got int32"),
    # TMA
    "tma_load_block_mismatch": ("ValueError", "descriptor block fp32[16, 16] does not match result buffer"),
    "tma_load_cache_modifier": ("NotImplementedError", "tlx.async_descriptor_load: cache_modifier='.cg' has no PTX"),
    "tma_load_bad_eviction": ("ValueError", "tlx.async_descriptor_load: eviction_policy must be one of"),
    "tma_load_multicast": ("ValueError", "tlx.async_descriptor_load: multicast_targets names CTAs of a cluster, but"),
    "tma_load_into_barrier": ("TypeError", "tlx.async_descriptor_load expects a TLX buffer"),
    "tma_load_offsets_rank": ("ValueError", "tlx.async_descriptor_load: 1 offsets for a rank-2 block"),
    "tma_store_bad_reduce": ("ValueError", "tlx.async_descriptor_store: store_reduce must be one of"),
    "tma_store_wait_negative": ("ValueError", "tlx.async_descriptor_store_wait: pendings must be a non-negative"),
    "tma_prefetch_not_a_descriptor": ("TypeError", "desc must be a tensor descriptor, got scalar"),
    "bulk_store_odd_size": ("ValueError", "tlx.async_store: size=24 must be a positive multiple of 16"),
    "descriptors_zero": ("ValueError", "tlx.allocate_tensor_descriptor: num must be a compile-time int >= 1"),
    "descriptor_bad_padding": ("ValueError", "tlx.make_tensor_descriptor: padding_option must be 'zero' or 'nan'"),
    "descriptor_rank_mismatch": ("ValueError", "shape, strides and block_shape need the same rank, got 2, 2 and 1"),
    # wgmma
    "dot_small_m": ("ValueError", "tlx.async_dot: M=32 must be a positive multiple of 64 (Hopper wgmma)"),
    "dot_inner_mismatch": ("ValueError", "tlx.async_dot: inner dimensions differ: A is [64, 64], B is [32, 64]"),
    "dot_mixed_dtypes": ("TypeError", "tlx.async_dot: A is fp16 but B is bf16"),
    "dot_b_in_registers": ("TypeError", "tlx.async_dot expects a TLX buffer (from tlx.local_alloc), got tensor"),
    "dot_wrong_acc": ("ValueError", "tlx.async_dot: acc must be [64, 64] fp32, got a [64, 32] fp32 tensor"),
    "dot_wait_negative": ("ValueError", "tlx.async_dot_wait: pendings must be a non-negative compile-time int"),
    # utilities and warp ops
    "thread_id_axis_3": ("ValueError", "tlx.thread_id: axis must be 0, 1 or 2, got 3"),
    "fence_cta": ("ValueError", "tlx.fence: scope must be 'gpu', 'sys' or 'async_shared', got 'cta'"),
    "dtype_of_an_int": ("TypeError", "tlx.dtype_of expects a pointer, a tensor, a descriptor or a TLX buffer"),
    "size_of_an_int": ("TypeError", "tlx.size_of expects a dtype, got 3"),
    "fp8_name_of_fp16": ("ValueError", "tlx.get_fp8_format_name only supports"),
    "ballot_bad_mask": ("ValueError", "tlx.vote_ballot_sync: mask must be a compile-time 32-bit lane mask"),
    "ballot_tensor_pred": ("NotImplementedError", "tlx.vote_ballot_sync: pred must be a scalar, got a tensor"),
    # warp specialization: the kernel's 4 warps plus the tasks' must fit a CTA (1024 threads)
    "task_warps_over_cta_limit": ("ValueError", "tlx.async_tasks: the tasks make a CTA of 68 warps (2176 threads): "
                                  "the kernel's num_warps=4 plus 64 for the tlx.async_task copies"),
    "task_replicas_over_cta_limit": ("ValueError", "a CTA of 40 warps (1280 threads)"),  # 4 + 4 (replica) + 4 x 8
    "task_runtime_warps": ("ValueError", "tlx.async_task: num_warps must be a power-of-two compile-time int, "
                           "got int32"),
}


def _innermost(e: BaseException) -> BaseException:
    """The error the op raised: Triton wraps it (CompilationError, InterpreterError) as cause or context."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import InterpreterError
    while isinstance(e, (CompilationError, InterpreterError)) and (e.__cause__ or e.__context__) is not None:
        e = e.__cause__ or e.__context__
    return e


def _errors(run: callable) -> dict[str, list[str]]:
    """``{case: [error type, message]}`` of running each case's kernel with ``run``."""
    import op_check_kernels
    out = {}
    for name in CASES:
        try:
            run(getattr(op_check_kernels, name))
        except Exception as e:  # the op's error, wrapped by Triton
            inner = _innermost(e)
            out[name] = [type(inner).__name__, str(inner)]
        else:
            out[name] = ["no error", ""]
    return out


def _interpret_all() -> dict[str, list[str]]:
    import torch
    x = torch.zeros(4096)
    return _errors(lambda kernel: kernel[(1, )](x))


@pytest.fixture(scope="module")
def compiled() -> dict[str, list[str]]:
    from interp_shim import interpret_mode
    if interpret_mode():
        pytest.skip("this process is interpreted: kernels cannot be compiled here")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    target = GPUTarget("cuda", 90, 32)
    return _errors(lambda kernel: triton.compile(ASTSource(kernel, {"x_ptr": "*fp32"}, {}), target=target))


@pytest.fixture(scope="module")
def interpreted() -> dict[str, list[str]]:
    src = str(HERE.parents[1] / "src")
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, __file__], cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_and_interpreted_errors_match(case, compiled, interpreted):
    kind, words = CASES[case]
    assert compiled[case][0] == kind and words in compiled[case][1], compiled[case]
    assert interpreted[case] == compiled[case]


if __name__ == "__main__":  # the interpreted half, in a process started with TRITON_INTERPRET=1
    sys.path.insert(0, str(HERE))
    print(json.dumps(_interpret_all()))


def test_every_op_registers_its_interpreter_semantics():
    """Ops register themselves where they are written: every ``@tlx_builtin`` has an ``@interprets``."""
    import tritium.tlx as tlx
    from tritium.tlx import interpreter  # noqa: F401  (its ops register themselves)
    from tritium.tlx.emit import BUILTINS, INTERPRETERS

    assert set(tlx.OPS) == set(BUILTINS) == set(INTERPRETERS)
    assert all(getattr(tlx, name) is op for name, op in BUILTINS.items())


def test_typed_builtins_document_their_parameters():
    """Every public TLX op has typed parameters, each described in its docstring's ``Args:`` section."""
    import inspect

    from tritium.tlx.emit import BUILTINS

    for name, op in BUILTINS.items():
        params = [p for p in inspect.signature(op.__wrapped__).parameters.values() if p.name != "_semantic"]
        assert all(p.annotation is not inspect.Parameter.empty for p in params), name
        if params:
            doc = inspect.getdoc(op)
            assert "\nArgs:\n" in doc, name
            args_doc = doc.split("\nArgs:\n", 1)[1]
            assert all(p.name in args_doc for p in params), name
