"""`pipeline_report` lists exactly the passes stock Triton runs, and a no-op pipeline changes nothing."""
import pytest
from triton._C.libtriton import ir
from triton.compiler.compiler import make_backend

import tritium.plugins as tp
from tritium import compat
from tritium.plugins.inspection import compile_kernel, format_report, make_source, parse_target, pipeline_report
from kernels import GLUON_KERNEL, KERNELS

CASES = [(k, t) for k in ("add", "matmul") for t in ("sm90", "gfx950")] + [("matmul", "gfx942")]


def _count_bare(monkeypatch, fn, sig, const, target):
    """Run bare Triton with our own counting patches: the pass-adding calls and pm.run calls."""
    runs = []

    class CountingPM(compat._BasePassManager):
        def __init__(self, ctx):
            super().__init__(ctx)
            self.names = []

        def run(self, mod, name):
            runs.append(list(self.names))
            return super().run(mod, name)

    def counting(name, original):
        def add(pm, *args):
            pm.names.append(name)
            return original(pm, *args)
        return add

    tp.disable()
    try:
        for name, (sub, attr, builder) in compat.PASS_BUILDERS.items():
            monkeypatch.setattr(sub, attr, counting(name, builder.fn))
        monkeypatch.setattr(ir, "pass_manager", CountingPM)
        compile_kernel(fn, sig, target, constexprs=const, options={"num_warps": 4})
    finally:
        monkeypatch.undo()
        tp.enable()
    return runs


@pytest.mark.parametrize("kernel,target", CASES)
def test_listed_passes_match_what_ran(monkeypatch, kernel, target):
    fn, sig, const = KERNELS[kernel]
    import triton
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)
    bare_runs = _count_bare(monkeypatch, fn, sig, const, target)
    _, report = pipeline_report(fn, sig, target, constexprs=const, options={"num_warps": 4},
                                pipeline=tp.Pipeline("noop"))
    listed = [p.name.split("@")[0] for s in report.stages for p in s.passes]
    assert listed == [n for run in bare_runs for n in run]
    assert sum(len(s.pass_manager_runs) for s in report.stages) == len(bare_runs)
    assert [n for s in report.stages for n, _ in s.pass_manager_runs] and len(listed) > 30
    assert "ttgpuir.coalesce" in format_report(report)


@pytest.mark.parametrize("kernel,target", CASES)
def test_noop_pipeline_is_byte_identical(kernel, target):
    fn, sig, const = KERNELS[kernel]
    bare = compile_kernel(fn, sig, target, constexprs=const, pipeline=None)
    with tp.use_pipeline(tp.Pipeline("noop")):
        noop = compile_kernel(fn, sig, target, constexprs=const)
    assert noop.hash != bare.hash  # a different cache entry...
    binary = "cubin" if target == "sm90" else "hsaco"
    text = "ptx" if target == "sm90" else "amdgcn"
    assert noop.asm[binary] == bare.asm[binary]  # ...with exactly the same code
    assert noop.asm[text] == bare.asm[text]


def test_repeated_passes_are_indexed():
    fn, sig, const = KERNELS["matmul"]
    _, report = pipeline_report(fn, sig, "sm90", constexprs=const, pipeline=tp.Pipeline("noop"))
    names = [p.name for p in report.stage("ttgir").passes]
    assert "ttgpuir.coalesce" in names
    repeated = [n for n in names if n.startswith("ttgpuir.remove_layout_conversions")]
    assert len(repeated) >= 3  # 3 on Triton 3.6, 4 on 3.9
    assert repeated == [f"ttgpuir.remove_layout_conversions@{i}" for i in range(1, len(repeated) + 1)]


def test_gluon_kernel_pipeline_is_listed():
    fn, sig, const = GLUON_KERNEL
    kernel, report = pipeline_report(fn, sig, "sm90", constexprs=const, pipeline=tp.Pipeline("noop"))
    # the stages Triton itself makes for Gluon (3.9 adds an identity "glir" stage before ttgir)
    stock = {}
    backend = make_backend(parse_target("sm90"))
    backend.add_stages(stock, backend.parse_options({}), make_source(fn, sig, const).language)
    assert [s.name for s in report.stages] == list(stock)
    assert list(stock)[-4:] == ["ttgir", "llir", "ptx", "cubin"]
    assert "gluon.resolve_auto_encodings" in [p.name for p in report.stage("ttgir").passes]
    bare = compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=None)
    assert kernel.asm["cubin"] == bare.asm["cubin"]
