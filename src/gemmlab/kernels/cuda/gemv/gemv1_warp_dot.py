"""gemv1: a few rows of A against an N×K weight on the CUDA cores, K split across a block's warps.

What changed: the tensor-core levels tile M in 64 or 128 rows, so at decode sizes (M = 1-8 tokens against an LLM
weight handed over as ``w.t()``) most of each wgmma multiplies padding and few CTAs share the weight's rows. Here a
block of up to 8 warps owns ROWS rows of the weight (ROWS columns of C) for every row of A; its warps cut K into
segments and each lane reads 16-byte chunks of the ROWS rows and of A's M rows, so the weight is read once, in
whole sectors, by ceil(N / ROWS) blocks that fill the GPU whatever K is. Partial sums meet in a fixed order (lanes
by a butterfly, warps in index order), so a call gives the same bits every time; FP32 and TF32 compute in FP32,
as torch's matrix-vector path does.
Why: a decode GEMM is the weight's bytes over the DRAM bandwidth; per element of the weight a thread does M FMAs
and one conversion, which the CUDA cores sustain at the DRAM rate up to about M = 8 (BF16) and M = 4 (FP8).
Prediction: at M <= 8, 75-90% of the DRAM roof (A, B and C bytes at the measured copy bandwidth); beyond that the
CUDA cores bind and the tensor-core levels win. Measured: docs/gemv.md.

A matrix-vector product the other way round (N = 1: C = A·b, A row-major M×K, any M) runs as its transpose,
Cᵀ = bᵀ·Aᵀ: b is the one row of "A", A the N×K weight, and Cᵀ (1×M) is C's own memory (``swaps``). The unscaled
precisions only (FP8's block scales are not symmetric in A and B). Why: FP32 and TF32 calls at N = 1 then get
FP32 accuracy, as torch's matrix-vector path gives, at the weight's DRAM time. Prediction: the same fraction of the
DRAM roof as M = 1 against an M×K weight.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gemmlab import driver
from gemmlab.errors import Refusal, ShapeError, SizeLimitError
from gemmlab.fp8 import E4M3, E5M2
from gemmlab.kernels.cuda.launch.kernel import CudaKernel, CudaPlan, bind_epilogue, run_on_cupy
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import Layout
from gemmlab.kernels.spec import INT32_MAX, INT32_ROUNDING, SM_COUNT, ReadsWeightTransposed, Traffic
from gemmlab.problem import Problem

MAX_M_CHOICES = (1, 2, 4, 8, 16)  # each its own binary: accumulators and loads for exactly that many rows of A
WARP_CHOICES = (1, 2, 4, 8)
SIGNATURE = (("C", "ptr"), ("A", "ptr"), ("B", "ptr"), ("M", "i32"), ("N", "i32"), ("K", "i32"), ("aligned", "i32"),
             ("scale_a", "ptr"), ("scale_b", "ptr"))
MIN_BLOCKS_PER_SM = 4  # enough independent 16-byte loads in flight per SM to cover DRAM latency


def rows_for(n: int, sm_count: int = SM_COUNT) -> int:
    """Rows of the weight per block: the most (fewer loads of A per weight byte) that still give every SM
    MIN_BLOCKS_PER_SM blocks."""
    for rows in (4, 2):
        if ceil_div(n, rows) >= MIN_BLOCKS_PER_SM * sm_count:
            return rows
    return 1


def max_m_for(m: int) -> int:
    """Accumulator rows for M rows of A (the largest build past it: is_valid refuses such an M)."""
    return next((c for c in MAX_M_CHOICES if c >= m), MAX_M_CHOICES[-1])


def unroll_for(max_m: int) -> int:
    """Chunks a lane loads before it uses any: two, except where eight or more rows of A's accumulators leave no
    registers for a second round of loads (it spills)."""
    return 2 if max_m <= 4 else 1


def warps_for(k: int, vec: int, unroll: int) -> int:
    """Warps splitting K: eight, fewer where K is so short that a lane would get less than one round of ``unroll``
    chunks."""
    rounds = ceil_div(k, vec) // (32 * unroll)
    return max((w for w in WARP_CHOICES if w <= rounds), default=1)


def swaps(problem: Problem) -> bool:
    """Whether ``problem`` runs as its transpose: a vector B (N = 1) against more than one row of A."""
    return problem.n == 1 and problem.m > 1 and problem.prec.scaling is None


def runs_as(problem: Problem) -> Problem:
    """The product the kernel computes for ``problem``: Cᵀ = bᵀ·Aᵀ (1 × M × K) where it swaps, else the problem."""
    return Problem(1, problem.m, problem.k, problem.precision) if swaps(problem) else problem


def _traffic(problem: Problem, sm_count: int = SM_COUNT, params: dict | None = None) -> Traffic:
    """The weight and C once from DRAM; A's rows once per block, from L2 after the first block's read."""
    problem = runs_as(problem)
    p = problem.prec
    m, n, k = problem.shape
    rows = (params or {}).get("ROWS") or rows_for(n, sm_count)
    a_bytes, b_bytes, c_bytes = p.input_bytes * m * k, p.input_bytes * n * k, problem.output_bytes * m * n
    blocks = ceil_div(n, rows)
    return Traffic(a_bytes + b_bytes, c_bytes, f"B and C once, A once per block of {rows} rows ({blocks} blocks)",
                   l2_read=a_bytes * blocks + b_bytes, l2_write=c_bytes)


@dataclass
class GemvPlan(CudaPlan):
    """One launch; each call writes the operands' addresses (swapped where the kernel computes Cᵀ = bᵀ·Aᵀ), whether
    the 16-byte chunks are aligned, and for FP8 the scales' addresses."""

    vec: int = 1
    swapped: bool = False

    def __post_init__(self):
        super().__post_init__()
        self._aligned, self._sa, self._sb = self.main.params.views("aligned", "scale_a", "scale_b")

    def launch(self, a, b, c, stream: int = 0, scale_a: int = 0, scale_b: int = 0) -> None:
        self._aligned.value = int(self.problem.k % self.vec == 0 and not (a | b) & 15)
        self._sa.value, self._sb.value = scale_a, scale_b
        super().launch(*((b, a) if self.swapped else (a, b)), c, stream)

    def bind_epilogue(self, strides: tuple | None) -> None:
        # swapped, the kernel's rows are C's columns: it reads the addend with the strides exchanged
        bind_epilogue(self.main.params, self.spec.epilogue, strides, transposed=self.swapped)

    def run(self, a, b, c) -> None:
        run_on_cupy(self, a, b, c)


