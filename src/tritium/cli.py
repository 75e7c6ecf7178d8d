"""``tritium``: list plugins, show a kernel's effective pipeline, diff IR around a pass."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import sys
import typing
from pathlib import Path
from typing import Any, Optional, Sequence

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

from . import __version__, plugins
from .plugins.inspection import (TARGET_FORMS, check_kernel, diff_around, edited_by, format_report, option_fields,
                                 parse_target, pipeline_report, scalar_types, triton_type)


def _cmd_plugins(args: argparse.Namespace) -> int:
    plugins.discover(strict=False)
    plugins.load_deferred()  # deferred entry points (TLX, the examples) load here, to show what they contribute
    loaded = plugins.loaded_plugins()
    if not loaded:
        print("no plugins loaded (entry points: group 'tritium.plugins'; paths: TRITIUM_PLUGIN_PATHS)")
        return 0
    for lp in loaded:
        p = lp.plugin
        print(f"{p.name} {p.version}  ({lp.origin})")
        for kind, names in p.contributes().items():
            if names:
                print(f"  {kind}: {', '.join(names)}")
    return 0


def _load_kernel(spec: str) -> Any:
    """``FILE.py:KERNEL`` or ``package.module:KERNEL``. A file inside a package (folders with ``__init__.py``)
    is imported as part of it, so its relative imports work; a module name is found as ``python -m`` would."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise CommandError(f"expected FILE.py:KERNEL or MODULE:KERNEL, got {spec!r}")
    if path.endswith(".py") or "/" in path or os.sep in path:
        module = _import_file(Path(path))
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = _import(path, path)
    if not hasattr(module, name):
        raise CommandError(f"{path} has no kernel {name!r}")
    kernel = getattr(module, name)
    check_kernel(kernel, spec)
    return kernel


def _import_file(file: Path) -> Any:
    if not file.is_file():
        raise CommandError(f"no file {str(file)!r}")
    folder, dotted = file.resolve().parent, [file.stem]
    while (folder / "__init__.py").is_file():
        dotted.insert(0, folder.name)
        folder = folder.parent
    sys.path.insert(0, str(folder))
    if len(dotted) > 1:
        return _import(".".join(dotted), str(file))
    module_spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
    try:
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as e:
        raise CommandError(f"importing {file} raised {type(e).__name__}: {_first_line(e)}") from e
    return module


def _import(dotted: str, shown: str) -> Any:
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as e:
        if e.name and dotted.startswith(e.name):
            raise CommandError(f"no file or module {shown!r}") from e
        raise CommandError(f"importing {shown} raised {type(e).__name__}: {_first_line(e)}") from e
    except Exception as e:
        raise CommandError(f"importing {shown} raised {type(e).__name__}: {_first_line(e)}") from e


class CommandError(Exception):
    """Bad input to a command: reported as one line (the cause chain shows with ``--traceback``)."""


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def _assignments(items: Sequence[str], flag: str) -> dict[str, str]:
    """``NAME=VALUE`` items as written; a name given twice is refused rather than the last one winning."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise CommandError(f"{flag} expects NAME=VALUE, got {item!r}")
        if name in out:
            raise CommandError(f"{flag} gives {name!r} twice ({out[name]} and {value.strip()})")
        out[name] = value.strip()
    return out


def _number(text: str) -> Optional[int | float]:
    """A number as ``triton.tools.compile`` reads one (an int, else a float), or None."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return None


def _defines(items: Sequence[str]) -> dict[str, Any]:
    """``-D NAME=VALUE``, each value read here (the names are checked with the signature, by
    :func:`check_arguments`): Triton fails late on a value that is no constexpr."""
    return {name: _constexpr_value(f"-D {name}", text) for name, text in _assignments(items, "-D/--define").items()}


def _constexpr_value(what: str, text: str) -> Any:
    """A constexpr's value: a number, True, False, None, a type (``fp16``, ``tl.float16``) or a quoted string
    (``'"relu"'``). A bare word is refused, since a constexpr that is a string by mistake fails deep in codegen."""
    number = _number(text)
    if number is not None:
        if not math.isfinite(number):
            raise CommandError(f"{what}={text}: not a finite number")
        if isinstance(number, int) and not -2**63 <= number < 2**64:
            raise CommandError(f"{what}={text}: out of the 64-bit integer range")
        return number
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    dtype = getattr(tl, text[3:], None) if text.startswith("tl.") else text in scalar_types() and triton_type(text)
    if isinstance(dtype, tl.dtype):
        return dtype
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        if _number(text[1:-1]) is not None:
            raise CommandError(f"{what}={text}: a quoted number is a string constexpr; write "
                               f"{what.split()[-1]}={text[1:-1]} for the number")
        return text[1:-1]
    raise CommandError(f"{what}={text}: not a constexpr value; write a number, True, False, None, a type "
                       f"({', '.join(scalar_types())} or tl.NAME) or a quoted string ('\"{text}\"')")


