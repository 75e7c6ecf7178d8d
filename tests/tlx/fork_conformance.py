"""Conformance of tritium's TLX with the TLX fork's own tutorial kernels (issue 8).

The fork (facebookexperimental/triton, published as the ``fbtriton`` wheel) ships its tutorials
inside the wheel, under ``triton/language/extra/tlx/tutorials``. They are not copied into this
repository: :func:`find_tutorials` finds them at test time, in this order:

* ``$TRITIUM_FORK_TUTORIALS`` (a tutorials directory);
* ``.fork-cache/fbtriton-<version>/`` at the repository root, filled by ``scripts/fetch_fork_tlx.sh``
  (``pip download fbtriton==<version> --no-deps`` and unzip of only the TLX package);
* an installed fork next to this checkout (``/work/venv-fb``, or ``$TRITIUM_FORK_VENV``).

A few tutorials are newer than the wheel; they come from a git copy of the fork's repository
(``$TRITIUM_FORK_GIT``, see :func:`find_mirror_tutorials`) and are reported unavailable without one.

Each tutorial module is loaded with one change: the TLX package ``triton.language.extra.tlx`` is
renamed ``tritium.tlx`` in its import lines; tutorials that import siblings find them as
``tritium.tlx.tutorials.X`` (:func:`tutorials_package`, the harness's, ported the same way).
Tutorials query the device when imported (``driver.active.get_active_torch_device()``) and in their
host code (``torch.cuda`` properties), so they run under :class:`StandInDriver`, which answers for
the target and, in compile mode, launches nothing: the tutorial's own host code builds its
arguments, descriptors and grids, autotuning keeps the first eligible config, and Triton compiles
the kernel for the target. In interpreter mode (``TRITON_INTERPRET=1``, a separate process) the
host code runs the kernel on CPU tensors and the result is compared with torch.

``python tests/tlx/fork_conformance.py {compile,interpret,gpu} [names...]`` prints one JSON line per case;
test_fork_conformance.py reads them. Expected failures, with reasons, are :data:`KNOWN_FAILURES`.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, Optional

FORK_VERSION = "3.7.4"
REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".fork-cache" / f"fbtriton-{FORK_VERSION}"
WHEEL_TUTORIALS = "triton/language/extra/tlx/tutorials"

SM90 = ("cuda", 90, 32)
GFX942 = ("hip", "gfx942", 64)
GFX950 = ("hip", "gfx950", 64)


# --------------------------------------------------------------------------------------------
# Where the fork's files are
# --------------------------------------------------------------------------------------------
def _installed_fork_roots() -> list[Path]:
    venvs = [os.environ.get("TRITIUM_FORK_VENV"), "/work/venv-fb"]
    return [site for v in venvs if v for site in sorted(Path(v).glob("lib/python3*/site-packages"))]


def find_tutorials() -> tuple[Optional[Path], str]:
    """The fork's tutorials directory, or ``None`` and why it is not available."""
    candidates = []
    if os.environ.get("TRITIUM_FORK_TUTORIALS"):
        candidates.append(Path(os.environ["TRITIUM_FORK_TUTORIALS"]))
    candidates.append(CACHE / WHEEL_TUTORIALS)
    candidates += [root / WHEEL_TUTORIALS for root in _installed_fork_roots()]
    for path in candidates:
        if (path / "hopper_gemm_pipelined.py").is_file():
            return path, ""
    return None, (f"the TLX fork's tutorials (fbtriton=={FORK_VERSION}) are not available: run "
                  f"scripts/fetch_fork_tlx.sh (pip download + unzip into {CACHE.relative_to(REPO)}), or set "
                  "TRITIUM_FORK_TUTORIALS to a tutorials directory; looked in "
                  + ", ".join(str(c) for c in candidates))


MIRROR_ENV = "TRITIUM_FORK_GIT"
_DEFAULT_MIRROR = Path("/work/.mirror/facebookexperimental+triton/repo")
MIRROR_TUTORIALS = "third_party/tlx/tutorials"


