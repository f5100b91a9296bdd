"""One cublasGemmEx call per precision, row-major, on CuPy's handle and current stream.

cuBLAS is column-major; a row-major C = A·B is the column-major Cᵀ = Bᵀ·Aᵀ, so the call swaps the operands
and passes (N, M, K) with each matrix's row length as its leading dimension. Calling GemmEx directly pins
the compute type: FP32 PEDANTIC keeps tensor cores out of the FP32 peer, FAST_TF32 allows them for TF32.
"""
from __future__ import annotations

import numpy as np

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 69, 77
CUBLAS_OP_N, CUBLAS_GEMM_DEFAULT = 0, -1

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


def gemm_ptr(a: int, b: int, c: int, m: int, n: int, k: int, precision: str, stream: int,
             out: str | None = None) -> None:
    """C = A·B on row-major device buffers, on ``stream``, through CuPy's cuBLAS handle of the current device; C in
    ``out`` (a dtype name; default the precision's output dtype)."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    from gemmlab.problem import get_precision

    in_type, compute = _TYPES[precision]
    out_type = _C_TYPES[out or get_precision(precision).output_dtype]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, stream)
    cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
                  _ONE.ctypes.data, b, in_type, n,
                  a, in_type, k,
                  _ZERO.ctypes.data, c, out_type, n,
                  compute, CUBLAS_GEMM_DEFAULT)
