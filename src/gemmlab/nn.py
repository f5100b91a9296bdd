"""gemmlab.nn.Linear: torch.nn.Linear whose forward pass is gemmlab.linear (the bias, and an activation if one is
named, fused into the GEMM's epilogue).

It is a torch.nn.Linear (the same parameters, initialization, state_dict and repr), so a model's layers swap in place
and keep their checkpoints; ``Linear.from_linear(layer)`` makes one that shares an existing layer's parameters.
Training runs gemmlab's backward pass (gemmlab.torch_fused); torch.compile(fullgraph=True) traces it without a graph
break.
"""
from __future__ import annotations

import torch

from gemmlab.api import linear
from gemmlab.call import AUTO


class Linear(torch.nn.Linear):
    """y = act(x @ weight.T + bias) through gemmlab.linear.

    in_features, out_features, bias, device, dtype: torch.nn.Linear's. activation: None, "relu", "gelu",
    "gelu_tanh" or "silu", fused into the layer (a layer of torch.nn.Linear then F.gelu is one gemmlab.nn.Linear with
    activation="gelu"). kernel, precision: gemmlab.matmul's (kernel="auto": the fastest measured kernel that fuses the
    epilogue)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None, *,
                 activation: str | None = None, kernel: str = AUTO, precision: str | None = None):
        from gemmlab.torch_fused import _check_activation

        _check_activation(activation)
        super().__init__(in_features, out_features, bias, device, dtype)
        self.activation, self.kernel, self.precision = activation, kernel, precision

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear, *, activation: str | None = None, kernel: str = AUTO,
                    precision: str | None = None) -> "Linear":
        """A gemmlab Linear sharing ``layer``'s weight and bias (the same Parameters: training either trains both)."""
        if not isinstance(layer, torch.nn.Linear):
            from gemmlab.errors import OperandTypeError

            raise OperandTypeError(f"from_linear takes a torch.nn.Linear, got {type(layer).__name__}")
        if isinstance(layer.weight, torch.nn.parameter.UninitializedParameter):
            from gemmlab.errors import OperandTypeError

            raise OperandTypeError(f"{type(layer).__name__}'s weight is not initialized yet (a lazy module's, before "
                                   "its first call): call the layer once, then from_linear")
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = layer.in_features, layer.out_features
        new.weight, new.bias = layer.weight, layer.bias
        from gemmlab.torch_fused import _check_activation

        _check_activation(activation)
        new.activation, new.kernel, new.precision = activation, kernel, precision
        return new.train(layer.training)  # an eval()'d layer stays in eval mode, as a copy of it would

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.activation, kernel=self.kernel, precision=self.precision)

    def extra_repr(self) -> str:
        extra = "".join(f", {name}={value!r}" for name, value in (("activation", self.activation),
                                                                   ("kernel", self.kernel),
                                                                   ("precision", self.precision))
                        if value not in (None, AUTO))
        return super().extra_repr() + extra
