"""Registering an op of tritium's as a ``torch.library.Library`` op: one kernel per dispatch key.

``torch.library.custom_op`` wraps every call in Python layers of its own (schema binding, its autograd
``Function`` and the backend kernel's wrapper): several microseconds of host time per call on top of the
dispatcher, as much as a small GEMM takes on the GPU. :func:`define` registers the same op directly:

* ``CompositeExplicitAutograd``: the real implementation, for every backend (the implementation's own
  checks name a device it cannot run on); the ``Meta`` key and fake tensors get the fake implementation
  (``torch.library.register_fake``);
* ``Autograd``: a kernel that is given the call's dispatch key set. When no input needs a gradient and
  the call would go from here straight to a CUDA kernel (or a CPU one under the interpreter), with no
  Python key (fake tensors, subclasses, dispatch modes), functionalization or other key in between
  (:func:`runs_on_backend`), it calls the implementation right there: an eager call costs one pass
  through the dispatcher and one Python kernel. Otherwise without a gradient the call is redispatched
  below the Autograd key, and with one it runs in a ``torch.autograd.Function`` whose backward the op
  gives (or that raises the op's message).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from .launch import interpreting

#: One ``Library`` fragment per namespace, shared by every op defined in it.
_LIBRARIES: dict[str, torch.library.Library] = {}
#: The keys a call continues with below the Autograd key (ADInplaceOrView does nothing for a functional op).
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
_BELOW_INPLACE_OR_VIEW = torch._C._after_ADInplaceOrView_keyset
#: Whether a key set's call runs on the backend kernel next, by the key set's raw value (few distinct ones).
_ON_BACKEND: dict[int, bool] = {}


def runs_on_backend(keyset: torch._C.DispatchKeySet) -> bool:
    """Whether a call that reached the Autograd key with ``keyset`` goes from there to the backend kernel of
    a device the kernels run on (CUDA, or the CPU under the interpreter) and to nothing else."""
    raw = keyset.raw_repr()
    on = _ON_BACKEND.get(raw)
    if on is None:
        key = (keyset & _BELOW_INPLACE_OR_VIEW).highestPriorityTypeId()
        backends = (torch._C.DispatchKey.CUDA, torch._C.DispatchKey.CPU) if interpreting() else (
            torch._C.DispatchKey.CUDA, )
        on = _ON_BACKEND[raw] = key in backends
    return on


def needs_grad(tensors: tuple) -> bool:
    """Whether autograd records a call on ``tensors`` (grad mode on and one of them requires grad)."""
    if torch.is_grad_enabled():
        for t in tensors:
            if t.requires_grad:
                return True
    return False


def direct_ok(*tensors: torch.Tensor) -> bool:
    """Whether an eager call on ``tensors`` may skip the dispatcher and run the op's implementation directly, with
    the same result: plain tensors (no subclass, fake or functorch-wrapped tensor) on CUDA (or on the CPU under
    the interpreter, judged by the first), no tracing, no autograd to record, no torch function or dispatch mode
    active. Even a registration by :func:`define` costs a pass through the dispatcher per call."""
    if (torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack()
            or torch._C._is_torch_function_mode_enabled()):
        return False
    first = tensors[0]
    if type(first) is not torch.Tensor or not (first.is_cuda or (first.is_cpu and interpreting())):
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not torch.Tensor or (grad and t.requires_grad) or torch._C._functorch.is_functorch_wrapped_tensor(t):
            return False
    return True


def define(qualname: str, schema: str, compute: Callable[..., torch.Tensor], fake: Callable[..., torch.Tensor],
           tensor_args: int, backward: Optional[Callable[..., tuple]] = None,
           setup_context: Optional[Callable[[Any, tuple, Any], None]] = None,
           no_backward: Optional[str] = None) -> torch._ops.OpOverload:
    """Define ``qualname`` (``"namespace::name"``) with ``schema`` (its arguments and result, without the
    name) and register its kernels (see the module docstring); returns the op's overload.

    Args:
        compute: the real implementation, called with the op's arguments (the dispatcher leaves out trailing
            ones at their default, so its defaults must be the schema's).
        fake: the fake implementation: the same checks, an empty result.
        tensor_args: how many leading arguments are tensors (those autograd looks at).
        backward, setup_context: as ``torch.library.register_autograd`` takes them.
        no_backward: for an op without a backward, the error a backward pass raises.
    """
    if (backward is None) == (no_backward is None):
        raise ValueError(f"define({qualname!r}): give a backward or a no_backward message, not both or neither")
    namespace, name = qualname.split("::")
    lib = _LIBRARIES.get(namespace)
    if lib is None:
        lib = _LIBRARIES[namespace] = torch.library.Library(namespace, "FRAGMENT")
    lib.define(name + schema)
    op = getattr(getattr(torch.ops, namespace), name).default
    lib.impl(name, compute, "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=lib)

    def below_autograd(*args):
        with torch._C._AutoDispatchBelowAutograd():
            return op(*args)

    def failing_backward(ctx, *grads):
        raise RuntimeError(no_backward)

    function = type(f"{name}_autograd", (torch.autograd.Function, ), {
        "forward": staticmethod(below_autograd),
        "setup_context": staticmethod(setup_context or (lambda ctx, inputs, output: None)),
        "backward": staticmethod(backward or failing_backward)})

    def autograd_kernel(keyset, *args):
        if needs_grad(args[:tensor_args]):
            return function.apply(*args)
        if runs_on_backend(keyset):
            return compute(*args)
        return op.redispatch(keyset & _BELOW_AUTOGRAD, *args)

    lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)
    return op
