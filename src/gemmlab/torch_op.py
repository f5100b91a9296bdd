"""gemmlab in PyTorch: the direct call path for tensors, and the ``gemmlab::mm`` operator for autograd and
torch.compile.

``gemmlab.matmul`` on tensors that need no gradient, outside torch.compile, takes the direct path: the plan is found
by the tensors' shapes, dtypes, strides and device, the output comes from torch's caching allocator, the operands'
``data_ptr()`` and torch's current stream go straight to the launch. Where autograd records the call (an operand
requires grad) or torch.compile traces it, it goes through ``torch.ops.gemmlab.mm``, a torch.library custom op: a
fake implementation gives torch.compile the output's shape and dtype without running anything, so a model that calls
it compiles with fullgraph=True; its backward pass is two more gemmlab GEMMs, dA = dC·Bᵀ and dB = Aᵀ·dC (Bᵀ is read
in place by the BF16 and TF32 tensor-core levels; Aᵀ is copied into row-major order).

C's dtype follows torch's rule (the precision records' first output dtype): BF16 and FP16 operands give C in their
own dtype, FP32 operands FP32; ``out_dtype="float32"`` keeps FP32 C for the 16-bit operands, in the operator too, so
the fake reports what the kernel writes. The backward pass rounds dC to the operands' dtype for its GEMMs, as mixed
precision training does, and returns gradients in the operands' dtypes.

Tensors of other ranks than 2 follow torch.matmul's rules (gemmlab.matmul_shapes): 1-D operands and broadcast
batches become views, then one 2-D GEMM (the batch collapsed into A's rows, gemmlab::mm under autograd) or one
batched call (gemmlab.call.batched_matmul, ``torch.ops.gemmlab.bmm`` under autograd, whose backward is two more
batched calls; torch's own autograd of the views sums a broadcast operand's gradient over its batch).

A product with a zero dimension (M, N, K or a batch's) is torch's result made without a kernel or a plan (``empty``):
empty, or for K = 0 zeros (act(bias) or beta·c with an epilogue). The operators' fakes give its shape as any other,
and its backward pass is more such products (dB of an A with no rows is zeros of B's shape, as torch's).

FP8 tensors take the direct path only (the scaled product has no backward here, and torch.compile would need the
scales in the operator's schema); their scales' addresses are read per call with ``data_ptr()``, like the operands'.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import torch

from gemmlab import call, matmul_shapes
from gemmlab.call.tensors import (FP8, check_initialized, check_values, launcher, launches_only, refuse_capture, run,
                                  workspace)
from gemmlab.errors import EpilogueError, GemmlabError, LayoutError, ShapeError, SizeLimitError

_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", None)  # whether any region is on, in one call
autocast_on = _any_autocast if _any_autocast is not None else lambda: True  # False: no region to look up
# read on every call: bound once, so a call looks nothing up in torch's modules (torch.compile's tracer knows the
# functions themselves, under any name)
Tensor = torch.Tensor
is_compiling = torch.compiler.is_compiling
grad_enabled = torch.is_grad_enabled


def autocast_region(x):
    """(device type, dtype) of the torch.autocast region a call on tensor ``x`` runs in, or None."""
    if not autocast_on():
        return None
    kind = "cuda" if x.is_cuda else "cpu"
    if torch.is_autocast_enabled(kind):
        return kind, torch.get_autocast_dtype(kind)
    return None


def _cast(t, dtype):
    """What torch.autocast casts for matmul, linear, addmm and bmm: every floating tensor but float64 (FP8 too)."""
    return t.to(dtype) if t is not None and t.is_floating_point() and t.dtype != torch.float64 else t


def autocast_region_operands(region, *tensors) -> tuple:
    """The operands a call in ``region`` computes on: the region's dtype, as torch casts them, on a GPU and on the
    host (whose kernel widens 16-bit operands to FP32 and rounds C once: dispatch.HOST_WIDENED)."""
    return tuple(_cast(t, region[1]) for t in tensors)


def autocast_call(region, fn, *tensors):
    """``fn(*tensors)`` as torch.autocast runs matmul, linear, addmm and bmm in ``region``: the operands (bias and c
    included) cast as ``autocast_region_operands`` says, C in the region's dtype. The casts are recorded by autograd,
    so gradients reach FP32 parameters in FP32; the call runs with autocast off."""
    with torch.autocast(region[0], enabled=False):
        return fn(*autocast_region_operands(region, *tensors))


def matmul(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None, addend=None):
    key = None
    if out is None and scale_a is None and scale_b is None and out_dtype is None and epilogue is None and \
            not is_compiling():  # traced, the operands are symbolic: no key
        try:  # a call like an earlier one that needed nothing but its launch finds it by these alone (_register)
            key = (kernel, precision, A.dtype, B.dtype, A.shape, B.shape, A.stride(), B.stride(), A.device, B.device,
                   A.layout, B.layout, A.is_neg(), B.is_neg())
            launch = call.launchers.get(key)
        except (AttributeError, RuntimeError, TypeError):  # not tensors, no strides, not hashable: the checks say
            key = launch = None
        if launch is not None and not (autocast_on() or grad_enabled() and (A.requires_grad or B.requires_grad)):
            return launch(A, B)
    if autocast_on() and out is None and scale_a is None and scale_b is None and \
            out_dtype is None and isinstance(B, Tensor):
        region = autocast_region(A)
        if region is not None:  # torch.matmul's dtype in an autocast region
            return autocast_call(region, lambda a, b, d: matmul(a, b, kernel, precision, None, epilogue=epilogue,
                                                                addend=d), A, B, addend)
    try:
        two_d = A.dim() == 2 and isinstance(B, Tensor) and B.dim() == 2
    except ValueError:  # a lazy module's parameter before its first call has no dimensions yet
        check_initialized(A=A, B=B)
        raise
    if not two_d:  # torch.matmul's other ranks
        return matmul_nd(A, B, kernel, precision, out, scale_a, scale_b, out_dtype, epilogue, addend, key)
    if is_compiling() or (grad_enabled() and (A.requires_grad or B.requires_grad)):
        if A.dtype in FP8 or scale_a is not None or scale_b is not None:
            raise GemmlabError("gemmlab's FP8 matmul runs outside autograd and torch.compile: it has no backward, and "
                               "gemmlab::mm takes no scales")
        if out is not None:
            raise GemmlabError("out= is written outside autograd and torch.compile; call without out=, or under "
                               "torch.no_grad()")
        return torch.ops.gemmlab.mm(A, B, call.checks.check_names(kernel, precision), precision,
                                    call.out_dtype_name(out_dtype))
    if epilogue is not None and (is_compiling() or grad_enabled() and any(
            getattr(x, "requires_grad", False) for x in (A, B, addend))):
        raise GemmlabError("a fused epilogue through gemmlab.matmul runs outside autograd and torch.compile")
    return direct(A, B, kernel, precision, out, scale_a, scale_b, out_dtype, epilogue, addend, launch_key=key)


def _register(key, prepared, shape=None) -> None:
    """Keep the launch of a call under ``key`` (matmul's, None: none) where its plan needs nothing but the launch
    (gemmlab.call.tensors.launcher), C of ``shape`` (torch.matmul's result) or the plan's: a later call with the same
    key launches from the top of matmul, past the checks, the key, frames and tests of this path, which from an
    idle GPU delay the kernel's start."""
    if key is not None and key not in call.launchers and launches_only(prepared) and \
            any(p is prepared for p in call.plans.values()):  # its eviction from there drops the launch too
        call.remember_launcher(key, launcher(prepared, shape))


def _empty_c(shape, dtype: str, device):
    """C from torch's allocator; a SizeLimitError where the host's or the GPU's memory cannot hold it."""
    if device.type == "cpu":
        call.launch.check_host_memory(tuple(shape), dtype)
    try:
        return torch.empty(shape, dtype=getattr(torch, dtype), device=device)
    except torch.OutOfMemoryError:
        raise SizeLimitError(call.gpu_memory_message(tuple(shape), dtype)) from None


def _scale_key(s):
    if isinstance(s, torch.Tensor):  # the common case first: six attributes, no lookups by name
        return s.dtype, s.shape, s.stride(), s.device, s.layout, s.is_neg()
    return type(s).__name__, getattr(s, "dtype", None), tuple(getattr(s, "shape", ())), getattr(s, "device", None)


def direct(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None, addend=None,
           seen=None, launch_key=None, shape=None):
    """One call on tensors outside autograd: a cached plan, launched on torch's current stream; ``epilogue`` (a
    gemmlab.epilogue.Epilogue) fused into the kernel's store, ``addend`` its bias or D (a tensor on the operands'
    device, of C's dtype or float32). ``seen``: a caller's own key for these operands (gemmlab.linear's),
    under which a plan that runs on the GPU reading A and B in place is also kept, for the caller to find before its
    own checks and ``run``. ``launch_key``: matmul's key of the caller's operands, under which the launch alone is
    kept (_register), C of ``shape`` (torch.matmul's result) or the plan's."""
    try:  # a tensor without strides or an argument of no hashable kind has no key, and no plan: the checks say why
        key = (kernel, precision, A.dtype, B.dtype, A.shape, B.shape, A.stride(), B.stride(), A.device, B.device,
               A.layout, B.layout, A.is_neg(), B.is_neg(),
               None if out is None else (out.dtype, out.shape, out.stride(), out.device, out.layout,
                                         out.requires_grad, out.is_neg()),
               None if scale_a is None else _scale_key(scale_a), None if scale_b is None else _scale_key(scale_b),
               out_dtype, epilogue, None if addend is None else _scale_key(addend))
        prepared = call.plans.get(key)
    except (AttributeError, RuntimeError, TypeError):
        key = prepared = None
    if prepared is None:  # the checks, once per key: a key a plan is kept under passed them
        if not isinstance(B, torch.Tensor):
            raise LayoutError(f"A is a torch tensor and B a {type(B).__name__}: pass two tensors on one device")
        if out is not None and not isinstance(out, torch.Tensor):
            raise LayoutError(f"out is a {type(out).__name__}; the operands are torch tensors")
        check_dense(A, B, out)
        check_values(scale_a=scale_a, scale_b=scale_b, addend=addend)
        if 0 in A.shape or 0 in B.shape:
            return empty(A, B, (A.shape[0], B.shape[1]), kernel, precision, out, (scale_a, scale_b), out_dtype,
                         epilogue, addend)
        prepared = _prepare(key, A, B, kernel, precision, out, scale_a, scale_b, out_dtype, epilogue, addend)
    if seen is not None and prepared.on_device and not (prepared.copy_a or prepared.copy_b):
        call.remember(seen, prepared)
    _register(launch_key, prepared, shape)
    return run(prepared, A, B, out, scale_a, scale_b, addend)


def empty(A, B, shape, kernel, precision, out, scales=(None, None), out_dtype=None, epilogue=None, addend=None):
    """A product with a zero dimension (M, N or K of A's and B's last two, or a batch's, C of ``shape``): torch's
    result without a kernel, as gemmlab.call.launch.array_empty makes it for arrays, on A's device in the dtype a
    call of these operands writes (its checks: gemmlab.call.checks.empty_dtype): empty where M, N or the batch is 0;
    for K = 0 zeros, act(bias) in every row (F.linear's bias, then the activation) or beta·c (torch.addmm's), in
    float64 with torch's activation functions and rounded once, as the kernels' FP32 epilogue rounds once."""
    if A.device != B.device:
        raise LayoutError(f"A is on {A.device} and B on {B.device}: pass both on the host or both on one GPU")
    device = A.device.index if A.is_cuda else None
    names = tuple(str(x.dtype).removeprefix("torch.") for x in (A, B))
    scales = tuple(call.scale_facts(s, name) for s, name in zip(scales, ("scale_a", "scale_b")))
    call.checks.check_names(kernel, precision)  # empty_dtype's cache hashes them
    dtype = call.checks.empty_dtype("torch", names, device, (tuple(A.shape[-2:]), tuple(B.shape[-2:])), kernel,
                                    precision, scales, call.out_dtype_name(out_dtype), epilogue,
                                    call.addend_facts(addend), len(shape) > 2)
    if out is not None:
        call.check_out(out, "torch", tuple(shape), device, dtype)
    c = out if out is not None else _empty_c(shape, dtype, A.device)
    if epilogue is None or epilogue.addend is None:
        return c.zero_()
    return c.copy_(_activate(epilogue.activation, addend.detach().double() * epilogue.beta))


def _activate(activation, x):
    """gemmlab.epilogue's activations by torch's own functions (relu keeps NaN, gelu_tanh is approximate='tanh')."""
    F = torch.nn.functional
    if activation is None:
        return x
    if activation == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    return getattr(F, activation)(x)


def _prepare(key, A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None,
             addend=None) -> call.Prepared:
    refuse_capture(A)
    fa, fb = call.facts(A, "A"), call.facts(B, "B")
    if fa.device != fb.device:
        raise LayoutError(call.devices_differ(fa, fb))
    scales = (call.scale_facts(scale_a, "scale_a"), call.scale_facts(scale_b, "scale_b"))
    prepared = call.checks.prepare(fa, fb, kernel, precision, fa.device, scales, call.out_dtype_name(out_dtype),
                                   epilogue, call.addend_facts(addend))
    if out is not None:
        call.check_out(out, "torch", prepared.out_shape, fa.device, prepared.out_dtype)
    prepared.torch_template = torch.empty(0, dtype=getattr(torch, prepared.out_dtype), device=A.device)
    if prepared.on_device:  # launches on torch's streams (a host operand's copies run on CuPy's)
        prepared.workspace = partial(workspace, prepared.torch_template)
    if prepared.scaled and A.is_cuda and (scale_a is None or scale_b is None):
        prepared.ones = torch.ones(1, dtype=torch.float32, device=A.device)
    return call.remember(key, prepared)


@torch.library.custom_op("gemmlab::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor, kernel_name: str = "auto", precision: Optional[str] = None,
       out_dtype: Optional[str] = None) -> torch.Tensor:
    """C = A @ B with gemmlab, C in ``out_dtype`` (a dtype name) or by torch's rule; the operator behind
    gemmlab.matmul under autograd and torch.compile. (``kernel_name``, not ``kernel``: inductor lowers the op through
    FallbackKernel.create(kernel, ...), whose own first parameter a keyword ``kernel`` would collide with.)"""
    return direct(a, b, kernel_name, precision, None, out_dtype=out_dtype)


def output_dtype(a: torch.Tensor, precision: Optional[str] = None, out_dtype: Optional[str] = None) -> torch.dtype:
    """The dtype of the C gemmlab writes for operands like ``a``: ``out_dtype``, else the first output dtype of the
    precision they compute (``precision``, or their dtype's default): torch's rule, BF16 in -> BF16 out. Operands
    no precision takes keep their dtype (the call itself refuses them)."""
    from gemmlab.problem import PRECISIONS, precisions_of

    if out_dtype is not None:
        return getattr(torch, out_dtype)
    options = precisions_of(str(a.dtype).removeprefix("torch."))
    name = precision if precision in options else options[0] if options else None
    return getattr(torch, PRECISIONS[name].output_dtype) if name else a.dtype


@mm.register_fake
def _mm_fake(a, b, kernel_name="auto", precision=None, out_dtype=None):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "gemmlab::mm takes two 2-D matrices")
    torch._check(a.shape[1] == b.shape[0], lambda: f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=output_dtype(a, precision, out_dtype))


def _setup_context(ctx, inputs, output):
    a, b, kernel, precision, _ = inputs
    ctx.save_for_backward(a, b)
    ctx.kernel, ctx.precision = kernel, precision


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:  # dA = dC · Bᵀ
        grad_a = mm(grad.to(b.dtype), b.t(), ctx.kernel, ctx.precision).to(a.dtype)
    if ctx.needs_input_grad[1]:  # dB = Aᵀ · dC
        grad_b = mm(a.t(), grad.to(a.dtype), ctx.kernel, ctx.precision).to(b.dtype)
    return grad_a, grad_b, None, None, None


mm.register_autograd(_backward, setup_context=_setup_context)


def _fake_dtype(a, b, kernel_name, precision, out_dtype=None):
    """The dtype gemmlab::mm's fake gives these operands: every op here returns what the 2-D product would."""
    return _mm_fake(a.new_empty((1, 1)), b.new_empty((1, 1)), kernel_name, precision, out_dtype).dtype


@torch.library.custom_op("gemmlab::bmm", mutates_args=())
def bmm(a: torch.Tensor, b: torch.Tensor, kernel_name: str = "auto", precision: Optional[str] = None,
        out_dtype: Optional[str] = None) -> torch.Tensor:
    """C[i] = A[i] @ B[i] for A (*batch, M, K) and B (*batch, K, N) of one batch shape (broadcast views, read in
    place), C in ``out_dtype`` or by torch's rule; the operator behind gemmlab.matmul's batches under autograd and
    torch.compile."""
    return direct_nd(a, b, kernel_name, precision, None, out_dtype=out_dtype)


@bmm.register_fake
def _bmm_fake(a, b, kernel_name="auto", precision=None, out_dtype=None):
    torch._check(a.dim() >= 3 and a.dim() == b.dim() and a.shape[:-2] == b.shape[:-2],
                 lambda: f"gemmlab::bmm takes two batches of one batch shape: {tuple(a.shape)} @ {tuple(b.shape)}")
    torch._check(a.shape[-1] == b.shape[-2], lambda: f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    return a.new_empty((*a.shape[:-1], b.shape[-1]), dtype=_fake_dtype(a, b, kernel_name, precision, out_dtype))


def _bmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = grad_b = None
    # every batched kernel reads a batch in place, A row-major: dC (a broadcast view where it comes from a sum) and
    # Aᵀ are copied into row-major batches first (B is read in place as Bᵀ too)
    if ctx.needs_input_grad[0]:  # dA[i] = dC[i] · B[i]ᵀ
        grad_a = bmm(grad.to(b.dtype).contiguous(), b.mT, ctx.kernel, ctx.precision).to(a.dtype)
    if ctx.needs_input_grad[1]:  # dB[i] = A[i]ᵀ · dC[i]
        grad_b = bmm(a.mT.contiguous(), grad.to(a.dtype).contiguous(), ctx.kernel, ctx.precision).to(b.dtype)
    return grad_a, grad_b, None, None, None


def _bmm_setup(ctx, inputs, output):
    a, b, kernel, precision, _ = inputs
    ctx.save_for_backward(a, b)
    ctx.kernel, ctx.precision = kernel, precision


bmm.register_autograd(_bmm_backward, setup_context=_bmm_setup)


def matmul_nd(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None, addend=None,
              key=None):
    """Operands of other ranks than 2 (gemmlab.matmul_shapes): under autograd or torch.compile through gemmlab::mm
    or gemmlab::bmm on the route's views, else the direct path (``key``: matmul's, for _register)."""
    check_initialized(A=A, B=B)  # matmul's rank test stops at A's, before a lazy B's dimensions raise
    if is_compiling() or (grad_enabled() and any(
            getattr(x, "requires_grad", False) for x in (A, B, addend))):
        if A.dtype in FP8 or epilogue is not None or out is not None or scale_a is not None or scale_b is not None:
            raise GemmlabError("under autograd and torch.compile gemmlab.matmul takes no FP8 operands, scales, "
                               "out= or epilogue: call them under torch.no_grad()")
        return _traced_nd(A, B, call.checks.check_names(kernel, precision), precision, call.out_dtype_name(out_dtype))
    return direct_nd(A, B, kernel, precision, out, scale_a, scale_b, out_dtype, epilogue, addend, key)


def _route(A, B, out=None):
    """torch.matmul's route for tensors of any rank (gemmlab.matmul_shapes), after the checks every tensor gets."""
    if not isinstance(B, torch.Tensor):
        raise LayoutError(f"A is a torch tensor and B a {type(B).__name__}: pass two tensors on one device")
    check_dense(A, B, out)
    if A.device != B.device:
        raise LayoutError(f"A is on {A.device} and B on {B.device}: pass both on the host or both on one GPU")
    if is_compiling():  # sizes may be symbolic
        return matmul_shapes.route(A.shape, A.stride(), B.shape, B.stride())
    return matmul_shapes.route_of(tuple(A.shape), A.stride(), tuple(B.shape), B.stride())


def _traced_nd(A, B, kernel, precision, out_dtype=None):
    """Under autograd or torch.compile: the route's views (reshape, expand: torch's own autograd reduces a
    broadcast operand's gradient), then gemmlab::mm for one GEMM or gemmlab::bmm for a batch, C in ``out_dtype`` (a
    dtype name) or by torch's rule."""
    r = _route(A, B)
    a, b = matmul_shapes.views(r, A, B, torch.Tensor.expand)
    op = torch.ops.gemmlab.bmm if r.batched else torch.ops.gemmlab.mm
    return op(a, b, kernel, precision, out_dtype).reshape(r.out_shape)


def direct_nd(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None, epilogue=None, addend=None,
              key=None):
    """Tensors of any rank outside autograd: one 2-D GEMM where the route collapses (``epilogue`` and a bias
    ``addend`` fused into it, as ``direct`` takes them), else one batched call. ``key``: matmul's, under which a GEMM
    over x's rows in place or a batch read as given is kept as its launch alone (_register)."""
    if out is not None and not isinstance(out, torch.Tensor):
        raise LayoutError(f"out is a {type(out).__name__}; the operands are torch tensors")
    r = _route(A, B, out)
    a, b = matmul_shapes.views(r, A, B, torch.Tensor.expand)
    c_out = None if out is None else matmul_shapes.out_view(out, r, out.is_contiguous())
    if r.batched and r.empty and epilogue is None and scale_a is None and scale_b is None:
        c = empty(a, b, r.c_shape, kernel, precision, c_out, out_dtype=out_dtype)  # a 2-D one: direct's business
    elif not r.batched:  # x (..., K) @ (K, N) over x's rows in place (a launch takes x as it is, C of the result's shape)
        rows = key is not None and B.dim() == 2 and a.data_ptr() == A.data_ptr()
        c = direct(a, b, kernel, precision, c_out, scale_a, scale_b, out_dtype, epilogue, addend,
                   launch_key=key if rows else None, shape=r.out_shape)
    elif epilogue is not None:
        raise EpilogueError(f"a fused epilogue takes one 2-D GEMM; these operands are a batch of shape "
                            f"{r.c_shape[:-2]}")
    elif scale_a is not None or scale_b is not None:
        raise ShapeError(f"FP8 scales go with 2-D operands; these are a batch of shape {r.c_shape[:-2]}")
    else:
        c = _batched(a, b, kernel, precision, c_out, out_dtype, r.batch, key, r.out_shape)
    return out if out is not None else c.reshape(r.out_shape)


def _batched(a, b, kernel, precision, out, out_dtype, batch, key=None, shape=None):
    """One batched call (gemmlab.call.batched_matmul), on the broadcast views. ``key``: matmul's, under which the
    launch of a GPU plan that reads the operands as they are (views of the same memory, no copy to make one stride
    walk the batch) is kept (_register), C of ``shape``, the result's."""
    given_a, given_b = a, b
    if a.is_cuda:
        a, b, batch = call.batched.in_place(a, b, batch, torch.Tensor.contiguous, torch.Tensor.expand, kernel,
                                            precision, out_dtype)
    c = call.batched_matmul(a, b, kernel, precision, out, out_dtype, batch)
    if key is not None and out is None and a is given_a and b is given_b and key not in call.launchers:
        _register(key, call.batched.batched_plan(a, b, kernel, precision, out_dtype, batch), shape)
    return c


def check_dense(A, B, out) -> None:
    for name, x in (("A", A), ("B", B), ("out", out)):
        if x is not None and (x.layout != torch.strided or x.is_nested or x.device.type not in ("cpu", "cuda")):
            what = "nested" if x.is_nested else str(x.layout).removeprefix("torch.")
            raise LayoutError(f"{name} is a {what} tensor on {x.device.type}: gemmlab takes dense (strided) tensors "
                              "on the host or a CUDA GPU")
    check_values(A=A, B=B, out=out)
