"""``tritium.kernels.TriMul``: the fused trimul as an nn.Module, state_dict-compatible with the reference."""
from __future__ import annotations

import torch

from . import trimul as kernels
from .trimul_reference import TriMulReference


class TriMul(TriMulReference):
    """Triangle multiplicative update (``direction="outgoing"`` or ``"incoming"``) on tritium's TLX kernels
    (forward only).

    Submodules and parameters are the reference's (``norm``, ``left_proj``, ``right_proj``,
    ``left_gate``, ``right_gate``, ``out_gate``, ``to_out_norm``, ``to_out``), so a reference
    ``state_dict`` loads unchanged. There is no backward: while autograd records and a parameter or ``x``
    requires grad, the output carries a grad_fn whose backward raises, naming TriMul, instead of silently
    leaving the parameters' ``.grad`` at None (call it under ``torch.no_grad()``, or freeze the parameters).
    The packing of the six projection weights (and the choice of fp16 or
    bf16 for the output path, which its parameters bound) is cached and redone only when a parameter
    changes (storage, in-place update or dtype/device move). Under ``torch.compile`` the packing is traced
    into the graph with the dtype chosen at construction, at ``load_state_dict`` or by the last eager call.
    """

    def __init__(self, dim: int, hidden_dim: int = 128, direction: str = "outgoing") -> None:
        for name, value in (("dim", dim), ("hidden_dim", hidden_dim)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"TriMul: {name} must be an int, got {type(value).__name__} {value!r}")
        kernels.check_direction(direction, "TriMul")
        if dim % kernels.BK:
            raise ValueError(f"TriMul: dim={dim} must be a multiple of {kernels.BK} (the kernels' K step)")
        if hidden_dim not in kernels.HIDDEN_DIMS:
            raise ValueError(f"TriMul: hidden_dim={hidden_dim} is not supported; the kernels tile "
                             f"{kernels.HIDDEN_DIMS}")
        super().__init__(dim, hidden_dim, direction)  # the reference's submodules, so its state_dict loads unchanged
        self._packed: tuple | None = None
        self._packed_key: list | None = None
        self._packed_params: list = []
        # (child, parameter) names of every parameter, looked up afresh per call (so a replaced submodule
        # or parameter is seen) without walking named_parameters(), which costs tens of microseconds.
        self._param_names = [tuple(name.split(".")) for name, _ in self.named_parameters()]
        self._choose_dtype()
        self.register_load_state_dict_post_hook(lambda module, keys: module._choose_dtype())

    def _choose_dtype(self) -> None:
        from ..ops.trimul import choose_dtype
        with torch.no_grad():
            self._out_dtype = choose_dtype(dict(self.named_parameters()))

    def packed_weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(proj_weight_t, proj_terms, out_weight_t) for :func:`tritium.ops.trimul`, cached per parameter version."""
        from ..ops.trimul import pack_weights
        if torch.compiler.is_compiling():  # traced: the packing is in the graph, in the dtype chosen eagerly
            return pack_weights(dict(self.named_parameters()), self._out_dtype)
        modules = self._modules
        params = [modules[child]._parameters[name] for child, name in self._param_names]
        # A dtype or device move gives a parameter new storage (a new address, as the old one is still
        # alive when the new one is allocated), so the address stands in for them: reading .dtype and
        # .device costs more than the rest of the key.
        # (The key's parameters are kept alive with it, so their ids are not reused.)
        key = [(id(p), p._version, p.data_ptr()) for p in params]
        if key != self._packed_key:
            self._choose_dtype()
            with torch.no_grad():
                self._packed = pack_weights(dict(self.named_parameters()), self._out_dtype)
            self._packed_key, self._packed_params = key, params
        return self._packed

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        from ..ops.trimul import trimul
        proj_t, terms, out_t = self.packed_weights()
        if x.dim() and x.shape[-1] != out_t.shape[1]:  # the op would blame its packed out_weight_t
            raise ValueError(f"TriMul: x's last dimension {x.shape[-1]} does not match the module's dim "
                             f"{out_t.shape[1]}")
        y = trimul(x, mask, proj_t, terms, self.to_out_norm.weight, self.to_out_norm.bias, out_t,
                   self.norm.eps, self.to_out_norm.eps, self.direction)
        if torch.is_grad_enabled():
            wanting = [p for p in self._packed_params if p.requires_grad] if self._packed_params else [
                p for p in self.parameters() if p.requires_grad]
            if wanting or x.requires_grad:
                return _NoBackward.apply(y, x, *wanting)
        return y


class _NoBackward(torch.autograd.Function):
    """Passes TriMul's output through, tied to the inputs that require grad, so that a backward reaches them and
    says why there is no gradient (the packed weights are detached copies: without this, parameters that
    require grad got none, silently)."""

    @staticmethod
    def forward(ctx, y, *inputs):
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("TriMul has no backward: its kernels compute the forward only. Call it under "
                           "torch.no_grad() or torch.inference_mode(), or freeze its parameters "
                           "(module.requires_grad_(False)) and x")
