"""gemmlab: GPU matrix multiplication from a CPU triple loop to Hopper tensor cores, verified and measured.

    >>> import gemmlab, torch
    >>> C = gemmlab.matmul(A, B)                      # the kernel measured fastest for the shape on this GPU
    >>> C = gemmlab.matmul(A, B, kernel="cuda/v2_smem")
    >>> y = gemmlab.linear(x, w, bias, activation="gelu")  # F.linear, the bias and the activation fused
    >>> print(gemmlab.plan(A, B).explain())           # which kernel runs, and why
    >>> [k.name for k in gemmlab.list_kernels("cuda/*")]
"""
from gemmlab.api import addmm, clear_plans, linear, matmul, plan
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

__all__ = ["matmul", "linear", "addmm", "plan", "clear_plans", "list_kernels", "get_kernel", "Problem"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """gemmlab.nn (torch modules) on first use, so that importing gemmlab does not import torch."""
    if name == "nn":
        import importlib

        return importlib.import_module("gemmlab.nn")
    raise AttributeError(f"module 'gemmlab' has no attribute {name!r}")