@dataclass(frozen=True, kw_only=True)
class GemvKernel(ReadsWeightTransposed, CudaKernel):
    source: str = "gemv1_warp_dot.cu"
    entry: str = "gemv1_warp_dot"
    signature: tuple = SIGNATURE
    int32_indices: bool = False  # row offsets are 64-bit; M, N, K themselves fit an int (checked below)
    fuses_epilogue: bool = True  # applied to each sum before its store
    # each row count of A its own binary (registers, unroll, warps): the scaling model's bytes and arithmetic do not
    # see the step from one to the next (docs/gemv.md, "auto between row counts")
    unscaled_params: ClassVar[tuple] = ("MAX_M",)

    @property
    def fp8(self) -> bool:
        return self.prec.scaling is not None

    @property
    def vec(self) -> int:
        return 16 // self.prec.input_bytes

    def layout_refusal(self, layout: Layout) -> str:
        return (f"{self.name} reads B as the transpose of an N×K matrix (x @ w.t(), what nn.Linear computes), each "
                "of its rows once in 16-byte chunks; a row-major K×N B would be copied on every call")

    def auto_refusal(self) -> str:
        return self.not_auto  # FP32 products: TF32 calls get FP32 accuracy, never a truncation

    @property
    def formats(self) -> tuple[str, str]:
        return tuple(E5M2 if self.params.get(f"{x}_E5M2", 0) else E4M3 for x in "AB")

    def for_formats(self, a: str, b: str, out: str) -> "GemvKernel":
        if not self.fp8:
            return super().for_formats(a, b, out)
        if a not in (E4M3, E5M2) or b not in (E4M3, E5M2) or out not in ("bfloat16", "float32"):
            return super().for_formats(a, b, out)
        return dataclasses.replace(self, params={**self.params, "A_E5M2": int(a == E5M2), "B_E5M2": int(b == E5M2),
                                                 "OUT_BF16": int(out == "bfloat16")})

    def is_valid(self, problem: Problem) -> Refusal | None:
        why = super().is_valid(problem)
        if why:
            return why
        if max(problem.shape) > INT32_MAX - INT32_ROUNDING:  # K's chunks of VEC counted in an int, rounded up
            return Refusal(f"{problem.label()}: a dimension past {INT32_MAX - INT32_ROUNDING} does not fit the "
                           "kernel's int count of K's vectors, rounded up", SizeLimitError)
        if runs_as(problem).m > MAX_M_CHOICES[-1]:
            return Refusal(f"{self.name} computes at most {MAX_M_CHOICES[-1]} rows of A (M={problem.m}), or a vector B "
                           "(N = 1) against any M; larger M runs on the tensor-core levels", ShapeError)
        if max(problem.shape) > 2**31 - 1:
            return Refusal(f"{problem.label()}: a dimension past 2^31 does not fit the kernel's int arguments",
                           ShapeError)
        return None

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "GemvKernel":
        """The build for ``problem`` (as it runs: ``runs_as``): accumulators for the fewest rows that hold M, ROWS by
        N."""
        problem = runs_as(problem)
        max_m = max_m_for(problem.m)
        unroll = unroll_for(max_m)
        params = {**self.params, "MAX_M": max_m, "ROWS": rows_for(problem.n, sm_count), "UNROLL": unroll,
                  "WARPS": warps_for(problem.k, self.vec, unroll)}
        return self if params == dict(self.params) else dataclasses.replace(self, params=params)

    def configurations(self) -> list["GemvKernel"]:
        """Every accumulator count at four rows per block, and one row per block (the other row counts change the
        same loop's trip count only); each in every output type its precision writes."""
        builds = [dataclasses.replace(self, params={**self.params, "MAX_M": m, "ROWS": 4, "UNROLL": unroll_for(m)})
                  for m in MAX_M_CHOICES]
        builds += [dataclasses.replace(self, params={**self.params, "MAX_M": 4, "ROWS": 1, "UNROLL": 2, "WARPS": w})
                   for w in WARP_CHOICES]
        if self.fp8:
            return [b.for_formats(*self.formats, out) for b in builds for out in ("bfloat16", "float32")]
        return self.output_builds(builds)

    def launch_geometry(self, problem: Problem) -> Geometry:
        return self.for_problem(problem).geometry_of_build(problem)

    def geometry_of_build(self, problem: Problem) -> Geometry:
        """The launch of this build (a for_problem result) as it is: its own ROWS and WARPS, whatever SM count chose
        them."""
        return Geometry(grid=(ceil_div(runs_as(problem).n, self.params["ROWS"]), 1, 1),
                        block=(self.params["WARPS"] * 32, 1, 1))

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        return _traffic(problem, sm_count, dict(self.for_problem(problem, sm_count).params))

    def swaps(self, problem: Problem) -> bool:
        """Whether this kernel runs ``problem`` as its transpose (``swaps``)."""
        return swaps(problem)

    def make_plan(self, problem: Problem, layout: Layout, info, gpu=None) -> GemvPlan:
        from gemmlab.kernels.cuda.launch.gpu import RESOURCES

        if layout not in self.layouts:
            raise ShapeError(self.layout_refusal(layout))
        runs = self.for_problem(problem, info.sm_count)
        geo = runs.geometry_of_build(problem)  # ROWS as this GPU's SM count chose it, which the binary was built for
        kernel = (gpu or RESOURCES).kernel(runs.compile(info.arch), geo.smem)
        params = driver.Params(self.parameters)
        swapped = self.swaps(problem)
        params.M, params.N, params.K = runs_as(problem).shape if swapped else problem.shape
        main = driver.Launch(int(kernel.handle), geo.grid, geo.block, geo.smem, params)
        chosen = ", ".join(f"{k}={runs.params[k]}" for k in ("MAX_M", "M_SLICE", "ROWS", "WARPS", "UNROLL")
                           if runs.params.get(k, 0) > 0)
        steps = [f"{self.entry}: grid {geo.grid}, block {geo.block}, {chosen}"]
        if swapped:
            steps.insert(0, f"computes Cᵀ = bᵀ·Aᵀ: the vector B as the one row, A ({problem.m}x{problem.k}) as the "
                            "weight; Cᵀ is C's memory")
        return GemvPlan(runs, problem, layout, main=main, vec=self.vec, swapped=swapped, steps=steps)


