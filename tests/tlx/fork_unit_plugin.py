"""A pytest plugin that runs the TLX fork's own unit tests, ported by import, on tritium (issue 21).

scripts/fork_unit_tests.py extracts the fork's ``test_tlx_*.py`` into a cache, renames
``triton.language.extra.tlx`` to ``tritium.tlx`` in their imports, and runs pytest on them with
``-p fork_unit_plugin``. This plugin supplies what the fork's conftest and its Triton would:

* the ``device`` fixture (``"cpu"``: there is no GPU) and the fork conftest's knob fixtures;
* the target: ``$TRITIUM_FORK_UNIT_TARGET`` (``sm90`` or ``gfx950``) answers Triton's device queries
  through fork_conformance's stand-in driver, and also the tests' hardware gates (``is_hopper_or_newer()``,
  ``is_hip_cdna4()``), which stock answers ``False`` when interpreting and, from Triton 3.9, whenever no
  real backend's driver is active (no GPU here), so every mode runs the tests of that target;
* ``triton.runtime.fbcode_gating``, a fork-only module that only says whether the run is inside Meta's
  monorepo (it is not), and ``tritium.tlx.tutorials`` from the same commit of the fork.

Tests that cannot run here are skipped by :func:`exclusion`, one rule with a reason each, and tests of what
tritium refuses on purpose by :data:`REFUSED`. Clusters (``ctas_per_cga=``) compile in compile mode as on the GPU;
a test that asks for a cluster along y or z, which tritium's option refuses, fails there with the option's error
(a gap of tritium's, counted as a failure, not excluded). Every test's outcome, and in compile mode how many kernels it
compiled and launched and its first compile error, is written as a JSON line to ``$TRITIUM_FORK_UNIT_RESULTS``: in compile mode nothing launches, so a test that checks computed values
fails by construction, and what counts is whether its kernels compiled.
"""
from __future__ import annotations

import inspect
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fork_conformance as fc  # noqa: E402

TARGETS = {"sm90": fc.SM90, "gfx950": fc.GFX950}
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
EXCLUDED = "excluded: "  # the prefix of every skip reason this plugin gives

#: Fork-only Triton options, launch paths and modules, and targets outside this port: (source text, reason).
_FORK_ONLY = [
    ("minRegAutoWS", "fork-only Triton option minRegAutoWS= (its automatic warp specialization)"),
    ("maxRegAutoWS", "fork-only Triton option maxRegAutoWS= (its automatic warp specialization)"),
    ("reverse_local_assignment", "fork-only Triton option reverse_local_assignment="),
    ("enable_sched_group_barrier", "fork-only AMD option enable_sched_group_barrier*= (its C++ scheduler)"),
    ("triton.language.extra.tlx.mem_ops", "imports the fork's internal module tlx.mem_ops"),
    ("tritium.tlx.mem_ops", "imports the fork's internal module tlx.mem_ops"),
    ("tlx.compiler", "uses the fork's C++ compiler-pass package tlx.compiler"),
    ("gluon.jit", "a Gluon kernel: it tests the fork's changes to Triton itself (semantic.dot), not TLX"),
    ("compile_for_gfx1250", "compiles for gfx1250, which is neither sm_90 nor CDNA (the targets of this port)"),
]
#: Host code that needs a real GPU: (regex on the test's source, reason). Device queries, ``synchronize``
#: and tensors asked for on ``"cuda"`` are answered by the stand-in (:func:`_cuda_on_cpu`).
_NEEDS_GPU = [
    (re.compile(r"torch\.cuda\.(?!get_device_capability|get_device_properties|is_available|current_device|"
                r"synchronize)\w+"), "needs a GPU: reads torch.cuda's memory statistics"),
    (re.compile(r"\.is_cuda\b"), "needs a GPU: checks that its tensors are on CUDA (tensor.is_cuda)"),
    (re.compile(r"\bsubprocess\b|\bmultiprocessing\b"),
     "runs the fork's code in a child process (an unported import of triton.language.extra.tlx)"),
]
#: Under the interpreter only: what only a compiler makes or a GPU launches (the compile modes run them).
_COMPILE_ONLY = [
    (re.compile(r"\bctas_per_cga\b"),
     "launches a multi-CTA cluster (ctas_per_cga=): the interpreter runs clusters of one CTA, and refuses cluster "
     "ops in such a launch"),
    (re.compile(r"\.asm\b"), "checks the compiled IR (.asm), which the interpreter does not make"),
    (re.compile(r"\bASTSource\b|\btriton\.compile\b|\.warmup\("),
     "compiles a kernel itself (ASTSource, triton.compile, warmup), which the interpreter does not"),
    (re.compile(r"\btlx\.(thread_id|vote_ballot_sync)\b"),
     "checks per-thread values: the interpreter runs each program as one thread (every thread_id is 0)"),
    (re.compile(r"\bCompilationError\b"),
     "expects a CompilationError: under the interpreter stock Triton reports a kernel's error as InterpreterError"),
]

