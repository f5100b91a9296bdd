"""TF32 arithmetic on FP32 arrays (NumPy or CuPy), bit for bit what the kernels do (kernels/cuda/tc/include/tc_tf32.cuh).

- ``tf32_trunc``: the value a TF32 tensor core reads from an FP32 operand, its low 13 mantissa bits dropped.
- ``tf32_rna``: cvt.rna.tf32.f32, round to nearest with ties away from zero: the integer add of 0x1000 to the
  bits of a finite value, then the low 13 bits cleared; Inf and NaN keep their bits but for those 13.
- ``tf32_rne``: round to nearest with ties to even, what a TMA copy through a map of TF32 element type writes
  (TMA_ROUND): 0xFFF plus the kept mantissa's last bit added to a finite value's bits, then the low 13 cleared.
- ``tf32_split``: big = rna(x) and small = rna(x - big), the 3xTF32 split of an operand in registers (tc7's B).
- ``tf32_small_of_stored``: rna(x - trunc(x)), the small part written beside an operand the tensor cores read from
  shared memory as stored (tc7's A, whose big part is trunc(x)).
- ``three_products``: the float64 sum of the three products tc7's tensor cores form from those parts, the error
  its splits alone leave (the tensor cores' own accumulation and the FP32 adds come on top).

The accuracy study (gemmlab accuracy) uses the same functions for the naive split on the GPU.
"""
from __future__ import annotations

import numpy as np

KEEP = 0xFFFFE000  # sign, exponent and TF32's 10 mantissa bits; the low 13 are dropped
EXPONENT = 0x7F800000


def _bits(x):
    if x.dtype != np.float32:
        raise TypeError(f"TF32 arithmetic takes float32 arrays, got {x.dtype}")
    return x.view(np.uint32)


def tf32_trunc(x):
    return (_bits(x) & KEEP).view(np.float32)


def tf32_rna(x):
    u = _bits(x)
    finite = (u & EXPONENT) != EXPONENT
    return ((u + (finite.astype(np.uint32) << 12)) & KEEP).view(np.float32)  # + 0x1000 where finite


def tf32_rne(x):
    u = _bits(x)
    finite = (u & EXPONENT) != EXPONENT
    return ((u + finite.astype(np.uint32) * (0xFFF + ((u >> 13) & 1))) & KEEP).view(np.float32)


def tf32_split(x):
    """(big, small): big = rna(x); x - big is exact in FP32, and small is it rounded to TF32."""
    big = tf32_rna(x)
    return big, tf32_rna(x - big)


def tf32_small_of_stored(x):
    return tf32_rna(x - tf32_trunc(x))


def three_products(a, b):
    """tc7's three products, from its parts of A (M×K: big = trunc(a), small beside it) and of B (K×N: the rna
    split), each product exact and summed in float64: C minus this is what the tensor cores' accumulation adds."""
    xp = _module(a)
    a_big, a_small = tf32_trunc(a), tf32_small_of_stored(a)
    b_big, b_small = tf32_split(b)
    f = lambda x: x.astype(xp.float64)  # noqa: E731 (products of TF32 values are exact in float64)
    return f(a_big) @ f(b_small) + f(a_small) @ f(b_big) + f(a_big) @ f(b_big)


def _module(x):
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np
