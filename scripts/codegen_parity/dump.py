"""Compile every kernel of :mod:`codegen_parity.kernels` with the TLX of this environment.

Run once in uTLX's environment (``--impl utlx``) and once in tritium's (``--impl tritium``), on the
same Triton. Writes ``<out>/<kernel>@<target>.ttgir`` and ``.ptx``/``.amdgcn`` plus ``status.json``
(per case: compiled, or the error). Usage::

    python -m codegen_parity.dump --impl tritium --out DIR [--tutorials DIR] [--fork-git GIT_DIR] [NAME ...]

``--tutorials`` is the wheel's tutorials directory; the ``source="git"`` kernels come from a git copy of the
fork (``--fork-git``, default ``$TRITIUM_FORK_GIT`` or :data:`kernels.FORK_GIT_DEFAULT`), and are skipped,
saying so, without one.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "tlx"))
import fork_conformance  # noqa: E402 - the export of fork sources from git (stdlib only: no Triton, no TLX)

from .kernels import (ALL, FORK_GIT_COMMIT, FORK_GIT_DEFAULT, FORK_GIT_ENV, FORK_GIT_TUTORIALS, TARGET_NAMES,
                      Spec)

FORK_TLX = "triton.language.extra.tlx"


def bind_tlx(impl: str) -> None:
    """Make ``tritium.tlx`` and ``triton.language.extra.tlx`` both name the TLX under test."""
    import triton.language.extra as extra

    if impl == "utlx":
        mod = importlib.import_module(FORK_TLX)
        import tritium
        sys.modules["tritium.tlx"] = mod
        tritium.tlx = mod
    else:
        mod = importlib.import_module("tritium.tlx")
        sys.modules[FORK_TLX] = mod
    extra.tlx = mod


class _NoDevice:
    """The active driver while a tutorial module is imported: a CPU machine compiling for ``target``."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def get_active_torch_device(self) -> Any:
        import torch
        return torch.device("cpu")

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0


_STAND_IN = _NoDevice(None)


@contextlib.contextmanager
def _stand_in_driver(target: Any) -> Iterator[None]:
    """This process only compiles, so the stand-in stays active; it answers for ``target`` here."""
    import torch
    from triton.runtime import driver
    driver.set_active(_STAND_IN)
    _STAND_IN.target = target
    capability = torch.cuda.get_device_capability
    if target.backend == "cuda":  # module-level skip conditions ask torch for the device's capability
        torch.cuda.get_device_capability = lambda *_: divmod(int(target.arch), 10)
    try:
        yield
    finally:
        torch.cuda.get_device_capability = capability


def git_tutorials(git_dir: Path) -> tuple[Path | None, str]:
    """The tutorials of :data:`kernels.FORK_GIT_COMMIT`, exported from ``git_dir`` once; or None and why not."""
    if not git_dir.exists():
        return None, f"no git copy of the fork at {git_dir} (${FORK_GIT_ENV})"
    dest = Path(tempfile.gettempdir()) / f"parity-fork-{FORK_GIT_COMMIT[:12]}"
    if not (dest / FORK_GIT_TUTORIALS).is_dir():
        try:
            fork_conformance.export_git_paths(git_dir, FORK_GIT_COMMIT, [FORK_GIT_TUTORIALS], dest)
        except (OSError, subprocess.CalledProcessError, tarfile.TarError) as e:
            return None, f"could not export {FORK_GIT_COMMIT[:12]} from {git_dir}: {e}"
    return dest / FORK_GIT_TUTORIALS, ""


def load_module(spec: Spec, tutorials: dict[str, Path] | None, target: Any) -> types.ModuleType:
    """``spec``'s module; a fork tutorial from ``tutorials[spec.source]`` (the directory of each source)."""
    if not spec.from_fork:
        return importlib.import_module(spec.module)
    package = f"{FORK_TLX}.tutorials"  # tutorials import each other by this name
    if package not in sys.modules:
        sys.modules[package] = types.ModuleType(package)
        sys.modules[package].__path__ = [str(tutorials[s]) for s in ("wheel", "git") if s in tutorials]
    path = tutorials[spec.source] / spec.module
    name = f"{package}.{path.stem.replace('-', '_')}"
    if spec.source == "git" and "wheel" in tutorials and (tutorials["wheel"] / spec.module).is_file():
        name += "_git"  # a newer copy of a wheel tutorial: the wheel's keeps the name the others import
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module
    with _stand_in_driver(target):
        try:
            loader.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return module


