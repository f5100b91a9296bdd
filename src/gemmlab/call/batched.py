"""A batch of products in one call: C[i] = A[i] @ B[i] over a broadcast batch, as torch.matmul and numpy.matmul
compute it for operands of more than two dimensions.

The front end (gemmlab.matmul_shapes) broadcasts the operands and describes the batch once (``Batch``: its shape
and each operand's stride per batch dimension, 0 where that operand is broadcast), so an operand broadcast over the
batch is read in place, never copied per product. Every matrix of a batch has one shape, dtype and layout: the
checks and the plan are those of one product (the batch's first), made once per key and kept in the plan cache.

Host operands (NumPy arrays, CPU tensors as NumPy views) run the host kernel on each product of the batch. On the
GPU a batch must run as one launch (the batch index in the grid or the persistent scheduler, a stride per operand):
a loop of launches would pay the launch latency and the host's time per product. No GPU kernel takes a batch yet,
so a GPU batch is refused with that reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gemmlab.call import checks
from gemmlab.call.cache import plans, remember
from gemmlab.call.launch import _host_array, _out_key
from gemmlab.call.operands import devices_differ, facts, out_dtype_name
from gemmlab.errors import LayoutError, ShapeError, SizeLimitError
from gemmlab.problem import np_dtype


@dataclass(frozen=True)
class Batch:
    """A broadcast batch: its shape and, per operand, the stride (in elements) of each batch dimension; 0 where
    the operand is broadcast along it (or the dimension has size 1)."""

    shape: tuple
    strides_a: tuple
    strides_b: tuple

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def batched_matmul(A, B, kernel, precision, out, out_dtype, batch: Batch):
    """C = A @ B for A of shape (*batch.shape, M, K) and B of shape (*batch.shape, K, N), both already broadcast to
    the batch (views; their batch strides are ``batch``'s): C is C-contiguous (*batch.shape, M, N), or ``out``.
    NumPy and CuPy arrays (CPU tensors come as NumPy views through gemmlab.torch_op)."""
    lead = (0,) * len(batch.shape)
    fa, fb = facts(A[lead], "A"), facts(B[lead], "B")
    if fa.kind != fb.kind and {fa.kind, fb.kind} != {"cupy"}:
        raise LayoutError(f"A is a {fa.kind} array and B a {fb.kind} array: pass two arrays of one kind")
    if fa.device != fb.device:
        raise LayoutError(devices_differ(fa, fb))
    out_name = out_dtype_name(out_dtype)
    key = ("batch", kernel, precision, fa, fb, _out_key(out), out_name, batch)
    prepared = plans.get(key)
    if prepared is None:
        if fa.device is not None:
            raise ShapeError(gpu_batch_refusal(batch, fa.shape, fb.shape))
        prepared = checks.prepare(fa, fb, kernel, precision, None, (None, None), out_name)
        if prepared.host_copy or prepared.plan.on_gpu:
            raise ShapeError(gpu_batch_refusal(batch, fa.shape, fb.shape))
        out_shape = (*batch.shape, *prepared.out_shape)
        if out is not None:
            checks.check_out(out, fa.kind, out_shape, None, prepared.out_dtype)
        remember(key, prepared)
    return _host_batch(prepared, A, B, out, batch)


def gpu_batch_refusal(batch: Batch, a_shape: tuple, b_shape: tuple) -> str:
    (m, k), (_, n) = a_shape, b_shape
    return (f"a batch of {batch.count} products (batch shape {batch.shape}, each {m}×{k} @ {k}×{n}) on the GPU needs "
            "a kernel that runs the whole batch as one launch (a batch index in its grid, a stride per operand), and "
            "no gemmlab GPU kernel takes a batch yet (a launch per product is not what gemmlab runs); a batch that "
            "collapses runs as one GEMM: A of shape (..., M, K) with collapsible leading dimensions @ a 2-D B")


def _host_batch(prepared, A, B, out, batch: Batch):
    """The host kernel on each product; C allocated here unless ``out`` is given."""
    a, b = _host_array(A), _host_array(B)
    shape = (*batch.shape, *prepared.out_shape)
    if out is None:
        c = _host_batch_empty(shape, prepared.out_dtype)
    else:
        c = out
        if np.shares_memory(c, a) or np.shares_memory(c, b):
            raise LayoutError("out overlaps A or B; gemmlab writes C while it reads them")
    for index in np.ndindex(*batch.shape):
        prepared.plan.launch(a[index], b[index], c[index])
    return c


def _host_batch_empty(shape: tuple, dtype: str) -> np.ndarray:
    try:
        return np.empty(shape, np_dtype(dtype))
    except MemoryError:
        need = math.prod(shape) * np_dtype(dtype).itemsize
        raise SizeLimitError(f"C ({'×'.join(map(str, shape))} {dtype}) needs {need / 2**30:.1f} GiB of host "
                             "memory, which could not be allocated") from None