def find_mirror_tutorials() -> tuple[Optional[Path], str]:
    """The tutorials of a git checkout or mirror of the fork (``$TRITIUM_FORK_GIT``), exported once.

    Some tutorials (the gfx942 GEMM/BMM/addmm family) are newer than the 3.7.4 wheel; they run only
    where such a copy of the fork's repository exists, and are skipped, saying so, elsewhere.
    """
    git_dir = Path(os.environ.get(MIRROR_ENV) or _DEFAULT_MIRROR)
    if not git_dir.exists():
        return None, (f"tutorials newer than fbtriton=={FORK_VERSION} need a git copy of the fork: set "
                      f"{MIRROR_ENV} to one (looked in {git_dir})")
    try:
        commit = subprocess.run(["git", "-C", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dest = REPO / ".fork-cache" / f"git-{commit[:12]}"
        if not (dest / MIRROR_TUTORIALS / "hopper_gemm_pipelined.py").is_file():
            export_git_paths(git_dir, "HEAD", [MIRROR_TUTORIALS], dest)
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as e:
        return None, f"could not export the tutorials from {git_dir}: {e}"
    return dest / MIRROR_TUTORIALS, ""


def export_git_paths(git_dir: Path, rev: str, paths: list[str], dest: Path,
                     keep: Optional[Callable[[str], bool]] = None, edit: Optional[Callable[[Path], None]] = None) -> None:
    """Write ``paths`` at revision ``rev`` of the git repository ``git_dir`` (bare or not) to ``dest``: the members
    whose names ``keep`` accepts (all without it), then ``edit`` on the copy, in a sibling folder renamed to
    ``dest`` last, so that a failed export leaves no half-written copy there. Shared by every copy of fork sources
    that comes from git (here, scripts/fork_unit_tests.py, scripts/codegen_parity/dump.py). Raises OSError,
    ``subprocess.CalledProcessError`` or ``tarfile.TarError``."""
    archive = subprocess.run(["git", "-C", str(git_dir), "archive", rev, *paths], capture_output=True,
                             check=True).stdout
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + "."))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, [m for m in tar.getmembers() if keep is None or keep(m.name)], filter="data")
    if edit is not None:
        edit(tmp)
    tmp.rename(dest)


def find_fork_init() -> Optional[Path]:
    """The fork's ``triton/language/extra/tlx/__init__.py`` (for its exported names), if available."""
    tutorials, _ = find_tutorials()
    if tutorials is not None and (tutorials.parent / "__init__.py").is_file():
        return tutorials.parent / "__init__.py"
    return None


_TLX_IMPORT = re.compile(r"\btriton\.language\.extra\.tlx\b")


def port_source(text: str) -> str:
    """The tutorial with its TLX imports pointing at tritium (the only change made to it)."""
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("import ", "from ")):
            line = _TLX_IMPORT.sub("tritium.tlx", line)
        out.append(line)
    return "".join(out)


# --------------------------------------------------------------------------------------------
# A stand-in for the GPU driver
# --------------------------------------------------------------------------------------------
#: Per target: shared memory per block, SM/CU count (the numbers of an H100/H200, MI300X, MI355X).
_DEVICE = {SM90: (232448, 132), GFX942: (65536, 304), GFX950: (163840, 256)}


def _target(target: tuple) -> Any:
    """A ``GPUTarget`` that also answers the fork's ``is_cuda_backend()``/``is_hip_backend()``.

    The fork's Triton adds those two methods; tutorials call them on the current target at import.
    They are Triton's API, not TLX's, so the stand-in supplies them rather than tritium.
    """
    from dataclasses import dataclass as _dc
    from triton.backends.compiler import GPUTarget

    @_dc(frozen=True)
    class ForkGPUTarget(GPUTarget):
        def is_cuda_backend(self) -> bool:
            return self.backend == "cuda"

        def is_hip_backend(self) -> bool:
            return self.backend == "hip"

    return ForkGPUTarget(*target)


