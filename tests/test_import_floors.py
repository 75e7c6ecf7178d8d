"""The package's floors, read from the source: no import circle, and imports only go down.

Floors, bottom first: the compat shims, knobs and logging, the plugin core, TLX, the kernels, the torch
ops, then the CLI and benchmarks. Every import between tritium's modules counts, imports inside
functions included (they tie the modules together all the same).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tritium"
FLOORS = ["compat", "knobs", "log", "plugins", "tlx", "kernels", "ops", "bench", "cli"]

#: Known exceptions, each to be removed by the work named (the test fails once one is no longer there);
#: without its edge, there is no circle either.
KNOWN_UPWARD: set = set()  # none: an entry here names an upward import kept on purpose, with the reason


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """module -> the package's modules it imports (a name imported from a package counts as its module)."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                stem = package[:len(package) - node.level + 1] if node.level else []
                base = ".".join(stem + ([node.module] if node.module else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name.startswith("tritium") and name != mod and not mod.startswith(name + "."):
                    graph[mod].add(name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Kosaraju, iteratively)."""
    order, seen = [], set()
    for start in graph:
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, rest = stack[-1]
            nxt = next((w for w in rest if w not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))
    reverse: dict[str, set[str]] = {m: set() for m in graph}
    for m, targets in graph.items():
        for t in targets:
            reverse[t].add(m)
    found, assigned = [], set()
    for root in reversed(order):
        if root in assigned:
            continue
        comp, todo = set(), [root]
        while todo:
            m = todo.pop()
            if m not in assigned:
                assigned.add(m)
                comp.add(m)
                todo += reverse[m] - assigned
        if len(comp) > 1:
            found.append(comp)
    return found


def floor(module: str) -> int | None:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(m, t) for m, targets in graph.items() for t in targets
            if floor(m) is not None and floor(t) is not None and floor(t) > floor(m)}


def test_no_import_circle():
    graph = import_graph()
    for m, t in KNOWN_UPWARD:
        graph[m].discard(t)
    assert circles(graph) == [], "an import circle (an import inside a function that breaks one counts)"


def test_imports_only_go_down():
    found = upward(import_graph())
    assert found - KNOWN_UPWARD == set(), "an upward import"
    assert KNOWN_UPWARD - found == set(), "a known upward import is gone: drop it from KNOWN_UPWARD"


@pytest.mark.parametrize("source,expected", [
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [{"tritium.a", "tritium.b"}]),
    ({"a.py": "import tritium.b\n", "b.py": "x = 1\n"}, []),
])
def test_circles_are_found_in_function_level_imports(tmp_path, source, expected):
    root = tmp_path / "tritium"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, text in source.items():
        (root / name).write_text(text)
    assert circles(import_graph(root)) == expected


def test_upward_imports_are_found():
    graph = {"tritium.compat": {"tritium.plugins.errors"}, "tritium.plugins.errors": set(),
             "tritium.ops.gemm": {"tritium.kernels.tiles"}, "tritium.kernels.tiles": set()}
    assert upward(graph) == {("tritium.compat", "tritium.plugins.errors")}
