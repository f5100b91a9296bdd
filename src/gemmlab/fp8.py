"""FP8 operands: the formats, quantization with FP32 scales (per tensor, per 1×128, per 128×128), the operand a
scaled kernel reads (``Scaled``), and the block recipe's error measure.

An FP8 matrix is x ≈ q · s: q in FP8 (e4m3: 3 mantissa bits, largest finite 448; e5m2: 2 bits, largest 57344) and s
an FP32 dequantization factor chosen so that the largest magnitude of each block lands on the format's largest value
(amax scaling). These are the scale_a and scale_b that torch._scaled_mm and cuBLASLt take, and what the kernels
multiply by: C = (s_a · q_a)(s_b · q_b).

Both operands are stored K-major, as FP8 tensor cores read them: A as M×K, B as N×K (B's transpose, what
torch._scaled_mm takes as its column-major second operand). Scale layouts, which the kernels index and whose
transposes torch's blockwise scaled matmul takes:
- per tensor: one float, shape (1,);
- A per 1×128 (a row, 128 of K): stored (ceil(K/128), M) row-major, M-major, so the 8 rows a warp's quad-rows hold
  in one k-block are 32 contiguous bytes; torch's scale_a (M, K/128) is its transpose;
- B per 128×128: stored (ceil(N/128), ceil(K/128)) row-major; torch's scale_b (K/128, N/128) is its transpose.
A ragged last block (K or N not a multiple of 128) is scaled by the amax of the elements it has; an all-zero block
gets scale 1.

Values are rounded to FP8 by ml_dtypes on the host and by the tensor cores' own conversion instruction
(cvt.rn.satfinite, round to nearest even) on the GPU; both round to nearest even and agree on every value that
scaling leaves in range.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"
FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}
BLOCK = 128  # K (and N for B) per scale block
PER_TENSOR, ROWS_1X128, BLOCKS_128X128 = None, "1x128", "128x128"


def fp8_dtype(fmt: str):
    """The ml_dtypes NumPy dtype of an FP8 format name."""
    import ml_dtypes

    if fmt not in FP8_MAX:
        raise ValueError(f"unknown FP8 format {fmt!r}; known: {', '.join(FP8_MAX)}")
    return np.dtype(getattr(ml_dtypes, fmt))


def _xp(x):
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


@lru_cache(maxsize=None)
def _cupy_rounder(fmt: str):
    """float32 -> FP8 bits on the GPU: the PTX conversion the tensor cores' generation has (sm_89+), round to
    nearest even, saturating to the largest finite value. It converts pairs; the second operand lands in the low
    byte."""
    import cupy

    ptx = {E4M3: "e4m3x2", E5M2: "e5m2x2"}[fmt]
    return cupy.ElementwiseKernel(
        "float32 x", "uint8 q",
        f'unsigned short v; asm("cvt.rn.satfinite.{ptx}.f32 %0, %1, %2;" : "=h"(v) : "f"(0.0f), "f"(x)); '
        "q = (unsigned char)(v & 0xff);",
        f"gemmlab_to_{fmt}")


def to_bits(x, fmt: str = E4M3):
    """FP8 bits (uint8, same shape) of float32 values already scaled into the format's range."""
    xp = _xp(x)
    x = xp.ascontiguousarray(x, dtype=xp.float32)
    if xp is np:
        return x.astype(fp8_dtype(fmt)).view(np.uint8)
    return _cupy_rounder(fmt)(x)


@lru_cache(maxsize=None)
def decode_table(fmt: str) -> np.ndarray:
    """The float64 value of each of the 256 codes (NaN codes decode to NaN)."""
    return np.arange(256, dtype=np.uint8).view(fp8_dtype(fmt)).astype(np.float64)


def from_bits(q, fmt: str = E4M3):
    """float64 values of FP8 bits (a lookup, exact)."""
    xp = _xp(q)
    return xp.take(xp.asarray(decode_table(fmt)), q)


def _scale(amax, fmt: str, xp):
    return xp.where(amax > 0, amax / FP8_MAX[fmt], 1).astype(xp.float32)


def _padded(x, rows: int, cols: int, xp):
    """x (float32) zero-padded to rows×cols: ragged blocks get zeros, which change no amax."""
    if x.shape == (rows, cols):
        return x
    out = xp.zeros((rows, cols), xp.float32)
    out[:x.shape[0], :x.shape[1]] = x
    return out