class StandInDriver:
    """Answers Triton's and the tutorials' device questions for ``target``; launches record and return.

    Only the methods Triton's JIT, autotuner and ``CompiledKernel`` call, plus
    ``get_active_torch_device`` (CPU: the tensors live there).
    """

    def __init__(self, target: tuple) -> None:
        import torch
        self.target = _target(target)
        self.shared, self.sms = _DEVICE[target]
        self.launched: list[str] = []
        self.utils = SimpleNamespace(load_binary=self._load_binary, get_device_properties=self._properties)
        self.torch_device = torch.device("cpu")

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    def get_active_torch_device(self) -> Any:
        return self.torch_device

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_interface(self) -> Any:
        import torch
        return torch.cuda

    def get_benchmarker(self) -> Callable[..., Any]:
        return _untimed

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch
        return torch.empty(0)

    def clear_cache(self, cache: Any) -> None:
        pass

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty

    def _properties(self, device: Any = None) -> dict:
        return {"max_shared_mem": self.shared, "multiprocessor_count": self.sms}

    def _load_binary(self, name: str, kernel: Any, shared: int, device: Any) -> tuple:
        return (None, None, 0, 0, 1024)

    def launcher_cls(self, src: Any, metadata: Any) -> Callable[..., None]:
        name = getattr(getattr(src, "fn", None), "__name__", str(src))

        def launch(*args: Any) -> None:
            self.launched.append(name)

        return launch


def _untimed(kernel_call: Callable[[], Any], quantiles: Any = None, **kw: Any) -> Any:
    """A benchmarker that measures nothing: every config ties, so the autotuner keeps the first eligible one."""
    return [1.0, 1.0, 1.0] if quantiles else 1.0


@contextlib.contextmanager
def _patched(obj: Any, values: dict) -> Any:
    saved = {k: getattr(obj, k) for k in values}
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(obj, k, v)


@contextlib.contextmanager
def first_config_autotuning(active_driver: Any) -> Any:
    """Autotuners keep their first eligible config instead of timing every one (seconds, not minutes)."""
    import triton.testing
    # Autotuners built with use_cuda_graph=True bind triton.testing.do_bench_cudagraph when decorated.
    with _patched(triton.testing, {"do_bench": _untimed, "do_bench_cudagraph": _untimed}), \
            _patched(active_driver, {"get_benchmarker": lambda: _untimed}):
        yield


@contextlib.contextmanager
def device_stand_in(target: tuple) -> Any:
    """Triton's active driver and ``torch.cuda``'s device queries answer for ``target``."""
    import torch
    from triton.compiler.compiler import max_shared_mem
    from triton.runtime import driver
    stand_in = StandInDriver(target)
    props = SimpleNamespace(multi_processor_count=stand_in.sms, name=f"stand-in {target[1]}",
                            gcnArchName=str(target[1]), total_memory=80 << 30)
    patches = {"get_device_properties": lambda *a, **k: props,
               "get_device_capability": lambda *a, **k: (9, 0) if target == SM90 else (9, 4),
               "is_available": lambda: False, "current_device": lambda: 0}
    saved_active = driver._active
    driver.set_active(stand_in)
    # Triton caches the device's shared memory per device index: a case must not see another target's
    max_shared_mem.cache_clear()
    try:
        with _patched(torch.cuda, patches), first_config_autotuning(stand_in):
            yield stand_in
    finally:
        driver._active = saved_active
        max_shared_mem.cache_clear()


#: Where tutorials import each other from once ported (``triton.language.extra.tlx.tutorials.X``).
TUTORIALS_PACKAGE = "tritium.tlx.tutorials"


