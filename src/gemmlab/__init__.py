"""gemmlab: GPU matrix multiplication from a CPU triple loop to Hopper tensor cores, verified and measured.

    >>> import gemmlab, torch
    >>> C = gemmlab.matmul(A, B)                      # the kernel measured fastest for the shape on this GPU
    >>> C = gemmlab.matmul(A, B, kernel="cuda/v2_smem")
    >>> y = gemmlab.linear(x, w, bias, activation="gelu")  # F.linear, the bias and the activation fused
    >>> print(gemmlab.plan(A, B).explain())           # which kernel runs, and why
    >>> [k.name for k in gemmlab.list_kernels("cuda/*")]
"""
import importlib

__all__ = ["matmul", "linear", "addmm", "plan", "clear_plans", "list_kernels", "get_kernel", "Problem"]
__version__ = "0.1.0"

# Each public name from the module that defines it, on first use: importing the package imports none of its
# dependencies, so `python -m gemmlab` and the `gemmlab` script reach their own handling of a missing or broken one
# (one line, exit 2), and gemmlab.nn imports torch only when it is asked for.
_FROM = {"matmul": "gemmlab.api", "linear": "gemmlab.api", "addmm": "gemmlab.api", "plan": "gemmlab.api",
         "clear_plans": "gemmlab.api", "list_kernels": "gemmlab.kernels.registry",
         "get_kernel": "gemmlab.kernels.registry", "Problem": "gemmlab.problem"}


def __getattr__(name: str):
    if name == "nn":
        return importlib.import_module("gemmlab.nn")
    if name in _FROM:
        value = getattr(importlib.import_module(_FROM[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gemmlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM, "nn"])