def source(spec: Spec, module: types.ModuleType) -> Any:
    """The AST source the JIT would build for ``spec`` (autotuners unwrapped, defaults filled in)."""
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    fn = getattr(module, spec.kernel)
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    constexprs = dict(spec.constexprs)
    for param in fn.params:
        if param.name not in spec.signature and param.name not in constexprs and param.has_default:
            constexprs[param.name] = param.default
    attrs = {(fn.arg_names.index(name), ): [["tt.divisibility", 16]] for name in spec.aligned}
    signature = {**spec.signature, **{name: "constexpr" for name in constexprs}}
    return ASTSource(fn, signature, constexprs, attrs)


def compile_one(spec: Spec, target_tuple: tuple, tutorials: dict[str, Path] | None) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget

    target = GPUTarget(*target_tuple)
    module = load_module(spec, tutorials, target)
    kernel = triton.compile(source(spec, module), target=target, options=dict(spec.options))
    asm_kind = "ptx" if target.backend == "cuda" else "amdgcn"
    return {"ttgir": kernel.asm["ttgir"], asm_kind: kernel.asm[asm_kind],
            "shared": getattr(kernel.metadata, "shared", None)}


def _chain(e: BaseException) -> str:
    """``e``, and where it is a CompilationError raised from one (an error in a ``@triton.jit`` helper reaches
    the kernel as a CompilationError pointing at the call), the helper's, down to where the error is."""
    parts = [f"{type(e).__name__}: {e}".strip()]
    while type(e).__name__ == "CompilationError" and type(e.__cause__).__name__ == "CompilationError":
        e = e.__cause__
        parts.append(f"{type(e).__name__}: {e}".strip())
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("utlx", "tritium"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tutorials", type=Path, help="the TLX fork's tutorials directory (the wheel's)")
    parser.add_argument("--fork-git", type=Path, default=Path(os.environ.get(FORK_GIT_ENV) or FORK_GIT_DEFAULT),
                        help="a git copy of the fork, for the kernels newer than the wheel")
    parser.add_argument("names", nargs="*", help="only these kernels (report names)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="parity-cache-"))
    bind_tlx(args.impl)
    import triton

    args.out.mkdir(parents=True, exist_ok=True)
    status_file = args.out / "status.json"
    tutorials = {"wheel": args.tutorials} if args.tutorials else {}
    git, why = git_tutorials(args.fork_git)
    if git:
        tutorials["git"] = git
    status = {"impl": args.impl, "triton": triton.__version__, "git": FORK_GIT_COMMIT if git else None,
              "cases": {}}
    if args.names and status_file.is_file():  # a partial run updates the cases it compiles
        status["cases"] = json.loads(status_file.read_text())["cases"]
    for spec in ALL:
        if args.names and spec.name not in args.names:
            continue
        if spec.from_fork and (spec.source not in tutorials or not (tutorials[spec.source] / spec.module).is_file()):
            print(f"{spec.name}: skipped, {spec.module} is not in the {spec.source} tutorials"
                  f"{' (' + why + ')' if spec.source == 'git' and why else ''}", flush=True)
            continue
        for t in spec.targets:
            case = f"{spec.name}@{TARGET_NAMES[t]}"
            try:
                result = compile_one(spec, t, tutorials)
            except Exception as e:  # recorded per case: the report shows what failed and why
                message = _chain(e)
                status["cases"][case] = {"ok": False, "error": message[:4000]}
                print(f"{case}: FAILED {message.splitlines()[0][:200] if message else ''}", flush=True)
                continue
            for kind in ("ttgir", "ptx", "amdgcn"):
                if kind in result:
                    (args.out / f"{case}.{kind}").write_text(result[kind])
            status["cases"][case] = {"ok": True, "shared": result["shared"]}
            print(f"{case}: ok", flush=True)
    status_file.write_text(json.dumps(status, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
