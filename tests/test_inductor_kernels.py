"""torch.compile picks tritium's ops (tritium.ops.use_kernels), on the CPU: the post-grad graph pass on graphs
of fake CUDA tensors, which nodes it takes over and which it leaves, and the switch in Inductor's cache key.
tests/gpu/test_inductor_kernels_gpu.py compiles a transformer block end to end on the GPU."""
import operator

import pytest

torch = pytest.importorskip("torch")

from torch._inductor import config as inductor_config  # noqa: E402
from torch._subclasses import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import tritium.ops  # noqa: E402
from tritium import torch_integration  # noqa: E402
from tritium.ops import inductor  # noqa: E402

aten = torch.ops.aten


@pytest.fixture
def switch():
    """use_kernels as the test sets it, off again afterwards."""
    yield tritium.ops.use_kernels
    tritium.ops.use_kernels(False, False)


_MODE = FakeTensorMode()


def fake(*shape, dtype=torch.bfloat16, device="cuda"):
    """A fake tensor: CUDA ones exist without a GPU."""
    with _MODE:
        return torch.empty(*shape, dtype=dtype, device=device)


def targets(graph):
    return [n.target for n in graph.nodes if n.op == "call_function"]


def gemms(x, w, bias, big, w_t):
    return torch.addmm(bias, x, w), x @ w, big @ big, x @ w_t, torch.addmm(bias, x, w, beta=2)


def rated_small_under_graphs(M, N, K, even, graphs):
    """A GEMM rule that rates the small class faster under CUDA graphs (the H200's rates none: plans.at_least_cublas)."""
    return graphs and even and M * N * K <= 512 ** 3


def test_no_gemm_goes_to_tritium_where_the_h200_rates_none(switch):
    switch(mm=True, attention=False)
    graph = make_fx(gemms, tracing_mode="fake")(fake(256, 512), fake(512, 256), fake(256), fake(2048, 2048),
                                                fake(256, 512).t()).graph
    for cudagraphs in (False, True):
        with inductor_config.patch({"triton.cudagraphs": cudagraphs}):
            assert inductor.rewrite(graph) == 0


def test_gemms_a_rule_rates_go_to_tritium_and_the_rest_stays(switch, monkeypatch):
    monkeypatch.setattr(inductor.plans, "at_least_cublas", rated_small_under_graphs)
    args = (fake(256, 512), fake(512, 256), fake(256), fake(2048, 2048), fake(256, 512).t())
    switch(mm=True, attention=False)
    graph = make_fx(gemms, tracing_mode="fake")(*args).graph
    assert inductor.rewrite(graph) == 0  # the rule is asked whether the graph runs under CUDA graphs
    with inductor_config.patch({"triton.cudagraphs": True}):
        assert inductor.rewrite(graph) == 2  # addmm and mm at 256x256x512; not 2048^3, b transposed, beta=2
    assert targets(graph).count(torch.ops.tritium.matmul.default) == 2
    assert targets(graph).count(aten.mm.default) == 2 and targets(graph).count(aten.addmm.default) == 1
    add = next(n for n in graph.nodes if n.target == aten.add.Tensor)  # addmm: tritium's product plus the bias
    assert add.args[0].target == torch.ops.tritium.matmul.default and add.meta["val"].shape == (256, 256)


@pytest.mark.parametrize("dtype,device", [(torch.float32, "cuda"), (torch.bfloat16, "cpu")])
def test_other_dtypes_and_devices_fall_back(switch, monkeypatch, dtype, device):
    monkeypatch.setattr(inductor.plans, "at_least_cublas", rated_small_under_graphs)
    x = fake(256, 256, dtype=dtype, device=device)
    graph = make_fx(lambda a, b: a @ b, tracing_mode="fake")(x, x).graph
    switch(mm=True, attention=True)
    with inductor_config.patch({"triton.cudagraphs": True}):
        assert inductor.rewrite(graph) == 0 and aten.mm.default in targets(graph)


def sdpa_graph(op, seq, head_dim=128, causal=True, extra=()):
    """A post-grad graph with one SDPA kernel node and a use of its output (and of ``extra`` outputs)."""
    graph = torch.fx.Graph()
    q = graph.placeholder("q")
    q.meta["val"] = fake(1, 16, seq, head_dim)
    args = (q, q, q, 0.0, causal) if op == aten._scaled_dot_product_flash_attention.default else \
        (q, q, q, None, False, 0.0, causal)
    node = graph.call_function(op, args, {"scale": 0.1})
    with _MODE:
        node.meta["val"] = op(*(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args), scale=0.1)
    outs = [graph.call_function(operator.getitem, (node, i)) for i in (0, *extra)]
    graph.output(tuple(outs))
    return graph


