"""Generate docs/tlx-coverage.md: every name of the TLX fork's API -> where tritium compiles, interprets, tests it.

Run ``.venv/bin/python scripts/tlx_coverage.py --write`` after changing TLX ops or their tests;
tests/tlx/test_coverage_doc.py fails while the committed doc differs from what this prints.

Sources, all in this repository:
* the fork's exported names (:data:`FORK_NAMES`, the ``triton.language.extra.tlx`` namespace of
  fbtriton 3.7.4; test_coverage_doc.py checks the list against the wheel when it is available);
* ``tritium.tlx``: which names exist, their parameters, and which raise on purpose
  (``tlx/unsupported.py``);
* the test suite, read (not run): every ``tlx.NAME(...)`` call in a test module or in a kernel module
  it imports from ``tritium.kernels`` counts for that test module, with the parameters the call
  passes (by position or keyword). A module counts as an NVIDIA compile test if it compiles for a
  ``"cuda"`` target, as an AMD compile test if it compiles for ``"hip"``, and as an interpreter test
  if it runs under ``TRITON_INTERPRET=1`` (``test_interpreter_*`` modules, run by test_interpreter_run.py);
* the tutorial conformance cases and their known failures (tests/tlx/fork_conformance.py).
"""
from __future__ import annotations

import ast
import inspect
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "tlx-coverage.md"
TESTS = [REPO / "tests" / "tlx", REPO / "tests" / "gpu", REPO / "tests"]

#: Every name the fork's ``triton.language.extra.tlx`` exports (its imports and ``__all__``).
FORK_NAMES = (
    "CLCPipelineContext", "CLCPipeliner", "DummyRegisterLayoutEncoding", "TMemCTAMode", "_alloc_clc_responses",
    "_clc_issue", "_clc_query", "_to_mxfp8_block", "alloc_barriers", "alloc_warp_barrier",
    "allocate_tensor_descriptor", "amd_descriptor_prefetch_tensor", "assert_same_layout",
    "async_amd_descriptor_load", "async_amd_descriptor_store", "async_amd_descriptor_wait", "async_descriptor_load",
    "async_descriptor_prefetch_tensor", "async_descriptor_store", "async_descriptor_store_wait", "async_dot",
    "async_dot_scaled", "async_dot_wait", "async_load", "async_load_commit_group", "async_load_wait_group",
    "async_remote_shmem_copy", "async_remote_shmem_store", "async_store", "async_task", "async_task_replica_id",
    "async_tasks", "async_token", "barrier_arrive", "barrier_expect_bytes", "barrier_wait", "buffer_load",
    "buffer_load_to_local", "buffer_store", "buffered_tensor", "buffered_tensor_type", "clc_consumer",
    "clc_create_context", "clc_producer", "clc_response", "clc_response_type", "clock64", "cluster_barrier",
    "cluster_cta_rank", "cluster_size_1d", "compiler", "dtype_of", "dump_layout", "fence", "fence_async_shared",
    "fence_mbarrier_init_cluster", "get_fp8_format_name", "layout", "layout_encoding", "local_alloc",
    "local_gather", "local_load", "local_reinterpret", "local_reshape", "local_scatter", "local_slice",
    "local_store", "local_trans", "local_view", "make_tensor_descriptor", "mbarrier", "mbarrier_type",
    "named_barrier_arrive", "named_barrier_wait", "nv_mma_shared_layout_encoding", "padded_shared_layout_encoding",
    "prefetch", "reinterpret_tensor_descriptor", "remote_shmem_store", "remote_view", "require_layout",
    "reuse_group", "reuse_group_ir_type", "reuse_group_type", "shared_layout_encoding", "size_of", "stoch_round",
    "storage_alias_spec", "storage_alias_spec_type", "storage_alias_spec_type_class", "storage_kind", "subslice",
    "swizzled_layout", "swizzled_shared_layout_encoding", "tcgen05_commit", "tensor_descriptor_ptr",
    "tensor_descriptor_ptr_type", "tensor_memory_layout_encoding", "thread_id", "tmem_copy", "vote_ballot_sync",
    "warp_pipeline_stage", "warp_redux",
)
#: Fork names that are not part of its kernel API, with what they are.
NOT_API = {"compiler": "the fork's compiler-pass package (Python side of its C++ passes), not a kernel API"}
#: What a fork name still missing from tritium.tlx is, shown next to it (names without a note show bare).
MISSING = {
    "mbarrier": "the fork's Python value class of a barrier buffer; tritium's barriers are buffered_tensor values",
    "mbarrier_type": "the fork's type class of a barrier buffer (int64 x num); see mbarrier",
    "reuse_group_ir_type": "the fork's MLIR type of a reuse group, internal to its storage-alias lowering",
    "DummyRegisterLayoutEncoding": "the fork's placeholder register layout, resolved by its own layout pass "
                                   "after inlining",
    "remote_shmem_store": "a store into another cluster CTA's shared memory (DSMEM, sm_90); clusters launch "
                          "(ctas_per_cga) and take peer barrier arrives and TMA multicasts, not DSMEM stores yet",
    "async_remote_shmem_store": "asynchronous DSMEM store to another cluster CTA; see remote_shmem_store",
    "async_remote_shmem_copy": "cp.async.bulk from local to another cluster CTA's shared memory; see "
                               "remote_shmem_store",
}