def _options(items: Sequence[str], target: GPUTarget) -> dict[str, Any]:
    """``-O NAME=VALUE``, each value read as the type of that field of the backend's options (Triton fails late
    on a value of the wrong type). A name that is no option stays as written, for :func:`check_arguments`
    to refuse with the list."""
    fields = option_fields(target)
    return {name: _option_value(f"-O {name}={text}", fields[name], text) if name in fields else text
            for name, text in _assignments(items, "-O/--option").items()}


#: Options that count warps or CTAs: Triton fails deep in a pass, printing MLIR, when one is below 1.
_COUNTS = ("num_warps", "num_ctas", "warp_size")


def _option_value(what: str, hint: Any, text: str) -> Any:
    """``text`` as a value of an option typed ``hint``: int, float, bool, str, a tuple of str (comma-separated),
    or Optional of one (``None``)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Union and type(None) in args:
        if text == "None":
            return None
        hint = next(a for a in args if a is not type(None))
    if typing.get_origin(hint) is tuple:
        return tuple(s.strip() for s in text.split(",") if s.strip())
    if hint is bool:
        if text in ("True", "False"):
            return text == "True"
        raise CommandError(f"{what}: expected True or False")
    if hint in (int, float):
        try:
            value = hint(text)
        except ValueError:
            raise CommandError(f"{what}: expected {'an int' if hint is int else 'a float'}") from None
        if hint is int and not -2**31 <= value < 2**31:  # Triton hands options to C++ as ints
            raise CommandError(f"{what}: out of range (a 32-bit int)")
        if what.split("=")[0].split()[-1] in _COUNTS and value < 1:
            raise CommandError(f"{what}: must be at least 1")
        return value
    if hint is str:
        return text
    raise CommandError(f"{what}: an option of type {getattr(hint, '__name__', hint)} cannot be given here")


def _signature(kernel: Any, text: Optional[str], constexprs: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``--signature`` as ``triton.tools.compile`` writes it, returning ``(signature, aligned arguments)``.

    Entries are comma-separated, one per argument in order (every argument, or only the non-constexpr
    ones), or ``name=entry`` pairs. An entry is a type (``*fp16``, ``i32``) with an optional hint, ``:16``
    (divisible by 16: a 16-byte aligned pointer, as the JIT specializes) or ``:1`` (equal to 1, made a
    constant); or a number, which makes the argument a constexpr of that value (added to ``constexprs``).
    """
    names = list(kernel.arg_names)
    runtime = [n for i, n in enumerate(names) if i not in kernel.constexprs]
    if not text:
        raise CommandError(f"--signature is required; arguments: {', '.join(runtime)}")
    items = [s.strip() for s in text.split(",") if s.strip()]
    if all("=" in s for s in items):
        pairs = [tuple(x.strip() for x in s.split("=", 1)) for s in items]
        unknown = [n for n, _ in pairs if n not in names]
        if unknown:
            raise CommandError(f"--signature names no argument {unknown[0]!r}; arguments: {', '.join(names)}")
        given = [n for n, _ in pairs]
        twice = [n for i, n in enumerate(given) if n in given[:i]]
        if twice:
            raise CommandError(f"--signature gives {twice[0]!r} twice")
    elif len(items) in (len(names), len(runtime)):
        pairs = list(zip(names if len(items) == len(names) else runtime, items))
    else:
        raise CommandError(f"--signature has {len(items)} entries; give one per argument ({len(names)}: "
                           f"{', '.join(names)}) or per non-constexpr argument ({len(runtime)}: {', '.join(runtime)})")
    sig: dict[str, str] = {}
    aligned: list[str] = []
    for name, entry in pairs:
        base, colon, hint = (x.strip() for x in entry.partition(":"))
        value = _number(base)
        if value is not None:
            if colon:
                raise CommandError(f"--signature {name}={entry}: a constant takes no hint")
            _set_constexpr(constexprs, name, value)
            continue
        if names.index(name) in kernel.constexprs:
            raise CommandError(f"--signature {name}={entry}: {name!r} is a constexpr; give its value (a number)")
        if colon and hint not in ("1", "16"):
            raise CommandError(f"--signature {name}={entry}: the hint must be 16 (divisible by 16) or 1 (equal "
                               "to 1), as in triton.tools.compile")
        if hint == "1":
            _set_constexpr(constexprs, name, 1)
            continue
        if hint == "16":
            aligned.append(name)
        sig[name] = base
    return sig, aligned


