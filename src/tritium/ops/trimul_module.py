"""``tritium.ops.TriMul``: the fused trimul as an nn.Module, state_dict-compatible with the reference."""
from __future__ import annotations

import torch

from ..kernels import trimul as kernels
from ..kernels import trimul_pack
from ..kernels.trimul_reference import TriMulReference
from .trimul import PROJECTIONS, choose_dtype, pack_weights, trimul_after


class TriMul(TriMulReference):
    """Triangle multiplicative update (``direction="outgoing"`` or ``"incoming"``) on tritium's TLX kernels
    (forward only).

    Submodules and parameters are the reference's (``norm``, ``left_proj``, ``right_proj``,
    ``left_gate``, ``right_gate``, ``out_gate``, ``to_out_norm``, ``to_out``), so a reference
    ``state_dict`` loads unchanged. There is no backward: while autograd records and a parameter or ``x``
    requires grad, the output carries a grad_fn whose backward raises, naming TriMul, instead of silently
    leaving the parameters' ``.grad`` at None (call it under ``torch.no_grad()``, or freeze the parameters).

    Every eager call packs the weights afresh from the parameters' current values, by one small kernel
    (:mod:`tritium.kernels.trimul_pack`, launched as the call's first kernel, so a small call's CUDA graph replays
    it with the others) writing buffers the module owns: the output follows every change to
    the parameters, ``p.data.copy_(...)`` and other writes that no version counter sees (EMA updates, init
    code) included. The buffers keep their addresses while the parameters keep their storage, so a small
    call's CUDA graph keeps replaying. The choice of fp16 or bf16 for the output path (which the parameters
    bound, :func:`tritium.ops.trimul.choose_dtype`) reads the values on the host, so it is not made per
    call: only when a parameter is replaced, moves (dtype, device) or is updated in place through its
    version counter (``load_state_dict``, ``mul_`` under ``no_grad``). A ``.data`` write is followed in
    values but does not re-make it: weights written that way past fp16's bound overflow the fp16 path until
    the next such change. Under ``torch.compile`` the packing is traced into the graph with the dtype chosen
    at construction, at ``load_state_dict`` or by the last eager call.
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
        self._buffers_key: tuple | None = None
        self._refresh = None
        # (child, parameter) names of every parameter, looked up afresh per call (so a replaced submodule
        # or parameter is seen) without walking named_parameters(), which costs tens of microseconds.
        self._param_names = [tuple(name.split(".")) for name, _ in self.named_parameters()]
        self._choose_dtype()
        self.register_load_state_dict_post_hook(lambda module, keys: module._choose_dtype())

    def _choose_dtype(self) -> None:
        with torch.no_grad():
            self._out_dtype = choose_dtype(dict(self.named_parameters()))

    def packed_weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(proj_weight_t, proj_terms, out_weight_t) for :func:`tritium.ops.trimul`, packed from the parameters'
        current values. These are the module's own buffers, rewritten by every call (copy them to keep them),
        and kept while the parameters keep their storage and the output path its dtype."""
        if torch.compiler.is_compiling():  # traced: the packing is in the graph, in the dtype chosen eagerly
            return pack_weights(dict(self.named_parameters()), self._out_dtype)
        packed = self._current_buffers()
        self._refresh()
        return packed

    def _current_buffers(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The packed buffers for the parameters as they are now (made anew where needed), not yet refreshed."""
        modules = self._modules
        params = [modules[child]._parameters[name] for child, name in self._param_names]
        # A dtype or device move gives a parameter new storage (a new address, as the old one is still
        # alive when the new one is allocated), so the address stands in for them: reading .dtype and
        # .device costs more than the rest of the key. The version counter is there for the dtype choice.
        # (The key's parameters are kept alive with it, so their ids are not reused.)
        key = [(id(p), p._version, p.data_ptr()) for p in params]
        if key != self._packed_key:
            self._choose_dtype()
            self._packed_key, self._packed_params = key, params
            buffers_key = (*[(i, ptr) for i, _, ptr in key], self._out_dtype)
            if buffers_key != self._buffers_key:
                self._allocate()
                self._buffers_key = buffers_key
        return self._packed

    def _allocate(self) -> None:
        """New packed buffers (a first packing, which checks the parameters), and what refreshes them: the pack
        kernel where it runs, else (the CPU without the interpreter, where the op does not run either, meta
        tensors, parameters that are not contiguous) ``pack_weights`` copied in."""
        params = dict(self.named_parameters())
        with torch.no_grad():
            self._packed = pack_weights(params, self._out_dtype)
        device = self._packed[0].device
        weights = [params[n] for n in [f"{p}.weight" for p in PROJECTIONS] + ["norm.weight", "norm.bias",
                                                                               "to_out.weight"]]
        if trimul_pack.runs_on(device) and all(w.device == device and w.is_contiguous() for w in weights):
            self._refresh = trimul_pack.Packer(weights, *self._packed)
        else:
            self._refresh = self._copy_in

    def _copy_in(self) -> None:
        with torch.no_grad():
            for buf, new in zip(self._packed, pack_weights(dict(self.named_parameters()), self._out_dtype)):
                buf.copy_(new)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # The pack kernel goes with the call's launches (into a small call's graph); other refreshes run now.
        if torch.compiler.is_compiling():
            (proj_t, terms, out_t), prologue = self.packed_weights(), None
        else:
            proj_t, terms, out_t = self._current_buffers()
            prologue = self._refresh if isinstance(self._refresh, trimul_pack.Packer) else None
            if prologue is None:
                self._refresh()
        if x.dim() and x.shape[-1] != out_t.shape[1]:  # the op would blame its packed out_weight_t
            raise ValueError(f"TriMul: x's last dimension {x.shape[-1]} does not match the module's dim "
                             f"{out_t.shape[1]}")
        y = trimul_after(prologue, x, mask, proj_t, terms, self.to_out_norm.weight, self.to_out_norm.bias, out_t,
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