_REGISTERS = ("tritium refuses registers= on the default task: stock Triton 3.6's ttg.warp_specialize has no "
              "register request for the default region")
#: Tests of what tritium refuses on purpose, with its reason (docs/tlx-coverage.md): test function -> (modes, why).
#: Modes: "compile" (refused when compiling; the interpreter runs them) or "both".
REFUSED = {
    "test_default_task_register_budget": ("both", _REGISTERS),
    "test_default_task_accepts_registers": ("both", _REGISTERS),
    "test_named_barrier_wait_1warp_async_deadlock_single_proc": (
        "both", "tritium refuses a named barrier with fewer arrivals than the threads that wait on it (the fork "
                "lets it hang)"),
    "test_local_scatter": ("compile", "tritium refuses tlx.local_scatter tiles whose emulation (stock Triton has no "
                                      "scatter op) would compare more than 65536 elements"),
    "test_store_ws": ("compile", "tritium refuses warp-specialized kernels with num_ctas > 1"),
    "test_async_tasks_warp_group_start_ids": (
        "compile", "tritium refuses warp_group_start_id values other than those stock Triton's warp allocation gives"),
    "test_require_layout_pins_epilogue_store_amd": (
        "compile", "tritium refuses tlx.assert_same_layout on a register layout that stock passes choose after "
                   "TLX's lowering"),
    "test_local_slice_runtime_offset_compiles_gfx950": (
        "compile", "a runtime local_slice offset needs the fork's ttg.memdesc_dynamic_subslice (stock 3.6 has none)"),
    "test_local_slice_runtime_offset_correct_gfx950": (
        "compile", "a runtime local_slice offset needs the fork's ttg.memdesc_dynamic_subslice (stock 3.6 has none)"),
}


def _fork_api() -> set[str]:
    """The names fbtriton 3.7.4's ``tlx`` exports (what this port covers; scripts/tlx_coverage.py's list)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("tlx_coverage", fc.REPO / "scripts" / "tlx_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.FORK_NAMES)


def _fork_code(obj: Any, test_module: str) -> bool:
    """Whether ``obj`` is the fork's code: defined in the test module or in one of its tutorials."""
    module = getattr(getattr(obj, "fn", obj), "__module__", None) or ""
    return module == test_module or module.startswith(fc.TUTORIALS_PACKAGE + ".")


def _source_closure(fn: Any) -> str:
    """The source of a test function and of every function or kernel of the fork's it reaches (its module's
    and its tutorials')."""
    seen: set[int] = set()
    texts = []
    todo = [fn]
    while todo:
        f = todo.pop()
        f = getattr(f, "fn", f)  # a JITFunction's Python function
        f = getattr(f, "fn", f)  # an Autotuner's JITFunction
        if id(f) in seen or not callable(f):
            continue
        seen.add(id(f))
        try:
            texts.append(inspect.getsource(f))
        except (OSError, TypeError):
            continue
        code = getattr(f, "__code__", None)
        names = set(code.co_names) if code else set()
        for const in code.co_consts if code else ():
            if isinstance(const, types.CodeType):
                names |= set(const.co_names)
        scope = getattr(f, "__globals__", {})
        todo += [scope[n] for n in names if n in scope and _fork_code(scope[n], fn.__module__)]
    return "\n".join(texts)


