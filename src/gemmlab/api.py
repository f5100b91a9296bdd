"""gemmlab.matmul, linear and addmm: C = A @ B with gemmlab's kernels, on NumPy, CuPy and PyTorch arrays, with
torch.matmul's, F.linear's and torch.addmm's semantics.

The result is an array of the inputs' kind on their device, its dtype by torch's rule: FP32 for float32 operands,
the operands' own for bfloat16 and float16, BF16 for FP8 (``out_dtype=float32`` for FP32 C of the last three). CUDA
tensors and CuPy arrays are read in place through their addresses and the kernel runs on the caller's current
stream; the output comes from the caller's allocator (torch's caching allocator, CuPy's pool). Host arrays run on
the host (cpu/blas by default; bfloat16 and float16 widened to FP32 there, C rounded once to their type); naming a
GPU kernel for them copies them to the GPU and the result back. Tensors that need a gradient, and calls traced by
torch.compile, go through the gemmlab::mm operator (gemmlab.torch_op). The
call itself, its checks and its plan cache are in gemmlab.call. Operands of other ranks than 2 follow torch.matmul's
rules (gemmlab.matmul_shapes): one 2-D GEMM where the batch collapses into A's rows, else one batched call.
``linear`` and ``addmm`` are one GEMM with a fused epilogue (gemmlab.epilogue); on tensors, gemmlab.torch_fused.
"""
from __future__ import annotations

import sys

import numpy as np

from gemmlab import call, matmul_shapes
from gemmlab.call import AUTO
from gemmlab.errors import LayoutError, ShapeError

def matmul(A, B, kernel: str = AUTO, *, precision: str | None = None, out=None, scale_a=None, scale_b=None,
           out_dtype=None):
    """C = A @ B (A is M×K, B is K×N; C is M×N, on A's and B's device, of their kind, in torch's dtype for it).

    kernel: "auto" (the gemmlab kernel measured fastest per call for the shape on this GPU; host arrays: cpu/blas) or
    a name from ``gemmlab list``. precision: for float32 operands "fp32" (default) or "tf32"; bfloat16 operands compute
    "bf16", float16 operands "fp16"; FP8 operands "fp8" or "fp8_block", as their scales say. out: a C-contiguous array
    of the product's shape and dtype on the same device, written in place. out_dtype: C's dtype where the precision
    writes several: bf16 and fp16 their operands' dtype (default) or float32.

    FP8 (float8_e4m3fn / float8_e5m2 A and B, B as the transpose of an N×K matrix): C = (scale_a·A)(scale_b·B).
    scale_a, scale_b: FP32 on the operands' device; one element each (or None for 1): per tensor; scale_a (M,
    ceil(K/128)) and scale_b (ceil(K/128), ceil(N/128)): per 1×128 of A and 128×128 of B. out_dtype: bfloat16
    (default) or float32.

    Other ranks, as torch.matmul takes them: a 1-D A is a row and a 1-D B a column (their dimension dropped from C;
    1-D @ 1-D is a 0-D dot product, a NumPy scalar for NumPy operands as numpy.matmul returns it), and the dimensions
    before the last two a batch broadcast as torch broadcasts it; ``out`` then has the result's shape. (..., M, K) @
    (K, N) whose leading dimensions collapse into A's rows runs as one 2-D GEMM on a view; any other batch runs as one
    batched call (gemmlab.call.batched_matmul), an operand whose matrices the chosen level reads only after a copy
    (a transposed A) copied contiguous first, as torch.matmul copies it.

    Zero sizes as torch.matmul takes them: M, N or a batch dimension of 0 gives an empty result, K = 0 zeros (``out``
    is filled with them), in the dtype the same call of larger operands writes and after its checks; no kernel runs
    and no plan is made.

    Raises ShapeError (a 0-D operand, inner dimensions differ, batch dimensions that do not broadcast, scales of no
    recipe's shape or scales with a batch), DTypeError
    (a dtype or precision the kernel does not take), LayoutError (operands on different devices, a wrong ``out``, a
    row-major FP8 B), SizeLimitError (past a kernel's index range, or memory), NoGPUError (a GPU kernel without a
    usable GPU), UnknownKernelError, OperandTypeError (not an array); all derive from gemmlab.errors.GemmlabError.
    """
    if _torch_op is not None and isinstance(A, _torch_op.Tensor):
        return _torch_op.matmul(A, B, kernel, precision, out, scale_a, scale_b, out_dtype)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(A, torch.Tensor):
        return _load_torch_op().matmul(A, B, kernel, precision, out, scale_a, scale_b, out_dtype)
    if getattr(A, "ndim", 2) == 2 and getattr(B, "ndim", 2) == 2:
        return call.array_matmul(A, B, kernel, precision, out, scale_a, scale_b, out_dtype)
    return _array_nd(A, B, kernel, precision, out, scale_a, scale_b, out_dtype)


