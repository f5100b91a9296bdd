"""gemmlab: GPU matrix multiplication from a CPU triple loop to Hopper tensor cores, verified and measured.

    >>> import gemmlab, torch
    >>> C = gemmlab.matmul(A, B)                      # the kernel measured fastest for the shape on this GPU
    >>> C = gemmlab.matmul(A, B, kernel="cuda/v2_smem")
    >>> print(gemmlab.plan(A, B).explain())           # which kernel runs, and why
    >>> [k.name for k in gemmlab.list_kernels("cuda/*")]
"""
from gemmlab.api import clear_plans, matmul, plan
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

__all__ = ["matmul", "plan", "clear_plans", "list_kernels", "get_kernel", "Problem"]
__version__ = "0.1.0"
