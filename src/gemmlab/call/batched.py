"""A batch of products in one call: ``batched_matmul(A, B, ..., batch)``, C[i] = A[i] @ B[i] over a broadcast batch.

``Batch`` describes the batch as torch.matmul broadcasts it: the batch's shape and, per operand, its strides over
those dimensions in elements after broadcasting (0 where the operand is broadcast). The last two dimensions of A and
B are the matrices (M×K and K×N, each row-major or the transpose of one); the batch strides walk from each
operand's address. C is a new (or ``out``'s) C-contiguous array of shape batch.shape + (M, N).

On the host the product is numpy.matmul on the broadcast views (FP32, as gemmlab.matmul's host path). On a GPU it
is one launch of a kernel that takes a strided batch (``KernelSpec.batches``): the batch collapses into one
dimension with one stride per operand (``Batch.collapsed``), which the kernel walks (the batch index in the grid or
the persistent scheduler's tiles). A batch whose strides do not collapse so (one operand broadcast along a dimension
that another walks, between dimensions the first walks) is refused on the GPU: make the operand contiguous first.
The plan key holds the batch, so one plan serves every call with the same description.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from gemmlab.call import checks
from gemmlab.call.cache import plans, remember
from gemmlab.call.launch import host_empty, host_memory_bytes
from gemmlab.call.operands import Facts, devices_differ, facts, kind_of, out_dtype_name
from gemmlab.errors import LayoutError, ShapeError, SizeLimitError


@dataclass(frozen=True)
class Batch:
    """A broadcast batch: its shape, and A's and B's strides over it in elements (0: broadcast along it)."""

    shape: tuple
    a: tuple
    b: tuple

    def __post_init__(self):
        for name in ("shape", "a", "b"):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                                           for v in value):
                raise ShapeError(f"Batch.{name} must be a tuple of integers, got {value!r}")
            object.__setattr__(self, name, tuple(int(v) for v in value))
        if not len(self.shape) == len(self.a) == len(self.b):
            raise ShapeError(f"a batch of shape {self.shape} takes {len(self.shape)} strides per operand; got A's "
                             f"{self.a} and B's {self.b}")
        if any(n < 1 for n in self.shape):
            raise ShapeError(f"batch shape {self.shape}: every batch dimension must be at least 1 (an empty batch has "
                             "no product to compute)")
        if any(s < 0 for s in self.a + self.b):
            raise ShapeError(f"batch strides must be >= 0 elements (0: broadcast); got A's {self.a} and B's {self.b}")

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def broadcast(cls, a_shape, a_strides, b_shape, b_strides) -> "Batch":
        """torch.matmul's broadcast of two operands' batch dimensions (all but their last two), from their shapes
        and element strides; a ShapeError where the dimensions do not broadcast."""
        a_dims, b_dims = tuple(a_shape[:-2]), tuple(b_shape[:-2])
        rank = max(len(a_dims), len(b_dims))

        def padded(dims, strides):
            pad = rank - len(dims)
            return (1,) * pad + dims, (0,) * pad + tuple(strides[:len(dims)])

        (ad, ast), (bd, bst) = padded(a_dims, a_strides), padded(b_dims, b_strides)
        shape, sa, sb = [], [], []
        for i, (x, y) in enumerate(zip(ad, bd)):
            if x != y and 1 not in (x, y):
                raise ShapeError(f"batch dimensions do not broadcast: A's {a_dims} and B's {b_dims} differ at "
                                 f"dimension {i - rank} ({x} against {y}); each pair must be equal or one of them 1")
            shape.append(max(x, y))
            sa.append(ast[i] if x > 1 else 0)
            sb.append(bst[i] if y > 1 else 0)
        return cls(tuple(shape), tuple(sa), tuple(sb))

    def collapsed(self) -> tuple[int, int, int] | None:
        """(count, A's stride, B's stride) of the batch as one dimension, or None where one operand's strides do not
        walk the batch in one step (then no single stride per operand can)."""
        dims = [(n, x, y) for n, x, y in zip(self.shape, self.a, self.b) if n > 1]
        if not dims:
            return (1, 0, 0)
        for (n0, x0, y0), (n1, x1, y1) in zip(dims, dims[1:]):
            if x0 != x1 * n1 or y0 != y1 * n1:
                return None
        return (self.count, dims[-1][1], dims[-1][2])

    def describe(self) -> str:
        return (f"{self.count} products (batch {'x'.join(map(str, self.shape)) or '()'}; A's strides {self.a}, "
                f"B's {self.b} elements, 0 broadcast)")


def _strides(x) -> tuple:
    """An array's strides in elements; a LayoutError where one is not a whole number of them (a field of a packed
    record array), which no stride in elements describes."""
    if kind_of(x) == "torch":
        return tuple(x.stride())
    itemsize = x.dtype.itemsize
    if any(s % itemsize for s in x.strides):
        raise LayoutError(f"strides of {x.strides} bytes are not whole elements of {itemsize} bytes (a field of a "
                          "packed record array?): pass a contiguous copy (ascontiguousarray)")
    return tuple(s // itemsize for s in x.strides)


def stepped(A, B, batch: Batch, contiguous):
    """A and B (views over the whole batch) such that each walks ``batch`` in one stride, as the GPU kernels read it:
    an operand broadcast over only some batch dimensions ((4, 1, M, K) against (3, K, N)) made ``contiguous`` over
    the batch first, a copy as torch.matmul's expand makes; then their Batch."""
    if batch.collapsed() is not None:
        return A, B, batch

    def one_step(strides) -> bool:
        dims = [(n, s) for n, s in zip(batch.shape, strides) if n > 1]
        return all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(dims, dims[1:]))

    A = A if one_step(batch.a) else contiguous(A)
    B = B if one_step(batch.b) else contiguous(B)
    return A, B, batch_of(A, B)


