"""tritium.ops.attention (torch.ops.tritium.attention) on the CPU without the interpreter: the fake
implementations of the forward and the backward on meta and fake tensors, argument errors naming the argument
(GQA's included), torch.compile(fullgraph=True) tracing with no graph break, forward and backward, opcheck; and
test_ops_attention_interp.py (numerics, gradients) run in a TRITON_INTERPRET=1 process."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402

from tritium.ops import attention  # noqa: E402


def _meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_fake_implementation_on_meta_and_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    q = _meta(2, 3, 100, 64, dtype=torch.bfloat16)
    o = attention(q, q, q, causal=True)
    assert o.shape == q.shape and o.dtype == torch.bfloat16 and o.device.type == "meta" and o.is_contiguous()
    with FakeTensorMode():
        # a [B, S, H, D] tensor seen as [B, H, S, D]: the result is still a new contiguous tensor
        q = torch.empty(2, 100, 3, 128, dtype=torch.float16).transpose(1, 2)
        o = torch.ops.tritium.attention(q, q, q, False, 0.5)
        assert o.shape == (2, 3, 100, 128) and o.is_contiguous()


@pytest.mark.parametrize("q,k,v,kwargs,exc,message", [
    (_meta(1, 2, 8, 64), _meta(1, 2, 8, 64), _meta(1, 2, 16, 64), {}, ValueError,
     r"q, k and v must have the same shape \[batch, heads, seq, head_dim\], got \(1, 2, 8, 64\), \(1, 2, 8, 64\) "
     r"and \(1, 2, 16, 64\)"),
    (_meta(2, 8, 64), _meta(2, 8, 64), _meta(2, 8, 64), {}, ValueError,
     r"q must be 4-D \[batch, heads, seq, head_dim\], got shape \(2, 8, 64\)"),
    (_meta(1, 2, 8, 64), _meta(1, 2, 8, 64, dtype=torch.float32), _meta(1, 2, 8, 64), {}, TypeError,
     r"k must be float16 or bfloat16, got torch.float32"),
    (_meta(1, 2, 8, 64), _meta(1, 2, 8, 64), _meta(1, 2, 8, 64, dtype=torch.bfloat16), {}, TypeError,
     r"q, k and v must have the same dtype"),
    (_meta(1, 2, 8, 96), _meta(1, 2, 8, 96), _meta(1, 2, 8, 96), {}, ValueError,
     r"head_dim must be one of \(64, 128\), got 96"),
    (_meta(1, 2, 8, 64), _meta(1, 2, 8, 64), _meta(1, 2, 8, 64), {"sm_scale": float("nan")}, ValueError,
     r"sm_scale must be a finite number or None, got nan"),
    (torch.zeros(1, 1, 8, 64, dtype=torch.float16), torch.zeros(1, 1, 8, 64, dtype=torch.float16),
     torch.zeros(1, 1, 8, 64, dtype=torch.float16), {}, ValueError,
     r"q, k and v must be CUDA tensors \(or CPU tensors under TRITON_INTERPRET=1\), got cpu"),
])
def test_bad_input_names_the_argument(q, k, v, kwargs, exc, message):
    with pytest.raises(exc, match=r"tritium\.ops\.attention: " + message):
        attention(q, k, v, **kwargs)


def test_cpu_tensors_with_triton_interpret_set_after_import_are_explained(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # too late: Triton chose its driver at import
    q = torch.zeros(1, 1, 8, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"tritium\.ops\.attention: q is a CPU tensor; .*TRITON_INTERPRET=1 \(set "
                                         r"before triton is imported\)"):
        attention(q, q, q)


@pytest.mark.parametrize("make", [
    lambda: torch.randn(2 * 8 * 64 + 1, dtype=torch.float16)[1:].view(1, 2, 8, 64),  # contiguous, base 2 bytes off
    lambda: torch.randn(1, 1, 8, 64, dtype=torch.float16).as_strided((1, 1, 8, 64), (3, 3, 64, 1)),  # size-1 dims
])
def test_inputs_tma_cannot_read_in_place_are_copied(make):
    """A contiguous tensor whose base is not 16-byte aligned (a slice of a larger buffer), or whose size-1 dims
    have odd strides, is one contiguous() returns as it is; TensorDescriptor asserted on it."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    from tritium.kernels.attention_ws_hopper import tma_ready
    x = make()
    ready = tma_ready(x)
    assert ready.data_ptr() % 16 == 0 and torch.equal(ready, x)
    TensorDescriptor.from_tensor(ready, [1, 1, 8, 64])


def test_torch_compile_fullgraph_traces_the_op():
    """Dynamo traces the op through its fake implementation with no graph break (meta tensors, so no
    kernel runs); a shape error surfaces while tracing."""
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    def f(q, k, v):
        return attention(q * 2, k, v, causal=True, sm_scale=0.125).float().sum(dim=-1)

    torch._dynamo.reset()
    q = _meta(1, 2, 40, 64)
    out = torch.compile(f, fullgraph=True, backend=backend)(q, q, q)
    assert out.shape == (1, 2, 40) and out.dtype == torch.float32 and len(calls) == 1
    targets = [n.target for n in calls[0].graph.nodes if n.op == "call_function"]
    assert torch.ops.tritium.attention in targets or torch.ops.tritium.attention.default in targets
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"head_dim must be one of"):
        torch.compile(f, fullgraph=True, backend=backend)(*[_meta(1, 2, 40, 32)] * 3)
    torch._dynamo.reset()