def _array_nd(A, B, kernel, precision, out, scale_a=None, scale_b=None, out_dtype=None):
    """NumPy and CuPy operands of any rank: torch.matmul's route (gemmlab.matmul_shapes), then one 2-D GEMM or one
    batched call; a 1-D @ 1-D NumPy product is a NumPy scalar, as numpy.matmul returns it."""
    kind = _one_kind(("A", A), ("B", B))
    xp = np
    if kind in ("cupy", "cuda-interface"):
        import cupy as xp

        A, B, kind = xp.asarray(A), xp.asarray(B), "cupy"
    A, B = _regular(A, xp), _regular(B, xp)
    r, a, b = _routed(A, B)
    c_out = None
    if out is not None:
        call.checks.check_out_kind(out, kind)
        c_out = matmul_shapes.out_view(out, r, bool(getattr(getattr(out, "flags", None), "c_contiguous", False)))
    if not r.batched:
        c = call.array_matmul(a, b, kernel, precision, c_out, scale_a, scale_b, out_dtype)
    elif scale_a is not None or scale_b is not None:
        raise ShapeError(f"FP8 scales go with 2-D operands; these are a batch of shape {r.c_shape[:-2]}")
    elif r.empty:  # a batch with a zero dimension: no kernel (a 2-D product's is array_matmul's business)
        if kind == "cupy" and A.device != B.device:
            raise LayoutError(f"A is on cuda:{A.device.id} and B on cuda:{B.device.id}: pass both on one GPU")
        c = call.launch.array_empty(kind, (np.dtype(A.dtype).name, np.dtype(B.dtype).name),
                                    A.device.id if kind == "cupy" else None, (r.a_shape[-2:], r.b_shape[-2:]),
                                    r.c_shape, kernel, precision, c_out, out_dtype=call.out_dtype_name(out_dtype))
    else:
        batch = r.batch
        if kind == "cupy":
            import cupy

            a, b, batch = call.batched.in_place(a, b, batch, cupy.ascontiguousarray, cupy.broadcast_to, kernel,
                                                precision, out_dtype)
        c = call.batched_matmul(a, b, kernel, precision, c_out, out_dtype, batch)
    if out is not None:
        return out
    c = c.reshape(r.out_shape)
    return c[()] if kind == "numpy" and not r.out_shape else c


def _routed(A, B):
    """torch.matmul's route for two tensors or two arrays of one kind, and A and B as views it runs on."""
    if _is_tensor(A):
        r = matmul_shapes.route_of(tuple(A.shape), A.stride(), tuple(B.shape), B.stride())
        return (r, *matmul_shapes.views(r, A, B, type(A).expand))
    r = matmul_shapes.route_of(tuple(A.shape), _element_strides(A), tuple(B.shape), _element_strides(B))
    if r.batched and r.empty:  # nothing to read: no views (CuPy's broadcast_to need not take a size 1 to 0)
        return r, A, B
    xp = np
    if call.operands.kind_of(A) == "cupy":
        import cupy as xp
    return (r, *matmul_shapes.views(r, A, B, xp.broadcast_to))