def in_place(A, B, batch: Batch, contiguous, expand, kernel="auto", precision=None, out_dtype=None):
    """A and B (and their Batch) such that the level a batched call on the GPU picks reads every matrix in place:
    ``stepped`` first, then an operand whose matrices that level reads only after a copy (a transposed A; a
    transposed B where tc1 takes the batch) copied, as torch.matmul's batched path copies it. gemmlab.matmul's N-D
    front door goes through this; batched_matmul refuses such an operand instead. ``expand(x, shape)``: x broadcast
    to ``shape`` (torch.Tensor.expand, cupy.broadcast_to)."""
    A, B, batch = stepped(A, B, batch, contiguous)
    prepared, _ = _prepared(A, B, kernel, precision, None, out_dtype, batch)
    if not prepared.on_device or not (prepared.copy_a or prepared.copy_b):
        return A, B, batch
    A = _copied(A, contiguous, expand) if prepared.copy_a else A
    B = _copied(B, contiguous, expand) if prepared.copy_b else B
    return A, B, batch_of(A, B)


def _copied(x, contiguous, expand):
    """x's distinct matrices made contiguous, broadcast again where x was (stride 0): a weight broadcast over the
    batch is copied once, not once per product. After ``stepped`` an operand is broadcast along all of its batch
    dimensions or none, so the copy still walks the batch in one stride."""
    batch_strides = _strides(x)[:-2]
    if 0 not in batch_strides:
        return contiguous(x)
    distinct = tuple(slice(0, 1) if s == 0 else slice(None) for s in batch_strides)
    return expand(contiguous(x[distinct + (Ellipsis,)]), tuple(x.shape))


def batch_of(A, B) -> Batch:
    """The Batch torch.matmul makes of two operands of two or more dimensions."""
    return Batch.broadcast(tuple(A.shape), _strides(A), tuple(B.shape), _strides(B))


def _matrix(x, name: str) -> Facts:
    """The facts of one of an operand's matrices (its last two dimensions)."""
    ndim = x.dim() if kind_of(x) == "torch" else x.ndim
    if ndim < 2:
        raise ShapeError(f"{name} must have at least 2 dimensions (a batch of matrices), got {ndim}-D")
    if 0 in tuple(x.shape)[:-2]:
        raise ShapeError(f"{name} has an empty batch dimension, shape {tuple(x.shape)}: no product to compute")
    return facts(x[(0,) * (ndim - 2)], name)