def _set_constexpr(constexprs: dict[str, Any], name: str, value: Any) -> None:
    if name in constexprs and constexprs[name] != value:
        raise CommandError(f"{name!r} is {constexprs[name]!r} by -D but {value!r} by --signature")
    constexprs[name] = value


def _cmd_pipeline(args: argparse.Namespace) -> int:
    plugins.discover(strict=False)
    kernel = _load_kernel(args.kernel)
    try:
        target = parse_target(args.target)
    except ValueError as e:
        raise CommandError(str(e)) from None
    constexprs = _defines(args.define)
    signature, aligned = _signature(kernel, args.signature, constexprs)
    options = _options(args.option, target)  # checked with the rest by compile_kernel
    pipeline: Any = plugins.bound_pipeline(kernel)
    if args.pipeline:
        pipeline = plugins.resolve_pipeline(args.pipeline)
    chosen = [pipeline.origin()] if pipeline is not None else []
    if pipeline is None:
        pipeline = plugins.Pipeline("stock")
    diff = tuple(args.diff_around or ())
    compiled, report = pipeline_report(kernel, signature, target, constexprs=constexprs, options=options,
                                       pipeline=pipeline, diff_around=diff, aligned=aligned)
    diffs = []  # made before printing anything, so that a pass that did not run is the only output
    for name in diff:
        try:
            diffs.append((name, diff_around(report, name)))
        except KeyError as e:
            raise CommandError(f"--diff-around {name}: {e.args[0]}") from None
    for stage in args.show or ():
        if stage not in compiled.asm:
            raise CommandError(f"--show {stage}: no stage output {stage!r}; have {', '.join(compiled.asm)}")
    automatic = [f"{o} (automatic)" for o in edited_by(report) if o not in chosen]
    print(f"# {args.kernel} on {args.target}, pipeline {', '.join(chosen + automatic) or 'stock'}  "
          f"(+ inserted, - disabled, ~ replaced)")
    print(format_report(report))
    for name, text in diffs:
        print(f"\n# IR around {name}")
        print(_readable(text))
    for stage in args.show or ():
        print(f"\n# output of stage {stage}")
        output = compiled.asm[stage]
        print(_readable(output) if isinstance(output, str) else f"<{len(output)} bytes>")
    return 0


def _readable(ir_text: str) -> str:
    """IR as people read it: TLX placeholders as their op and arguments, not as base64."""
    if '"tlx:' not in ir_text:
        return ir_text
    from .tlx.placeholders import decoded
    return decoded(ir_text)


def _cmd_bench(args: argparse.Namespace) -> int:
    module_name, _, _, gpu_free = BENCHMARKS[args.what]
    only = getattr(args, "only", None) or ""
    if only not in gpu_free and not _cuda_available():
        hint = f"; --only {' or '.join(sorted(gpu_free))} runs without one" if gpu_free else ""
        raise CommandError(f"{args.what} needs a CUDA GPU, and torch sees none{hint}")
    extra = {name: getattr(args, name) for name in BENCH_OPTIONS.get(args.what, {})}
    return importlib.import_module(f"tritium.bench.{module_name}").main(args.out, only, **extra)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


#: ``tritium bench NAME`` -> (module in tritium.bench, what it compares, how ``--only`` reads (None: it takes
#: none; a str: the words its module reads; a dict: its choices and what each does), the ``--only`` values
#: that need no GPU)
BENCHMARKS: dict[str, tuple[str, str, Any, frozenset[str]]] = {
    "overhead": ("overhead", "compile time with a no-op pipeline and host time per launch, against bare Triton",
                 {"compile": "compile time alone (needs no GPU)", "launch": "host time per launch alone"},
                 frozenset({"compile"})),
    "gemm": ("gemm", "tritium.ops.matmul against cuBLAS, bare Triton and torch.compile, tritium.ops.scaled_matmul "
             "against torch._scaled_mm, the host cost of each; or the TLX GEMM kernels alone",
             "fp16, bf16, fp8, quick, seeds, squares, nocompile, MxNxK shapes, or ws / kernels for the TLX kernels "
             "alone",
             frozenset()),
    "policy": ("policy", "one tl.dot GEMM under stock Triton and the example plugin's pipelining pipelines",
               None, frozenset()),
    "attention": ("attention", "tritium.ops.attention, forward and backward, against PyTorch SDPA's backends",
                  "quick, or words such as bf16 d128 causal s4096 gqa (all must match)", frozenset()),
    "trimul": ("trimul", "the TriMul op against eager PyTorch and torch.compile",
               "quick, fast, case numbers such as 1-4, or words such as N1024 C384 cauchy", frozenset()),
    "inductor": ("inductor", "torch.compile of bf16 transformer blocks with tritium.ops.use_kernels off and on, "
                 "with and without CUDA graphs",
                 {"default": "only mode='default'", "graphs": "only mode='reduce-overhead' (CUDA graphs)"},
                 frozenset()),
}