def _blocks(n: int) -> int:
    return -(-n // BLOCK)


@dataclass(frozen=True)
class Scaled:
    """An FP8 operand as a scaled kernel reads it. ``data``: FP8 bits (uint8), rows×K row-major (A: M×K, B: N×K);
    ``scale``: FP32 dequantization factors in the layout of ``block`` (module docstring); ``fmt``: e4m3 or e5m2;
    ``source``: the FP32 matrix it was quantized from, kept where the block recipe's measure needs it."""

    data: object
    scale: object
    fmt: str = E4M3
    block: str | None = PER_TENSOR
    source: object = None

    @property
    def shape(self) -> tuple:
        return tuple(self.data.shape)

    def scale_matrix(self):
        """The scale of every element, rows×K float64 (the block layouts expanded)."""
        xp = _xp(self.data)
        rows, k = self.shape
        s = self.scale.astype(xp.float64)
        if self.block is PER_TENSOR:
            return xp.broadcast_to(s.reshape(1, 1), (rows, k))
        if self.block == ROWS_1X128:  # stored (KB, M)
            return xp.repeat(s.T, BLOCK, axis=1)[:, :k]
        return xp.repeat(xp.repeat(s, BLOCK, axis=0), BLOCK, axis=1)[:rows, :k]  # (NB, KB)

    def dequantize(self):
        """q · s in float64: exactly the values the kernel multiplies."""
        return from_bits(self.data, self.fmt) * self.scale_matrix()


def quantize(x, fmt: str = E4M3, block: str | None = PER_TENSOR, keep_source: bool = False) -> Scaled:
    """Quantize a rows×K float matrix (NumPy or CuPy) to FP8 with amax scaling: one scale for the tensor
    (``block`` None), one per 1×128 of a row (``"1x128"``, A's recipe), or one per 128×128 block (``"128x128"``,
    B's recipe, B given as N×K)."""
    xp = _xp(x)
    x = xp.ascontiguousarray(x, dtype=xp.float32)
    rows, k = x.shape
    if block is PER_TENSOR:
        s = _scale(xp.abs(x).max().reshape(1), fmt, xp)
        q = to_bits(x / s, fmt)
    elif block == ROWS_1X128:
        kb = _blocks(k)
        t = _padded(x, rows, kb * BLOCK, xp).reshape(rows, kb, BLOCK)
        s = _scale(xp.abs(t).max(axis=2), fmt, xp)  # (M, KB)
        q = to_bits(t / s[:, :, None], fmt).reshape(rows, kb * BLOCK)[:, :k]
        s = xp.ascontiguousarray(s.T)  # stored M-major: (KB, M)
    elif block == BLOCKS_128X128:
        nb, kb = _blocks(rows), _blocks(k)
        t = _padded(x, nb * BLOCK, kb * BLOCK, xp).reshape(nb, BLOCK, kb, BLOCK)
        s = _scale(xp.abs(t).max(axis=(1, 3)), fmt, xp)  # (NB, KB)
        q = to_bits(t / s[:, None, :, None], fmt).reshape(nb * BLOCK, kb * BLOCK)[:rows, :k]
    else:
        raise ValueError(f"block={block!r}: None (per tensor), {ROWS_1X128!r} or {BLOCKS_128X128!r}")
    return Scaled(xp.ascontiguousarray(q), s, fmt, block, x if keep_source else None)


def scale_shape(block: str | None, rows: int, k: int) -> tuple[int, ...]:
    """The stored shape of the scales of a rows×K operand (module docstring)."""
    if block is PER_TENSOR:
        return (1,)
    if block == ROWS_1X128:
        return (_blocks(k), rows)
    return (_blocks(rows), _blocks(k))


def recipe_diff(x, y) -> float:
    """DeepGEMM's measure of how far x is from y: 1 − 2⟨x,y⟩/(‖x‖² + ‖y‖²), in float64. 0 when equal; for small
    differences about half the squared relative Frobenius error."""
    xp = _xp(x)
    x, y = x.astype(xp.float64), y.astype(xp.float64)
    denom = float((x * x + y * y).sum())
    return 1.0 - 2.0 * float((x * y).sum()) / denom if denom > 0 else 0.0
