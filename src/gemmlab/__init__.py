"""gemmlab: GPU matrix multiplication from a CPU triple loop to Hopper tensor cores, verified and measured.

    >>> import gemmlab, numpy as np
    >>> C = gemmlab.matmul(A, B, kernel="cuda/v2_smem")
    >>> [k.name for k in gemmlab.list_kernels("cuda/*")]
"""
from gemmlab.api import matmul
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

__all__ = ["matmul", "list_kernels", "get_kernel", "Problem"]
__version__ = "0.1.0"
