"""Triton internals are touched only by the two compatibility shims.

``tritium.compat`` (the plugin core's) and ``tritium.tlx.triton_compat`` (TLX's code-generator and
interpreter access) are where a Triton release that renames an internal breaks tritium; each has a
test that checks the internals it uses (tests/test_compat.py, tests/tlx/test_triton_compat.py). This
scan keeps every other module under ``src/tritium`` on Triton's public surface, so those two stay
the whole list. Outside the shims a module may not:

1. import a Triton module with a ``_``-prefixed component (``triton._C.libtriton``) or one of
   Triton's internal modules (:data:`INTERNAL_MODULES`), nor import a ``_``-prefixed name from any
   Triton module (``from triton.language.core import _unwrap_if_constexpr``);
2. read a ``_``-prefixed attribute of a name bound to a Triton import (``tl.core._aggregate``,
   ``interpreter._get_np_dtype``) or of the ``_semantic`` object Triton hands builtins
   (``_semantic._str_to_dot_input_precision``);
3. touch attributes that only Triton's code generator and interpreter define
   (:data:`INTERNAL_ATTRS`: ``CodeGenerator.cur_node``, the interpreter's globals, ...), or
   builder/module state: ``options`` or ``__dict__`` read off a builder, module or code generator.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import pytest

import tritium

PACKAGE = Path(tritium.__file__).parent
SHIMS = {"compat.py", "tlx/triton_compat.py"}

#: Triton modules that are implementation, not API, though their names have no underscore.
INTERNAL_MODULES = ("triton.compiler.code_generator", "triton.runtime.interpreter", "triton.language.semantic")
#: Attributes defined only by Triton's code generator (``CodeGenerator``) and interpreter module.
INTERNAL_ATTRS = {"cur_node", "begin_line", "visit_compound_statement", "jit_fn", "interpreter_builder",
                  "interpreter_semantic", "grid_idx", "_semantic", "_builder"}
#: Names and attributes through which code reaches a builder, the module being built or a code generator.
BUILDER_NAMES = {"builder", "module", "gen", "generator"}
#: The object Triton passes builtins, as tritium's code names it.
SEMANTIC_NAMES = {"_semantic", "semantic"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _builder_like(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in BUILDER_NAMES) or \
        (isinstance(node, ast.Name) and node.id in BUILDER_NAMES)


def violations(source: str) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each access to a Triton internal in ``source`` (a module's text)."""
    tree = ast.parse(source)
    bound: set[str] = set()  # names bound to Triton modules or objects
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton" or a.name.startswith("triton."):
                    bound.add(a.asname or a.name.split(".")[0])
                    if any(_private(p) for p in a.name.split(".")) or a.name.startswith(INTERNAL_MODULES):
                        yield node.lineno, f"imports {a.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "triton" or node.module.startswith("triton.")):
            if any(_private(p) for p in node.module.split(".")) or node.module.startswith(INTERNAL_MODULES):
                yield node.lineno, f"imports from {node.module}"
            for a in node.names:
                bound.add(a.asname or a.name)
                if _private(a.name):
                    yield node.lineno, f"imports {a.name} from {node.module}"
                elif f"{node.module}.{a.name}" in INTERNAL_MODULES:
                    yield node.lineno, f"imports {node.module}.{a.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        root = _root(node)
        name = root.id if isinstance(root, ast.Name) else None
        if _private(node.attr) and (name in bound or name in SEMANTIC_NAMES):
            yield node.lineno, f"reads {ast.unparse(node)}"
        elif node.attr in INTERNAL_ATTRS:
            yield node.lineno, f"reads Triton-internal attribute {ast.unparse(node)}"
        elif node.attr in ("options", "__dict__") and _builder_like(node.value):
            yield node.lineno, f"reads builder state {ast.unparse(node)}"


def _modules() -> list:
    params = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE).as_posix()
        if rel in SHIMS:
            continue
        params.append(pytest.param(p, id=rel))
    return params


def test_the_shims_exist():
    for rel in SHIMS:
        assert (PACKAGE / rel).is_file(), rel


@pytest.mark.parametrize("path", _modules())
def test_no_triton_internals_outside_the_shims(path: Path):
    found = [f"{path.relative_to(PACKAGE)}:{line}: {what}" for line, what in violations(path.read_text())]
    assert not found, "Triton internals outside the shims (move them to compat.py or tlx/triton_compat.py):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("from triton._C.libtriton import ir", "imports from triton._C.libtriton"),
    ("import triton._C.libtriton as lib", "imports triton._C.libtriton"),
    ("from triton.compiler.code_generator import CodeGenerator", "imports from triton.compiler.code_generator"),
    ("from triton.runtime import interpreter as interp", "imports triton.runtime.interpreter"),
    ("from triton.language.core import _unwrap_if_constexpr", "imports _unwrap_if_constexpr from triton.language.core"),
    ("import triton.language as tl\ntl.core._unwrap_if_constexpr(x)", "reads tl.core._unwrap_if_constexpr"),
    ("from triton.runtime import interpreter as interp\ninterp._get_np_dtype(t)", "reads interp._get_np_dtype"),
    ("def f(_semantic):\n    return _semantic._str_to_dot_input_precision('tf32')",
     "reads _semantic._str_to_dot_input_precision"),
    ("def f(_semantic):\n    return _semantic.builder.options.arch", "reads builder state _semantic.builder.options"),
    ("def f(_semantic):\n    return _semantic.builder.__dict__", "reads builder state _semantic.builder.__dict__"),
    ("def f(gen):\n    return gen.cur_node", "reads Triton-internal attribute gen.cur_node"),
    ("def f(x):\n    return x._semantic", "reads Triton-internal attribute x._semantic"),
])
def test_the_scan_catches(source, expected):
    """The rules above, each on a one-line offender (and a public use that must pass)."""
    found = [what for _, what in violations(source)]
    assert expected in found, found


def test_the_scan_passes_tritium_style_code():
    """Public Triton API and tritium's own private names are fine."""
    source = ("import triton\nimport triton.language as tl\nfrom triton.language.core import builtin, base_type\n"
              "from .triton_compat import compile_options\n"
              "class A:\n    def __init__(self):\n        self._cache = {}\n"
              "def f(x, _semantic=None):\n    y = _semantic.to_tensor(x)\n"
              "    return tl.where(y, 1, 2, _semantic=_semantic), compile_options(_semantic).arch, A()._cache\n")
    assert list(violations(source)) == []