def test_torch_compile_aot_eager():
    """The op through AOTAutograd's functionalization and the fake-tensor pass (backend aot_eager)."""
    torch._dynamo.reset()
    q = _meta(2, 1, 16, 128, dtype=torch.bfloat16)
    out = torch.compile(lambda q, k, v: attention(q, k, v) + 1, fullgraph=True, backend="aot_eager")(q, q, q)
    assert out.shape == q.shape and out.dtype == torch.bfloat16
    torch._dynamo.reset()


def test_opcheck_schema_and_fake():
    q, kv = _meta(1, 4, 24, 64), _meta(1, 2, 24, 64)
    lse = torch.empty(1, 4, 24, device="meta")
    for op, args in ((torch.ops.tritium.attention.default, (q, q, q, True, 0.3)),
                     (torch.ops.tritium._attention_inference.default, (q, kv, kv, False, None, True)),
                     (torch.ops.tritium._attention_forward.default, (q, kv, kv, True, 0.3, True)),
                     (torch.ops.tritium._attention_backward.default, (q, q, kv, kv, q, lse, True, None))):
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))


def test_backward_through_the_fake_implementations():
    """Autograd on meta tensors runs the forward's and the backward's fake implementations: gradients of the
    inputs' shapes, GQA's k and v with their own (fewer) heads."""
    q = _meta(2, 4, 40, 64).requires_grad_()
    k, v = (_meta(2, 2, 40, 64).requires_grad_() for _ in range(2))
    attention(q, k, v, causal=True, enable_gqa=True).sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == v.grad.shape == k.shape
    assert q.grad.device.type == "meta" and k.grad.dtype == torch.float16


@pytest.mark.parametrize("kv_heads,seq,enable_gqa,message", [
    (2, 8, False, r"q, k and v must have the same shape \[batch, heads, seq, head_dim\], got \(1, 4, 8, 64\), "
                  r"\(1, 2, 8, 64\) and \(1, 2, 8, 64\) \(fewer key/value heads than query heads need "
                  r"enable_gqa=True\)"),
    (3, 8, True, r"with enable_gqa, q's heads must be a multiple of k's and v's, got 4 query heads over 3 key/value "
                 r"heads"),
    (4, 16, False, r"q has sequence length 8 and k and v have 16; tritium's attention needs equal query and key "
                   r"lengths"),
])
@pytest.mark.parametrize("device", ["meta", "cpu"], ids=["fake", "real"])
def test_gqa_and_lengths_are_checked_by_fake_and_real(kv_heads, seq, enable_gqa, message, device):
    q = torch.empty(1, 4, 8, 64, dtype=torch.float16, device=device)
    k = torch.empty(1, kv_heads, seq, 64, dtype=torch.float16, device=device)
    with pytest.raises(ValueError, match=r"tritium\.ops\.attention: " + message):
        attention(q, k, k, enable_gqa=enable_gqa)


def test_backward_fake_checks_what_it_is_given():
    q = _meta(1, 2, 8, 64)
    with pytest.raises(ValueError, match=r"tritium\.ops\.attention: lse must be a float32 tensor of shape \(1, 2, 8\)"):
        torch.ops.tritium._attention_backward(q, q, q, q, q, _meta(1, 2, 8, dtype=torch.float32)[..., :4], False, None)
    with pytest.raises(ValueError, match=r"tritium\.ops\.attention: grad_out must be a torch.float16 tensor of q's "
                                         r"shape \(1, 2, 8, 64\)"):
        torch.ops.tritium._attention_backward(_meta(1, 2, 9, 64), q, q, q, q, torch.empty(1, 2, 8, device="meta"),
                                              False, None)


def test_torch_compile_fullgraph_forward_and_backward():
    """AOTAutograd traces the joint graph through the fake implementations (meta tensors, no kernel runs): the
    forward graph calls tritium's forward, the backward graph tritium's backward, with GQA."""
    graphs = []

    def keep(kind):
        return lambda g, _: graphs.append((kind, g)) or make_boxed_func(g)

    backend = aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"))
    def f(q, k, v):
        return attention(q, k, v, causal=True, enable_gqa=True).float().square().sum()

    torch._dynamo.reset()
    q = _meta(1, 4, 40, 128, dtype=torch.bfloat16).requires_grad_()
    k, v = (_meta(1, 1, 40, 128, dtype=torch.bfloat16).requires_grad_() for _ in range(2))
    torch.compile(f, fullgraph=True, backend=backend)(q, k, v).backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape and v.grad.shape == v.shape
    targets = {kind: {n.target for n in g.graph.nodes if n.op == "call_function"} for kind, g in graphs}
    assert torch.ops.tritium._attention_forward.default in targets["fw"]
    assert torch.ops.tritium._attention_backward.default in targets["bw"]
    torch._dynamo.reset()


def test_interpreted_numerics_in_own_process():
    """test_ops_attention_interp.py needs TRITON_INTERPRET=1 before triton is imported."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process is interpreted: the module runs directly")
    here = Path(__file__).resolve().parent
    src = str(Path(attention.__code__.co_filename).resolve().parents[2])
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(here / "test_ops_attention_interp.py")], cwd=here.parent, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