@pytest.mark.parametrize("op", [aten._scaled_dot_product_flash_attention.default,
                                aten._scaled_dot_product_efficient_attention.default,
                                aten._scaled_dot_product_cudnn_attention.default])
def test_sdpa_goes_to_tritium_where_it_measured_faster(switch, op):
    switch(mm=False, attention=True)
    graph = sdpa_graph(op, 8192)
    assert inductor.rewrite(graph) == 1
    (call,) = [n for n in graph.nodes if n.op == "call_function"]
    assert call.target == torch.ops.tritium._attention_inference.default and call.args[3:] == (True, 0.1, False)
    for kept in (sdpa_graph(op, 4096), sdpa_graph(op, 8192, head_dim=64), sdpa_graph(op, 8192, extra=(1,))):
        assert inductor.rewrite(kept) == 0 and op in targets(kept)  # shorter, d64, log-sum-exp used


def test_the_switch_is_off_by_default_and_checks_its_arguments(switch):
    graph = make_fx(lambda a, b: a @ b, tracing_mode="fake")(fake(64, 64), fake(64, 64)).graph
    assert inductor.rewrite(graph) == 0
    with pytest.raises(TypeError, match="use_kernels: mm must be True or False, got str 'yes'"):
        switch(mm="yes")


def test_the_switch_enters_inductors_cache_key_and_runs_in_its_pass(switch, monkeypatch):
    monkeypatch.setattr(inductor.plans, "at_least_cublas", rated_small_under_graphs)
    torch_integration.install()
    key_pass = inductor_config.post_grad_custom_post_pass
    off = key_pass.uuid()
    switch(mm=True, attention=False)
    on = key_pass.uuid()
    switch(mm=True, attention=True)
    assert len({off, on, key_pass.uuid()}) == 3 and "mm=1:attention=0" in on[-1]
    graph = make_fx(lambda a, b: a @ b, tracing_mode="fake")(fake(64, 64), fake(64, 64)).graph
    with inductor_config.patch({"triton.cudagraphs": True}):
        key_pass(graph)  # what Inductor calls after its post-grad passes
    assert targets(graph) == [torch.ops.tritium.matmul.default]
    switch(False, False)
    assert key_pass.uuid() == off


END_TO_END = """
import torch
from torch._inductor.utils import run_and_get_code
import tritium.ops
from tritium.ops import inductor

# The CPU stands in for the GPU: Inductor lowers the rewritten graph and the ops run in Triton's interpreter.
cpu_fp16 = lambda t: t is not None and t.device.type == "cpu" and t.dtype == torch.float16
inductor.mm_qualifies = lambda a, b, out: cpu_fp16(a)
inductor.attention_qualifies = lambda q, k, v: cpu_fp16(q)
tritium.ops.use_kernels(mm=True, attention=True)

def f(a, b, bias, q):
    attention = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    return torch.relu(torch.addmm(bias, a, b)) + 1, attention

a, b, bias = (torch.randn(*s, dtype=torch.float16) for s in ((64, 32), (32, 48), (48,)))
q = torch.randn(1, 2, 64, 64, dtype=torch.float16)
with torch.no_grad():
    (mm, attention), code = run_and_get_code(torch.compile(f), a, b, bias, q)
    mm_ref, attention_ref = f(a, b, bias, q)
code = "\\n".join(code)
assert "torch.ops.tritium.matmul.default(" in code and "torch.ops.tritium._attention_inference.default(" in code, code
assert (mm.float() - mm_ref.float()).abs().max().item() < 0.05
assert (attention.float() - attention_ref.float()).abs().max().item() < 0.01
"""


@pytest.mark.skipif(not __import__("shutil").which("g++"), reason="Inductor's CPU backend needs a C++ compiler")
def test_inductor_lowers_the_rewritten_graph_and_names_tritiums_ops_in_its_code(tmp_path):
    """torch.compile end to end (a fresh process: the interpreter is chosen before triton is imported)."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "TRITON_INTERPRET": "1", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", END_TO_END], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
