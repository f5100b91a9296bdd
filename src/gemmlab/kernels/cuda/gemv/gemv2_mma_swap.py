"""gemv2: gemv1's streaming of the weight, its multiply-adds on the tensor cores (mma.sync, operands swapped).

What changed against gemv1: gemv1's CUDA cores do M FMAs and a conversion per element of the weight, so its time
grows with M past a few rows, while the tensor-core levels (tc9, tc10) stage the weight through shared memory in
tiles of 64 or more rows of C, which leave few CTAs and a reduction at decode sizes. Here a warp's mma.sync takes
16 rows of the weight as its 16-row operand and 8 rows of x as its 8-wide one, so up to 32 rows of x cost four
instructions a k-step and no conversions; each lane loads its fragments straight from global memory in 16-byte chunks (K permuted the same way
on both operands: a chunk's four words are two k-steps' fragments), with no shared-memory staging, no workspace and
one launch. A block owns 16 rows of the weight, its warps cut K as gemv1's do, their sums meet in a fixed order.
Why: a decode GEMM is the weight's bytes over DRAM bandwidth; with the arithmetic off the CUDA cores, every M up to
32 should stream the weight as gemv1 does at M = 1.
Prediction: M = 1-32 within 10% of gemv1's M = 1 time at N >= 4096 (75-90% of the DRAM roof, 1.0-1.15x torch);
at N = 1024 only 64 blocks of 16 rows, so fewer SMs stream and gemv1 or tc10 stays ahead. BF16 and FP8 per tensor
(m16n8k32 for FP8, which sm_90 runs as its operands converted to FP16, exactly, and two FP16 products).
FP8 block-scaled (_fp8_block, added after the others): a k-block's two k-steps run from zero and are added into the
FP32 sums times B's scale and A's of each of the lane's two rows of x, four FFMA an instruction pair; where tc10 and
gemv1 ran it, whose 64-row tiles and CUDA-core products keep fewer bytes in flight. Predicted: within 5% of the
per-tensor build's time, and that build's lead over tc10 (1.2-1.6x at M <= 16 on the 4096-wide weights). Measured:
docs/gemv.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gemmlab.errors import Refusal, ShapeError
from gemmlab.kernels.cuda.gemv.gemv1_warp_dot import SIGNATURE, GemvKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.spec import SM_COUNT, Traffic
from gemmlab.problem import Problem

# rows of the weight a block: one, two or four of the instruction's 16-row operands; 16 unless a variant pins more
# (fewer reads of x, fewer blocks: measured slower, docs/gemv.md)
ROW_CHOICES = (16, 32, 64)
MAX_M_CHOICES = (8, 16, 32)  # each its own binary: 1, 2 or 4 instructions a k-step
WARP_CHOICES = (1, 2, 4, 8, 16)
PARTIAL_BYTES = 48 * 1024  # static shared memory: the warps' FP32 sums, WARPS x MAX_M x ROWS
MAX_CHUNKS = 20  # 16-byte chunks a lane holds in a round of loads
AUTO_SLICE = -1  # the registered M_SLICE: chosen per problem (slice_for); 0 pins one block a run of the weight's rows
K_LIMIT = 2**31 - 1 - 4 * 64 * 16  # int offsets of the last round's k-blocks (four at most, 64 FP8 values each)


def k_block(vec: int) -> int:
    """K elements of a k-block: four lanes' 16-byte chunks, two k-steps of the instruction."""
    return 4 * vec


def max_m_for(m: int) -> int:
    return next((c for c in MAX_M_CHOICES if c >= m), MAX_M_CHOICES[-1])


def slice_for(m: int, n: int, sm_count: int = SM_COUNT, rows: int = ROW_CHOICES[0]) -> int:
    """Rows of x a block takes (M_SLICE; 0: all of them): where M needs more than the 8-row build and the weight's
    runs of rows would leave half the SMs or more without a block, half of them, so that two blocks share each run of
    the weight's rows (the second reads it from L2) and twice the SMs stream it. Measured at M = 32 against a
    1024-row weight: slices of 16 took 1.5-1.7x off the 32-row build (docs/gemv.md)."""
    if m <= MAX_M_CHOICES[0] or 2 * ceil_div(n, rows) > sm_count:
        return 0
    return max_m_for(ceil_div(m, 2))


