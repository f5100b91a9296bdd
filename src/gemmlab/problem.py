"""The matrix-multiplication problem C = A @ B and the seeds' analytic model of it.

A is M×K, B is K×N, C is M×N, all row-major. FLOPs = 2MNK (K multiplies and K-1 adds per element, rounded
to 2K as in the seeds); compulsory bytes = each input read once plus the output written once, 4(MK+KN+MN)
in FP32; intensity = FLOPs / compulsory bytes = MNK / (2(MK+KN+MN)) in FP32, N/6 when M=N=K.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from gemmlab.errors import DTypeError, ShapeError, SizeLimitError


@dataclass(frozen=True)
class Precision:
    """Everything gemmlab knows of one precision, and the one place it is written: the operand dtypes that select it,
    the types it multiplies in and writes, the error a correct kernel stays under, the peer it is measured against,
    the roof it is modeled under, the kernels kernel="auto" falls back on, how the tensor cores take its operands.
    Every table keyed by precision reads these records (``PrecisionTable``); a new precision is a new record here,
    plus its kernels, its peer and its devices' peaks."""

    name: str
    input_dtype: str  # numpy dtype name of A and B as gemmlab draws them (a kernel's operands)
    # what C may be written in, numpy dtype names, the first by default (gemmlab.matmul's out_dtype)
    output_dtypes: tuple[str, ...]
    multiply: str  # what the hardware multiplies in
    rel_tolerance: float  # relative Frobenius error against float64 at K=4096
    description: str
    order: int  # where tables and listings put it
    label: str  # what tables and figures call it
    # the type the tensor cores take its operands in: "tf32" (FP32 in memory), "bf16", "f16" or "fp8"; None where the
    # products are FP32 FFMA (FP32's one tensor-core level, tc7, builds each from three TF32 products: its `math`)
    tensor_core_type: str | None
    peer: str  # the library kernel every kernel of this precision is timed against in the same run
    # the kernels kernel="auto" tries, in order, where the dispatch table has no entry for a GPU
    auto_defaults: tuple[str, ...]
    # the operand dtypes gemmlab.matmul computes in this precision; ``default`` is the one it computes them in
    # when the call names none (FP8's two are told apart by the scales instead)
    operand_dtypes: tuple[str, ...] = ()
    default: bool = True
    # the key of its dense peak in a device's datasheet (analysis.roofline.DEVICES): the units that do its arithmetic
    peak_key: str = ""
    # where ``peer`` cannot run (a torch without blockwise scaled matmul), the precision whose peer the ratio is
    # taken against instead, from the two's own medians, the record saying so
    fallback: str | None = None
    # FP8: "tensor" (one FP32 scale per operand) or "block" (A per 1×128, B per 128×128); gemmlab.fp8 has the layouts.
    # Scaled operands are gemmlab.fp8.Scaled, both K-major (B stored N×K), and the reference is the float64 product
    # of the dequantized operands.
    scaling: str | None = None
    tolerance_growth: float = 0.5  # past K=4096 the tolerance grows like (K / 4096) ** tolerance_growth
    # block scaling: DeepGEMM's measure against the product of the unquantized inputs (fp8.recipe_diff) stays below
    recipe_tolerance: float | None = None
    # the precision whose measured dispatch table kernel="auto" reads for this one (its kernels by the same names,
    # this precision's suffix for that one's): FP16 has no grid of its own, its instruction rates are BF16's
    dispatch_from: str | None = None

    @property
    def output_dtype(self) -> str:
        """C's dtype unless a call asks for another of ``output_dtypes``."""
        return self.output_dtypes[0]

    @property
    def input_bytes(self) -> int:
        return itemsize(self.input_dtype)

    @property
    def output_bytes(self) -> int:
        return itemsize(self.output_dtype)

    @property
    def scaled(self) -> bool:
        """Its operands come with FP32 scales (FP8): a call passes them, a kernel reads them by address."""
        return self.scaling is not None

    @property
    def kmajor_b(self) -> bool:
        """B is handed over as its N×K transpose (FP8 tensor cores read both operands K-major)."""
        return self.scaled

    @property
    def block_scaled(self) -> bool:
        return self.scaling == "block"

    @property
    def tensor_scaled(self) -> bool:
        """One scale per operand: the tensor cores' own accumulation, as torch._scaled_mm's use_fast_accum keeps it."""
        return self.scaling == "tensor"

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
    def unscaled_tensor_core(self) -> bool:
        """Tensor-core products of operands without scales (TF32, BF16, FP16): tc1, tc2 and tc3 build one spec of
        each."""
        return self.tensor_core_type is not None and not self.scaled

    @property
    def sixteen_bit(self) -> bool:
        """BF16 or FP16 operands: the same wgmma and mma.sync shapes, layouts and rates, told apart by TC_F16."""
        return self.tensor_core_type in ("bf16", "f16")

    @property
    def reads_b_n_major(self) -> bool:
        """The tensor cores read a K×N row-major B from shared memory as it is (bf16 and f16, through wgmma's
        transpose bit and ldmatrix.trans); tf32 and fp8 read K-major operands only."""
        return self.sixteen_bit

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
        """The defines that select its operand type in the tensor-core sources (tc_layout.cuh, tc_wgmma.cuh,
        tc1_mma_sync.cu): TC_BF16=1 for the 16-bit operands, with TC_F16=1 for f16; TC_FP8=1 for fp8; else TF32
        from FP32 operands."""
        defines = {"TC_BF16": int(self.sixteen_bit)}
        if self.tensor_core_type == "f16":
            defines["TC_F16"] = 1
        if self.tensor_core_type == "fp8":
            defines["TC_FP8"] = 1
        return defines

    @property
    def dispatch_precision(self) -> str:
        """The precision whose dispatch table kernel="auto" reads for this one."""
        return self.dispatch_from or self.name