def _regular(x, xp):
    """``x`` where its strides are whole elements and its batch dimensions walk forward, else a C-contiguous copy
    (``xp.ascontiguousarray``), as numpy.matmul reads any strides: a field of a packed record array steps by bytes
    that are no multiple of its element, a batch reversed by [::-1] steps back; the routes and the batch's one stride
    per operand count in elements, forward."""
    itemsize = x.dtype.itemsize
    if any(s % itemsize for s in x.strides) or any(s < 0 for s in x.strides[:-2]):
        return xp.ascontiguousarray(x)
    return x


def _element_strides(x) -> tuple:
    itemsize = x.dtype.itemsize
    return tuple(s // itemsize for s in x.strides)


_torch_op = None


def _load_torch_op():
    """gemmlab.torch_op, imported the first time a tensor arrives (it registers gemmlab::mm with torch)."""
    global _torch_op
    from gemmlab import torch_op

    _torch_op = torch_op
    return torch_op


def plan(A, B, kernel: str = AUTO, *, precision: str | None = None, scale_a=None, scale_b=None,
         out_dtype=None) -> call.Prepared:
    """What ``matmul(A, B, ...)`` would run, resolved: ``.explain()`` says which kernel and why. Operands of other
    ranks: the one 2-D GEMM they run as (a batch that does not collapse is one batched call, not one GEMM). A zero
    dimension is a ShapeError here: ``matmul`` runs no kernel for one, so there is no plan to explain."""
    gpu_array = {"cuda-interface": "cupy"}  # a __cuda_array_interface__ object runs as the CuPy array it views
    kinds = [gpu_array.get(k, k) for k in map(call.operands.kind_of, (A, B))]
    if _is_tensor(A) != _is_tensor(B) or kinds[0] != kinds[1]:
        raise LayoutError("pass A and B of one kind: two tensors, or two arrays")
    if _is_tensor(A):  # the checks matmul's tensors get: dense, on the host or a CUDA GPU, not a negated view
        torch_op = _load_torch_op()
        torch_op.check_dense(A, B, None)
        region = torch_op.autocast_region(A)
        if region is not None and scale_a is None and scale_b is None and out_dtype is None:  # what matmul runs
            A, B = torch_op.autocast_region_operands(region, A, B)
    if getattr(A, "ndim", 2) != 2 or getattr(B, "ndim", 2) != 2:
        r, A, B = _routed(A, B)
        if r.batched:
            raise ShapeError(f"A {tuple(A.shape[-2:])} @ B {tuple(B.shape[-2:])} over a batch of shape "
                             f"{r.c_shape[:-2]} runs as one batched call (gemmlab.call.batched_matmul), not one "
                             "2-D GEMM: plan explains 2-D GEMMs")
    fa, fb = call.facts(A, "A"), call.facts(B, "B")
    if fa.device != fb.device:
        raise LayoutError(call.devices_differ(fa, fb))
    scales = (call.scale_facts(scale_a, "scale_a"), call.scale_facts(scale_b, "scale_b"))
    return call.checks.prepare(fa, fb, kernel, precision, fa.device, scales, call.out_dtype_name(out_dtype))


def clear_plans() -> None:
    """Drop every cached plan (and the workspaces they hold)."""
    call.cache.clear()


def linear(x, w, bias=None, activation: str | None = None, *, kernel: str = AUTO, precision: str | None = None):
    """F.linear with a fused epilogue: act(x @ w.T + bias), one GEMM and one launch.

    x: (..., K) (any leading dimensions, or 1-D); w: the (N, K) weight, read in place as w.T; bias: (N,) or None,
    of C's dtype or float32; activation: None, "relu", "gelu" (erf's), "gelu_tanh" or "silu". Returns (..., N).
    NumPy, CuPy and PyTorch operands; tensors take autograd (the bias's gradient and the activation's derivative
    included) and torch.compile(fullgraph=True) through the gemmlab::linear operator. kernel and precision: as
    ``matmul``'s. Zero sizes as F.linear's: no rows or N = 0 give an empty result, K = 0 act(bias) in every row
    (zeros without a bias), with no kernel.

    Raises ShapeError (a weight that is not 2-D, x's last dimension not the weight's, a bias not of length N),
    EpilogueError (an activation gemmlab does not fuse), DTypeError (a bias dtype the kernel does not add) and what
    ``matmul`` raises.
    """
    if _is_tensor(x):
        return _load_torch_fused().linear(x, w, bias, activation, kernel, precision)
    from gemmlab.epilogue import Epilogue

    _one_kind(("x", x), ("w", w), *(() if bias is None else (("bias", bias),)))
    call.checks.check_same_dtype(np.dtype(x.dtype).name, np.dtype(w.dtype).name, ("x", "w"))
    rows, _, out_shape = matmul_shapes.linear_shapes(x.shape, w.shape, None if bias is None else bias.shape)
    epilogue = Epilogue(activation, addend=None if bias is None else "bias")
    y = call.array_matmul(x.reshape(rows, x.shape[-1]), w.T, kernel, precision, None, epilogue=epilogue,
                          addend=bias)
    return y.reshape(out_shape)


def addmm(c, a, b, *, beta: float = 1, alpha: float = 1, kernel: str = AUTO, precision: str | None = None):
    """torch.addmm: beta·c + alpha·(a @ b) with the sum fused into the GEMM's store, one launch.

    a: (M, K); b: (K, N); c: anything that broadcasts to (M, N) (a matrix, a row, a column, a scalar: read in place
    through a broadcast view), of C's dtype or float32; beta = 0 ignores c and alpha = 0 ignores a and b, NaNs
    included, as torch does and BLAS defines. NumPy, CuPy
    and PyTorch operands; tensors take autograd and torch.compile through the gemmlab::addmm operator. Zero sizes as
    torch.addmm's: M or N = 0 gives an empty result, K = 0 beta·c broadcast (alpha times an empty sum is 0), with no
    kernel.

    Raises ShapeError (operands that are not 2-D, inner dimensions that differ, a c that does not broadcast),
    EpilogueError (an alpha or beta that is not a finite number a float32 holds), DTypeError (a c of a dtype the call
    does not add, whatever beta is) and what ``matmul`` raises.
    """
    if _is_tensor(a):
        return _load_torch_fused().addmm(c, a, b, beta, alpha, kernel, precision)
    from gemmlab.epilogue import Epilogue, scalar

    kind = _one_kind(("a", a), ("b", b), ("c", c))
    m, n = matmul_shapes.addmm_shapes(c.shape, a.shape, b.shape)
    alpha, beta = scalar(alpha, "alpha"), scalar(beta, "beta")  # before they are compared with 0
    if alpha == 0:  # a and b unread: the product of no columns, beta·c by the K = 0 path, no kernel
        a, b = a[:, :0], b[:0]
    if beta == 0:  # c unread, but of a dtype the call takes, as torch.addmm refuses another whatever beta is
        y = call.array_matmul(a, b, kernel, precision, None, epilogue=Epilogue(alpha=alpha))
        call.checks.check_addend_dtype("matrix", np.dtype(c.dtype).name, np.dtype(y.dtype).name)
        return y
    xp = np
    if kind == "cupy":
        import cupy as xp
    return call.array_matmul(a, b, kernel, precision, None, epilogue=Epilogue(alpha=alpha, beta=beta,
                                                                              addend="matrix"),
                             addend=xp.broadcast_to(c, (m, n)))


def _one_kind(*named) -> str:
    """The array kind that every (name, operand) shares: an OperandTypeError for what is not an array, a LayoutError
    for two kinds (NumPy would read a tensor through its own conversion, or fail on its dtype)."""
    (first, x), *rest = named
    kind = call.operands.kind_of(x)
    for name, operand in rest:
        if call.operands.kind_of(operand) != kind:
            raise LayoutError(f"{first} is a {kind} array and {name} a {call.operands.kind_of(operand)} array: pass "
                              "arrays of one kind")
    return kind


def _is_tensor(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


_torch_fused = None


def _load_torch_fused():
    """gemmlab.torch_fused, imported the first time a tensor arrives (it registers gemmlab::linear and addmm)."""
    global _torch_fused
    if _torch_fused is None:
        from gemmlab import torch_fused

        _torch_fused = torch_fused
    return _torch_fused