def unroll_for(max_m: int, n: int, sm_count: int = SM_COUNT, rows: int = ROW_CHOICES[0]) -> int:
    """k-blocks a lane loads before it uses any: two (one at 32 rows of x, whose four chunks a k-block take the
    registers); twice that where the blocks are fewer than the SMs, which then hold one block each and need more
    loads in flight per warp. More than this costs blocks an SM holds, fewer leave DRAM latency showing
    (results/h200/gemv2_variants{,2}_{bf16,fp8}.json). Halved while a round would hold more than MAX_CHUNKS
    16-byte chunks a lane (more rows of the weight a block: two chunks a k-block each 16), past which ptxas
    spills."""
    unroll = 1 if max_m > 16 else 2
    if ceil_div(n, rows) < sm_count:
        unroll *= 2
    while unroll > 1 and unroll * (2 * rows // 16 + max_m // 8) > MAX_CHUNKS:
        unroll //= 2
    return unroll


def warps_for(max_m: int, k: int, vec: int, unroll: int, rows: int = ROW_CHOICES[0]) -> int:
    """Warps splitting K: sixteen (eight where a lane's accumulators, MAX_M x ROWS / 32, pass eight, whose
    registers a 512-thread block would cap), fewer where a warp would get less than one round of ``unroll``
    k-blocks or their sums would not fit static shared memory."""
    rounds = ceil_div(k, k_block(vec)) // unroll
    most = min(16 if max_m * rows <= 256 else 8, PARTIAL_BYTES // (4 * max_m * rows))
    return max((w for w in WARP_CHOICES if w <= min(most, rounds)), default=1)


def _traffic(problem: Problem, sm_count: int = SM_COUNT, params: dict | None = None) -> Traffic:
    """The weight and C once from DRAM; x's rows once per block, from L2 after the first block's read."""
    p = problem.prec
    m, n, k = problem.shape
    a_bytes, b_bytes, c_bytes = p.input_bytes * m * k, p.input_bytes * n * k, problem.output_bytes * m * n
    rows = (params or {}).get("ROWS") or ROW_CHOICES[0]
    blocks, slices = ceil_div(n, rows), ceil_div(m, (params or {}).get("MAX_M") or max_m_for(m))
    return Traffic(a_bytes + b_bytes, c_bytes, f"B and C once, A once per block of {rows} rows ({blocks * slices} "
                   "blocks)"
                   + (f", B from L2 once per slice of A's rows ({slices})" if slices > 1 else ""),
                   l2_read=a_bytes * blocks + b_bytes * slices, l2_write=c_bytes)


@dataclass(frozen=True, kw_only=True)
class MmaGemvKernel(GemvKernel):
    source: str = "gemv2_mma_swap.cu"
    entry: str = "gemv2_mma_swap"
    unscaled_params: ClassVar[tuple] = ("MAX_M", "M_SLICE")  # a sliced build is its own binary too

    def defines(self) -> dict:
        """The registered spec leaves ROWS, UNROLL and WARPS to ``for_problem`` (0) and M_SLICE too (AUTO_SLICE);
        compiled as it is (``gemmlab verify`` without a GPU), it builds the many-blocks choice at eight rows of x,
        unsliced."""
        defines = super().defines()
        defines["M_SLICE"] = max(defines["M_SLICE"], 0)
        rows = defines["ROWS"] = defines["ROWS"] or ROW_CHOICES[0]
        defines["UNROLL"] = defines["UNROLL"] or unroll_for(defines["MAX_M"], rows * SM_COUNT, rows=rows)
        defines["WARPS"] = defines["WARPS"] or warps_for(defines["MAX_M"], 2**20, self.vec, defines["UNROLL"], rows)
        return defines

    def is_valid(self, problem: Problem) -> Refusal | None:
        # the checks below gemv1's (gemv1's own: 16 rows, a vector B run swapped, are not gemv2's)
        why = super(GemvKernel, self).is_valid(problem)
        if why:
            return why
        if problem.m > MAX_M_CHOICES[-1]:
            return Refusal(f"{self.name} computes at most {MAX_M_CHOICES[-1]} rows of A (M={problem.m}); larger M "
                           "runs on the tensor-core levels", ShapeError)
        if max(problem.shape) > K_LIMIT:
            return Refusal(f"{problem.label()}: a dimension past {K_LIMIT} does not fit the kernel's int element "
                           "offsets (K rounded up to whole rounds of k-blocks)", ShapeError)
        return None

    def unsupported(self, gpu) -> str | None:
        need = (8, 9) if self.fp8 else (8, 0)
        if tuple(gpu.cc) < need:
            kind = "FP8" if self.fp8 else self.precision.upper()
            return f"{self.name} uses {kind} mma.sync (sm_{need[0]}{need[1]} and later); {gpu.name} is older"
        return None

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "MmaGemvKernel":
        """The build for ``problem``: instructions for the fewest rows of x that hold M, or M_SLICE of them
        (ceil(M / MAX_M) blocks on each run of the weight's rows, a slice of x's rows each: where the spec leaves
        M_SLICE to the problem, AUTO_SLICE, ``slice_for``'s choice, so on weights of few rows; a variant pins it,
        M_SLICE=0 none); ROWS, UNROLL and WARPS where the spec leaves them 0 (the registered one: a bench --variant
        pins them) by M, and by N and K."""
        rows = self.params.get("ROWS") or ROW_CHOICES[0]
        m_slice = self.params["M_SLICE"]
        if m_slice == AUTO_SLICE:
            m_slice = slice_for(problem.m, problem.n, sm_count, rows)
        max_m = max_m_for(min(problem.m, m_slice or problem.m))
        unroll = self.params.get("UNROLL") or unroll_for(max_m, problem.n, sm_count, rows)
        params = {**self.params, "MAX_M": max_m, "ROWS": rows, "UNROLL": unroll, "M_SLICE": m_slice,
                  "WARPS": self.params.get("WARPS") or warps_for(max_m, problem.k, self.vec, unroll, rows)}
        return self if params == dict(self.params) else dataclasses.replace(self, params=params)

    def configurations(self) -> list["MmaGemvKernel"]:
        """Every row count of x and rows of the weight a block at their most warps, with both unrolls (many blocks,
        few), each warp count at eight rows of x, and x's rows in slices of 8 and 16 (few blocks); each in every
        output type."""
        chosen = {(m, r, unroll_for(m, n, rows=r))
                  for m in MAX_M_CHOICES for r in ROW_CHOICES for n in (r, r * SM_COUNT)}
        builds = [dataclasses.replace(self, params={**self.params, "MAX_M": m, "ROWS": r, "UNROLL": unroll,
                                                    "WARPS": warps_for(m, 2**20, self.vec, 1, r)})
                  for m, r, unroll in sorted(chosen)]
        builds += [dataclasses.replace(self, params={**self.params, "MAX_M": 8, "ROWS": 16, "UNROLL": 2, "WARPS": w})
                   for w in WARP_CHOICES if w != 16]
        builds += [dataclasses.replace(self, params={**self.params, "MAX_M": m, "ROWS": 16, "UNROLL": unroll_for(m, 16),
                                                     "WARPS": 16, "M_SLICE": m})  # the slices' own code
                   for m in (8, 16)]
        if self.fp8:
            return [b.for_formats(*self.formats, out) for b in builds for out in ("bfloat16", "float32")]
        return self.output_builds(builds)

    def geometry_of_build(self, problem: Problem) -> Geometry:
        slices = ceil_div(problem.m, self.params["MAX_M"])  # blocks side by side on one run of the weight's rows
        return Geometry(grid=(ceil_div(problem.n, self.params["ROWS"]) * slices, 1, 1),
                        block=(self.params["WARPS"] * 32, 1, 1))

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        return _traffic(problem, sm_count, dict(self.for_problem(problem, sm_count).params))

    def swaps(self, problem: Problem) -> bool:
        return False  # N = 1 runs as M x 1 x K: 16 rows of the weight a block, one row of it real


_TYPES = {"bf16": {"IN_BF16": 1, "OUT_BF16": 1}, "fp16": {"IN_F16": 1, "OUT_F16": 1},
          "fp8": {"IN_FP8": 1, "SCALED": 1, "OUT_BF16": 1},
          "fp8_block": {"IN_FP8": 1, "SCALED": 2, "OUT_BF16": 1}}
_TITLES = {"bf16": "mma.sync m16n8k16 BF16, FP32 accumulators, BF16 C",
           "fp16": "mma.sync m16n8k16 FP16, FP32 accumulators, FP16 C",
           "fp8": "mma.sync m16n8k32 FP8, one scale each, FP32 accumulators, BF16 C",
           "fp8_block": "mma.sync m16n8k32 FP8, each 64 of K's products added into FP32 times their 1x128 and "
                        "128x128 block scales, BF16 C"}

SPECS = [
    MmaGemvKernel(name=f"cuda/gemv2_mma_swap_{prec}", level=None, precision=prec,
                  title=f"M <= 32 rows against an N×K weight (w.t()), its 16 rows on mma.sync's row side: "
                        f"{_TITLES[prec]}",
                  params={**_TYPES[prec], "MAX_M": 8, "ROWS": 0, "UNROLL": 0, "WARPS": 0,
                          "M_SLICE": AUTO_SLICE},
                  signature=SIGNATURE, varies=("ROWS", "UNROLL", "WARPS", "M_SLICE"),
                  traffic_model=_traffic, doc=__doc__,
                  unmodeled="latency: each warp's few rounds of loads straight from DRAM, no staging to overlap them")
    for prec in _TITLES
]
