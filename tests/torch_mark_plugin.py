"""A plugin for the torch-integration tests: its pipeline ``torchmark:mark`` ends each kernel's PTX with a
comment naming the pipeline and the process that compiled it, which the GPU test looks for in the kernels
Inductor compiled."""
import os

from tritium.plugins import Pipeline, Plugin, text_pass

MARK = "// tritium-torchmark pid="


@text_pass("ptx")
def mark_ptx(ptx, ctx):
    return f"{ptx}\n{MARK}{os.getpid()}\n"


tritium_plugin = Plugin("torchmark", "1", pipelines={"mark": Pipeline("mark").insert("ptx", mark_ptx, at="end")})


def worker_state():
    """Run as a job in Inductor's compile workers: what that process sees (pid, pipelines key, active pipeline)."""
    import tritium.plugins as tp
    active = tp.active_pipeline()
    return os.getpid(), tp.pipelines_key()[0], active.origin() if active is not None else None


def compile_ptx():
    """Run as a job in Inductor's compile workers: compile a small kernel for sm_90 there, return its PTX."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels import add_kernel
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        kernel = triton.compile(ASTSource(add_kernel, sig, {"BLOCK": 128}), target=GPUTarget("cuda", 90, 32))
    return kernel.asm["ptx"]