_TLX_ATTR = re.compile(r"\btlx\.([A-Za-z_]\w*)")


def exclusion(fn: Any, fork_api: set[str]) -> Optional[str]:
    """Why the fork's test ``fn`` cannot run on tritium without a GPU, or ``None``: the one rule.

    In order: fork-only Triton options, launch paths and modules; TLX ops that tritium refuses on purpose
    (``tlx/unsupported.py``: Blackwell or gfx1250 hardware); TLX ops newer than the 3.7.4 API (a ``tlx.X`` that is
    neither in ``tritium.tlx`` nor in fbtriton 3.7.4's exports; one missing from tritium only is a gap,
    not an exclusion); host code that needs a GPU; under the interpreter, checks of compiled IR or of a
    CompilationError.
    """
    import tritium.tlx as tlx
    from tritium.tlx import unsupported
    text = _source_closure(fn)
    for needle, reason in _FORK_ONLY:
        if needle in text:
            return reason
    used = set(_TLX_ATTR.findall(text))
    refused = sorted(m for m in used if isinstance(getattr(tlx, m, None), unsupported.UnsupportedOp))
    if refused:
        return f"uses tlx.{refused[0]}, which tritium refuses: it {unsupported.REASONS[refused[0]]}"
    newer = sorted(m for m in used if not hasattr(tlx, m) and m not in fork_api)
    if newer:
        return "TLX op newer than the 3.7.4 API: " + ", ".join(f"tlx.{m}" for m in newer)
    for pattern, reason in _NEEDS_GPU + (_COMPILE_ONLY if INTERPRET else []):
        if pattern.search(text):
            return reason
    return None


# --------------------------------------------------------------------------------------------
# What the fork's Triton and conftest supply
# --------------------------------------------------------------------------------------------
def _fbcode_gating() -> None:
    module = types.ModuleType("triton.runtime.fbcode_gating")
    module.is_fbcode_dependant = lambda: False
    sys.modules["triton.runtime.fbcode_gating"] = module
    import triton.runtime
    triton.runtime.fbcode_gating = module


