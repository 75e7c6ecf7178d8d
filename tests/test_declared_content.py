"""A plugin that declares ``content`` vouches for its passes' code: their run-time state (caches, warnings
already given) must not change the pipelines key, or a compile worker computes another key than the
process that sent it work (seen on the H200: TLX's async-copy fallback remembers warnings it gave)."""
import tritium.plugins as tp
from tritium.plugins import Pipeline, Plugin, mlir_pass

SEEN: set = set()


@mlir_pass(name="test.remembers")
def remembers(mod, ctx):
    SEEN.add(len(SEEN))  # run-time state the pass reaches through its globals


def _plugin(name: str, content):
    p = Pipeline("p")
    p.insert("ttgir", remembers, after="ttir.convert_to_ttgpuir")
    return Plugin(name=name, version="1", pipelines={"p": p}, auto_pipelines=[p], content=content)


def test_declared_content_stands_for_the_code():
    manager = tp.PluginManager("content-test")
    manager.load_plugin(_plugin("declared", "v1-digest"))
    before = manager.pipelines_key(fresh=True)
    SEEN.add("a warning given")
    assert manager.pipelines_key(fresh=True) == before


def test_without_content_the_code_and_its_globals_count():
    manager = tp.PluginManager("fingerprint-test")
    manager.load_plugin(_plugin("fingerprinted", None))
    before = manager.pipelines_key(fresh=True)
    SEEN.add("another")
    assert manager.pipelines_key(fresh=True) != before


def test_tlx_key_ignores_its_fallback_warnings():
    import tritium.tlx  # noqa: F401  (loads the tlx plugin into the default manager)
    from tritium.tlx import copy_fallback
    before = tp.default_manager().pipelines_key(fresh=True)
    copy_fallback._warned.add(("kernel.py:1", "a warning given"))
    try:
        assert tp.default_manager().pipelines_key(fresh=True) == before
    finally:
        copy_fallback._warned.discard(("kernel.py:1", "a warning given"))