def _modules_used(tree: ast.Module) -> list[Path]:
    """Kernel modules a test imports, from tritium.kernels or next to the tests (their tlx calls count for it)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "tritium.kernels":
                out += [REPO / "src" / "tritium" / "kernels" / f"{a.name}.py" for a in node.names]
            elif node.module.startswith("tritium.kernels."):
                out.append(REPO / "src" / Path(*node.module.split(".")).with_suffix(".py"))
            elif node.level == 0 and "." not in node.module:  # a helper module next to the tests
                out += [folder / f"{node.module}.py" for folder in TESTS[:2]]
        elif isinstance(node, ast.Import):
            out += [folder / f"{a.name}.py" for a in node.names if "." not in a.name for folder in TESTS[:2]]
    return [p for p in out if p.is_file() and not p.name.startswith("test_")]


def _helper_calls(path: Path) -> list[tuple[str, int, list[str]]]:
    """The ``tlx`` calls of a kernel module, with those of the ``@triton.jit`` helpers it imports by name from
    its sibling modules (``from .partitions import load_tiles``), and of the helpers those call: a kernel's
    partitions live there."""
    tree = ast.parse(path.read_text())
    calls = _calls(tree)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            sibling = path.parent / f"{node.module}.py"
            if not sibling.is_file():
                continue
            helpers = {fn.name: fn for fn in ast.parse(sibling.read_text()).body if isinstance(fn, ast.FunctionDef)}
            wanted, seen = [a.name for a in node.names], set()
            while wanted:  # and the helpers those call in turn (a partition calls wait_stage)
                name = wanted.pop()
                if name in seen or name not in helpers:
                    continue
                seen.add(name)
                calls += _calls(helpers[name])
                wanted += [c.func.id for c in ast.walk(helpers[name])
                           if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    return calls


def _calls(tree: ast.AST) -> list[tuple[str, int, list[str]]]:
    """(op, positional argument count, keyword names) of every ``tlx.NAME(...)`` call."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "tlx"):
            out.append((node.func.attr, len(node.args), [k.arg for k in node.keywords if k.arg]))
    return out


def _kinds(path: Path, text: str) -> set[str]:
    kinds = set()
    if path.name.startswith("test_interpreter_") or "TRITON_INTERPRET" in text and "interpret" in path.name:
        kinds.add("interp")
    if path.name.startswith("test_interpreter_"):
        return kinds
    if any(s in text for s in ('"cuda"', "SM90", "sm90", "cuda:90")):
        kinds.add("nv")
    if any(s in text for s in ('"hip"', "GFX942", "GFX950", "gfx942", "gfx950")):
        kinds.add("amd")
    if path.parent.name == "gpu":
        kinds.add("gpu")
    return kinds