_TYPES = {"fp32": {"IN_FP32": 1}, "tf32": {"IN_FP32": 1}, "bf16": {"IN_BF16": 1, "OUT_BF16": 1},
          "fp16": {"IN_F16": 1, "OUT_F16": 1}, "fp8": {"IN_FP8": 1, "SCALED": 1, "OUT_BF16": 1},
          "fp8_block": {"IN_FP8": 1, "SCALED": 2, "OUT_BF16": 1}}
_TITLES = {"fp32": "FP32 FFMA", "tf32": "FP32 FFMA (FP32 accuracy for TF32 calls, as torch's matrix-vector path)",
           "bf16": "BF16 operands, FP32 FFMA, BF16 C", "fp16": "FP16 operands, FP32 FFMA, FP16 C",
           "fp8": "FP8 operands, one scale each, FP32 FFMA, BF16 C",
           "fp8_block": "FP8 operands, 1x128 / 128x128 block scales applied per 16 of K, FP32 FFMA, BF16 C"}

SPECS = [
    GemvKernel(name=f"cuda/gemv1_warp_dot_{prec}", level=None, precision=prec,
               title=f"M <= 16 rows against an N×K weight (w.t()), K across 8 warps: {_TITLES[prec]}",
               params={**_TYPES[prec], "MAX_M": 8, "ROWS": 4, "UNROLL": 1, "WARPS": 8},
               traffic_model=_traffic, doc=__doc__,
               unmodeled="the CUDA cores: M FMAs and a conversion per weight element bind above M of about 8")
    for prec in _TITLES
]
