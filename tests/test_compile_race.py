"""One snapshot per compile (issue 23): while other threads switch pipelines and enable/disable tritium,
every compiled binary carries exactly the marks its cache key stands for."""
import re
import threading
import time

import pytest
import triton
from triton.runtime.cache import FileCacheManager

import tritium.plugins as tp
from tritium.plugins.inspection import make_source, parse_target
from kernels import KERNELS
from test_cache import mark

ADD = KERNELS["add"]


class SlowCache(FileCacheManager):
    """Widens the gap between the key (computed just before) and the stages (built just after)."""

    def get_group(self, filename):
        time.sleep(0.02)
        return super().get_group(filename)


def compile_add():
    fn, sig, const = ADD
    return triton.compile(make_source(fn, sig, const), target=parse_target("sm90"))


def marks(kernel):
    return re.findall(r"tritium\.mark = (\d+)", kernel.asm["ttgir"])


def test_binaries_carry_their_keys_marks_while_other_threads_switch(monkeypatch, tmp_path, no_auto_pipelines):
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    monkeypatch.setattr(triton.knobs.cache, "manager_class", SlowCache)
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)  # every compile crosses the window
    a, b = mark(1), mark(2)
    expected = {}
    for pipeline, want in ((None, []), (a, ["1"]), (b, ["2"])):
        with tp.use_pipeline(pipeline):
            kernel = compile_add()
        assert marks(kernel) == want
        expected[kernel.hash] = want
    assert len(expected) == 3

    stop = threading.Event()
    results, errors = [], []

    def hammer(actions):
        try:
            while not stop.is_set():
                for action in actions:
                    action()
                    time.sleep(0.001)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def compiler():
        try:
            for _ in range(6):
                kernel = compile_add()
                results.append((kernel.hash, marks(kernel)))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    switchers = [threading.Thread(target=hammer, args=([lambda: tp.activate(a), lambda: tp.activate(b),
                                                        tp.deactivate],)),
                 threading.Thread(target=hammer, args=([tp.disable, tp.enable],))]
    compilers = [threading.Thread(target=compiler) for _ in range(2)]
    try:
        for t in switchers + compilers:
            t.start()
        for t in compilers:
            t.join()
    finally:
        stop.set()
        for t in switchers:
            t.join()
        tp.enable()
        tp.deactivate()
    assert not errors, errors
    wrong = [(h, got, expected.get(h)) for h, got in results if expected.get(h) != got]
    assert not wrong, f"{len(wrong)} of {len(results)} binaries do not carry their key's marks: {wrong}"
    assert {h for h, _ in results} - set(expected) == set()
