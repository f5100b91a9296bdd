"""tc9: swap A and B for few rows of A: the weight on wgmma's 64-row side, the tokens on a narrow N tile, K split.

What changed against tc6: for ``x @ w.t()`` with M <= 128, tc6 tiles M in 128 rows, so a tile multiplies up to 127
rows of padding and N / 256 tiles leave most SMs idle. tc9 runs tc6's kernel (tc4_persistent.cu, STREAM_K=1) on
the transposed product Cᵀ = w·xᵀ: w (N×K, K-major) is wgmma's A, 128 of its rows a tile; x (M×K, read as the
K-major B that B_KMAJOR selects) is a BN = 64 or 128 wide B tile; the stream-K walk cuts each tile's k-tiles over the
SMs so ceil(N / 128) tiles still fill the GPU; and C leaves from registers transposed (C_TRANSPOSED=1). Narrow
stages (24-32 KB) fit 6-8 deep, so more of the weight is in flight per SM.
Why: at decode sizes the product is the weight's bytes over DRAM; the weight must stream through all SMs at once.
Prediction: 70-85% of the DRAM roof from M = 8 to 64, beyond gemv1's CUDA cores (M > 8) and well above tc6 there.
Measured: docs/tensor_cores/tc9.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gemmlab.errors import LayoutError, Refusal, ShapeError
from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc import tc4_persistent
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.fp8 import fp8_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.plan import SwapPlan
from gemmlab.kernels.cuda.tc.model.stream_k import SK_FILL, SK_SKIP_FILL
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.kernels.plan import COL, Layout
from gemmlab.kernels.spec import GPU, SM_COUNT, KernelSpec, ReadsWeightTransposed, Traffic
from gemmlab.problem import Problem

STAGES = {64: 8, 128: 6}  # ring depth per tile width: (128 + BN) x 128-byte stages in about 192 KB
SWAP = {"BM": 128, "GROUP_M": 1, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "EPI_TMA": 0, "CM": 1, "SK_MIN_KTILES": 16,
        "STREAM_K": 1, "SK_FILL": SK_FILL, "SK_SKIP_FILL": SK_SKIP_FILL, "C_TRANSPOSED": 1}
BF16 = {**SWAP, "B_KMAJOR": 1}
FP8 = {**SWAP, "A_E5M2": 0, "B_E5M2": 0, "OUT_BF16": 1}


def width_for(m: int) -> int:
    return 64 if m <= 64 else 128


@dataclass(frozen=True, kw_only=True)
class NarrowSwap(ReadsWeightTransposed, KernelSpec):
    """A call's x @ w.t() run as the wgmma level ``inner`` on the transposed product."""

    inner: WgmmaKernel
    backend: str = "cuda"
    device: str = GPU
    int32_indices: bool = False
    compiles: ClassVar[bool] = True

    @property
    def fp8(self) -> bool:
        return self.inner.fp8

    @property
    def source(self) -> str:
        return self.inner.source

    @property
    def entry(self) -> str:
        return self.inner.entry

    @property
    def args_struct(self):
        return self.inner.args_struct

    def defines(self) -> dict:
        return self.inner.defines()

    def compile(self, arch: str = "sm_90a"):
        return self.inner.compile(arch)

    fuses_epilogue: bool = True  # tc4's TileStore, from registers, transposed (a bias on the kernel's rows)

    def with_epilogue(self, epilogue, addend_dtype: str | None = None) -> "NarrowSwap":
        runs = super().with_epilogue(epilogue, addend_dtype)
        if runs is self:
            return self
        return dataclasses.replace(runs, inner=self.inner.with_epilogue(epilogue, addend_dtype))

    @property
    def formats(self) -> tuple[str, str]:
        """The call's (A, B) formats: the kernel's B and A."""
        return self.inner.formats[::-1]

    def output_dtype(self, problem: Problem):
        return self.inner.output_dtype(problem)

    def for_formats(self, a: str, b: str, out: str) -> "NarrowSwap":
        """The call's formats, the kernel's B and A, and C's type (stored transposed by the edge path in any)."""
        inner = self.inner.for_formats(b, a, out)
        if inner is self.inner:
            return self
        return dataclasses.replace(self, inner=inner,
                                   params={**self.params, **{k: inner.params[k] for k in self.params}})

    def layout_refusal(self, layout: Layout) -> str:
        return (f"{self.name} reads B as the transpose of an N×K matrix (x @ w.t()), the weight wgmma's A operand "
                "reads K-major; a row-major K×N B would be transposed on every call")

    def unsupported(self, gpu) -> str | None:
        return self.inner.unsupported(gpu)

    def is_valid(self, problem: Problem) -> Refusal | None:
        why = super().is_valid(problem)
        if why:
            return why
        if problem.m > max(STAGES):
            return Refusal(f"{self.name} puts at most {max(STAGES)} rows of A on a narrow wgmma tile (M={problem.m}); "
                           "larger M runs on tc4 and tc6", ShapeError)
        return self.inner.is_valid(problem.transposed())

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> "NarrowSwap":
        """This level with the tile width for ``problem``'s M (64 or 128) and its ring depth."""
        bn = width_for(problem.m)
        if self.inner.params["BN"] == bn:
            return self
        return dataclasses.replace(self, inner=self.inner.with_params({"BN": bn, "STAGES": STAGES[bn]}),
                                   params={**self.params, "BN": bn, "STAGES": STAGES[bn]})

    def kernel_for(self, problem: Problem, sm_count: int = SM_COUNT) -> WgmmaKernel:
        """The wgmma build that runs ``problem`` (stream-K where it splits a tile, whole tiles where not)."""
        return self.for_problem(problem, sm_count).inner.for_problem(problem.transposed(), sm_count)

    def launch_geometry(self, problem: Problem, sm_count: int = SM_COUNT):
        return self.kernel_for(problem, sm_count).launch_geometry(problem.transposed(), sm_count)

    def staged_operands(self, problem: Problem, layout: Layout) -> tuple[str, ...]:
        """The kernel's, on the transposed problem with B K-major, named as the call's operands (its A is w)."""
        staged = self.kernel_for(problem).staged_operands(problem.transposed(), Layout(b=COL))
        return tuple(x for x in "AB" if {"A": "B", "B": "A"}[x] in staged)

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        return self.for_problem(problem, sm_count).inner.traffic(problem.transposed(), sm_count)

    def configurations(self) -> list["NarrowSwap"]:
        """Both tile widths, in every output type its precision writes."""
        builds = [self.for_problem(Problem(m, 1, 1, self.precision)) for m in (64, 128)]
        return [b.for_formats(*self.formats, out) for b in builds for out in self.prec.output_dtypes]

    def plan(self, problem: Problem, layout: Layout = Layout(b=COL)) -> SwapPlan:
        from gemmlab.device import require_gpu

        return self.make_plan(problem, layout, require_gpu(self.name))

    def make_plan(self, problem: Problem, layout: Layout, info, gpu=None) -> SwapPlan:
        from gemmlab.kernels.cuda.tc.model import plan as tc_plan

        if layout not in self.layouts:
            raise LayoutError(self.layout_refusal(layout))
        runs = self.kernel_for(problem, info.sm_count)
        return tc_plan.swapped_plan(self.for_problem(problem, info.sm_count), runs, problem, layout, info,
                                    gpu or tc_plan.RESOURCES,
                                    f"A and B swapped: the kernel computes Cᵀ = B·Aᵀ ({problem.n}x{problem.m}), w as "
                                    f"wgmma's A, x on a {runs.params['BN']}-wide B tile, C stored transposed")