def _cuda_on_cpu() -> Any:
    """A torch function mode that makes tensors asked for on ``"cuda"`` on the CPU instead.

    The stand-in device is the CPU (``get_active_torch_device()``); tests that name ``"cuda"`` themselves
    rather than take the ``device`` fixture get their tensors there too, as they would on the fork's GPU.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    def cpu(value: Any) -> Any:
        return "cpu" if isinstance(value, (str, torch.device)) and str(value).startswith("cuda") else value

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Optional[dict] = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            if func is torch.Tensor.to:
                args = tuple(cpu(a) for a in args)
            return func(*args, **kwargs)

    return CudaOnCpu()


class _Recorder:
    """Every ``triton.compile`` call of the running test: the kernel's name and the error, if any."""

    def __init__(self) -> None:
        self.kernels: list[tuple[str, str]] = []

    def wrap(self, compile_fn: Any) -> Any:
        def compile(src: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(getattr(src, "fn", None), "__name__", None) or getattr(src, "name", "?")
            try:
                kernel = compile_fn(src, *args, **kwargs)
            except Exception as e:
                self.kernels.append((name, fc._error_line(e)))
                raise
            self.kernels.append((name, ""))
            return kernel
        return compile


_STATE: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    target = TARGETS[os.environ.get("TRITIUM_FORK_UNIT_TARGET", "sm90")]
    _fbcode_gating()
    stand_in = fc.device_stand_in(target)
    stand_in_driver = stand_in.__enter__()
    import torch
    no_sync = fc._patched(torch.cuda, {"synchronize": lambda *a, **k: None})  # nothing runs asynchronously here
    no_sync.__enter__()
    on_cpu = _cuda_on_cpu()
    on_cpu.__enter__()
    tutorials = os.environ.get("TRITIUM_FORK_UNIT_TUTORIALS")
    package = fc.tutorials_package(Path(tutorials)) if tutorials else None
    if package is not None:
        package.__enter__()
    import triton.compiler
    import triton.compiler.compiler
    import triton._internal_testing as it
    recorder = _Recorder()
    wrapped = recorder.wrap(triton.compiler.compiler.compile)
    triton.compiler.compile = triton.compiler.compiler.compile = wrapped
    from triton.runtime import driver
    it.get_current_target = lambda: driver.active.get_current_target()  # the stand-in's (see the docstring)
    _STATE.update(recorder=recorder, driver=stand_in_driver, fork_api=_fork_api(), out=os.environ.get("TRITIUM_FORK_UNIT_RESULTS"),
                  contexts=[c for c in (on_cpu, no_sync, package, stand_in) if c is not None])


def pytest_unconfigure(config: pytest.Config) -> None:
    for context in _STATE.get("contexts", []):
        context.__exit__(None, None, None)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        fn = getattr(item, "function", None)
        modes, refused = REFUSED.get(getattr(item, "originalname", item.name), ("", None))
        if refused and (modes == "both" or not INTERPRET):
            reason = refused
        else:
            reason = exclusion(fn, _STATE["fork_api"]) if fn is not None else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=EXCLUDED + reason))


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _STATE["recorder"].kernels.clear()
    _STATE["driver"].launched.clear()


def _record(item_id: str, outcome: str, detail: str) -> None:
    if not _STATE.get("out"):
        return
    kernels = _STATE["recorder"].kernels
    errors = [e for _, e in kernels if e]
    with open(_STATE["out"], "a") as f:
        # launched: launches of compiled kernels, also from the JIT's cache (a test's second parameter set)
        f.write(json.dumps({"test": item_id, "outcome": outcome, "detail": detail[:300],
                            "compiled": len(kernels) - len(errors), "launched": len(_STATE["driver"].launched),
                            "compile_errors": errors[:1]}) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            if hasattr(report, "wasxfail"):
                _record(item.nodeid, "xfailed", report.wasxfail)
            else:
                _record(item.nodeid, "excluded" if EXCLUDED in reason else "skipped", reason)
        elif report.failed:
            detail = report.longrepr.reprcrash.message if hasattr(report.longrepr, "reprcrash") else str(report.longrepr)
            _record(item.nodeid, "error" if report.when == "setup" else "failed", detail)
        else:
            _record(item.nodeid, "passed", "")


# --------------------------------------------------------------------------------------------
# The fork conftest's fixtures
# --------------------------------------------------------------------------------------------
@pytest.fixture
def device() -> str:
    """Where the tests put their tensors: the CPU (compile mode launches nothing; the interpreter runs there)."""
    return "cpu"


@pytest.fixture
def fresh_triton_cache() -> Any:
    from triton import knobs
    with tempfile.TemporaryDirectory() as tmpdir:
        with knobs.cache.scope(), knobs.runtime.scope():
            knobs.cache.dir = tmpdir
            yield tmpdir


@pytest.fixture
def fresh_knobs() -> Any:
    from triton._internal_testing import _fresh_knobs_impl
    fresh, reset = _fresh_knobs_impl(skipped_attr={"build", "nvidia", "amd"})
    try:
        yield fresh()
    finally:
        reset()


@pytest.fixture
def with_allocator() -> Any:
    import triton
    from triton._internal_testing import default_alloc_fn
    from triton.runtime._allocation import NullAllocator
    triton.set_allocator(default_alloc_fn)
    try:
        yield
    finally:
        triton.set_allocator(NullAllocator())