def _check_reach(x, name: str, strides: tuple, batch: Batch, elem_strides: tuple) -> None:
    """Refuse a batch description that walks past the operand's own elements."""
    shape = tuple(x.shape)
    own = sum((n - 1) * s for n, s in zip(shape, elem_strides))
    walk = sum((n - 1) * s for n, s in zip(batch.shape, strides)) + sum(
        (n - 1) * s for n, s in zip(shape[-2:], elem_strides[-2:]))
    if walk > own:
        raise LayoutError(f"the batch walks {name} {walk} elements from its start; {name} (shape {shape}, strides "
                          f"{elem_strides}) spans {own}: its batch strides {strides} reach past it")


def batched_matmul(A, B, kernel="auto", precision=None, out=None, out_dtype=None, batch: Batch | None = None):
    """C[i] = A[i] @ B[i] for every index i of the broadcast batch, in one launch on a GPU (a launch per 65535
    products past gridDim.z's limit, on the levels that put the product in it).

    A: (..., M, K), B: (..., K, N), NumPy, CuPy or torch arrays of one kind and device. batch: a Batch (the batch
    shape and each operand's strides over it after broadcasting, 0 where it is broadcast); None: torch.matmul's
    broadcast of A's and B's leading dimensions. kernel, precision, out_dtype: as gemmlab.matmul's (a named kernel
    must take a batch: KernelSpec.batches). out: a C-contiguous array of C's shape and dtype, written in place.
    Returns C of shape batch.shape + (M, N). Raises what gemmlab.matmul raises, and ShapeError (batch dimensions that
    do not broadcast, a Batch of the wrong rank), LayoutError (strides that reach past an operand, or that do not
    collapse into one stride per operand on the GPU) for a batch."""
    prepared, batch = _prepared(A, B, kernel, precision, out, out_dtype, batch)
    if not prepared.on_device:
        return _host(prepared, A, B, out, batch)
    _refuse_copies(prepared)
    return _gpu(prepared, A, B, out)


def batched_plan(A, B, kernel="auto", precision=None, out_dtype=None, batch: Batch | None = None):
    """What ``batched_matmul(A, B, ...)`` would run, resolved (and cached, as a call's): ``.explain()`` says which
    kernel, why, and the batch's launches."""
    prepared = _prepared(A, B, kernel, precision, None, out_dtype, batch)[0]
    if prepared.on_device:
        _refuse_copies(prepared)
    return prepared


def _refuse_copies(prepared) -> None:
    """A batch is read in place: its plan is kept whatever it needs (``in_place`` asks it which operand to copy),
    and a call with an operand its level reads only after a copy is refused."""
    if prepared.copy_a or prepared.copy_b:
        which = "A" if prepared.copy_a else "B"
        raise LayoutError(f"{which}'s matrices are neither row-major nor the transpose of row-major ones that "
                          f"{prepared.plan.spec.name} reads in place; a batch is read in place: make {which} "
                          "contiguous first (gemmlab.matmul does)")


def _prepared(A, B, kernel, precision, out, out_dtype, batch):
    """(the call's Prepared from the plan cache, made on a miss; the Batch). A call like an earlier one (operands of
    the same type, dtype, shape, strides and device, the same arguments) finds its plan by those attributes alone,
    before the checks, which that earlier call passed; a miss runs them and files the plan under both keys."""
    seen = _seen_key(A, B, kernel, precision, out, out_dtype, batch)
    prepared = plans.get(seen) if seen is not None else None
    if prepared is not None:
        return prepared, prepared.batch
    prepared, batch = _checked(A, B, kernel, precision, out, out_dtype, batch)
    if seen is not None:
        remember(seen, prepared)
    return prepared, batch


def _seen_key(A, B, kernel, precision, out, out_dtype, batch):
    """The plan cache's key of a call from its operands' own attributes; None where one is not hashable (the checks
    then name what is wrong)."""
    try:
        key = ("batched-seen", kernel, precision, _attributes(A), _attributes(B), batch, out_dtype,
               None if out is None else _attributes(out))
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