class _PortedTutorials(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``tritium.tlx.tutorials[.X...]`` from a tutorials directory, each module ported.

    Tutorials import helpers from sibling tutorials; ported, those imports name this package. It is
    the harness's, not tritium's: tritium ships no tutorials.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != TUTORIALS_PACKAGE and not name.startswith(TUTORIALS_PACKAGE + "."):
            return None
        rel = Path(*name.split(".")[3:])
        package = (self.root / rel).is_dir()
        file = self.root / rel / "__init__.py" if package else (self.root / rel).with_suffix(".py")
        if not package and not file.is_file():
            return None
        spec = importlib.util.spec_from_loader(name, self, origin=str(file), is_package=package)
        spec.has_location = True
        return spec

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        file = Path(module.__spec__.origin)
        module.__file__ = str(file)
        if module.__spec__.submodule_search_locations is not None:
            module.__path__ = [str(file.parent)]
        if file.is_file():
            # dont_inherit: this module's `from __future__ import annotations` must not reach the tutorial
            exec(compile(port_source(file.read_text()), str(file), "exec", dont_inherit=True), module.__dict__)


@contextlib.contextmanager
def tutorials_package(root: Path) -> Any:
    """Make ``tritium.tlx.tutorials`` the ported tutorials of ``root`` while the block runs."""
    finder = _PortedTutorials(root)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == TUTORIALS_PACKAGE or n.startswith(TUTORIALS_PACKAGE + ".")]:
            del sys.modules[name]


def load_tutorial(root: Path, file: str) -> ModuleType:
    """Import tutorial ``file`` of ``root``, ported (call under :func:`device_stand_in`, :func:`tutorials_package`)."""
    return importlib.import_module(TUTORIALS_PACKAGE + "." + file[:-len(".py")].replace("/", "."))


# --------------------------------------------------------------------------------------------
# The cases: which tutorial, which target, how its host code is called, what torch says
# --------------------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    file: str  # relative to the tutorials directory
    target: tuple
    run: Callable[[ModuleType, Any], tuple[Any, Any]]  # (module, torch) -> (result, reference)
    interpret: bool = True  # cheap enough for the interpreter
    atol: float = 1e-2
    rtol: float = 1e-2
    source: str = "wheel"  # "wheel": fbtriton's tutorials; "git": a git copy of the fork (newer tutorials)


#: Where case inputs go: the CPU (compile and interpreter modes) or the GPU (gpu mode, see run_case).
_INPUT_DEVICE = ["cpu"]


def _on(*xs: Any) -> Any:
    """Inputs made on the CPU (so every mode sees the same numbers), moved to the mode's device."""
    moved = tuple(x.to(_INPUT_DEVICE[0]) for x in xs)
    return moved if len(moved) > 1 else moved[0]


def _gemm(fn: str, M: int, N: int, K: int, **kw: Any) -> Callable[[ModuleType, Any], tuple[Any, Any]]:
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(0)
        a, b = _on(torch.randn((M, K), generator=g).half(), torch.randn((K, N), generator=g).half())
        return getattr(mod, fn)(a, b, **kw), (a.float() @ b.float()).half()
    return run


def _add2(fn: str) -> Callable[[ModuleType, Any], tuple[Any, Any]]:
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(0)
        x, y, a, b = _on(*(torch.rand(3000, generator=g) for _ in range(4)))  # 3000: a ragged last block
        return torch.cat(getattr(mod, fn)(x, y, a, b)), torch.cat((x + y, a + b))
    return run


def _attention(fn: str, Z: int, H: int, N: int, D: int, *extra: Any,
               dtype: str = "float16") -> Callable[[ModuleType, Any], tuple[Any, Any]]:
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(0)
        q, k, v = _on(*(torch.randn((Z, H, N, D), generator=g).to(getattr(torch, dtype)) for _ in range(3)))
        scale = 1.0 / math.sqrt(D)
        causal = bool(extra and extra[0])
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale,
                                                               is_causal=causal)
        return getattr(mod, fn)(q, k, v, scale, *extra), ref
    return run


