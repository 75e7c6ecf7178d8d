"""Triton differences between 3.6 and 3.9 that tritium switches on (see tritium/compat.py), checked
against the installed wheel so that a new Triton that changes them fails here, by name."""
import inspect

import pytest
from triton._C.libtriton import llvm

from tritium import compat

VALID_LLIR = """target triple = "nvptx64-nvidia-cuda"
define void @k() {
  ret void
}
"""


def test_translate_to_asm_arguments():
    """``llvm_ir_parse_error`` calls ``translate_to_asm`` with this Triton's arguments (3.8 added canonicalize_gep)."""
    doc = llvm.translate_to_asm.__doc__ or ""
    assert ("canonicalize_gep" in doc or doc.count("bool") == 3) == compat.LLVM_TRANSLATE_CANONICALIZE_GEP, doc


@pytest.mark.skipif(__import__("os").name != "posix", reason="the parse check's helper is waited on with select()")
def test_llvm_ir_parse_error_tells_valid_from_broken_ir(monkeypatch):
    def no_fork():
        raise AssertionError("os.fork() of a (possibly threaded) process")
    monkeypatch.setattr("os.fork", no_fork)
    assert compat.llvm_ir_parse_error(VALID_LLIR) is None
    why = compat.llvm_ir_parse_error(VALID_LLIR.replace("define", "defin"))
    assert why and "parse" in why


def test_make_tensordesc_arg_parameters():
    """``descriptor_args`` calls NVIDIA's ``make_tensordesc_arg`` with this Triton's parameters."""
    from triton.backends.nvidia.driver import make_tensordesc_arg
    params = list(inspect.signature(make_tensordesc_arg).parameters)
    assert params == (["arg", "metadata", "_"] if compat.TENSORDESC_ARG_BASE_ARGS else ["arg", "metadata"]), params



def test_ptxas_for_sm90_assembles_this_tritons_ptx(tmp_path):
    """``compat.ptxas_path(90)`` accepts the PTX (and its ``.version``) Triton emits for sm_90."""
    import subprocess

    from kernels import KERNELS  # tests/ is on the path (conftest.py)
    from tritium.plugins.inspection import compile_kernel
    fn, sig, const = KERNELS["add"]
    ptx = tmp_path / "k.ptx"
    ptx.write_text(compile_kernel(fn, sig, "sm90", constexprs=const).asm["ptx"])
    run = subprocess.run([compat.ptxas_path(90), "-arch=sm_90a", str(ptx), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_parse_module_reads_back_the_llvm_dialect_this_triton_prints():
    """``parse_module`` reparses forms the installed Triton prints but its own parser rejects: 3.6's void
    ``llvm.call_intrinsic`` with a result, 3.7's ``nvvm.barrier`` with a location (read as its reduction)."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    ctx = ir.context()
    ir.load_dialects(ctx)
    CUDABackend(GPUTarget("cuda", 90, 32)).load_dialects(ctx)
    text = """module {
  llvm.func @k(%a: i32, %b: i32) {
    %0 = llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.all"(%a) : (i32) -> !llvm.void loc(#loc1)
    nvvm.barrier id = %a number_of_threads = %b loc(#loc1)
    nvvm.barrier id = %b loc(#loc1)
    llvm.return loc(#loc1)
  } loc(#loc1)
} loc(#loc1)
#loc1 = loc("k.py":3:4)
"""
    printed = str(compat.parse_module(text, ctx))
    assert 'llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.all"(%arg0) : (i32) -> ()' in printed
    assert "nvvm.barrier id = %arg0 number_of_threads = %arg1 loc(#loc" in printed
    assert "nvvm.barrier id = %arg1 loc(#loc" in printed and '"k.py":3:4' in printed
