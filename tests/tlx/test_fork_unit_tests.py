"""A cheap slice of the TLX fork's own unit tests, ported by import, on tritium (issue 21).

scripts/fork_unit_tests.py runs all of them (and measures the rates in docs/tlx-coverage.md); this runs a
few of each mode, so that a regression fails here. The fork's tests are in no wheel: they come from a git
copy of the fork ($TRITIUM_FORK_GIT), which CI does not have; without one these tests skip, saying so.
"""
from __future__ import annotations

import importlib.util
import sys

import pytest

import fork_conformance as fc

spec = importlib.util.spec_from_file_location("fork_unit_tests", fc.REPO / "scripts" / "fork_unit_tests.py")
harness = importlib.util.module_from_spec(spec)
sys.modules.setdefault("fork_unit_tests", harness)
spec.loader.exec_module(harness)

CACHE, WHY = harness.find_tests()
#: The rates in docs/tlx-coverage.md were measured on Triton 3.6; the slice runs on 3.6-3.9. On 3.7+ it once
#: failed (ptxas on test_tlx_barriers' PTX, the gfx950 hsaco link of test_tlx_amd) because the harness's
#: wrapper over triton.compile hid Triton's compile from tritium's stages-hook key, so TLX never lowered
#: (fixed in tritium.compat; test_conformance_sync.py checks it without the fork's tests).
pytestmark = pytest.mark.skipif(CACHE is None, reason=WHY)

#: (file, target, interpreted, test names): each must count (pass, or compile in compile mode).
SLICE = [
    ("test_tlx_barriers.py", "sm90", False, ["test_wait_arrive_non_ws", "test_named_wait_arrive"]),
    ("test_tlx_cluster.py", "sm90", False, ["test_ctas_per_cga", "test_explicit_cluster_sync_ws"]),
    ("test_tlx_amd.py", "gfx950", False, ["test_buffer_atomic_rejects_unsupported_i16_gfx950",
                                          "test_async_load_compiles_gfx950", "test_local_load_compiles_gfx950"]),
    ("test_tlx_misc.py", "sm90", True, ["test_buffer_indexing_in_function_call", "test_size_of"]),
    ("test_tlx_storage_alias.py", "gfx950", True, ["TestStorageAliasSpecType", "TestReuseGroupType"]),
]

@pytest.mark.parametrize("file, target, interpret, names",
                         [pytest.param(*s, id=f"{s[0][:-3]}-{s[1]}-{'interp' if s[2] else 'compile'}") for s in SLICE])
def test_fork_unit_tests_slice(file, target, interpret, names):
    records = harness.run_file(CACHE, file, target, interpret, timeout=300, select=names)
    ran = [r for r in records if r["outcome"] not in ("skipped", "excluded")]
    assert ran, f"{file}: none of {names} ran: {records}"
    failed = [f"{r['test']}: {r['detail']}" for r in ran if harness.classify(r, interpret) != "ok"]
    assert not failed, "\n".join(failed)


def test_exclusion_rule_gives_reasons(monkeypatch):
    import fork_unit_plugin as plugin

    def uses_memory_stats():
        import torch
        return torch.cuda.memory_allocated()

    def uses_newer_op():
        return tlx.assume_uniform(0)  # noqa: F821 - read, not run

    def plain():
        return 1

    def launches_a_cluster(kernel):
        return kernel[(2,)](ctas_per_cga=(2, 1, 1))

    api = plugin._fork_api()
    assert "memory statistics" in plugin.exclusion(uses_memory_stats, api)
    assert plugin.exclusion(uses_newer_op, api) == "TLX op newer than the 3.7.4 API: tlx.assume_uniform"
    assert plugin.exclusion(plain, api) is None
    assert plugin.exclusion(launches_a_cluster, api) is None  # compile mode compiles clusters
    monkeypatch.setattr(plugin, "INTERPRET", True)
    assert "the interpreter runs clusters of one CTA" in plugin.exclusion(launches_a_cluster, api)
