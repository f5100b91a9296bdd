"""The float64 reference and the error metrics every kernel is judged by.

On the GPU the reference is cuBLAS DGEMM (CuPy) on the same inputs upcast to float64; on the CPU it is NumPy's.
The inputs are upcast exactly (BF16, FP32 and FP8 values are all representable in float64), so the reference
measures only the kernel's own rounding. Errors: relative Frobenius ‖C − ref‖/‖ref‖ and max |C − ref|, each held to
the precision's tolerance (``tolerance_for``): the relative error within it, and every element's error within
MAX_ERR_FACTOR times it in units of the reference's RMS. The norm alone passes an error confined to a few elements
(a column or a tile of C left unwritten is under 1% of a large C's norm); the elements' bound fails them, and the
inputs, N(0, 1) draws, give every element of the reference the same spread, so the RMS is each one's scale.
A NaN or Inf anywhere in C fails, whatever the norms say.

FP8 operands (gemmlab.fp8.Scaled, B as N×K) are judged against the float64 product of their dequantized values,
q · s, exactly what the kernel multiplies. Block-scaled operands also keep the FP32 matrices they were quantized
from, and C must stay within DeepGEMM's measure of those matrices' product (fp8.recipe_diff): the recipe's own
accuracy, quantization included. That measure is a ratio of two sums over C's elements, and over few elements it
is a noisy statistic (at one element a 2-sigma draw is 4× its mean), so it judges outputs of at least
RECIPE_MIN_OUTPUTS elements; the dequantized reference judges every shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmlab.fp8 import Scaled, recipe_diff

RECIPE_MIN_OUTPUTS = 4096
# An element's error may reach this many tolerances of the reference's RMS: in the verified records committed under
# results/ (7,746 of them, every precision, K up to 65536) the largest element error reached 4.6 (FP8 per tensor,
# cuBLASLt's own 3.7), the other precisions 2.3 at most, while a product element left at zero errs by its own size,
# about one RMS, 10 to 100 tolerances
MAX_ERR_FACTOR = 10.0


def array_module(x):
    """numpy or cupy, whichever owns ``x`` (for an FP8 operand, its data)."""
    if isinstance(x, Scaled):
        x = x.data
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


@dataclass(frozen=True)
class ScaledReference:
    """What FP8 operands' C is judged by: the dequantized product, and for block scaling the unquantized one."""

    exact: object
    recipe: object = None


def reference(a, b):
    xp = array_module(a)
    if isinstance(a, Scaled):
        recipe = None
        if a.source is not None and b.source is not None:
            recipe = xp.matmul(a.source.astype(xp.float64), b.source.astype(xp.float64).T)
        return ScaledReference(xp.matmul(a.dequantize(), b.dequantize().T), recipe)
    return xp.matmul(a.astype(xp.float64), b.astype(xp.float64))


@dataclass(frozen=True)
class ErrorReport:
    rel_err: float  # relative Frobenius error
    max_abs_err: float
    nonfinite: int  # NaN or Inf elements in C
    tolerance: float
    recipe_err: float | None = None  # block-scaled FP8: DeepGEMM's measure against the unquantized product
    recipe_tolerance: float | None = None
    ref_rms: float = 0.0  # the reference's root mean square: the scale of max_abs_err's bound

    @property
    def max_abs_bound(self) -> float:
        return max_abs_bound(self.tolerance, self.ref_rms)

    @property
    def passed(self) -> bool:
        recipe_ok = self.recipe_err is None or (np.isfinite(self.recipe_err) and
                                                self.recipe_err <= self.recipe_tolerance)
        return (self.nonfinite == 0 and within(self.rel_err, self.max_abs_err, self.tolerance, self.ref_rms)
                and recipe_ok)

    def failure(self) -> str:
        """Why it failed, in a phrase ("" where it passed)."""
        if self.nonfinite:
            return f"{self.nonfinite} non-finite outputs"
        if not self.rel_err <= self.tolerance:
            return f"rel err {self.rel_err:.2e} > tolerance {self.tolerance:.1e}"
        if not self.max_abs_err <= self.max_abs_bound:
            return (f"an element's error {self.max_abs_err:.2e} > {MAX_ERR_FACTOR:g} tolerances of the reference's "
                    f"RMS ({self.max_abs_bound:.2e})")
        if not self.passed:
            return f"recipe measure {self.recipe_err:.2e} > {self.recipe_tolerance:.0e} against the unquantized product"
        return ""


def max_abs_bound(tolerance: float, ref_rms: float) -> float:
    """The largest error an element may have: MAX_ERR_FACTOR tolerances of the reference's RMS (of 1 where the
    reference is all zeros, as the relative error then is absolute)."""
    return MAX_ERR_FACTOR * tolerance * (ref_rms if ref_rms > 0 else 1.0)


def within(rel_err: float, max_abs_err: float, tolerance: float, ref_rms: float) -> bool:
    """The verdict on a C whose values are finite: its relative error within the tolerance and every element's within
    ``max_abs_bound`` (NaN errors never pass)."""
    return bool(rel_err <= tolerance and max_abs_err <= max_abs_bound(tolerance, ref_rms))


def compare(c, ref, tolerance: float, recipe_tolerance: float | None = None) -> ErrorReport:
    recipe = None
    if isinstance(ref, ScaledReference):
        ref, recipe = ref.exact, ref.recipe
    xp = array_module(ref)
    c64 = c.astype(xp.float64)
    nonfinite = int(xp.count_nonzero(~xp.isfinite(c64)))
    diff = c64 - ref
    ref_norm = float(xp.linalg.norm(ref))
    ref_rms = ref_norm / ref.size ** 0.5 if ref.size else 0.0
    diff_norm = float(xp.linalg.norm(diff))
    # An all-zero reference (K=1 with a zero draw is the only way) makes the relative error 0/0; use absolute.
    rel = diff_norm / ref_norm if ref_norm > 0 else diff_norm
    max_abs = float(xp.max(xp.abs(diff))) if diff.size else 0.0
    if nonfinite:
        rel, max_abs = float("nan"), float("nan")
    recipe_err = None
    if recipe is not None and recipe_tolerance is not None and c.size >= RECIPE_MIN_OUTPUTS:
        recipe_err = float("nan") if nonfinite else recipe_diff(c64, recipe)
    return ErrorReport(rel, max_abs, nonfinite, tolerance, recipe_err, recipe_tolerance if recipe_err is not None
                       else None, ref_rms)


def tolerance_for(problem) -> float:
    """The precision's relative tolerance, widened past K=4096 like sqrt(K) (random-sign rounding errors), or as the
    precision says (BF16, FP16 and FP8 block-scaled: not at all, C's rounding being their error at any K)."""
    p = problem.prec
    return p.rel_tolerance * max(1.0, (problem.k / 4096) ** p.tolerance_growth)
