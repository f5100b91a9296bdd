"""torch.matmul's shape rules for gemmlab.matmul (numpy.matmul's are the same): which GEMM a pair of operands of any
rank runs, and the result's shape.

- A 1-D A of K is a 1×K row and a 1-D B of K a K×1 column; their dimension is dropped from the result again (1-D @
  1-D is a dot product, a 0-D result).
- Dimensions before the last two are a batch, broadcast as torch broadcasts: aligned from the right, each pair equal
  or one of them 1 (or missing).
- ``(…, M, K) @ (K, N)`` (B 2-D, or broadcast along every batch dimension) whose batch and row dimensions collapse
  into one stride (a contiguous x of (batch, seq, hidden), say) is one 2-D GEMM of (batch·…·M) × K by K × N: a
  reshape of A, no copy, one launch.
- Anything else with a batch is a true batch: both operands batched, or a broadcast that does not collapse. It runs as
  one batched call (gemmlab.call.batched_matmul) with each operand's batch strides, 0 where it is broadcast.
- Zero sizes are torch's: M, N, K or a batch dimension may be 0 (a batch dimension of 0 broadcasts against 1, as
  torch's does). Such a product (``Route.empty``) runs no kernel: its result is empty, or zeros for K = 0.

Everything here reads shapes and strides only, so the torch path applies the same rules under autograd and
torch.compile (where the sizes may be symbolic) as the direct path does on real tensors.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gemmlab.call.batched import Batch
from gemmlab.errors import LayoutError, ShapeError


@dataclass(frozen=True)
class Route:
    """What a call runs: A viewed as ``a_shape`` and B as ``b_shape`` (``views``: reshapes that need no copy, and
    broadcasts), their product of shape ``c_shape``, reshaped to torch's ``out_shape``. One 2-D GEMM, or (``batched``)
    a broadcast batch: the leading dimensions of a_shape, b_shape and c_shape, each operand's strides over them in
    ``batch_strides``."""

    out_shape: tuple
    a_shape: tuple
    b_shape: tuple
    c_shape: tuple
    a_broadcast: tuple = ()  # A broadcast to the batch, (*batch, M, K): what a_shape reshapes
    batched: bool = False
    batch_strides: tuple = ((), ())

    @property
    def empty(self) -> bool:
        """A product with a zero dimension (M, N, K or a batch's): torch's result is empty, or zeros for K = 0, and no
        kernel runs for it."""
        return 0 in self.a_shape or 0 in self.b_shape

    @functools.cached_property
    def batch(self) -> Batch | None:
        """The call layer's description of the batch (None for one GEMM). Built on demand: under torch.compile the
        sizes may be symbolic, and only the direct path, on real tensors, hands a batch to the call layer."""
        return Batch(self.c_shape[:-2], *self.batch_strides) if self.batched else None


def views(r: Route, A, B, broadcast_to):
    """A and B as the route's GEMM reads them, through views only: ``broadcast_to(x, shape)`` is the kind's
    broadcast (torch's expand, NumPy's and CuPy's broadcast_to)."""
    a = A.reshape(1, A.shape[0]) if A.ndim == 1 else A
    b = B.reshape(B.shape[0], 1) if B.ndim == 1 else B
    if r.batched:
        return broadcast_to(a, r.a_shape), broadcast_to(b, r.b_shape)
    if tuple(a.shape) != r.a_shape:  # batch and rows collapse (route checked); broadcast first where B has the batch
        a = (a if math.prod(a.shape[:-1]) == r.a_shape[0] else broadcast_to(a, r.a_broadcast)).reshape(r.a_shape)
    if b.ndim > 2:  # one matrix for the whole batch: every batch dimension of size 1 or stride 0
        b = b[(0,) * (b.ndim - 2)]
    return a, b


def _shape_text(shape) -> str:
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def route(a_shape, a_strides, b_shape, b_strides) -> Route:
    """The GEMM that ``A @ B`` runs, from the operands' shapes and element strides; a ShapeError where torch.matmul
    refuses them (a 0-D operand, inner dimensions that differ, batches that do not broadcast)."""
    a_shape, b_shape, a_strides, b_strides = tuple(a_shape), tuple(b_shape), tuple(a_strides), tuple(b_strides)

    def shapes(a=a_shape, b=b_shape) -> str:  # formatted only for an error: under torch.compile, sizes may be symbolic
        return f"A {_shape_text(a)} and B {_shape_text(b)}"

    for name, shape in (("A", a_shape), ("B", b_shape)):
        if not shape:
            raise ShapeError(f"{name} is a 0-D scalar ({shapes()}): matmul takes operands of at least one dimension, "
                             "as torch.matmul does; multiply by a scalar with *")
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector:
        a_shape, a_strides = (1, *a_shape), (0, *a_strides)
    if b_vector:
        b_shape, b_strides = (*b_shape, 1), (*b_strides, 0)
    (m, k), (k2, n) = a_shape[-2:], b_shape[-2:]
    if k != k2:
        where = "length" if b_vector else "second-to-last dimension"
        raise ShapeError(f"inner dimensions differ: {shapes()}; A's last dimension ({k}) must equal B's {where} ({k2})")
    batch, strides_a, strides_b = _broadcast(a_shape[:-2], a_strides[:-2], b_shape[:-2], b_strides[:-2], shapes)
    out_shape = (*batch, *(() if a_vector else (m,)), *(() if b_vector else (n,)))
    # B is one matrix for the whole batch (no batch dimension of it 0): A's batch and rows may collapse into one GEMM
    if not any(strides_b) and 0 not in b_shape[:-2]:
        rows = _collapse((*batch, m), (*strides_a, a_strides[-2]))
        if rows is not None:
            return Route(out_shape, (rows, k), (k, n), (rows, n), (*batch, m, k))
    if not batch:
        return Route(out_shape, (m, k), (k, n), (m, n), (m, k))
    return Route(out_shape, (*batch, m, k), (*batch, k, n), (*batch, m, n), batched=True,
                 batch_strides=(strides_a, strides_b))


# route on concrete sizes (tuples of ints), as a call with the same shapes and strides as an earlier one meets it
route_of = functools.lru_cache(maxsize=1024)(route)


def _broadcast(a_batch, a_strides, b_batch, b_strides, shapes):
    """The broadcast batch shape and each operand's strides along it (0 where broadcast or of size 1); ``shapes()``
    names the operands for an error."""
    rank = max(len(a_batch), len(b_batch))
    pad_a, pad_b = rank - len(a_batch), rank - len(b_batch)
    a_batch, a_strides = (1,) * pad_a + a_batch, (0,) * pad_a + a_strides
    b_batch, b_strides = (1,) * pad_b + b_batch, (0,) * pad_b + b_strides
    batch, out_a, out_b = [], [], []
    for i, (sa, sb) in enumerate(zip(a_batch, b_batch)):
        if sa != sb and 1 not in (sa, sb):
            raise ShapeError(f"the batch dimensions do not broadcast: {shapes()}; batch dimension {i - rank} is {sa} "
                             f"in A and {sb} in B (each pair must be equal, or one of them 1)")
        batch.append(max(sa, sb) if 0 not in (sa, sb) else 0)
        out_a.append(a_strides[i] if sa != 1 else 0)
        out_b.append(b_strides[i] if sb != 1 else 0)
    return tuple(batch), tuple(out_a), tuple(out_b)


def _collapse(sizes, strides) -> int | None:
    """The number of rows when dimensions ``sizes`` (outermost first) with element ``strides`` are one dimension
    of a single stride (a reshape that needs no copy), else None. Dimensions of size 1 do not count."""
    kept = [(size, stride) for size, stride in zip(sizes, strides) if size != 1]
    for (_, outer), (size, inner) in zip(kept, kept[1:]):
        if outer != inner * size:
            return None
    return math.prod(sizes)


def out_view(out, r: Route, c_contiguous: bool):
    """``out`` (the result's shape, C-contiguous) viewed as the route's product; a LayoutError names what is not."""
    if tuple(out.shape) != r.out_shape or not c_contiguous:
        raise LayoutError(f"out must be a C-contiguous array of the product's shape {_shape_text(r.out_shape)}, got "
                          f"{_shape_text(tuple(out.shape))}{'' if c_contiguous else ' (not C-contiguous)'}")
    return out.reshape(r.c_shape)


def linear_shapes(x_shape, w_shape, bias_shape) -> tuple:
    """F.linear's shapes: x (..., K), w (N, K), bias (N,) or None; returns (rows of x, N, the output's shape)."""
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(w_shape) != 2:
        raise ShapeError(f"the weight must be a 2-D (N, K) matrix, as F.linear takes it; got {_shape_text(w_shape)}")
    if not x_shape:
        raise ShapeError("x is a 0-D scalar: linear takes x of shape (..., K)")
    n, k = w_shape
    if x_shape[-1] != k:
        raise ShapeError(f"x's last dimension ({x_shape[-1]}, of x {_shape_text(x_shape)}) must equal the weight's "
                         f"second ({k}, of the (N, K) weight {_shape_text(w_shape)})")
    if bias_shape is not None and tuple(bias_shape) != (n,):
        raise ShapeError(f"the bias must have shape ({n},), one per output feature (the weight is "
                         f"{_shape_text(w_shape)}); got {_shape_text(tuple(bias_shape))}")
    return math.prod(x_shape[:-1]), n, (*x_shape[:-1], n)


def addmm_shapes(c_shape, a_shape, b_shape) -> tuple:
    """torch.addmm's shapes: a (M, K), b (K, N), c broadcastable to (M, N); returns (M, N)."""
    c_shape, a_shape, b_shape = tuple(c_shape), tuple(a_shape), tuple(b_shape)
    for name, shape in (("a", a_shape), ("b", b_shape)):
        if len(shape) != 2:
            raise ShapeError(f"addmm multiplies two 2-D matrices, as torch.addmm does; {name} is "
                             f"{_shape_text(shape)}")
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2:
        raise ShapeError(f"inner dimensions differ: a {_shape_text(a_shape)} and b {_shape_text(b_shape)}")
    padded = (1,) * (2 - len(c_shape)) + c_shape
    if len(c_shape) > 2 or any(size not in (1, want) for size, want in zip(padded, (m, n))):
        raise ShapeError(f"c {_shape_text(c_shape)} does not broadcast to the product's shape ({m}, {n})")
    return m, n