def scan_tests() -> dict[str, dict]:
    """op -> {"nv"/"amd"/"interp"/"gpu": set of test modules, "params": set of covered parameter names}."""
    import tritium.tlx as tlx
    cover: dict[str, dict] = defaultdict(lambda: {"nv": set(), "amd": set(), "interp": set(), "gpu": set(),
                                                  "params": set()})
    seen = set()
    for folder in TESTS:
        for path in sorted(folder.glob("test_*.py")):
            if path in seen:
                continue
            seen.add(path)
            text = path.read_text()
            tree = ast.parse(text)
            kinds = _kinds(path, text)
            calls = _calls(tree)
            for used in _modules_used(tree):
                calls += _helper_calls(used)
            rel = str(path.relative_to(REPO / "tests"))
            for op, npos, keywords in calls:
                entry = cover[op]
                for kind in kinds:
                    entry[kind].add(rel)
                params = _params(getattr(tlx, op, None))
                entry["params"].update(params[:npos])
                entry["params"].update(keywords)
    return cover


def _params(obj) -> list[str]:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if not p.name.startswith("_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


#: tests/tlx/test_unsupported.py compiles a kernel using each name of tlx/unsupported.py REASONS for
#: sm90, gfx942 and gfx950; test_interpreter_unsupported.py runs one under the interpreter.
_UNSUPPORTED_TESTS = {"nv": {"tlx/test_unsupported.py"}, "amd": {"tlx/test_unsupported.py"},
                      "interp": {"tlx/test_interpreter_unsupported.py"}, "gpu": set(), "params": set()}


def _mark(tests: set) -> str:
    return "yes" if tests else "—"


def render() -> str:
    sys.path.insert(0, str(REPO / "tests" / "tlx"))
    import fork_conformance as fc
    import tritium.tlx as tlx
    from tritium.tlx import unsupported
    from tritium.tlx.emit import BUILTINS
    cover = scan_tests()
    lines = [
        "# TLX coverage: the fork's API in tritium",
        "",
        "Generated by `scripts/tlx_coverage.py --write` from the code and the test suite; "
        "`tests/tlx/test_coverage_doc.py` fails when this file is stale. Do not edit by hand.",
        "",
        "Columns: **NV** / **AMD**: a test compiles a kernel using it for `cuda:90` / `hip:gfx942|gfx950`; "
        "**interp**: a test runs it under `TRITON_INTERPRET=1`; **GPU**: a GPU test (tests/gpu) runs it. "
        "*Status*: `implemented`, `raises` (cannot exist on stock Triton; the error says why), `missing` "
        "(not in `tritium.tlx` yet), `not API`. Parameters are tritium's; a parameter is listed as "
        "untested when no test call passes it.",
        "",
        "## Ops and types",
        "",
        "| name | status | NV | AMD | interp | GPU | parameters untested | tests |",
        "|---|---|---|---|---|---|---|---|",
    ]
    counts: dict[str, int] = defaultdict(int)
    for name in sorted(FORK_NAMES, key=str.lower):
        obj = getattr(tlx, name, None)
        entry = cover.get(name, {"nv": set(), "amd": set(), "interp": set(), "gpu": set(), "params": set()})
        if name in NOT_API:
            status, note = "not API", NOT_API[name]
        elif name in unsupported.REASONS and isinstance(obj, unsupported.UnsupportedOp):
            status, note = "raises", unsupported.REASONS[name].split(";")[0]
            entry = _UNSUPPORTED_TESTS
        elif obj is None:
            status, note = "missing", MISSING.get(name, "")
        else:
            status, note = "implemented", ""
        counts[status] += 1
        untested = [p for p in _params(obj) if p not in entry["params"]] if status == "implemented" else []
        tests = sorted(entry["nv"] | entry["amd"] | entry["interp"] | entry["gpu"])
        cells = [f"`{name}`", status + (f": {note}" if note else ""), _mark(entry["nv"]), _mark(entry["amd"]),
                 _mark(entry["interp"]), _mark(entry["gpu"]), ", ".join(f"`{p}`" for p in untested) or "—",
                 ", ".join(tests) or "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(FORK_NAMES)}).",
              "", "## The fork's tutorials (tests/tlx/test_fork_conformance.py)", "",
              "Each tutorial runs with only its TLX import changed; *compile* builds its kernels for the target "
              "through its own host code, *interpreter* runs it on CPU tensors against torch. `pass` is asserted; "
              "`xfail` is a strict expected failure with its reason. Source `wheel`: fbtriton 3.7.4 (fetched in CI); "
              "`git`: newer tutorials from a git copy of the fork (`$TRITIUM_FORK_GIT`), unavailable in CI.", "",
              "| tutorial case | source | target | compile | interpreter |", "|---|---|---|---|---|"]
    for case in fc.CASES:
        cells = []
        for mode in ("compile", "interpret"):
            if mode == "interpret" and not case.interpret:
                cells.append("not run")
                continue
            reason = fc.KNOWN_FAILURES.get((case.name, mode))
            cells.append(f"xfail: {reason}" if reason else "pass")
        lines.append(f"| `{case.name}` | {case.source} | {case.target[0]}:{case.target[1]} | {cells[0]} | {cells[1]} |")
    lines += ["", "## Signatures", "",
              "Every op `tritium.tlx` implements, as its builtin declares it (`Args:` in its docstring says what each "
              "parameter is; `ConstInt`, `Scalar` and `Pred` are in `tlx/args.py`).", ""]
    lines += [f"- `{name}{_signature(op)}`" for name, op in sorted(BUILTINS.items(), key=lambda kv: kv[0].lower())]
    lines += ["", "## The fork's unit tests", "", *unit_tests_section(), ""]
    return "\n".join(lines)


def _default(value: Any) -> str:
    """A default as the source spells it: ``tl.float32``, ``storage_kind.smem``, else its repr."""
    import enum

    import triton.language as tl
    if isinstance(value, tl.dtype):  # its name in triton.language (tl.float32, not its short name fp32)
        return "tl." + min(n for n, v in vars(tl).items() if isinstance(v, tl.dtype) and v == value and n[0] != "_")
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def _signature(op: Any) -> str:
    """``op``'s parameters and result as written, without ``_semantic``."""
    sig = inspect.signature(op.__wrapped__)
    params = []
    for p in sig.parameters.values():
        if p.name == "_semantic":
            continue
        text = ("*" if p.kind is p.VAR_POSITIONAL else "") + p.name
        text += f": {p.annotation}" if p.annotation is not p.empty else ""
        params.append(text + (f" = {_default(p.default)}" if p.default is not p.empty else ""))
    kinds = [p.kind for p in sig.parameters.values()]
    if inspect.Parameter.KEYWORD_ONLY in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds:
        params.insert(kinds.index(inspect.Parameter.KEYWORD_ONLY), "*")
    return f"({', '.join(params)}) -> {sig.return_annotation}"


UNIT_RESULTS = REPO / "tests" / "data" / "fork_unit_tests.json"
UNIT_MODES = ("compile sm_90", "compile gfx950", "interp sm_90", "interp gfx950")

#: What the section says before its table: how the numbers are made (scripts/fork_unit_tests.py).
UNIT_TESTS_INTRO = """\
The fork's unit tests (`python/test/unit/language/test_tlx_*.py`), ported by import and run by
`scripts/fork_unit_tests.py run --write` (which stores tests/data/fork_unit_tests.json; this section is
rendered from it). They are in no wheel or sdist of the fork: the script extracts them from a git copy of
the fork's repository (`$TRITIUM_FORK_GIT`) at a pinned commit, with `triton.language.extra.tlx` renamed
`tritium.tlx` in their imports (the only change), and runs each file with `tests/tlx/fork_unit_plugin.py`:
a `device` fixture answering `"cpu"`, `tests/tlx/fork_conformance.py`'s stand-in driver for the target,
tensors asked for on `"cuda"` made on the CPU, and the tutorials they import from the same commit.
CI has no git copy of the fork, so there `tests/tlx/test_fork_unit_tests.py` (a slice of these tests)
skips, saying why.

*compile* (sm_90, gfx950): kernels compile for the target and nothing launches; a test counts when it
passed, or when at least one kernel compiled (or launched from the JIT's cache) and none failed to (a check of computed values cannot pass
without a launch). *interp*: `TRITON_INTERPRET=1`, the tests' hardware gates answering for the target;
a test counts when it passed. Each cell is counted / applicable; tests skipped by their own gate (Blackwell,
gfx1250, the other vendor) and the exclusions below are not applicable."""


def _unit_cell(counts: dict) -> str:
    ok, fail = counts.get("ok", 0), counts.get("fail", 0)
    if not ok + fail:
        return "—" + (f" ({counts['excluded']} excl.)" if counts.get("excluded") else "")
    cell = f"{ok}/{ok + fail} ({100 * ok / (ok + fail):.0f}%)"
    return cell + (f", {counts['excluded']} excl." if counts.get("excluded") else "")


def unit_tests_section() -> list[str]:
    """The section "The fork's unit tests", from the results scripts/fork_unit_tests.py stored."""
    import json
    if not UNIT_RESULTS.exists():
        return [UNIT_TESTS_INTRO, "", "Not measured yet: run `scripts/fork_unit_tests.py run --write`."]
    data = json.loads(UNIT_RESULTS.read_text())
    table = data["table"]
    files = sorted({f for mode in UNIT_MODES for f in table.get(mode, {})})
    lines = [UNIT_TESTS_INTRO, "", f"Measured on {data['date']} at the fork's commit {data['commit'][:12]}.", "",
             "| file | " + " | ".join(UNIT_MODES) + " |", "|---|" + "---|" * len(UNIT_MODES)]
    totals: dict = {mode: defaultdict(int) for mode in UNIT_MODES}
    for file in files:
        cells = []
        for mode in UNIT_MODES:
            counts = table.get(mode, {}).get(file, {})
            for k, v in counts.items():
                totals[mode][k] += v
            cells.append(_unit_cell(counts))
        lines.append(f"| {file} | " + " | ".join(cells) + " |")
    lines.append("| **total** | " + " | ".join(_unit_cell(totals[mode]) for mode in UNIT_MODES) + " |")
    lines += ["", "### Exclusions", "",
              "Decided by one rule (`fork_unit_plugin.exclusion`), a reason each; per reason, the tests (a "
              "parametrized test once) and the modes it applies to:", ""]
    by_reason: dict = defaultdict(lambda: defaultdict(set))
    for mode in UNIT_MODES:
        for file, records in data["results"].get(mode, {}).items():
            for r in records:
                if r["counts"] == "excluded":
                    by_reason[r["reason"]][r["test"].split("::")[-1].split("[")[0]].add(mode)
    for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        names = ", ".join(f"`{t}`" for t in sorted(tests))
        lines.append(f"- {reason} ({len(tests)}): {names}")
    lines += ["", "### Failures", "", "Every test that is applicable and does not count, by mode and error:", ""]
    for mode in UNIT_MODES:
        errors: dict = defaultdict(list)
        for file, records in data["results"].get(mode, {}).items():
            for r in records:
                if r["counts"] == "fail":
                    errors[r["error"]].append(f"{file[len('test_tlx_'):-3]}::{r['test'].split('::')[-1]}")
        if not errors:
            lines.append(f"- *{mode}*: none")
            continue
        lines.append(f"- *{mode}*:")
        for error, tests in sorted(errors.items(), key=lambda kv: -len(kv[1])):
            error = error.replace("|", "\\|").replace("`", "'")
            lines.append(f"  - {error} ({len(tests)}): " + ", ".join(f"`{t}`" for t in sorted(tests)))
    lines += ["", UNIT_TESTS_NOTES]
    return lines


#: The gaps issue 21 found in these tests, and what became of each (written by hand).
UNIT_TESTS_NOTES = """\
Issue 21 went through the gaps these tests showed:
- Fixed: `async_task(registers=/num_regs=)` alignment and `async_tasks` arguments are checked before a
  call outside a kernel is refused, as the fork checks them; `buffer_load_to_local` into padded shared
  buffers no longer crashes `tlx.async_copy_fallback`; a `shared_linear` (or any TLX) layout held in a
  module global, `tl.constexpr`-wrapped or not, is readable in a kernel; loop-carried dot operands do not
  go through a tensor `local_alloc` (`test_loop_carried_dot_layout_cleanup_compiles_gfx950`);
  `require_layout` on an epilogue store (`amd_bmm`'s `_C4`) compiles; `@aggregate` classes in the fork's
  style compile and interpret; bf16 `tl.dot` under the interpreter; a device descriptor made before an
  `async_tasks` region and used in a task (`test_tensor_descriptor_ws_capture`) is made again in the task;
  under the interpreter a kernel sees the variables of the function it is defined in (a local `@triton.jit`
  helper indexing a buffer, `test_buffer_indexing_in_function_call`; stock 3.6 raised `NameError`);
  float32 -> bf16 casts under the interpreter round to nearest even (`test_fp_cast_preserves_layout_...`);
  clusters (`ctas_per_cga=`) compile in the compile modes: a compiled kernel's `metadata.ctas_per_cga` is a
  tuple (`test_ctas_per_cga`), and a `cluster_cta_rank()` read before `async_tasks` reaches the tasks
  (`test_explicit_cluster_sync_ws`).
- Deliberate: `async_task("default", registers=...)` is refused (stock 3.6's `ttg.warp_specialize` has no
  register request for the default region; the fork's `defaultRequestedRegisters` is its own);
  `vote_ballot_sync` on a predicate of `thread_id` gives the full mask under the interpreter, which runs a
  program as one thread (every `thread_id` is 0), where the fork's test expects 0xFFFF from 32 lanes;
  under the interpreter Triton wraps every kernel error in `InterpreterError`, so tests expecting
  `CompilationError` (`get_fp8_format_name` of a non-FP8 dtype: same message) see that instead.
- Not a TLX API: `test_dot_propagates_accumulator_layout` calls Triton's `semantic.dot` from a Gluon
  kernel; stock's returns a layout-free `block_type` (the fork changed Triton's semantic, not TLX).
- What the failures above are: `tlx.thread_id`/`tlx.clock64` are NVIDIA-only in tritium (`test_thread_id`,
  `test_clock64` on gfx950); `local_trans` of a padded shared buffer on the compile path
  (`test_a4w4_shape_stride_layouts_correctness_gfx950`); stock's interpreter gives `tl.range` indices as
  Python ints (`(tile_id % N).to(...)` in `test_warp_pipe_bmm_*`), patches `triton.language` process-wide
  while a kernel runs, so two threads interpreting at once race (`test_async_tasks_thread_safety`); clusters
  along y or z, which tritium's `ctas_per_cga` option refuses (Triton's launcher forms clusters along x only)
  and counted as failures, not exclusions (`test_cluster_size_1d`, `test_async_remote_shmem_store[2]`,
  `test_descriptor_load_multicast`); DSMEM stores, not done (`remote_shmem_store`, `async_remote_shmem_store`,
  `async_remote_shmem_copy`).
- Counted in compile mode, but their checks of the fork's IR fail: `test_custer_cta_rank` (`nvg.cluster_id`),
  `test_cluster_dims` (`ttg.cluster-dim-*` module attributes, which stock Triton has not),
  `test_explicit_cluster_sync_ws` (`ttng.cluster_arrive`/`wait` in TTGIR, where tritium's are inline asm; its
  PTX has 6 cluster barriers, not the fork's 4: every task opens with one that publishes the barriers'
  initialization); `test_atomic_add_cga` checks computed values.
- Not done: loop-carried buffer views raising under the interpreter as they do compiled
  (`test_loop_carry_var_check`; the interpreter runs the loop as Python, with no loop-carried types to
  compare), and `dump_layout`'s CuTe output format."""

def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        DOC.write_text(text)
        print(f"wrote {DOC.relative_to(REPO)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
