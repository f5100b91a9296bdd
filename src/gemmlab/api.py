"""gemmlab.matmul: C = A @ B with gemmlab's kernels, on NumPy, CuPy and PyTorch arrays.

The result is an array of the inputs' kind on their device, its dtype by torch's rule: FP32 for float32 operands,
the operands' own for bfloat16 and float16, BF16 for FP8 (``out_dtype=float32`` for FP32 C of the last three). CUDA
tensors and CuPy arrays are read in place through their addresses and the kernel runs on the caller's current
stream; the output comes from the caller's allocator (torch's caching allocator, CuPy's pool). Host arrays run on
the host (cpu/blas by default); naming a GPU kernel for them copies them to the GPU and the result back. Tensors
that need a gradient, and calls traced by torch.compile, go through the gemmlab::mm operator (gemmlab.torch_op). The
call itself, its checks and its plan cache are in gemmlab.call.
"""
from __future__ import annotations

import sys

from gemmlab import call
from gemmlab.call import AUTO
from gemmlab.errors import LayoutError

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

    Raises ShapeError (not 2-D, inner dimensions differ, a zero dimension, scales of no recipe's shape), DTypeError
    (a dtype or precision the kernel does not take), LayoutError (operands on different devices, a wrong ``out``, a
    row-major FP8 B), SizeLimitError (past a kernel's index range, or memory), NoGPUError (a GPU kernel without a
    usable GPU), UnknownKernelError, OperandTypeError (not an array); all derive from gemmlab.errors.GemmlabError.
    """
    extra = (scale_a, scale_b, out_dtype)
    if _torch_op is not None and isinstance(A, _torch_op.torch.Tensor):
        return _torch_op.matmul(A, B, kernel, precision, out, *extra)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(A, torch.Tensor):
        return _load_torch_op().matmul(A, B, kernel, precision, out, *extra)
    return call.array_matmul(A, B, kernel, precision, out, *extra)


_torch_op = None


def _load_torch_op():
    """gemmlab.torch_op, imported the first time a tensor arrives (it registers gemmlab::mm with torch)."""
    global _torch_op
    from gemmlab import torch_op

    _torch_op = torch_op
    return torch_op


def plan(A, B, kernel: str = AUTO, *, precision: str | None = None, scale_a=None, scale_b=None,
         out_dtype=None) -> call.Prepared:
    """What ``matmul(A, B, ...)`` would run, resolved: ``.explain()`` says which kernel and why."""
    fa, fb = call.facts(A, "A"), call.facts(B, "B")
    if fa.device != fb.device:
        raise LayoutError(call.devices_differ(fa, fb))
    scales = (call.scale_facts(scale_a, "scale_a"), call.scale_facts(scale_b, "scale_b"))
    return call.checks.prepare(fa, fb, kernel, precision, fa.device, scales, call.out_dtype_name(out_dtype))


def clear_plans() -> None:
    """Drop every cached plan (and the workspaces they hold)."""
    call.plans.clear()
