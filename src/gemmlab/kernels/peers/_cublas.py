"""One cublasGemmEx call per precision, row-major C, on CuPy's handle and current stream.

cuBLAS is column-major; a row-major C = A·B is the column-major Cᵀ = Bᵀ·Aᵀ, so the call swaps the operands
and passes (N, M, K). A row-major operand is, read column-major, its own transpose (no op, its row length the
leading dimension); a column-major one (B handed over as w.t(), an N×K weight) is itself, which the call transposes
(CUBLAS_OP_T, its column length the leading dimension): every layout read in place, as torch's cuBLAS call reads
it. Calling GemmEx directly pins the compute type: FP32 PEDANTIC keeps tensor cores out of the FP32 peer, FAST_TF32
allows them for TF32.
"""
from __future__ import annotations

import numpy as np

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 69, 77
CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_GEMM_DEFAULT = 0, 1, -1

# (A/B data type, compute type) for each precision; C's data type is the precision's output dtype (_C_TYPES)
_TYPES = {
    "fp32": (CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC),
    "tf32": (CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
    "bf16": (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
    "fp16": (CUDA_R_16F, CUBLAS_COMPUTE_32F),
}
_C_TYPES = {"float32": CUDA_R_32F, "bfloat16": CUDA_R_16BF, "float16": CUDA_R_16F}

_ONE = np.ones(1, np.float32)
_ZERO = np.zeros(1, np.float32)


def gemm(a, b, c, precision: str) -> None:
    """C = A·B on CuPy arrays, on CuPy's current stream, C in its own dtype."""
    import cupy

    m, k = a.shape
    gemm_ptr(a.data.ptr, b.data.ptr, c.data.ptr, m, b.shape[1], k, precision, cupy.cuda.get_current_stream().ptr,
             np.dtype(c.dtype).name)


def operand_ops(m: int, n: int, k: int, a_col: bool = False, b_col: bool = False) -> tuple:
    """(transa, lda, transb, ldb) of the column-major call Cᵀ = Bᵀ·Aᵀ (B in cuBLAS's A place) for A and B stored
    row-major or, ``a_col`` / ``b_col``, column-major."""
    transa, lda = (CUBLAS_OP_T, k) if b_col else (CUBLAS_OP_N, n)
    transb, ldb = (CUBLAS_OP_T, m) if a_col else (CUBLAS_OP_N, k)
    return transa, lda, transb, ldb


def gemm_ptr(a: int, b: int, c: int, m: int, n: int, k: int, precision: str, stream: int,
             out: str | None = None, a_col: bool = False, b_col: bool = False) -> None:
    """C = A·B on device buffers, C row-major, A and B row-major or (``a_col``, ``b_col``) column-major, on
    ``stream``, through CuPy's cuBLAS handle of the current device; C in ``out`` (a dtype name; default the
    precision's output dtype)."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    from gemmlab.problem import get_precision

    in_type, compute = _TYPES[precision]
    out_type = _C_TYPES[out or get_precision(precision).output_dtype]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, stream)
    transa, lda, transb, ldb = operand_ops(m, n, k, a_col, b_col)
    cublas.gemmEx(handle, transa, transb, n, m, k,
                  _ONE.ctypes.data, b, in_type, lda,
                  a, in_type, ldb,
                  _ZERO.ctypes.data, c, out_type, n,
                  compute, CUBLAS_GEMM_DEFAULT)