#: Options of one benchmark besides ``--out`` and ``--only``: ``tritium bench NAME`` -> {option: (choices, default,
#: help)}, passed to its module's ``main`` by name.
BENCH_OPTIONS: dict[str, dict[str, tuple[tuple[str, ...], str, str]]] = {
    "attention": {"direction": (("fwd", "bwd", "both"), "both", "time the forward, the backward or both")},
}


#: What ``tritium --help`` says first (plain text: argparse prints it as written).
DESCRIPTION = "tritium: list plugins, show a kernel's effective pipeline, diff IR around a pass, run benchmarks."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tritium", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tritium {__version__} (triton {triton.__version__})")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("plugins", help="list loaded plugins and what each contributes").set_defaults(run=_cmd_plugins)
    p = sub.add_parser("pipeline", help="show a kernel's stages and passes, with plugin edits marked")
    p.add_argument("kernel", help="FILE.py:KERNEL or MODULE:KERNEL")
    p.add_argument("--target", default="sm90", help=f"{TARGET_FORMS}; default sm90")
    p.add_argument("--signature", help="as triton.tools.compile: '*fp16:16, i32, 128' (one entry per argument, "
                   "or per non-constexpr argument, or NAME=ENTRY pairs); :16 = divisible by 16, a number = constexpr")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE",
                   help="constexpr value: a number, True, False, None, a type (fp16, tl.float16) or a quoted string")
    p.add_argument("-O", "--option", action="append", default=[], metavar="NAME=VALUE",
                   help="compile option of the target's backend (a field of its options), e.g. num_warps=8")
    p.add_argument("--pipeline", help="a plugin pipeline name (default: the kernel's bound pipeline, else stock)")
    p.add_argument("--diff-around", action="append", metavar="PASS", help="print the IR diff made by PASS")
    p.add_argument("--show", action="append", metavar="STAGE", help="print a stage's output (e.g. ttgir, ptx)")
    p.set_defaults(run=_cmd_pipeline)
    b = sub.add_parser("bench", help="run a benchmark on a CUDA GPU: print a table of ratios and save a PNG plot")
    benches = b.add_subparsers(dest="what", required=True, metavar="BENCHMARK")
    for name, (_, what, only, _) in BENCHMARKS.items():
        one = benches.add_parser(name, help=what, description=f"tritium bench {name}: {what}.")
        one.add_argument("--out", default="results", help="folder for the results (default: results)")
        if isinstance(only, dict):
            one.add_argument("--only", choices=list(only), help="; ".join(f"{k}: {v}" for k, v in only.items()))
        elif only:
            one.add_argument("--only", default="", help=f"run a subset: {only}")
        for option, (choices, default, help_) in BENCH_OPTIONS.get(name, {}).items():
            one.add_argument(f"--{option}", choices=choices, default=default, help=f"{help_} (default: {default})")
        one.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run a command. Every failure is one line on stderr and exit status 2; ``--traceback`` shows more."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        if args.traceback:
            raise
        known = isinstance(e, (plugins.TritiumError, CommandError))
        if isinstance(e, plugins.ArgumentError):  # named as the flag that gave it
            what = f"{_FLAGS.get(e.what, e.what)} {e.name}: {e.problem}"
        elif isinstance(e, plugins.KernelCompileError):
            what = str(e)  # its place and source line follow on two more lines
        else:
            what = _first_line(e) if known else f"{type(e).__name__}: {_last_line(e)}"
        print(f"tritium {args.command}: {what}" + ("" if known else " (--traceback for details)"), file=sys.stderr)
        return 2


#: The flag of ``tritium pipeline`` that gives each kind of argument :func:`check_arguments` checks.
_FLAGS = {"constexpr": "-D", "option": "-O", "signature": "--signature", "aligned": "--signature"}


def _last_line(e: BaseException) -> str:
    """Triton's compilation errors end with the message, after the kernel source they quote."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1] if lines else repr(e)


if __name__ == "__main__":
    sys.exit(main())