def _attributes(x) -> tuple:
    if type(x).__module__.startswith("torch"):
        return type(x), x.dtype, tuple(x.shape), x.stride(), x.device, x.layout, x.requires_grad, x.is_neg()
    return (type(x), x.dtype, x.shape, x.strides, getattr(getattr(x, "device", None), "id", None),
            getattr(getattr(x, "flags", None), "writeable", True))


def _checked(A, B, kernel, precision, out, out_dtype, batch):
    """The checks of a call and its Prepared (from the plan cache by the checked facts, made on a miss)."""
    fa, fb = _matrix(A, "A"), _matrix(B, "B")
    if fa.kind != fb.kind:
        raise LayoutError(f"A is a {fa.kind} array and B a {fb.kind} array: pass two arrays of one kind")
    if fa.kind == "torch":
        from gemmlab.call.tensors import check_values, refuse_capture

        check_values(A=A, B=B, out=out)
        refuse_capture(A)
    if fa.device != fb.device:
        raise LayoutError(devices_differ(fa, fb))
    batch = batch_of(A, B) if batch is None else batch
    if not isinstance(batch, Batch):
        raise ShapeError(f"batch must be a gemmlab.call.batched.Batch, got {type(batch).__name__}")
    for name, x, strides in (("A", A, batch.a), ("B", B, batch.b)):
        _check_reach(x, name, strides, batch, _strides(x))
    out_name = out_dtype_name(out_dtype)
    key = ("batched", kernel, precision, fa, fb, batch, out_name, _out_key(out))
    prepared = plans.get(key)
    if prepared is None:
        prepared = remember(key, _prepare(fa, fb, kernel, precision, out_name, batch, out))
    return prepared, batch


def _out_key(out):
    """What out's checks read (check_out): its kind, shape, dtype, strides, device, and whether it can be written."""
    return None if out is None else (kind_of(out), _attributes(out))


def _prepare(fa: Facts, fb: Facts, kernel, precision, out_name, batch: Batch, out):
    (m, k), n = fa.shape, fb.shape[1]
    out_shape = batch.shape + (m, n)
    if fa.device is None:  # host operands: numpy.matmul, with the host path's checks
        from gemmlab.call.cache import Prepared

        checks.check_host_batch_kernel(kernel, precision)
        spec, problem, _, _ = checks.resolve(fa, fb, kernel, precision, False, None, out_dtype=out_name)
        flops = batch.count * problem.flops()
        if spec.max_flops is not None and flops > spec.max_flops:  # resolve saw one product of the batch
            raise SizeLimitError(f"{batch.count} products of {problem.label()}: {flops / 1e9:.1f} GFLOP is past "
                                 f"{spec.name}'s limit of {spec.max_flops / 1e9:.1f} GFLOP (it would run for "
                                 "minutes); a smaller batch, or the operands on the GPU")
        how = "host operands run on the host: numpy.matmul on the broadcast views"
        if spec.precision != "fp32":  # dispatch.HOST_WIDENED
            how += f", {checks.widened(problem)}"
        prepared = Prepared(spec.plan(problem), how, out_shape=out_shape, batch=batch,
                            out_dtype=str(spec.output_dtype(problem)))
    else:
        collapsed = batch.collapsed()
        if collapsed is None:
            raise LayoutError(f"{batch.describe()}: the strides do not walk the batch as one dimension with one "
                              "stride per operand, which the GPU kernels take; make the broadcast operand "
                              "contiguous over the batch first")
        prepared = checks.prepare(fa, fb, kernel, precision, fa.device, out_dtype=out_name,
                                  batch=None if collapsed[0] == 1 else collapsed)
        prepared.out_shape, prepared.batch = out_shape, batch
        if fa.kind == "torch":  # a stream's workspaces from torch's allocator (under capture: the graph's pool)
            from functools import partial

            from gemmlab.call.tensors import workspace

            torch = sys.modules["torch"]
            prepared.torch_template = torch.empty(0, dtype=getattr(torch, prepared.out_dtype),
                                                  device=f"cuda:{fa.device}")
            prepared.workspace = partial(workspace, prepared.torch_template)
        elem = prepared.plan.problem.prec.input_bytes
        prepared.span_a = elem * (sum((n_ - 1) * s for n_, s in zip(batch.shape, batch.a)) + m * k)
        prepared.span_b = elem * (sum((n_ - 1) * s for n_, s in zip(batch.shape, batch.b)) + k * n)
    if out is not None:
        checks.check_out(out, fa.kind, out_shape, fa.device, prepared.out_dtype)
    return prepared