def _addmm_glu(variant: str, M: int = 256, N: int = 256, K: int = 256) -> Callable[[ModuleType, Any], tuple]:
    """The fork's correctness test: out = x + x * y with x = a @ b + bias (its registry of variants)."""
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(0)
        a, b, bias, y = _on(torch.randn((M, K), generator=g).half(), torch.randn((K, N), generator=g).half(),
                            torch.randn(N, generator=g).half(), torch.randn((M, N), generator=g).half())
        return mod.KERNEL_REGISTRY[variant](a, b, bias, y), mod.pytorch_baseline(bias, a, b, y)
    return run


def _pa_decode(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
    """The fork's correctness test of paged-attention decode (bf16 KV cache, GQA, two sequences)."""
    kv_heads, q_heads, head_dim, page = 2, 8, 128, 16
    inputs = mod.build_inputs(2, [40, 71], q_heads, kv_heads, head_dim, page, query_length=1,
                              device=_INPUT_DEVICE[0])
    out = torch.empty_like(inputs[0])
    scale = 1.0 / math.sqrt(head_dim)
    mod.pa_decode_tlx(out, *inputs, scale, query_length=1, num_splits=4)
    return out.float(), mod.ref_decode(*inputs, scale, q_heads, kv_heads, 1).float()


def _addmm(M: int, N: int, K: int, b_col_major: bool = False) -> Callable[[ModuleType, Any], tuple[Any, Any]]:
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(0)
        a = torch.randn((M, K), generator=g).half()
        b = torch.randn((N, K), generator=g).half().T if b_col_major else torch.randn((K, N), generator=g).half()
        a, b, bias = _on(a, b, torch.randn(N, generator=g).half())
        return mod.addmm(bias, a, b), (bias.float() + a.float() @ b.float()).half()
    return run


def _bmm(B: int, M: int, N: int, K: int, own_inputs: bool) -> Callable[[ModuleType, Any], tuple[Any, Any]]:
    """``own_inputs``: the tutorial's make_bmm_inputs, for kernels that need its operand layouts."""
    def run(mod: ModuleType, torch: Any) -> tuple[Any, Any]:
        if own_inputs:
            a, b = mod.make_bmm_inputs(B, M, N, K, _INPUT_DEVICE[0])
        else:
            g = torch.Generator().manual_seed(0)
            a, b = _on(torch.randn((B, M, K), generator=g).half(), torch.randn((B, K, N), generator=g).half())
        return mod.bmm(a, b), torch.bmm(a.float(), b.float()).half()
    return run


_GEMM_K = 512  # long enough that every pipelined loop runs its steady state, not only prologue/epilogue
CASES = [
    Case("vector-add2:add2", "vector-add2.py", SM90, _add2("add2")),
    Case("vector-add2:add2_warp_specialized", "vector-add2.py", SM90, _add2("add2_warp_specialized")),
    Case("hopper_gemm_pipelined", "hopper_gemm_pipelined.py", SM90, _gemm("matmul", 256, 256, _GEMM_K)),
    Case("hopper_gemm_ws", "hopper_gemm_ws.py", SM90, _gemm("matmul", 512, 512, _GEMM_K)),
    Case("hopper-persistent-gemm-ws-cooperative", "hopper-persistent-gemm-ws-cooperative.py", SM90,
         _gemm("matmul_tlx_ws_persistent", 256, 256, _GEMM_K)),
    Case("hopper-persistent-gemm-ws-pingpong", "hopper-persistent-gemm-ws-pingpong.py", SM90,
         _gemm("matmul_tlx_ws_persistent", 256, 256, _GEMM_K)),
    Case("hopper_fa_ws", "hopper_fa_ws.py", SM90, _attention("attention", 1, 2, 256, 128)),
    Case("hopper_fa_ws_pipelined", "hopper_fa_ws_pipelined.py", SM90, _attention("attention", 1, 2, 256, 128)),
    Case("hopper_fa_ws_pipelined_pingpong", "hopper_fa_ws_pipelined_pingpong.py", SM90,
         _attention("attention", 1, 2, 256, 128)),
    Case("hopper_fa_ws_pipelined_pingpong_persistent", "hopper_fa_ws_pipelined_pingpong_persistent.py", SM90,
         _attention("attention", 1, 2, 256, 128)),
    Case("amd_gemm_pipelined", "amd_gemm_pipelined.py", GFX942, _gemm("matmul", 256, 256, _GEMM_K)),
    # The fork runs its AMD attention, decode, addmm and warp-pipeline tutorials on gfx950 only.
    Case("amd_fa_pipelined", "amd_fa_pipelined.py", GFX950, _attention("attention", 1, 2, 256, 64, False)),
    Case("amd_fa_pipelined:causal", "amd_fa_pipelined.py", GFX950, _attention("attention", 1, 2, 256, 64, True)),
    Case("amd_fa_persistent", "amd_fa_persistent.py", GFX950,
         _attention("attention", 1, 2, 256, 128, False, dtype="bfloat16"), atol=2e-2, rtol=2e-2),
    Case("amd_fa_cluster", "amd_fa_cluster.py", GFX950,
         _attention("attention", 1, 2, 256, 64, False, dtype="bfloat16"), atol=2e-2, rtol=2e-2),
    Case("amd_pa_decode", "amd_pa_decode.py", GFX950, _pa_decode, atol=2e-2, rtol=2e-2),
    *(Case(f"amd_addmm_glu:{v}", "amd_addmm_glu.py", GFX950, _addmm_glu(v), atol=2e-2, rtol=2e-2)
      for v in ("tlx_baseline", "tlx_simple_async", "tlx_optimized_async", "tlx_optimized", "tlx_persistent")),
    Case("amd_gemm_warp_pipeline", "amd_gemm_warp_pipeline.py", GFX950, _gemm("matmul", 256, 256, _GEMM_K)),
    # Developed on gfx950 (the family's README); from v4 on, the LDS buffers alone exceed gfx942's 64 KiB.
    *(Case(f"gfx9_gemm/a16w16/{v}", f"gfx9_gemm/a16w16/{v}/matmul_kernel.py", GFX950,
           _gemm("matmul", 256, 256, _GEMM_K))
      for v in ("v0_naive", "v1_buffer_load", "v2_async_copy", "v3_lds", "v4_global_prefetch",
                "v5_local_prefetch", "v6_loop_unroll", "v7_slice", "v8_warp_pipeline", "v9_beyond_hotloop")),
    # Newer than the wheel: from a git copy of the fork (find_mirror_tutorials).
    Case("amd_gemm_gfx942", "amd_gemm_gfx942.py", GFX942, _gemm("matmul", 256, 256, _GEMM_K), source="git"),
    Case("amd_bmm_gfx942", "amd_bmm_gfx942.py", GFX942, _bmm(2, 256, 256, _GEMM_K, False), source="git"),
    Case("amd_addmm_gfx942", "amd_addmm_gfx942.py", GFX942, _addmm(256, 256, _GEMM_K), source="git"),
    Case("amd_bmm", "amd_bmm.py", GFX950, _bmm(2, 256, 256, _GEMM_K, True), source="git"),
    Case("amd_bmm_shared_a", "amd_bmm_shared_a.py", GFX950, _bmm(2, 256, 256, _GEMM_K, True), source="git"),
    Case("amd_addmm_gfx950", "amd_addmm_gfx950.py", GFX950, _addmm(256, 256, _GEMM_K, b_col_major=True),
         source="git"),
]
BY_NAME = {c.name: c for c in CASES}

_READS_IN_FLIGHT = ("the kernel reads a buffer whose copy it has not waited for: in the main loop "
                    "async_load_wait_group(1) comes before the next copy is issued, so the copy into the buffer it "
                    "then local_loads is still in flight (on a GPU a race that timing hides). The TLX interpreter "
                    "lands a copy at the wait that covers it, so the read sees the buffer's uninitialized contents "
                    "(NaN); compiles")

#: Cases expected to fail today, in one place, with the reason. The tests xfail them strictly, so a fix
#: shows up as an unexpected pass, to be removed from here. key: (case name, "compile" | "interpret").
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("gfx9_gemm/a16w16/v5_local_prefetch", "interpret"): _READS_IN_FLIGHT,
    ("gfx9_gemm/a16w16/v6_loop_unroll", "interpret"): _READS_IN_FLIGHT,
    ("amd_addmm_gfx950", "compile"): ("launches with enable_sched_group_barrier_scheduler=, an option of the fork's "
                                      "AMD backend for its C++ schedule-group-barrier planner, which tritium does "
                                      "not declare (it could accept the keyword, not do the scheduling)"),
}