def _level(precision: str, base: dict, constraints, title: str) -> NarrowSwap:
    params = {**base, "BN": 64, "STAGES": STAGES[64]}
    inner = WgmmaKernel(name=f"cuda/tc9_narrow_swap_{precision}", level=9, precision=precision, kind="persistent",
                        title=title, source="tc4_persistent.cu", entry="tc4_persistent", params=params,
                        constraints=constraints,
                        traffic_model=wgmma_traffic(precision, params["BM"], params["BN"], stream_k=True, group_m=1),
                        doc=__doc__, unmodeled=tc4_persistent.EPILOGUE)
    return NarrowSwap(name=inner.name, level=9, precision=precision, title=title, params=dict(params), inner=inner,
                      doc=__doc__, unmodeled="the stream-K fixup: each split tile's owner waits for its partials")


SPECS = [
    *(_level(prec, {**BF16, **output_params(prec)}, lambda p: wgmma_constraints(p, specialized=True),
             f"{prec} x @ w.t() for M <= 128 as Cᵀ = w·xᵀ: 128 rows of w per tile, x on a 64/128-wide B tile, "
             "stream-K") for prec in ("bf16", "fp16")),
    _level("fp8", FP8, lambda p: wgmma_constraints(p, specialized=True) + fp8_constraints(p, promoted=False),
           "fp8 x @ w.t() for M <= 128 as Cᵀ = w·xᵀ, per-tensor scales, stream-K, BF16 C"),
]
