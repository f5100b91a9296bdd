"""gemmlab.linear and gemmlab.addmm on torch tensors: the direct path, and the ``gemmlab::linear`` and
``gemmlab::addmm`` operators for autograd and torch.compile.

Both are one GEMM with a fused epilogue (gemmlab.epilogue): ``linear`` is act(x·wᵀ + bias) with the bias added to
every row and the activation applied before C is stored, ``addmm`` is alpha·(a·b) + beta·c with c read through a
broadcast view (a row, a column or a scalar: stride 0 where it is broadcast). One launch, one trip through C.

Under autograd or torch.compile the call goes through a torch.library custom op (a fake gives torch.compile the
output without running anything, so a model compiles with fullgraph=True) whose backward pass is gemmlab GEMMs as
gemmlab::mm's is: for linear, dz = dy·act'(z), dx = dz·w, dw = dzᵀ·x (a copy of dzᵀ into row-major order where the
kernel needs one) and the bias's gradient the column sums of dz. The derivative needs the pre-activation z: relu's
is read off the output (z > 0 exactly where y > 0); gelu's, gelu_tanh's and silu's recompute z with one more gemmlab
GEMM (bias fused, no activation) rather than keep an M×N tensor alive from the forward pass to the backward.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import torch

from gemmlab import call, matmul_shapes, torch_op
from gemmlab.call.tensors import check_initialized, check_values, run
from gemmlab.epilogue import ACTIVATIONS, Epilogue, scalar
from gemmlab.errors import EpilogueError, LayoutError

_epilogue = functools.lru_cache(maxsize=64)(Epilogue)  # one object per (activation, alpha, beta, addend): a plan key


def _check(**tensors) -> None:
    """Torch tensors on one device (a bias of None stays None), dense, as the direct path reads them. (``is_cuda``,
    ``is_cpu`` and ``get_device`` answer without making a torch.device, which costs a call's host time.)"""
    first = None
    for name, x in tensors.items():
        if x is None and name == "bias":
            continue
        if not isinstance(x, torch.Tensor):
            raise LayoutError(f"{name} is a {type(x).__name__}; the other operands are torch tensors: pass tensors "
                              "on one device")
        check_initialized(**{name: x})
        if x.layout is not torch.strided or x.is_nested or not (x.is_cuda or x.is_cpu):
            what = "nested" if x.is_nested else str(x.layout).removeprefix("torch.")
            raise LayoutError(f"{name} is a {what} tensor on {x.device.type}: gemmlab takes dense (strided) tensors "
                              "on the host or a CUDA GPU")
        check_values(**{name: x})
        if first is None:
            first = (name, x)
        elif x.get_device() != first[1].get_device():
            raise LayoutError(f"{first[0]} is on {first[1].device} and {name} on {x.device}: pass them on one device")


def _check_activation(activation) -> None:
    if activation is not None and activation not in ACTIVATIONS:
        raise EpilogueError(f"activation={activation!r} is not one gemmlab fuses; it fuses "
                            f"{', '.join(repr(a) for a in ACTIVATIONS)} (or None)")


def _traced(*tensors) -> bool:
    return torch_op.is_compiling() or (torch_op.grad_enabled() and any(
        x is not None and x.requires_grad for x in tensors))


def linear(x, w, bias, activation, kernel, precision):
    """F.linear's contract: x (..., K), w (N, K), bias (N,) or None; act(x·wᵀ + bias) of shape (..., N). A call like
    an earlier one that ran outside autograd (operands of the same dtypes, shapes, strides, devices and requires_grad,
    in the same grad mode, the same arguments) finds that call's plan by those attributes, before the checks it
    passed, and only launches: an nn.Linear's weight under torch.no_grad() too."""
    region = torch_op.autocast_region(x) if torch_op.autocast_on() and isinstance(x, torch.Tensor) else None
    if region is not None:  # F.linear's dtype in an autocast region
        return torch_op.autocast_call(region, lambda x, w, b: linear(x, w, b, activation, kernel, precision), x, w,
                                      bias)
    seen = prepared = None
    if not torch_op.is_compiling():  # traced, the operands are symbolic: no key, no plan
        try:
            seen = ("torch-linear", activation, kernel, precision, torch_op.grad_enabled(), x.dtype, x.shape,
                    x.stride(), x.device, x.layout, x.requires_grad, x.is_neg(), w.dtype, w.shape, w.stride(),
                    w.device, w.layout, w.requires_grad, w.is_neg(),
                    None if bias is None else (bias.dtype, bias.shape, bias.stride(), bias.device, bias.layout,
                                               bias.requires_grad, bias.is_neg()))
            prepared = call.plans.get(seen)
        except (AttributeError, RuntimeError, TypeError):  # not tensors: the checks say what is wrong
            seen = None
    if prepared is not None:
        # w for its transpose: the plan reads w.t() in place (kept under `seen` only then), at w's address
        if x.dim() == 2:
            return run(prepared, x, w, None, addend=bias)
        y = run(prepared, x.reshape(-1, x.shape[-1]), w, None, addend=bias)
        return y.reshape(*x.shape[:-1], y.shape[-1])
    _check(x=x, w=w, bias=bias)
    _check_activation(activation)
    call.checks.check_same_dtype(str(x.dtype).removeprefix("torch."), str(w.dtype).removeprefix("torch."), ("x", "w"))
    rows, _, out_shape = matmul_shapes.linear_shapes(x.shape, w.shape, None if bias is None else bias.shape)
    flat = x.dim() != 2  # a reshape costs a call's host time; a 2-D x is its own rows
    x2 = x.reshape(rows, x.shape[-1]) if flat else x
    if _traced(x, w, bias):
        y = torch.ops.gemmlab.linear(x2, w, bias, activation, call.checks.check_names(kernel, precision), precision)
    else:  # outside autograd: kept under `seen`, whose grad mode and requires_grad flags say so for a later call
        y = _linear_direct(x2, w, bias, activation, kernel, precision, seen)
    return y.reshape(out_shape) if flat else y


def _linear_direct(x, w, bias, activation, kernel, precision, seen=None):
    epilogue = _epilogue(activation, 1.0, 0.0, None if bias is None else "bias")
    return torch_op.direct(x, w.t(), kernel, precision, None, epilogue=epilogue, addend=bias, seen=seen)


def addmm(c, a, b, beta, alpha, kernel, precision):
    """torch.addmm's contract: beta·c + alpha·(a·b), a (M, K), b (K, N), c broadcastable to (M, N); beta = 0 ignores
    c and alpha = 0 ignores a and b (their NaNs included), as torch does and BLAS defines."""
    region = torch_op.autocast_region(a) if isinstance(a, torch.Tensor) else None
    if region is not None:  # torch.addmm's dtype in an autocast region
        return torch_op.autocast_call(region, lambda c, a, b: addmm(c, a, b, beta, alpha, kernel, precision), c, a, b)
    _check(c=c, a=a, b=b)
    matmul_shapes.addmm_shapes(c.shape, a.shape, b.shape)
    beta, alpha = scalar(beta, "beta"), scalar(alpha, "alpha")
    if _traced(c, a, b):
        return torch.ops.gemmlab.addmm(c, a, b, beta, alpha, call.checks.check_names(kernel, precision), precision)
    return _addmm_direct(c, a, b, beta, alpha, kernel, precision)


def _addmm_direct(c, a, b, beta, alpha, kernel, precision):
    if alpha == 0:  # a and b unread: the product of no columns, beta·c by the K = 0 path, no kernel
        a, b = a[:, :0], b[:0]
    if beta == 0:  # c unread, but of a dtype the call takes, as torch.addmm refuses another whatever beta is
        y = torch_op.direct(a, b, kernel, precision, None, epilogue=_epilogue(None, alpha, 0.0, None))
        call.checks.check_addend_dtype("matrix", str(c.dtype).removeprefix("torch."),
                                       str(y.dtype).removeprefix("torch."))
        return y
    d = c.expand(a.shape[0], b.shape[1])  # a broadcast view: stride 0 along what c broadcasts
    return torch_op.direct(a, b, kernel, precision, None, epilogue=_epilogue(None, alpha, beta, "matrix"), addend=d)


@torch.library.custom_op("gemmlab::linear", mutates_args=())
def linear_op(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], activation: Optional[str],
              kernel_name: str = "auto", precision: Optional[str] = None) -> torch.Tensor:
    """act(x·wᵀ + bias) for a 2-D x with gemmlab, the epilogue fused; the operator behind gemmlab.linear under
    autograd and torch.compile."""
    return _linear_direct(x, w, bias, activation, kernel_name, precision)