# ml_dtypes' sizes, known without importing it (about a second: the registry's TMA tables read these sizes)
_ML_DTYPE_BYTES = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}


def itemsize(name: str) -> int:
    """Bytes per element of a dtype name."""
    return _ML_DTYPE_BYTES.get(name) or np.dtype(name).itemsize


def np_dtype(name: str):
    """The NumPy dtype of a dtype name, ml_dtypes' for bfloat16 and the float8 formats."""
    if name == "bfloat16" or name.startswith("float8_"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


_FP8 = ("float8_e4m3fn", "float8_e5m2")
# FP32 rounding error of a K-term dot product grows like sqrt(K)·2^-24 with random signs; 1e-5 leaves
# room for K up to ~10^5. TF32 keeps 10 mantissa bits (2^-11 per product), BF16 7 bits (2^-8).
# BF16 and FP16 write C in the operands' type by default, as torch does (float32 on request): against the float64
# product of the operands as given only the accumulation and C's rounding count, about 1.1e-3 relative for BF16 C
# (2^-8 unit roundoff) and 1.4e-4 for FP16 C (2^-11), each under its tolerance with room (FP32 C: far under). C's
# rounding does not grow with K and the FP32 accumulation's share stays far below it, so their tolerance does not
# either (the verified BF16 records committed under results/: at most 1.7e-3 at any K up to 65536); one grown like
# sqrt(K) passed, at 256x256x65536, a product missing one 64-wide k-tile (about 3.1e-2).
PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", "float32", ("float32",), "fp32 FFMA", 1e-5, "FP32 in, FP32 multiply and accumulate", 0,
                      "FP32", None, peer="peers/cublas_fp32", auto_defaults=("cuda/v10_register_prefetch",),
                      operand_dtypes=("float32",), peak_key="fp32"),
    "tf32": Precision("tf32", "float32", ("float32",), "tf32 tensor core", 2e-3,
                      "FP32 in and out, TF32 multiply (10-bit mantissa), FP32 accumulate", 1, "TF32", "tf32",
                      peer="peers/cublas_tf32", auto_defaults=("cuda/tc6_stream_k_tf32", "cuda/tc10_split_k_tf32",
                                                                  "cuda/tc1_mma_sync_tf32"),
                      operand_dtypes=("float32",), default=False, peak_key="tf32"),
    "bf16": Precision("bf16", "bfloat16", ("bfloat16", "float32"), "bf16 tensor core", 1e-2,
                      "BF16 in, FP32 accumulate, BF16 out (FP32 on request)", 2, "BF16", "bf16",
                      peer="peers/cublas_bf16", auto_defaults=("cuda/tc4_persistent_bf16", "cuda/tc1_mma_sync_bf16"),
                      operand_dtypes=("bfloat16",), peak_key="bf16", tolerance_growth=0.0),
    # Against the dequantized operands' float64 product only the kernel's own rounding counts: BF16 output (about
    # 1.7e-3 relative) and the tensor cores' FP8 accumulation. A 14-bit truncating accumulator would err in
    # proportion to K (modeled 3.7e-3 at K=4096, 1.3e-2 at 16384); the H200's measured errors grow far slower, both
    # sides (api_suite.json: 1.7e-3 at K=256, 3.3e-3 at 14336, 4.1e-3 at 65536, torch's), so the tolerance grows
    # like sqrt(K), as BF16's: 4e-2 at K=65536, where growth like K (0.16) would pass a product missing a 64th of
    # its K (random terms: about sqrt(1/64) = 0.125 relative). Block scaling promotes every 128
    # of K into FP32, so only the output's rounding is left; its recipe measure against the unquantized FP32 product
    # is dominated by e4m3's 3-bit quantization (about 7e-4 for N(0,1), whatever K): DeepGEMM's bound is 1e-3.
    "fp8": Precision("fp8", "float8_e4m3fn", ("bfloat16", "float32"), "fp8 e4m3 tensor core", 1e-2,
                     "FP8 e4m3 in with one FP32 scale per operand, tensor-core accumulation, BF16 out", 3, "FP8",
                     "fp8", peer="peers/cublaslt_fp8", auto_defaults=("cuda/tc4_persistent_fp8",),
                     operand_dtypes=_FP8, peak_key="fp8", scaling="tensor"),
    "fp8_block": Precision("fp8_block", "float8_e4m3fn", ("bfloat16", "float32"),
                           "fp8 e4m3 tensor core, FP32 promotion", 1e-2,
                           "FP8 e4m3 in, FP32 scales per 1x128 of A and 128x128 of B, FP32 accumulation every 128 "
                           "of K, BF16 out", 4, "FP8 block-scaled", "fp8", peer="peers/cublaslt_fp8_block",
                           auto_defaults=("cuda/tc8_block_scaled_fp8",), operand_dtypes=_FP8, peak_key="fp8",
                           fallback="fp8", scaling="block", tolerance_growth=0.0, recipe_tolerance=1e-3),
    # FP16's tensor-core rates are BF16's (one peak key, one dispatch table); its 10 stored mantissa bits make C's
    # rounding 8x smaller than BF16's, hence the tighter tolerance
    "fp16": Precision("fp16", "float16", ("float16", "float32"), "f16 tensor core", 2e-3,
                      "FP16 in, FP32 accumulate, FP16 out (FP32 on request)", 5, "FP16", "f16",
                      peer="peers/cublas_fp16", auto_defaults=("cuda/tc4_persistent_fp16", "cuda/tc1_mma_sync_fp16"),
                      operand_dtypes=("float16",), peak_key="bf16", dispatch_from="bf16", tolerance_growth=0.0),
}


