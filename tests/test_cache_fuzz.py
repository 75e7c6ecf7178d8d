"""Fuzzing the compile cache (issue 11): random pipeline switches, pass edits and fresh processes, one cache.

A plugin (``PLUGIN``) has three pipelines whose passes each write a mark into the TTGIR module. Every
mark depends on one thing the pass's output follows: its code, a default argument, a module constant
it reads, a helper function it calls, a dict in its closure, a callable object's attribute, a
``functools.partial`` keyword, and two things tritium cannot see (an environment variable), followed
by the plugin's version and by an explicit ``cache_key``. A seeded random plan edits those in place
(new code swapped into the live function, mutated dicts and attributes, rebound globals), or in the
plugin's source between processes, and asks for kernels under random pipelines from 3 processes that
share one ``TRITON_CACHE_DIR``: through ``triton.compile``, a long-lived JIT kernel's ``warmup`` and
a new JIT kernel's. Every binary served must carry exactly the marks its request's state calls for
(no marks without a pipeline), and be compiled exactly when that state was never compiled before:
reuse across processes works, and nothing stale is reused. Set ``TRITIUM_FUZZ_SEED`` to replay a plan.
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap

import pytest

#: The plan edits passes in place on purpose; test_cache.py checks the warning such an edit gives.
pytestmark = pytest.mark.filterwarnings("ignore::tritium.plugins.PassFingerprintWarning")

HERE = os.path.dirname(os.path.abspath(__file__))

PLUGIN = '''
import functools
import os

from triton._C.libtriton import ir
from tritium.plugins import Pipeline, Plugin, PythonPass, mlir_pass

GLOBAL = {g}
TABLE = {{"k": {t}}}


def _set(mod, name, text):
    mod.set_attr(name, ir.builder(mod.context).get_string_attr(text))


def make_helper(value):
    def helper():
        return value
    return helper


helper = make_helper({h})


def make_marker(table):
    def marker(mod, ctx, default={d}):
        _set(mod, "tritium.fuzz", f"c{c}d{{default}}g{{GLOBAL}}h{{helper()}}t{{table['k']}}")
    return marker


MARKER = make_marker(TABLE)


class Stateful:
    def __init__(self, state):
        self.state = state

    def __call__(self, mod, ctx):
        _set(mod, "tritium.fuzz_obj", f"o{{self.state}}")


STATEFUL = Stateful({o})


def tag(mod, ctx, name, value):
    _set(mod, name, value)


PARTIAL = functools.partial(tag, name="tritium.fuzz_part", value="p{p}")


def versioned(mod, ctx):  # reads what tritium cannot see: the plugin's version follows it
    _set(mod, "tritium.fuzz_ver", "v" + os.environ["FUZZ_VERSIONED"])


def keyed(mod, ctx):  # the same, followed by the pass's explicit cache key
    _set(mod, "tritium.fuzz_key", "k" + os.environ["FUZZ_KEYED"])


def build():
    marker = mlir_pass(MARKER, name="marker")
    rest = [mlir_pass(STATEFUL, name="stateful"), mlir_pass(PARTIAL, name="partial"),
            mlir_pass(versioned, name="versioned"),
            PythonPass(keyed, name="keyed", cache_key="k" + os.environ["FUZZ_KEYED"])]

    def pipeline(name, passes):
        p = Pipeline(name)
        for one in passes:
            p = p.insert("ttgir", one, at="end")
        return p
    return Plugin("fuzz", "1." + os.environ["FUZZ_VERSIONED"], pipelines={{
        "marker": pipeline("marker", [marker]), "opaque": pipeline("opaque", rest),
        "all": pipeline("all", [marker, *rest])}})
'''

#: What each pipeline's passes mark, from the state; ``None`` is no pipeline.
PIPELINES = {None: (), "marker": ("fuzz",), "opaque": ("fuzz_obj", "fuzz_part", "fuzz_ver", "fuzz_key"),
             "all": ("fuzz", "fuzz_obj", "fuzz_part", "fuzz_ver", "fuzz_key")}
#: The state: one small integer per thing a pass's output follows.
KNOBS = ("c", "d", "g", "h", "t", "o", "p", "v", "k")
MODES = ("compile", "warmup", "fresh")  # triton.compile; warmup of one long-lived JIT kernel; of a new one
PROCESSES, REQUESTS = 3, 4


def expected_marks(pipeline, s):
    every = {"fuzz": f"c{s['c']}d{s['d']}g{s['g']}h{s['h']}t{s['t']}", "fuzz_obj": f"o{s['o']}",
             "fuzz_part": f"p{s['p']}", "fuzz_ver": f"v{s['v']}", "fuzz_key": f"k{s['k']}"}
    return {name: every[name] for name in PIPELINES[pipeline]}


def cache_identity(pipeline, s):
    """What a binary's key must tell apart: the whole plugin (its version and the code and state of all its
    passes) for any of its pipelines, plus the explicit cache key where the pipeline holds that pass."""
    if pipeline is None:
        return (None,)
    return (pipeline, *(s[k] for k in KNOBS if k != "k"), s["k"] if "fuzz_key" in PIPELINES[pipeline] else None)


def make_plan(seed):
    """Processes of requests, each request preceded by in-place edits; between processes, source edits."""
    rng = random.Random(seed)
    state = {k: 0 for k in KNOBS}
    plan = []
    for _ in range(PROCESSES):
        for knob in rng.sample(KNOBS, rng.randint(0, 3)):  # edits of the plugin's source or environment
            state[knob] = rng.randrange(3)
        proc = {"state": dict(state), "requests": []}
        for _ in range(REQUESTS):
            edits = []
            for knob in rng.sample(KNOBS, rng.choice((0, 1, 1, 2))):
                state[knob] = rng.randrange(3)
                edits.append([knob, state[knob]])
            proc["requests"].append({"edits": edits, "pipeline": rng.choice(list(PIPELINES)),
                                     "mode": rng.choice(MODES), "state": dict(state)})
        plan.append(proc)
    return plan


def plugin_source(s):
    return PLUGIN.format(**{k: s[k] for k in KNOBS if k not in ("v", "k")})


# --------------------------------------------------------------------------------------------
# The child process
# --------------------------------------------------------------------------------------------
_MARK = re.compile(r'tritium\.(fuzz\w*) = "([^"]*)"')


def _edit(plugin, knob, value):
    """Edit the live plugin in place, as a program (or a notebook) would."""
    import tritium.plugins as tp
    if knob == "c":  # new code in the same function object
        namespace = {}
        exec(compile(plugin_source({**{k: 0 for k in KNOBS}, "c": value}), plugin.__file__, "exec"), namespace)
        plugin.MARKER.__code__ = namespace["MARKER"].__code__
    elif knob == "d":
        plugin.MARKER.__defaults__ = (value,)
    elif knob == "g":
        plugin.GLOBAL = value
    elif knob == "h":
        plugin.helper = plugin.make_helper(value)
    elif knob == "t":
        plugin.TABLE["k"] = value
    elif knob == "o":
        plugin.STATEFUL.state = value
    elif knob == "p":
        plugin.PARTIAL.keywords["value"] = f"p{value}"
    else:  # state tritium cannot see changes: the plugin says so with a new version or cache key
        os.environ["FUZZ_VERSIONED" if knob == "v" else "FUZZ_KEYED"] = str(value)
        tp.unload_plugin("fuzz")
        tp.register(plugin.build())


def warm(jit_kernel):
    """``warmup`` of the add kernel with float32 pointers (a MockTensor: no torch tensors needed)."""
    from triton.runtime.jit import MockTensor

    class F32:  # what MockTensor needs of a torch dtype
        def __str__(self):
            return "torch.float32"
    p = MockTensor(F32())
    return jit_kernel.warmup(p, p, p, 1024, BLOCK=256, grid=(1,))


def child(plan_path, index):
    """Run process ``index`` of the plan; print, per request, the marks served and whether it compiled."""
    import importlib

    import triton
    from triton.runtime.driver import driver

    import tritium.plugins as tp
    from tritium.plugins.inspection import compile_kernel
    from kernels import KERNELS, FakeDriver

    driver._active = FakeDriver()
    plan = json.load(open(plan_path))
    sys.path.insert(0, os.path.dirname(plan_path))
    plugin = importlib.import_module("fuzz_plugin")
    tp.register(plugin.build())
    fn, sig, const = KERNELS["add"]
    long_lived = triton.jit(fn.fn)
    events = []
    triton.knobs.compilation.listener = lambda *, cache_hit, **_: events.append(cache_hit)
    edited_in_place = False
    for request in plan[index]["requests"]:
        for knob, value in request["edits"]:
            _edit(plugin, knob, value)
            edited_in_place |= knob not in ("v", "k")
        if request["mode"] == "warmup" and edited_in_place:
            tp.refresh()  # a kernel launched before in-place edits sees them after a refresh (compiles at once)
            edited_in_place = False
        events.clear()
        name = request["pipeline"] and f"fuzz:{request['pipeline']}"
        if request["mode"] == "compile":
            kernel = compile_kernel(fn, sig, "sm90", constexprs=const, pipeline=name)
        else:
            with tp.use_pipeline(name):
                kernel = warm(long_lived if request["mode"] == "warmup" else triton.jit(fn.fn))
        print(json.dumps({"marks": dict(_MARK.findall(kernel.asm["ttgir"])), "compiled": False in events}),
              flush=True)


# --------------------------------------------------------------------------------------------
# The test
# --------------------------------------------------------------------------------------------
def test_every_binary_carries_the_marks_of_its_pipeline_and_state(tmp_path):
    seed = int(os.environ.get("TRITIUM_FUZZ_SEED", random.randrange(2**32)))
    plan = make_plan(seed)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    cache = tmp_path / "cache"
    compiled = set()  # cache identities compiled so far, by any process
    log = []
    for index, proc in enumerate(plan):
        (tmp_path / "fuzz_plugin.py").write_text(plugin_source(proc["state"]))
        env = dict(os.environ, TRITON_CACHE_DIR=str(cache), FUZZ_VERSIONED=str(proc["state"]["v"]),
                   FUZZ_KEYED=str(proc["state"]["k"]), PYTHONPATH=os.pathsep.join([HERE, os.environ.get(
                       "PYTHONPATH", "")]), TRITIUM_DISABLE_PLUGIN_AUTOLOAD="1",
                   PYTHONDONTWRITEBYTECODE="1")  # the plugin's source changes between processes: never a stale .pyc
        code = f"import test_cache_fuzz as t; t.child({str(plan_path)!r}, {index})"
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        replay = f"replay with TRITIUM_FUZZ_SEED={seed}"
        assert run.returncode == 0, f"process {index} failed ({replay}):\n{run.stderr[-3000:]}"
        results = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        assert len(results) == len(proc["requests"]), f"{replay}\n{run.stdout}\n{run.stderr[-3000:]}"
        for request, got in zip(proc["requests"], results):
            want = expected_marks(request["pipeline"], request["state"])
            # triton.compile and the JIT specialize the kernel differently: two binaries per state
            identity = (request["mode"] == "compile", *cache_identity(request["pipeline"], request["state"]))
            log.append(f"process {index}: edits {request['edits']}, {request['mode']} under "
                       f"{request['pipeline']}: marks {got['marks']}, compiled {got['compiled']}")
            history = textwrap.indent("\n".join(log), "  ")
            assert got["marks"] == want, f"stale or wrong binary ({replay}): wanted {want}\n{history}"
            assert got["compiled"] == (identity not in compiled), (
                f"{'recompiled a state compiled before' if got['compiled'] else 'reused a binary for a new state'} "
                f"({replay})\n{history}")
            compiled.add(identity)


# --------------------------------------------------------------------------------------------
# The same, in one process and one order: in-place edits reach compiles at once, launches after refresh()
# --------------------------------------------------------------------------------------------
@pytest.fixture
def in_place(tmp_path, monkeypatch):
    """The fuzz plugin, loaded in this process with every knob at 0, over a private cache."""
    import triton
    from triton.runtime.driver import driver

    import tritium.plugins as tp
    from kernels import FakeDriver

    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path / "cache"))
    monkeypatch.setattr(driver, "_active", FakeDriver())
    for name in ("FUZZ_VERSIONED", "FUZZ_KEYED"):
        monkeypatch.setenv(name, "0")
    (tmp_path / "fuzz_plugin_inplace.py").write_text(plugin_source({k: 0 for k in KNOBS}))
    monkeypatch.syspath_prepend(str(tmp_path))
    import fuzz_plugin_inplace as plugin
    tp.register(plugin.build())
    yield plugin
    sys.modules.pop("fuzz_plugin_inplace", None)


def _marks(kernel):
    return dict(_MARK.findall(kernel.asm["ttgir"]))


@pytest.mark.parametrize("knob", [k for k in KNOBS if k not in ("v", "k")])
def test_an_in_place_edit_reaches_the_next_compile(in_place, knob):
    from tritium.plugins.inspection import compile_kernel
    from kernels import KERNELS
    fn, sig, const = KERNELS["add"]
    state = {k: 0 for k in KNOBS}

    def compiled():
        return _marks(compile_kernel(fn, sig, "sm90", constexprs=const, pipeline="fuzz:all"))
    assert compiled() == expected_marks("all", state)
    _edit(in_place, knob, 2)
    assert compiled() == expected_marks("all", {**state, knob: 2})  # no refresh needed
    _edit(in_place, knob, 0)
    assert compiled() == expected_marks("all", state)


def test_launches_see_in_place_edits_after_refresh_and_no_binary_outlives_its_key(in_place):
    import triton

    import tritium.plugins as tp
    from kernels import KERNELS
    fn = KERNELS["add"][0].fn
    first, second = triton.jit(fn), triton.jit(fn)
    a, b = expected_marks("all", {k: 0 for k in KNOBS}), expected_marks("all", {**{k: 0 for k in KNOBS}, "t": 1})
    with tp.use_pipeline("fuzz:all"):
        assert _marks(warm(first)) == a
        in_place.TABLE["k"] = 1  # a dict in the pass's closure, edited in place
        assert _marks(warm(second)) == b  # a kernel's first launch compiles, and sees the edit
        tp.refresh()
        assert _marks(warm(first)) == b  # a kernel launched before sees it after refresh()
        in_place.TABLE["k"] = 0
        tp.refresh()
        # `second` compiled B while launches still held A's key: that binary must not come back as A's
        assert _marks(warm(second)) == a and _marks(warm(first)) == a