@linear_op.register_fake
def _linear_fake(x, w, bias, activation, kernel_name="auto", precision=None):
    torch._check(x.dim() == 2 and w.dim() == 2 and x.shape[1] == w.shape[1],
                 lambda: f"gemmlab::linear takes x (M, K) and w (N, K): {tuple(x.shape)}, {tuple(w.shape)}")
    return x.new_empty((x.shape[0], w.shape[0]), dtype=torch_op._fake_dtype(x, w, kernel_name, precision))


def _linear_setup(ctx, inputs, output):
    x, w, bias, activation, kernel, precision = inputs
    ctx.save_for_backward(x, w, bias, output if activation == "relu" else None)
    ctx.activation, ctx.kernel, ctx.precision = activation, kernel, precision


def _linear_backward(ctx, grad):
    x, w, bias, y = ctx.saved_tensors
    if ctx.activation == "relu":  # a select, as torch's threshold_backward: an inf gradient where y <= 0 gives 0,
        grad = torch.where(y <= 0, 0, grad)  # not inf·0, and a NaN y passes the gradient through
    elif ctx.activation is not None:  # the pre-activation again: one gemmlab GEMM with the bias fused
        z = linear_op(x, w, bias, None, ctx.kernel, ctx.precision)
        grad = grad * activation_derivative(ctx.activation, z.float())
    grad_x = grad_w = grad_bias = None
    if ctx.needs_input_grad[0]:  # dx = dz · w
        grad_x = torch_op.mm(grad.to(w.dtype), w, ctx.kernel, ctx.precision).to(x.dtype)
    if ctx.needs_input_grad[1]:  # dw = dzᵀ · x
        grad_w = torch_op.mm(grad.t().to(x.dtype), x, ctx.kernel, ctx.precision).to(w.dtype)
    if bias is not None and ctx.needs_input_grad[2]:
        grad_bias = grad.sum(0).to(bias.dtype)
    return grad_x, grad_w, grad_bias, None, None, None