def get_precision(name: str) -> Precision:
    try:
        return PRECISIONS[name]
    except KeyError:
        raise ShapeError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}") from None


class PrecisionTable(Mapping):
    """A table keyed by precision name, read from the records whenever it is used: {name: read(record)} for each
    record where ``read`` gives something (not None or empty), in the records' order. A record added to PRECISIONS
    is in every such table at once."""

    def __init__(self, read):
        self._read = read

    def _value(self, precision: Precision):
        value = self._read(precision)
        return None if value in (None, (), "") else value

    def __getitem__(self, name: str):
        value = self._value(PRECISIONS[name]) if name in PRECISIONS else None
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (name for name, p in PRECISIONS.items() if self._value(p) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self))


def precisions_of(dtype: str) -> tuple[str, ...]:
    """The precisions operands of numpy dtype name ``dtype`` can be computed in, the default first (FP8: chosen by
    the scales); empty for a dtype gemmlab does not take."""
    taking = [p for p in PRECISIONS.values() if dtype in p.operand_dtypes]
    return tuple(p.name for p in sorted(taking, key=lambda p: (not p.default, p.order)))


def scaled_dtype(dtype: str) -> bool:
    """Operands of this dtype come with scales (the FP8 formats)."""
    return any(p.scaled and dtype in p.operand_dtypes for p in PRECISIONS.values())


SEED_SHAPE = (2048, 3072, 4096)  # M, N, K of the seeds' harness


