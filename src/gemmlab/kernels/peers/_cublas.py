"""One cublasGemmEx call per precision, row-major, on CuPy's handle and current stream.

cuBLAS is column-major; a row-major C = A·B is the column-major Cᵀ = Bᵀ·Aᵀ, so the call swaps the operands
and passes (N, M, K) with each matrix's row length as its leading dimension. Calling GemmEx directly pins
the compute type: FP32 PEDANTIC keeps tensor cores out of the FP32 peer, FAST_TF32 allows them for TF32.
"""
from __future__ import annotations

import numpy as np

CUDA_R_32F, CUDA_R_16BF = 0, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 69, 77
CUBLAS_OP_N, CUBLAS_GEMM_DEFAULT = 0, -1

# (A/B data type, C data type, compute type) for each precision
_TYPES = {
    "fp32": (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC),
    "tf32": (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
    "bf16": (CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F),
}

_ONE = np.ones(1, np.float32)
_ZERO = np.zeros(1, np.float32)


def gemm(a, b, c, precision: str) -> None:
    import cupy
    from cupy_backends.cuda.libs import cublas

    in_type, out_type, compute = _TYPES[precision]
    m, k = a.shape
    n = b.shape[1]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
                  _ONE.ctypes.data, b.data.ptr, in_type, n,
                  a.data.ptr, in_type, k,
                  _ZERO.ctypes.data, c.data.ptr, out_type, n,
                  compute, CUBLAS_GEMM_DEFAULT)
