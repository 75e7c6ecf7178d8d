"""torch.compile with Inductor and tritium on a GPU: an activated pipeline reaches the Triton kernels
Inductor generates, compiled in its worker processes; Inductor's caches do not hand a kernel built
under one pipeline to another; and tritium's ops (matmul, attention) compile with fullgraph=True.

The pipeline (tests/torch_mark_plugin.py) ends each kernel's PTX with ``// tritium-torchmark pid=N``,
N the process that compiled it; Triton's cache dir (a fresh one per compilation here) holds the PTX of
every kernel compiled."""
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import torch._inductor.async_compile as async_compile  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402

import tritium.plugins as tp  # noqa: E402
from tritium import torch_integration  # noqa: E402
from tritium.ops import attention, matmul  # noqa: E402

import torch_mark_plugin as mark  # noqa: E402

pytestmark = pytest.mark.gpu


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(256, 512)
        self.norm = torch.nn.LayerNorm(512)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.linear(x)) * 1.5 + x.repeat(1, 2))


def _ptx_marks(cache_dir: Path) -> dict[str, list[int]]:
    """Each PTX file in Triton's cache dir: the pids in its marks (empty list: unmarked)."""
    found = {}
    for ptx in cache_dir.rglob("*.ptx"):
        found[ptx.name] = [int(line.split("pid=")[1]) for line in ptx.read_text().splitlines()
                           if line.startswith(mark.MARK)]
    return found


def _compile_and_run(model, x, tmp_path: Path, name: str, monkeypatch) -> tuple[torch.Tensor, dict]:
    """Compile ``model`` afresh (Dynamo reset, a new Triton cache dir), run it, return its output and marks."""
    cache = tmp_path / name
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))  # Inductor passes it on to its workers per job
    torch._dynamo.reset()
    out = torch.compile(model)(x)
    torch.cuda.synchronize()
    return out, _ptx_marks(cache)


def test_inductor_kernels_compiled_in_workers_get_the_pipeline(tmp_path, monkeypatch):
    assert torch_integration.installed()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    tp.load_plugin("torch_mark_plugin")
    torch.manual_seed(0)
    model = Block().cuda()
    x = torch.randn(64, 256, device="cuda")
    with torch.no_grad():
        ref = model(x)
    with inductor_config.patch(compile_threads=2, fx_graph_cache=True):
        async_compile.AsyncCompile.warm_pool()
        async_compile.AsyncCompile.wait_pool_ready()  # else the first kernels compile in this process
        try:
            with torch.no_grad():
                tp.activate("torchmark:mark")
                out, marks = _compile_and_run(model, x, tmp_path, "marked", monkeypatch)
                torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
                assert marks, "Inductor compiled no Triton kernel"
                assert all(marks.values()), f"kernels without the mark: {[k for k, v in marks.items() if not v]}"
                pids = {pid for v in marks.values() for pid in v}
                assert pids - {os.getpid()}, f"every kernel was compiled in this process ({pids}), none in a worker"

                # Another pipeline (none): Inductor must not reuse the marked graph or kernels.
                tp.deactivate()
                out, plain = _compile_and_run(model, x, tmp_path, "plain", monkeypatch)
                torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
                assert plain, "the graph compiled under the pipeline was reused without compiling its kernels"
                assert not any(plain.values()), f"marked kernels reused: {[k for k, v in plain.items() if v]}"

                # Back to the pipeline: whatever is compiled again carries the mark.
                tp.activate("torchmark:mark")
                out, again = _compile_and_run(model, x, tmp_path, "again", monkeypatch)
                torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
                assert all(again.values())
        finally:
            tp.deactivate()
            torch._dynamo.reset()
            async_compile.shutdown_compile_workers()


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.get_device_capability() != (9, 0),
                    reason="the attention and GEMM kernels are written for sm_90")
def test_tritium_ops_under_torch_compile_fullgraph():
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 4, 300, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    a = torch.randn(200, 96, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(96, 136, device="cuda", dtype=torch.bfloat16)

    def f(q, k, v, a, b):
        o = attention(q * 0.5, k, v, causal=True)
        return o.float() * 2, torch.nn.functional.gelu(matmul(a, b, out_dtype=torch.float32))

    torch._dynamo.reset()
    o, c = torch.compile(f, fullgraph=True)(q, k, v, a, b)
    ref_o = torch.nn.functional.scaled_dot_product_attention((q * 0.5).float(), k.float(), v.float(), is_causal=True)
    torch.testing.assert_close(o, ref_o * 2, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(c, torch.nn.functional.gelu(a.float() @ b.float()), rtol=2e-2, atol=2e-2)
    torch._dynamo.reset()