def _views(x, strides: tuple, shape: tuple):
    """The broadcast view of a host operand's matrices over the batch."""
    x = np.asarray(x)
    return np.lib.stride_tricks.as_strided(x, shape + x.shape[-2:],
                                           tuple(s * x.itemsize for s in strides) + x.strides[-2:], writeable=False)


def _host(prepared, A, B, out, batch: Batch):
    torch_out = kind_of(A) == "torch"
    if torch_out:
        from gemmlab.call.tensors import host_c, numpy_view

        A, B = numpy_view(A), numpy_view(B)
    a, b = _views(A, batch.a, batch.shape), _views(B, batch.b, batch.shape)
    if out is None:
        c = host_c(prepared.out_shape, prepared.out_dtype) if torch_out else \
            host_empty(prepared.out_shape, prepared.out_dtype)
        _host_matmul(a, b, numpy_view(c) if torch_out else c)
        return c
    target = numpy_view(out) if torch_out else out
    if np.shares_memory(target, A) or np.shares_memory(target, B):
        raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    _host_matmul(a, b, target)
    return out


def _host_matmul(a, b, c) -> None:
    """numpy.matmul in FP32 over the batch's broadcast views, into C. BF16 and FP16 operands (dispatch.HOST_WIDENED) are
    widened to FP32 on the way (exactly) and C rounded once to its type. NumPy casts operands that are not native
    float32 (those, and a big-endian float32) whole, broadcast and all, so their FP32 bytes are held to the machine's
    memory as C's are."""
    if a.dtype != np.float32:
        need, total = 4 * (math.prod(a.shape) + math.prod(b.shape)), host_memory_bytes()
        if need > total:
            raise SizeLimitError(f"A and B broadcast over the batch ({'×'.join(map(str, a.shape))} and "
                                 f"{'×'.join(map(str, b.shape))}) need {need / 2**30:.1f} GiB in float32 to multiply "
                                 f"on the host; this machine has {total / 2**30:.1f} GiB of memory")
    try:
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # FP16's inf and subnormals, as torch's
            np.matmul(a, b, out=c, dtype=np.float32)
    except MemoryError:
        raise SizeLimitError(f"{'×'.join(map(str, c.shape))}: the host's numpy.matmul ran out of memory") from None


def _gpu(prepared, A, B, out):
    """One launch: the operands' addresses (their first matrices'), C's, the caller's stream."""
    from gemmlab.call.launch import gpu_memory_message, overlaps

    if kind_of(A) == "torch":  # torch's allocator and stream, as a 2-D call's launch takes them
        from gemmlab.call.tensors import run

        return run(prepared, A, B, out)
    import cupy

    with cupy.cuda.Device(prepared.device):  # C, the stream and the launch of the arrays' GPU
        if out is None:
            try:
                out = cupy.empty(prepared.out_shape, prepared.out_dtype)
            except cupy.cuda.memory.OutOfMemoryError:
                raise SizeLimitError(gpu_memory_message(prepared.out_shape, prepared.out_dtype)) from None
        a, b, c = A.data.ptr, B.data.ptr, out.data.ptr
        _check_overlap(prepared, a, b, c, overlaps)
        stream = cupy.cuda.get_current_stream().ptr
        with prepared.lock:
            prepared.for_stream(stream).launch(a, b, c, stream)
    return out


def _check_overlap(prepared, a: int, b: int, c: int, overlaps) -> None:
    if overlaps(c, prepared.c_bytes, a, prepared.span_a) or overlaps(c, prepared.c_bytes, b, prepared.span_b):
        raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
