"""A fused epilogue: what a kernel does to its FP32 accumulators between the last multiply-add and C's store.

    out = act(alpha · AB + beta · D)

``activation`` is None, "relu", "gelu" (erf's), "gelu_tanh" (tanh's approximation) or "silu" (x·sigmoid(x));
``addend`` says what D is: None (no D), "bias" (a length-N vector added to every row: D[i, j] = bias[j], as
``F.linear``'s bias) or "matrix" (an M×N matrix of any row and column strides, 0 included: a broadcast view; as
``torch.addmm``'s input). A bias is added as it is (beta 1; given as 0, the default, it means 1); a row scaled by
beta ≠ 1 is a "matrix" whose row stride is 0.

The GPU kernels apply it in registers before C is converted and stored (defines ``EPI_ACT``, ``EPI_ADDEND`` and
``EPI_D``, alpha and beta at run time), so the fused call costs one launch and one trip through C; the host kernels
apply ``apply_numpy`` after their GEMM. ``apply_numpy`` is also the reference verification holds the kernels to, in
float64 (``math.erf`` on the host, ``cupyx.scipy.special.erf`` on a GPU).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from gemmlab.errors import EpilogueError

# the activation's code in the kernels' EPI_ACT define, in this order (0: none)
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
# EPI_ADDEND: 1 a bias indexed by C's column, 2 a matrix with strides
ADDENDS = ("bias", "matrix")
# EPI_D: the addend's element type (the output's or FP32)
ADDEND_DTYPES = ("float32", "bfloat16", "float16")
FLOAT32_MAX = 3.4028234663852886e38


def scalar(value, name: str) -> float:
    """alpha or beta as the float the kernel takes by value: any finite real number (Python's, NumPy's scalars), as
    torch.addmm takes it; an EpilogueError names anything else (a bool, a string, an array, inf or NaN)."""
    try:  # an int past a float's range overflows on the way
        ok = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    except OverflowError:
        ok = False
    if not ok:
        text = repr(value)
        raise EpilogueError(f"{name} must be a finite real number (the kernel takes it by value), got "
                            f"{text if len(text) <= 60 else text[:40] + f'... ({len(text)} characters)'}")
    if abs(float(value)) > FLOAT32_MAX:  # the kernel's float would be inf, as torch.addmm refuses to convert it
        raise EpilogueError(f"{name}={float(value):g} does not fit the float32 the kernel takes it as (at most "
                            f"{FLOAT32_MAX:.7g} in magnitude)")
    return float(value)


@dataclass(frozen=True)
class Epilogue:
    activation: str | None = None
    alpha: float = 1.0
    beta: float = 0.0
    addend: str | None = None

    def __post_init__(self):
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise EpilogueError(f"activation={self.activation!r} is not one gemmlab fuses; it fuses "
                                f"{', '.join(repr(a) for a in ACTIVATIONS)} (or None)")
        if self.addend is not None and self.addend not in ADDENDS:
            raise EpilogueError(f"addend={self.addend!r}: the addend is 'bias' (a length-N row added to every row), "
                                "'matrix' (an M×N matrix read with beta) or None")
        for name in ("alpha", "beta"):
            object.__setattr__(self, name, scalar(getattr(self, name), name))  # 1 and 1.0 make one plan key
        if self.addend is None and self.beta != 0:
            raise EpilogueError(f"beta={self.beta} scales an addend, and none is given: pass the bias or the matrix "
                                "to add (addend='bias' or 'matrix')")
        if self.addend == "bias":
            if self.beta not in (0.0, 1.0):
                raise EpilogueError(f"beta={self.beta} with a bias: a bias is added as it is; for beta·c with a row "
                                    "c, pass it as addend='matrix', a broadcast (M, N) view (row stride 0)")
            object.__setattr__(self, "beta", 1.0)

    # -- what the kernels compile ----------------------------------------------------------------------------------
    @property
    def is_identity(self) -> bool:
        """C = AB: no epilogue to fuse (every kernel runs it, as its default build)."""
        return self.activation is None and self.alpha == 1.0 and self.addend is None

    @property
    def act_code(self) -> int:
        return 0 if self.activation is None else 1 + ACTIVATIONS.index(self.activation)

    @property
    def addend_code(self) -> int:
        return 0 if self.addend is None else 1 + ADDENDS.index(self.addend)

    def defines(self, addend_dtype: str | None = None) -> dict:
        """The kernels' compile-time switches (EPI=1 turns the epilogue's arguments and arithmetic on); none for the
        identity, so the default builds stay as they are."""
        if self.is_identity:
            return {}
        d = {"EPI": 1, "EPI_ACT": self.act_code, "EPI_ADDEND": self.addend_code}
        if self.addend is not None and addend_dtype not in (None, "float32"):
            d["EPI_D"] = ADDEND_DTYPES.index(addend_dtype)
        return {k: v for k, v in d.items() if v}

    def describe(self) -> str:
        """The formula, e.g. ``gelu(2·AB + bias)``."""
        term = "AB" if self.alpha == 1.0 else f"{self.alpha:g}·AB"
        if self.addend == "bias":
            term += " + bias"
        elif self.addend == "matrix":
            term += " + D" if self.beta == 1.0 else f" {'-' if self.beta < 0 else '+'} {abs(self.beta):g}·D"
        return f"{self.activation}({term})" if self.activation else term

    # -- the host's and the reference's arithmetic -------------------------------------------------------------------
    def apply_numpy(self, c, d=None):
        """act(alpha·c + beta·d) in float64, on NumPy or CuPy arrays (c: M×N; d: the bias, length N, or an M×N
        matrix, None without an addend)."""
        xp = _xp(c)
        if (d is None) != (self.addend is None):
            raise EpilogueError(f"the epilogue {self.describe()} takes {'no addend' if d is None else 'an addend'}"
                                f"; {'none was' if d is None else 'one was'} given")
        with _quiet(xp):
            x = c.astype(xp.float64) * self.alpha
            if d is not None:
                x = x + xp.asarray(d).astype(xp.float64) * self.beta
            return activate(self.activation, x)


def activate(activation: str | None, x):
    """The activation on a float64 array (NumPy or CuPy), as torch defines each: relu keeps NaN; gelu is
    x·Φ(x) with erf; gelu_tanh is torch's approximate='tanh'; silu is x / (1 + e^-x)."""
    xp = _xp(x)
    if activation is None:
        return x
    with _quiet(xp):
        if activation == "relu":
            return xp.where(x < 0, 0.0, x)
        if activation == "gelu":
            return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
        if activation == "gelu_tanh":
            return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        if activation == "silu":
            return x / (1.0 + xp.exp(-x))
    raise EpilogueError(f"activation={activation!r} is not one gemmlab fuses ({', '.join(ACTIVATIONS)})")


def _xp(x):
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    import numpy

    return numpy


def _erf(x):
    xp = _xp(x)
    if xp.__name__ == "cupy":
        from cupyx.scipy.special import erf

        return erf(x)
    return xp.frompyfunc(math.erf, 1, 1)(x).astype(xp.float64)  # NumPy has no erf: the C library's, per element


def _quiet(xp):
    """IEEE arithmetic without NumPy's warnings or its errors under np.seterr: torch's own, which gives inf and NaN
    silently (inf·0 in gelu at ±inf, e^-x past float64's range in silu, alpha·c + beta·d overflowing), whatever
    error state the caller set."""
    import contextlib

    import numpy

    return numpy.errstate(all="ignore") if xp is numpy else contextlib.nullcontext()
