"""docs/tlx-coverage.md is what scripts/tlx_coverage.py generates from the code and the tests."""
from __future__ import annotations

import ast
import importlib.util

import pytest

import fork_conformance as fc

spec = importlib.util.spec_from_file_location("tlx_coverage", fc.REPO / "scripts" / "tlx_coverage.py")
coverage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(coverage)


def test_committed_coverage_doc_is_current():
    assert coverage.DOC.read_text() == coverage.render(), (
        "docs/tlx-coverage.md is stale: run .venv/bin/python scripts/tlx_coverage.py --write")


def test_fork_names_match_the_fork_wheel():
    init = fc.find_fork_init()
    if init is None:
        pytest.skip(fc.find_tutorials()[1])
    names = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            names |= set(ast.literal_eval(node.value))
    assert names == set(coverage.FORK_NAMES)


def test_call_scan_sees_positional_and_keyword_parameters():
    tree = ast.parse("tlx.local_alloc((16, 16), tl.float16, 2, reuse=x)\ntlx.fence()\nother.f(1)\n")
    assert coverage._calls(tree) == [("local_alloc", 3, ["reuse"]), ("fence", 0, [])]
