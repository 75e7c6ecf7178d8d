"""A Triton pass failure during a TLX compile reads as one paragraph: kernel line, TLX op, no IR dump."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tritium.tlx as tlx
from tritium import compat
from tritium.tlx.diagnostics import TLXCompileError, describe, tlx_op_at

SM90 = GPUTarget("cuda", 90, 32)
#: What Triton prints with this failure: 3.6 dumps the IR; 3.7+ fails an assertion in the pass's source.
PRINTED = "tt.func" if compat.TRITON_VERSION < (3, 7) else "NVGPUToLLVMPass.cpp"


# A real failure of Triton's own lowering after TLX lowered fine: tf32 wgmma operands from shared
# memory are accepted by the TTGIR verifier and rejected by ConvertNVGPUToLLVM, which reports only the
# kernel, not the op.
@triton.jit
def _tf32_wgmma(x_ptr):
    a = tlx.local_alloc((64, 32), tl.float32, 1)
    b = tlx.local_alloc((32, 64), tl.float32, 1)
    acc = tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0))
    acc = tlx.async_dot_wait(0, acc)
    tl.store(x_ptr + tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :], acc)


def _compile(kernel=None):
    return triton.compile(ASTSource(kernel or _tf32_wgmma, {"x_ptr": "*fp32"}, {}), target=SM90)


def test_pass_failure_reads_as_one_paragraph_without_ir(capfd):
    with pytest.raises(TLXCompileError) as info:
        _compile()
    err, text = info.value, str(info.value)
    _, first = inspect.getsourcelines(_tf32_wgmma.fn)
    assert "\n" not in text, text
    assert text.startswith("Triton's ConvertNVGPUToLLVM pass failed on TLX kernel '_tf32_wgmma'")
    assert f"{__file__}:{first + 1}" in text and "(`def _tf32_wgmma(x_ptr):`)" in text
    assert "TRITIUM_TLX_DUMP_IR=1" in text
    assert (err.stage, err.pass_name, err.line) == ("llir", "ConvertNVGPUToLLVM", first + 1)
    assert isinstance(err.__cause__, RuntimeError) and "PassManager::run failed" in str(err.__cause__)
    assert PRINTED in err.diagnostics  # what Triton printed (the IR dump, on 3.6) is kept on the exception...
    assert PRINTED not in capfd.readouterr().err  # ...and not printed


def test_kernels_without_tlx_ops_keep_triton_errors():
    """Only TLX compiles are rephrased: a stage failing on another kernel raises Triton's own error."""
    from tritium.tlx.diagnostics import reporting_stage

    def stage(src, metadata):
        raise RuntimeError("PassManager::run failed")

    with pytest.raises(RuntimeError, match="PassManager::run failed"):
        reporting_stage("llir", stage, lambda src: False, {})(object(), {})


# What MLIR printed for a located failure (the unaligned cp.async of issue 8, before tritium fell back
# to a synchronous copy for it), with this file standing in for the kernel's.
_LINE = inspect.currentframe().f_lineno + 1
_SAMPLE_SOURCE = "    tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0))"
_SAMPLE = f"""{__file__}:{_LINE}:33: error: cp.async does not support transfers smaller than 4 bytes; calculated this as 2 bytes
{_SAMPLE_SOURCE}
                                ^
{__file__}:{_LINE}:33: error: failed to legalize operation 'ttg.async_copy_global_to_local' that was explicitly marked illegal
module attributes {{tlx.kernel = 1 : i32}} {{
  tt.func public @unaligned(%arg0: !tt.ptr<f16>) {{
  }}
}}
{__file__}:7:0: error: Failures have been detected while processing an MLIR pass pipeline
{__file__}:7:0: note: Pipeline failed while executing [`ConvertTritonGPUToLLVM` on 'builtin.module' operation]: reproducer generated at `std::errs`
"""


def test_located_failure_names_line_and_tlx_op():
    err = describe(RuntimeError("PassManager::run failed"), _SAMPLE, "llir", "unaligned")
    text = str(err)
    assert "\n" not in text and "tt.func" not in text
    assert text.startswith("Triton's ConvertTritonGPUToLLVM pass failed on TLX kernel 'unaligned' at "
                           f"{__file__}:{_LINE} (`_SAMPLE_SOURCE = ")
    assert "`, tlx.async_load): cp.async" in text
    assert "cp.async does not support transfers smaller than 4 bytes; calculated this as 2 bytes" in text
    assert (err.line, err.pass_name, err.op) == (_LINE, "ConvertTritonGPUToLLVM", "async_load")


def test_dump_ir_when_asked(tmp_path):
    """With TRITIUM_TLX_DUMP_IR=1 the diagnostics Triton printed (the IR, on 3.6) reach stderr."""
    script = tmp_path / "dump.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import test_pass_errors as t
        from tritium.tlx.diagnostics import TLXCompileError
        try:
            t._compile()
        except TLXCompileError as e:
            print("REPHRASED", e.op)
    """))
    env = {**os.environ, "TRITIUM_TLX_DUMP_IR": "1"}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert "REPHRASED None" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert PRINTED in proc.stderr and "NVGPUToLLVM" in proc.stderr


def test_a_stage_that_succeeds_prints_what_it_printed(capfd):
    """The stderr capture is transparent when a stage succeeds: what it printed is written back."""
    from tritium.tlx.diagnostics import reporting_stage

    def stage(src, metadata):
        os.write(2, b"warning from C++\n")
        return "ok"

    run = reporting_stage("llir", stage, lambda src: True, {})
    assert run(object(), {}) == "ok"
    assert capfd.readouterr().err == "warning from C++\n"


@pytest.mark.parametrize("line, col, op", [
    ("    tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0))", 20, "async_load"),
    ("    tlx.async_load(x_ptr + offs, tlx.local_view(buf, 0))", 45, "local_view"),
    ("    acc = tl.dot(a, b)", 10, None),
])
def test_tlx_op_at_column(line, col, op):
    assert tlx_op_at(line, col) == op


def test_a_tritium_pass_whose_ir_mlir_rejects_is_named_as_such():
    from tritium.plugins.errors import PassError
    cause = PassError("raised RuntimeError: Parse MLIR file failed", plugin="tlx", pass_name="tlx.lower_placeholders",
                      stage="ttgir", dump=None)
    diagnostics = f"{__file__}:{_LINE}:33: error: use of undeclared SSA value name\n"
    err = describe(cause, diagnostics, "ttgir", "k")
    assert str(err).startswith(f"tritium's tlx.lower_placeholders pass failed on TLX kernel 'k' at {__file__}:{_LINE}")
    assert err.op == "async_load" and err.pass_name == "tlx.lower_placeholders"
