"""The matrix-multiplication problem C = A @ B and the seeds' analytic model of it.

A is M×K, B is K×N, C is M×N, all row-major. FLOPs = 2MNK (K multiplies and K-1 adds per element, rounded
to 2K as in the seeds); compulsory bytes = each input read once plus the output written once, 4(MK+KN+MN)
in FP32; intensity = FLOPs / compulsory bytes = MNK / (2(MK+KN+MN)) in FP32, N/6 when M=N=K.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gemmlab.errors import ShapeError, SizeLimitError


@dataclass(frozen=True)
class Precision:
    """Input, multiply and output types of one precision, and the error a correct kernel stays under."""

    name: str
    input_dtype: str  # numpy dtype name of A and B
    output_dtype: str  # numpy dtype name of C
    multiply: str  # what the hardware multiplies in
    rel_tolerance: float  # relative Frobenius error against float64 at K=4096
    description: str
    order: int  # where tables and listings put it
    label: str  # what tables and figures call it
    # the type the tensor cores take its operands in: "tf32" (FP32 in memory), "bf16" or "fp8"; None where the
    # products are FP32 FFMA (FP32's one tensor-core level, tc7, builds each from three TF32 products: its `math`)
    tensor_core_type: str | None
    # FP8: "tensor" (one FP32 scale per operand) or "block" (A per 1×128, B per 128×128); gemmlab.fp8 has the layouts.
    # Scaled operands are gemmlab.fp8.Scaled, both K-major (B stored N×K), and the reference is the float64 product
    # of the dequantized operands.
    scaling: str | None = None
    tolerance_growth: float = 0.5  # past K=4096 the tolerance grows like (K / 4096) ** tolerance_growth
    # block scaling: DeepGEMM's measure against the product of the unquantized inputs (fp8.recipe_diff) stays below
    recipe_tolerance: float | None = None

    @property
    def input_bytes(self) -> int:
        return np.dtype(np_dtype(self.input_dtype)).itemsize

    @property
    def output_bytes(self) -> int:
        return np.dtype(np_dtype(self.output_dtype)).itemsize

    @property
    def kmajor_b(self) -> bool:
        """B is handed over as its N×K transpose (FP8 tensor cores read both operands K-major)."""
        return self.scaling is not None

    @property
    def block_scaled(self) -> bool:
        return self.scaling == "block"

    @property
    def fp32_multiply(self) -> bool:
        """Products in IEEE FP32 (FFMA): what cuBLAS SGEMM and Triton's IEEE mode compute."""
        return self.tensor_core_type is None

    @property
    def tf32_multiply(self) -> bool:
        """FP32 operands multiplied as TF32 (what torch's allow_tf32 turns on): the tensor cores truncate them to 10
        mantissa bits unless a kernel rounds them to nearest first (TF32_ROUND), as cuBLAS does."""
        return self.tensor_core_type == "tf32"

    @property
    def reads_b_n_major(self) -> bool:
        """The tensor cores read a K×N row-major B from shared memory as it is (bf16, through wgmma's transpose bit
        and ldmatrix.trans); tf32 and fp8 read K-major operands only."""
        return self.tensor_core_type == "bf16"

    @property
    def k_tile(self) -> int:
        """K elements per k-tile of the wgmma levels: one 128-byte swizzle row (32 FP32, 64 BF16, 128 FP8)."""
        return 128 // self.input_bytes

    @property
    def tma_dtype(self) -> str:
        """The element type its operands' TMA tensor maps copy (gemmlab.driver.TMA_DTYPES): TF32 moves as FP32."""
        return "fp32" if self.tensor_core_type in (None, "tf32") else self.tensor_core_type

    @property
    def tensor_core_defines(self) -> dict:
        """The defines that select its operand type in the tensor-core sources (tc_layout.cuh, tc1_mma_sync.cu):
        TC_BF16=1 for bf16, TC_FP8=1 for fp8, else TF32 from FP32 operands."""
        defines = {"TC_BF16": int(self.tensor_core_type == "bf16")}
        if self.tensor_core_type == "fp8":
            defines["TC_FP8"] = 1
        return defines


def np_dtype(name: str):
    """The NumPy dtype of a dtype name, ml_dtypes' for bfloat16 and the float8 formats."""
    if name == "bfloat16" or name.startswith("float8_"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


# FP32 rounding error of a K-term dot product grows like sqrt(K)·2^-24 with random signs; 1e-5 leaves
# room for K up to ~10^5. TF32 keeps 10 mantissa bits (2^-11 per product), BF16 7 bits (2^-8).
PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", "float32", "float32", "fp32 FFMA", 1e-5, "FP32 in, FP32 multiply and accumulate", 0,
                      "FP32", None),
    "tf32": Precision("tf32", "float32", "float32", "tf32 tensor core", 2e-3,
                      "FP32 in and out, TF32 multiply (10-bit mantissa), FP32 accumulate", 1, "TF32", "tf32"),
    "bf16": Precision("bf16", "bfloat16", "float32", "bf16 tensor core", 1e-2,
                      "BF16 in, FP32 accumulate and out", 2, "BF16", "bf16"),
    # Against the dequantized operands' float64 product only the kernel's own rounding counts: BF16 output (about
    # 1.7e-3 relative) and the tensor cores' FP8 accumulation, which keeps about 14 bits and, truncating, errs in
    # proportion to K (modeled 3.7e-3 at K=4096, 1.3e-2 at 16384), hence growth 1. Block scaling promotes every 128
    # of K into FP32, so only the output's rounding is left; its recipe measure against the unquantized FP32 product
    # is dominated by e4m3's 3-bit quantization (about 7e-4 for N(0,1), whatever K): DeepGEMM's bound is 1e-3.
    "fp8": Precision("fp8", "float8_e4m3fn", "bfloat16", "fp8 e4m3 tensor core", 1e-2,
                     "FP8 e4m3 in with one FP32 scale per operand, tensor-core accumulation, BF16 out", 3, "FP8",
                     "fp8", scaling="tensor", tolerance_growth=1.0),
    "fp8_block": Precision("fp8_block", "float8_e4m3fn", "bfloat16", "fp8 e4m3 tensor core, FP32 promotion", 1e-2,
                           "FP8 e4m3 in, FP32 scales per 1x128 of A and 128x128 of B, FP32 accumulation every 128 "
                           "of K, BF16 out", 4, "FP8 block-scaled", "fp8", scaling="block", tolerance_growth=0.0,
                           recipe_tolerance=1e-3),
}


