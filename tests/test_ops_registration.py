"""tritium.ops.registration on the CPU: which kernel a call reaches (the implementation straight from the
Autograd kernel, the fake one for fake and meta tensors, a redispatch under a dispatch mode), autograd
through the given backward, the missing-backward error, and opcheck of the schema and fake."""
import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from tritium.ops import registration  # noqa: E402

seen = []


def _compute(a, b, scale=1.0):
    seen.append("compute")
    return a * b * scale


def _fake(a, b, scale=1.0):
    seen.append("fake")
    if a.shape != b.shape:
        raise ValueError("probe: a and b differ in shape")
    return a.new_empty(a.shape)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:2])
    ctx.scale = inputs[2] if len(inputs) > 2 else 1.0


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    return grad * b * ctx.scale, grad * a * ctx.scale, None


SCHEMA = "(Tensor a, Tensor b, float scale=1.0) -> Tensor"
registration.define("tritium_test::mul", SCHEMA, _compute, _fake, 2, _backward, _setup)
registration.define("tritium_test::forward_only", SCHEMA, _compute, _fake, 2, no_backward="probe: forward only")


@pytest.fixture
def cpu_runs_kernels(monkeypatch):
    """The CPU counts as a device the kernels run on (as under TRITON_INTERPRET=1)."""
    monkeypatch.setattr(registration, "interpreting", lambda: True)
    monkeypatch.setattr(registration, "_ON_BACKEND", {})
    seen.clear()


class _Mode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_which_kernel_a_call_reaches(cpu_runs_kernels):
    a, b = torch.full((2, 3), 2.0), torch.full((2, 3), 3.0)
    assert torch.ops.tritium_test.mul(a, b, 0.5).tolist() == [[3.0] * 3] * 2 and seen == ["compute"]
    seen.clear()
    with _Mode():
        torch.ops.tritium_test.mul(a, b)
    assert seen[0] == "tritium_test.mul.default" and "compute" in seen  # the mode saw the op
    seen.clear()
    with FakeTensorMode() as mode:
        out = torch.ops.tritium_test.mul(mode.from_tensor(a), mode.from_tensor(b))
    assert seen == ["fake"] and out.shape == (2, 3)
    seen.clear()
    with pytest.raises(ValueError, match="probe: a and b differ in shape"):
        torch.ops.tritium_test.mul(a.to("meta"), torch.empty(3, device="meta"))
    assert seen == ["fake"]


def test_without_the_interpreter_cpu_tensors_reach_the_backend_kernel(monkeypatch):
    monkeypatch.setattr(registration, "interpreting", lambda: False)
    monkeypatch.setattr(registration, "_ON_BACKEND", {})
    seen.clear()
    torch.ops.tritium_test.mul(torch.ones(2), torch.ones(2))
    assert seen == ["compute"] and not any(registration._ON_BACKEND.values())


def test_backward_and_missing_backward(cpu_runs_kernels):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0])
    torch.ops.tritium_test.mul(a, b, 2.0).sum().backward()
    assert a.grad.tolist() == [6.0, 8.0] and seen == ["compute"]
    with torch.no_grad():
        assert not torch.ops.tritium_test.forward_only(a, b).requires_grad
    out = torch.ops.tritium_test.forward_only(a, b)
    with pytest.raises(RuntimeError, match="probe: forward only"):
        out.sum().backward()


def test_opcheck_and_define_arguments():
    torch.library.opcheck(torch.ops.tritium_test.mul.default, (torch.randn(3), torch.randn(3), 2.0),
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))
    with pytest.raises(ValueError, match="give a backward or a no_backward message"):
        registration.define("tritium_test::neither", SCHEMA, _compute, _fake, 2)