@dataclass(frozen=True)
class Problem:
    """One matrix product C[M,N] = A[M,K] @ B[K,N], row-major, at one precision; C in ``out_dtype``, one of the
    precision's output dtypes (None: its default, the first)."""

    m: int
    n: int
    k: int
    precision: str = "fp32"
    # keyword-only: BatchedProblem's batch fields follow the shape positionally
    out_dtype: str | None = field(default=None, kw_only=True)

    def __post_init__(self):
        for dim in ("m", "n", "k"):
            value = getattr(self, dim)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ShapeError(f"{dim.upper()} must be an integer, got {value!r}")
            if value < 1:
                raise ShapeError(f"{dim.upper()}={value}: every dimension must be at least 1")
            object.__setattr__(self, dim, int(value))
        writes = get_precision(self.precision).output_dtypes
        if self.out_dtype not in (None, *writes):
            raise DTypeError(f"out_dtype={self.out_dtype!r}: {self.precision} writes {' or '.join(writes)}")

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

    @property
    def output_bytes(self) -> int:
        """Bytes of one element of C."""
        return itemsize(self.out_dtype or self.prec.output_dtype)

    def compulsory_bytes(self) -> int:
        p = self.prec
        return p.input_bytes * (self.m * self.k + self.k * self.n) + self.output_bytes * self.m * self.n

    def intensity(self) -> float:
        """FLOP per compulsory byte: the best intensity any kernel can reach on this problem."""
        return self.flops() / self.compulsory_bytes()

    def with_precision(self, precision: str) -> "Problem":
        return Problem(self.m, self.n, self.k, precision)

    def transposed(self) -> "Problem":
        """The product of the transposes, Cᵀ (N×M) = Bᵀ·Aᵀ, which a kernel computes where it takes the operands in
        each other's roles (tc9; tc5 and tc6 TF32 with A_IN_REGS)."""
        return Problem(self.n, self.m, self.k, self.precision, out_dtype=self.out_dtype)

    def make_inputs(self, seed: int = 0, xp=np, formats: tuple[str, str] | None = None):
        """A and B drawn from N(0,1) with a seeded generator, in the precision's input dtype; for FP8, quantized
        with amax scaling into gemmlab.fp8.Scaled operands (in ``formats``, default the precision's), A as M×K and
        B as N×K (both K-major), the block precision keeping the FP32 draws for its recipe measure.

        xp is numpy or cupy; cupy draws on the GPU, so large inputs never cross PCIe.
        """
        rng = xp.random.default_rng(seed)
        a = rng.standard_normal((self.m, self.k), dtype=xp.float32)
        if self.prec.scaled:
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
        return np_dtype(self.out_dtype or self.prec.output_dtype)

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


@dataclass(frozen=True)
class BatchedProblem(Problem):
    """``batch`` products C[i] = A[i] @ B[i] of one M×N×K shape in one launch: A[i] starts ``stride_a`` elements after
    A[i - 1] and B[i] ``stride_b`` after B[i - 1] (0: one matrix broadcast to every product); C is (batch, M, N)
    contiguous. gemmlab.call.batched collapses a broadcast batch of any rank into this one dimension."""

    batch: int = 1
    stride_a: int = 0
    stride_b: int = 0

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.batch, bool) or not isinstance(self.batch, (int, np.integer)) or self.batch < 1:
            raise ShapeError(f"a batch counts products: an integer >= 1, got {self.batch!r}")
        for name in ("stride_a", "stride_b"):
            if getattr(self, name) < 0:
                raise ShapeError(f"{name}={getattr(self, name)}: a batch stride is >= 0 elements (0: broadcast)")
        object.__setattr__(self, "batch", int(self.batch))

    def label(self) -> str:
        return f"{self.batch}x{super().label()}"

    def flops(self) -> int:
        return self.batch * super().flops()

    def compulsory_bytes(self) -> int:
        p = self.prec
        count = lambda stride: self.batch if stride else 1  # noqa: E731 (a broadcast operand is read once)
        return (p.input_bytes * (count(self.stride_a) * self.m * self.k + count(self.stride_b) * self.k * self.n)
                + self.output_bytes * self.batch * self.m * self.n)

    def with_precision(self, precision: str) -> "BatchedProblem":
        return BatchedProblem(self.m, self.n, self.k, precision, self.batch, self.stride_a, self.stride_b)

    def transposed(self) -> "BatchedProblem":
        """The batch of the products' transposes, Cᵢᵀ = Bᵢᵀ·Aᵢᵀ: each operand's stride the other's."""
        return BatchedProblem(self.n, self.m, self.k, self.precision, self.batch, self.stride_b, self.stride_a,
                              out_dtype=self.out_dtype)

    def matrix(self) -> Problem:
        """One product of the batch."""
        return Problem(self.m, self.n, self.k, self.precision, out_dtype=self.out_dtype)

    def flattened(self) -> Problem:
        """The unbatched problem with the batch's tiles and work, (batch·M)×N×K: where the dispatch table and the
        models rank the kernels for a batch."""
        return Problem(self.batch * self.m, self.n, self.k, self.precision, out_dtype=self.out_dtype)