def get_precision(name: str) -> Precision:
    try:
        return PRECISIONS[name]
    except KeyError:
        raise ShapeError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}") from None


SEED_SHAPE = (2048, 3072, 4096)  # M, N, K of the seeds' harness


@dataclass(frozen=True)
class Problem:
    """One matrix product C[M,N] = A[M,K] @ B[K,N], row-major, at one precision."""

    m: int
    n: int
    k: int
    precision: str = "fp32"

    def __post_init__(self):
        for dim in ("m", "n", "k"):
            value = getattr(self, dim)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ShapeError(f"{dim.upper()} must be an integer, got {value!r}")
            if value < 1:
                raise ShapeError(f"{dim.upper()}={value}: every dimension must be at least 1")
            object.__setattr__(self, dim, int(value))
        get_precision(self.precision)

    @property
    def prec(self) -> Precision:
        return PRECISIONS[self.precision]

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def compulsory_bytes(self) -> int:
        p = self.prec
        return p.input_bytes * (self.m * self.k + self.k * self.n) + p.output_bytes * self.m * self.n

    def intensity(self) -> float:
        """FLOP per compulsory byte: the best intensity any kernel can reach on this problem."""
        return self.flops() / self.compulsory_bytes()

    def with_precision(self, precision: str) -> "Problem":
        return Problem(self.m, self.n, self.k, precision)

    def make_inputs(self, seed: int = 0, xp=np, formats: tuple[str, str] | None = None):
        """A and B drawn from N(0,1) with a seeded generator, in the precision's input dtype; for FP8, quantized
        with amax scaling into gemmlab.fp8.Scaled operands (in ``formats``, default the precision's), A as M×K and
        B as N×K (both K-major), the block precision keeping the FP32 draws for its recipe measure.

        xp is numpy or cupy; cupy draws on the GPU, so large inputs never cross PCIe.
        """
        rng = xp.random.default_rng(seed)
        a = rng.standard_normal((self.m, self.k), dtype=xp.float32)
        if self.prec.scaling:
            from gemmlab import fp8

            b = rng.standard_normal((self.n, self.k), dtype=xp.float32)
            fa, fb = formats or (self.prec.input_dtype,) * 2
            block = self.prec.block_scaled
            return (fp8.quantize(a, fa, fp8.ROWS_1X128 if block else None, keep_source=block),
                    fp8.quantize(b, fb, fp8.BLOCKS_128X128 if block else None, keep_source=block))
        b = rng.standard_normal((self.k, self.n), dtype=xp.float32)
        dtype = np_dtype(self.prec.input_dtype)
        if a.dtype != dtype:
            a, b = a.astype(dtype), b.astype(dtype)
        return a, b

    def output_dtype(self):
        return np_dtype(self.prec.output_dtype)

    def input_dtype(self):
        return np_dtype(self.prec.input_dtype)


_SHAPE_RE = re.compile(r"^\s*(\d+)\s*(?:[x×*,]\s*(\d+)\s*[x×*,]\s*(\d+))?\s*$")


def require_fits(problem: "Problem", capacity_bytes: int, where: str) -> None:
    """Refuse ``problem`` where A, B and C in its precision's types exceed ``capacity_bytes`` (the memory of
    ``where``): no kernel runs it there, so no model or choice for it means anything. Closed form, so it answers at
    once for any size."""
    need = problem.compulsory_bytes()
    if need > capacity_bytes:
        raise SizeLimitError(f"{problem.label()} {problem.precision}: A, B and C take {need / 2**30:,.1f} GiB; "
                             f"{where} holds {capacity_bytes / 2**30:,.0f} GiB")


def parse_shape(text: str) -> tuple[int, int, int]:
    """'4096' -> (4096, 4096, 4096); '2048x3072x4096' -> (M, N, K) = (2048, 3072, 4096)."""
    match = _SHAPE_RE.match(str(text))
    if not match:
        raise ShapeError(f"cannot read shape {text!r}: write one size (4096) or MxNxK (2048x3072x4096)")
    if match.group(2) is None:
        size = int(match.group(1))
        dims = (size, size, size)
    else:
        dims = tuple(int(g) for g in match.groups())
    if min(dims) < 1:
        raise ShapeError(f"shape {text!r}: every dimension must be at least 1")
    return dims
