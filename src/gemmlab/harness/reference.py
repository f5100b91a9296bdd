"""The float64 reference and the error metrics every kernel is judged by.

On the GPU the reference is cuBLAS DGEMM (CuPy) on the same inputs upcast to float64; on the CPU it is NumPy's.
The inputs are upcast exactly (BF16 and FP32 values are all representable in float64), so the reference
measures only the kernel's own rounding. Errors: relative Frobenius ‖C − ref‖/‖ref‖ and max |C − ref|.
A NaN or Inf anywhere in C fails, whatever the norms say.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def array_module(x):
    """numpy or cupy, whichever owns ``x``."""
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def reference(a, b):
    xp = array_module(a)
    return xp.matmul(a.astype(xp.float64), b.astype(xp.float64))


@dataclass(frozen=True)
class ErrorReport:
    rel_err: float  # relative Frobenius error
    max_abs_err: float
    nonfinite: int  # NaN or Inf elements in C
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.nonfinite == 0 and np.isfinite(self.rel_err) and self.rel_err <= self.tolerance


def compare(c, ref, tolerance: float) -> ErrorReport:
    xp = array_module(ref)
    c64 = c.astype(xp.float64)
    nonfinite = int(xp.count_nonzero(~xp.isfinite(c64)))
    diff = c64 - ref
    ref_norm = float(xp.linalg.norm(ref))
    diff_norm = float(xp.linalg.norm(diff))
    # An all-zero reference (K=1 with a zero draw is the only way) makes the relative error 0/0; use absolute.
    rel = diff_norm / ref_norm if ref_norm > 0 else diff_norm
    max_abs = float(xp.max(xp.abs(diff))) if diff.size else 0.0
    if nonfinite:
        rel, max_abs = float("nan"), float("nan")
    return ErrorReport(rel, max_abs, nonfinite, tolerance)


def tolerance_for(problem) -> float:
    """The precision's relative tolerance, widened like sqrt(K) past K=4096 (random-sign rounding errors)."""
    base = problem.prec.rel_tolerance
    return base * max(1.0, (problem.k / 4096) ** 0.5)