linear_op.register_autograd(_linear_backward, setup_context=_linear_setup)


def activation_derivative(activation: str, z: torch.Tensor) -> torch.Tensor:
    """d act / dz at z, as torch differentiates each (gemmlab.epilogue.activate's definitions)."""
    if activation == "relu":  # 1 where torch's threshold_backward passes the gradient: NaN included
        return (~(z <= 0)).to(z.dtype)
    if activation == "gelu":  # Φ(z) + z·φ(z)
        return 0.5 * (1.0 + torch.erf(z * math.sqrt(0.5))) + z * torch.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    if activation == "gelu_tanh":
        c = math.sqrt(2.0 / math.pi)
        t = torch.tanh(c * (z + 0.044715 * z ** 3))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * z * z)
    if activation == "silu":
        s = torch.sigmoid(z)
        return s * (1.0 + z * (1.0 - s))
    raise EpilogueError(f"activation={activation!r} is not one gemmlab fuses ({', '.join(ACTIVATIONS)})")


@torch.library.custom_op("gemmlab::addmm", mutates_args=())
def addmm_op(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float, alpha: float,
             kernel_name: str = "auto", precision: Optional[str] = None) -> torch.Tensor:
    """beta·c + alpha·(a·b) with gemmlab, the epilogue fused; the operator behind gemmlab.addmm under autograd and
    torch.compile."""
    return _addmm_direct(c, a, b, beta, alpha, kernel_name, precision)


@addmm_op.register_fake
def _addmm_fake(c, a, b, beta, alpha, kernel_name="auto", precision=None):
    torch._check(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0],
                 lambda: f"gemmlab::addmm takes a (M, K) and b (K, N): {tuple(a.shape)}, {tuple(b.shape)}")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch_op._fake_dtype(a, b, kernel_name, precision))


def _addmm_setup(ctx, inputs, output):
    c, a, b, beta, alpha, kernel, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.c_shape, ctx.c_dtype = c.shape, c.dtype
    ctx.beta, ctx.alpha, ctx.kernel, ctx.precision = beta, alpha, kernel, precision


def _addmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_c = grad_a = grad_b = None
    if ctx.needs_input_grad[0]:  # dc = beta·dout, summed over what c was broadcast along
        grad_c = (grad * ctx.beta).sum_to_size(ctx.c_shape).to(ctx.c_dtype)
    if ctx.needs_input_grad[1]:  # da = alpha·dout·bᵀ
        grad_a = torch_op.mm(grad.to(b.dtype), b.t(), ctx.kernel, ctx.precision)
        grad_a = (grad_a if ctx.alpha == 1.0 else grad_a * ctx.alpha).to(a.dtype)
    if ctx.needs_input_grad[2]:  # db = alpha·aᵀ·dout
        grad_b = torch_op.mm(a.t(), grad.to(a.dtype), ctx.kernel, ctx.precision)
        grad_b = (grad_b if ctx.alpha == 1.0 else grad_b * ctx.alpha).to(b.dtype)
    return grad_c, grad_a, grad_b, None, None, None, None


addmm_op.register_autograd(_addmm_backward, setup_context=_addmm_setup)
