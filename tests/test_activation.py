"""Activation: global until unset, nested per thread and per asyncio task, thread-safe."""
import threading

import pytest

import tritium.plugins as tp
from tritium.plugins import Pipeline, PipelineError


def test_global_activation_holds_until_unset():
    a = Pipeline("a")
    tp.activate(a)
    assert tp.active_pipeline() is a
    seen = []
    t = threading.Thread(target=lambda: seen.append(tp.active_pipeline()))
    t.start()
    t.join()
    assert seen == [a]  # every thread sees the global pipeline
    tp.deactivate()
    assert tp.active_pipeline() is None
    assert tp.effective_pipelines() == tp.default_manager().auto_pipelines()  # only plugins' automatic ones remain


def test_context_manager_nests_and_wins_over_global():
    a, b, c = Pipeline("a"), Pipeline("b"), Pipeline("c")
    tp.activate(a)
    with tp.use_pipeline(b):
        assert tp.active_pipeline() is b
        with tp.use_pipeline(c):
            assert tp.active_pipeline() is c
        with tp.use_pipeline(None):
            assert tp.active_pipeline() is None
        assert tp.active_pipeline() is b
    assert tp.active_pipeline() is a


def test_threads_do_not_see_each_others_context():
    barrier = threading.Barrier(2)
    seen = {}

    def worker(name):
        p = Pipeline(name)
        with tp.use_pipeline(p):
            barrier.wait()
            seen[name] = (tp.active_pipeline() is p, tp.pipelines_key()[0])
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("t1", "t2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["t1"][0] and seen["t2"][0]
    assert seen["t1"][1].split("+")[-1].startswith("t1#") and seen["t2"][1].split("+")[-1].startswith("t2#")


def test_key_reflects_every_effective_pipeline():
    plugin = tp.Plugin("auto", "1", auto_pipelines=[Pipeline("always")])
    tp.register(plugin)
    key, digest = tp.pipelines_key()
    assert "auto:always#" in key and digest
    with tp.use_pipeline(Pipeline("mine")):
        assert tp.pipelines_key()[0].split("+")[-1].startswith("mine#")


def test_bad_arguments():
    with pytest.raises(PipelineError, match="expected a Pipeline or a pipeline name"):
        tp.activate(42)
    with pytest.raises(PipelineError, match="is not a @triton.jit kernel"):
        tp.bind(Pipeline("x"), object())


def test_asyncio_tasks_keep_their_own_pipeline_across_awaits():
    import asyncio

    pipelines = [Pipeline(f"task{i}") for i in range(4)]

    async def worker(p: Pipeline) -> list:
        seen = []
        with tp.use_pipeline(p):
            for _ in range(5):
                await asyncio.sleep(0)  # every other task runs here, inside its own use_pipeline
                seen.append(tp.active_pipeline())
                seen.append(tp.pipelines_key())
        seen.append(tp.active_pipeline())
        return seen

    async def main() -> list:
        return await asyncio.gather(*(worker(p) for p in pipelines))

    for p, seen in zip(pipelines, asyncio.run(main())):
        assert seen[0:10:2] == [p] * 5
        with tp.use_pipeline(p):
            assert seen[1:10:2] == [tp.pipelines_key()] * 5
        assert seen[-1] is None