# --------------------------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------------------------
def _error_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Triton's CompilationError puts the kernel source first and the message last.
    return (lines[-1] if lines else text)[:400]


def tutorials_for(case: Case) -> tuple[Optional[Path], str]:
    """The tutorials directory ``case`` comes from (the wheel's, or a git copy's), or why there is none."""
    return find_mirror_tutorials() if case.source == "git" else find_tutorials()


def run_case(case: Case, tutorials: Path, mode: str) -> dict:
    """Run one case; a dict with ``status`` and details.

    ``compile``: build the kernels for the case's target under the stand-in driver (nothing runs);
    ``interpret``: run under TRITON_INTERPRET=1 on CPU tensors; ``gpu``: run on this machine's GPU with
    Triton's own driver (the case's target must be the GPU's). The result is compared with torch.
    """
    import torch
    result = {"case": case.name, "mode": mode, "target": "{}:{}".format(*case.target[:2])}
    try:
        if mode == "gpu":
            from triton.runtime import driver
            _INPUT_DEVICE[0] = "cuda"
            context: Any = first_config_autotuning(driver.active)
        else:
            _INPUT_DEVICE[0] = "cpu"
            context = device_stand_in(case.target)
        with context as stand_in, tutorials_package(tutorials):
            out, ref = case.run(load_tutorial(tutorials, case.file), torch)
            if mode == "compile":
                if not stand_in.launched:
                    raise AssertionError("the host code launched no kernel")
                result.update(status="pass", kernels=sorted(set(stand_in.launched)))
                return result
        err = (out.float() - ref.float()).abs().max().item()
        ok = torch.allclose(out.float(), ref.float(), atol=case.atol, rtol=case.rtol)
        result.update(status="pass" if ok else "fail", max_abs_err=err,
                      error="" if ok else f"result differs from torch: max abs error {err:.3g}")
    except BaseException as e:  # noqa: BLE001 - the harness reports every failure, KeyboardInterrupt aside
        if isinstance(e, KeyboardInterrupt):
            raise
        result.update(status="fail", error=_error_line(e), traceback=traceback.format_exc()[-3000:])
    return result


def main(argv: list[str]) -> int:
    mode, names = argv[0], argv[1:]
    if mode not in ("compile", "interpret", "gpu"):
        print("usage: fork_conformance.py {compile,interpret,gpu} [case names...]", file=sys.stderr)
        return 2
    if mode == "interpret" and os.environ.get("TRITON_INTERPRET") != "1":
        print("interpret mode needs TRITON_INTERPRET=1 set before Python starts", file=sys.stderr)
        return 2
    for case in [BY_NAME[n] for n in names] if names else CASES:
        if mode == "interpret" and not case.interpret:
            continue
        tutorials, why = tutorials_for(case)
        result = (run_case(case, tutorials, mode) if tutorials is not None
                  else {"case": case.name, "mode": mode, "status": "unavailable", "error": why})
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
