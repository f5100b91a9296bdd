"""CudaKernel: the spec of a CUDA C++ kernel compiled by NVRTC and launched through the driver.

A level's .py file declares its source, entry point, tile parameters (passed to NVRTC as -D defines),
the constraints between them and its launch geometry; this class compiles and loads it into a plan whose launch
writes three pointers into a prepared parameter buffer and calls cuLaunchKernel (gemmlab.driver).
The kernel signature is the seeds': ``kernel(float *C, const float *A, const float *B, int M, int N, int K)``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from gemmlab import driver
from gemmlab.kernels.cuda.launch.gpu import RESOURCES, Resources
from gemmlab.kernels.cuda.launch.nvrtc import DEFAULT_ARCH, Compiled, compile_cuda
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import ROW_MAJOR, Layout, Plan
from gemmlab.kernels.spec import GPU, KernelSpec
from gemmlab.problem import BatchedProblem, Problem, get_precision, np_dtype

SEED_SIGNATURE = (("C", "ptr"), ("A", "ptr"), ("B", "ptr"), ("M", "i32"), ("N", "i32"), ("K", "i32"))
# what a BATCHED=1 build takes after its own parameters: A's and B's batch strides in elements (0: broadcast); the
# product is blockIdx.z, and C the contiguous (batch, M, N) array
BATCH_SIGNATURE = (("stride_a", "i64"), ("stride_b", "i64"))
MAX_GRID_Z = 65535
# epilogue.cuh's EpiArgs: a fused epilogue's addend and constants, one parameter after the seeds' (EPI=1 builds)
EPI_ARGS = driver.Struct((("D", "ptr"), ("d_rs", "i64"), ("d_cs", "i64"), ("alpha", "f32"), ("beta", "f32")))


def bind_epilogue(params: driver.Params, epilogue, strides: tuple | None, transposed: bool = False) -> None:
    """alpha, beta and the addend's strides into a plan's EpiArgs; a kernel that stores the transpose of its
    product (``transposed``) reads D with the strides swapped."""
    params.alpha, params.beta = epilogue.alpha, epilogue.beta
    rs, cs = strides or (0, 0)
    params.d_rs, params.d_cs = (cs, rs) if transposed else (rs, cs)

# C's type in the CUDA C sources: one define per 16-bit type (tc_out.cuh, gemv_operands.cuh); FP32 where none is set
OUT_DEFINES = {"bfloat16": "OUT_BF16", "float16": "OUT_F16"}


def output_params(precision: str) -> dict:
    """The define that makes a kernel of ``precision`` write its default C (Precision.output_dtypes' first): OUT_BF16
    for BF16, OUT_F16 for FP16, none for FP32 C."""
    out = get_precision(precision).output_dtype
    return {OUT_DEFINES[out]: 1} if out in OUT_DEFINES else {}


def run_on_cupy(plan: Plan, a, b, c) -> None:
    """The harness's call of a plan that launches on device addresses: CuPy arrays (B as the transpose view of an N×K
    array), or gemmlab.fp8.Scaled operands (B stored N×K) whose scales' addresses follow C's; on CuPy's current
    stream."""
    import cupy

    stream = cupy.cuda.get_current_stream().ptr
    if plan.spec.fp8:
        plan.launch(a.data.data.ptr, b.data.data.ptr, c.data.ptr, stream, a.scale.data.ptr, b.scale.data.ptr)
    else:
        plan.launch(a.data.ptr, b.data.ptr, c.data.ptr, stream)


@dataclass
class CudaPlan(Plan):
    """One launch of one kernel: the operands' addresses written into its parameters, then ``fill`` (a level's own
    per-call values, if it has any)."""

    main: driver.Launch | None = None
    fill: Callable | None = None
    buffers: list = field(default_factory=list)  # workspaces (v11's partials and tickets), kept alive with the plan

    def __post_init__(self):
        self._c, self._a, self._b = self.main.params.views("C", "A", "B")

    def bind_epilogue(self, strides: tuple | None) -> None:
        bind_epilogue(self.main.params, self.spec.epilogue, strides)

    def set_addend(self, d: int) -> None:
        self.main.params.D = d

    def launch(self, a, b, c, stream: int = 0) -> None:
        self._launch(self.main, a, b, c, stream)

    def _launch(self, main: driver.Launch, a, b, c, stream: int) -> None:
        self._c.value, self._a.value, self._b.value = c, a, b
        if self.fill is not None:
            self.fill(self.main.params, a, b, c)
        main.launch(stream)


@dataclass
class SlicedBatchPlan(CudaPlan):
    """A batch past gridDim.z's MAX_GRID_Z products: slices of at most MAX_GRID_Z products, one launch each, every
    operand's address stepped to the slice's first product. The launches share one parameter buffer: the driver
    copies a launch's arguments when it is enqueued, so the next slice's addresses may overwrite them."""

    slices: list = field(default_factory=list)  # (driver.Launch, first product)
    product_bytes: tuple = (0, 0, 0)  # A's, B's and C's bytes from one product to the next

    def launch(self, a, b, c, stream: int = 0) -> None:
        sa, sb, sc = self.product_bytes
        for part, first in self.slices:
            self._launch(part, a + first * sa, b + first * sb, c + first * sc, stream)


@dataclass(frozen=True, kw_only=True)
class CudaKernel(KernelSpec):
    source: str = ""  # file under kernels/cuda/
    entry: str = ""  # extern "C" kernel name
    geometry: Callable[[Problem, dict], Geometry] | None = None
    constraints: Callable[[dict], list[str]] = field(default=lambda params: [])
    backend: str = "cuda"
    device: str = GPU
    signature: tuple = SEED_SIGNATURE  # the kernel's parameters, in order (gemmlab.driver.Params)
    compiles: ClassVar[bool] = True

    def config_error(self) -> str | None:
        broken = self.constraints(dict(self.params))
        return "; ".join(broken) if broken else None

    def defines(self) -> dict:
        return {**self.params, **self.epilogue_defines()}

    @property
    def parameters(self) -> tuple:
        """The kernel's parameters: its ``signature``, then EpiArgs where it fuses an epilogue (EPI=1)."""
        return (*self.signature, ("epi", EPI_ARGS)) if self.epilogue is not None else self.signature

    # ---- C's type ---------------------------------------------------------------------------------------------
    def output_dtype(self, problem: Problem):
        """C's dtype: the 16-bit type an OUT_* define selects, else FP32, what the sources write without one (a
        16-bit level declares its default C with ``output_params``)."""
        import numpy as np

        for dtype, define in OUT_DEFINES.items():
            if self.params.get(define, 0):
                return np_dtype(dtype)
        return np.dtype(np.float32)

    def for_formats(self, a: str, b: str, out: str) -> "CudaKernel":
        """This kernel writing C in ``out``, one of its precision's output dtypes (each its own binary: the OUT_*
        defines); FP8's formats are the FP8 levels' own."""
        prec = self.prec
        if prec.scaled or (a, b) != (prec.input_dtype, prec.input_dtype) or out not in prec.output_dtypes:
            return super().for_formats(a, b, out)
        if out == str(self.output_dtype(Problem(1, 1, 1, self.precision))):
            return self
        return self.with_params({define: int(out == dtype) for dtype, define in OUT_DEFINES.items()
                                 if out == dtype or define in self.params})

    def output_builds(self, specs: list) -> list:
        """``specs`` (builds of this kernel) in each output type its precision writes."""
        dtype = self.prec.input_dtype
        return [s.for_formats(dtype, dtype, out) for s in specs for out in self.prec.output_dtypes]

    def compile(self, arch: str = DEFAULT_ARCH) -> Compiled:
        return compile_cuda(self.source, self.entry, self.defines(), arch)

    def launch_geometry(self, problem: Problem) -> Geometry:
        return self.geometry(problem, dict(self.params))

    def fixed_args(self, problem: Problem) -> dict:
        """Parameter values set once per plan."""
        m, n, k = problem.shape
        if isinstance(problem, BatchedProblem):
            return {"M": m, "N": n, "K": k, "stride_a": problem.stride_a, "stride_b": problem.stride_b}
        return {"M": m, "N": n, "K": k}


    def batched(self) -> "CudaKernel":
        """The BATCHED=1 build of this spec: the batch strides after its parameters, the product in blockIdx.z."""
        return dataclasses.replace(self, params={**self.params, "BATCHED": 1},
                                   signature=self.signature + BATCH_SIGNATURE)

    fill = None  # (params, a, b, c) -> None: per-call values beyond the operands' addresses, if a level has any

    def plan(self, problem: Problem, layout: Layout = ROW_MAJOR) -> CudaPlan:
        from gemmlab.device import require_gpu

        return self.make_plan(problem, layout, require_gpu(self.name))

    def make_plan(self, problem: Problem, layout: Layout, info, gpu: Resources = RESOURCES) -> CudaPlan:
        """The plan on the GPU ``info`` describes, its loads and allocations through ``gpu``."""
        batch = problem.batch if isinstance(problem, BatchedProblem) else 0
        if batch and not self.params.get("BATCHED", 0):
            return self.batched().make_plan(problem, layout, info, gpu)
        geo = self.launch_geometry(problem)
        if batch:  # a product per gridDim.z index, MAX_GRID_Z at most a launch
            geo = dataclasses.replace(geo, grid=(geo.grid[0], geo.grid[1], min(batch, MAX_GRID_Z)))
        kernel = gpu.kernel(self.compile(info.arch), geo.smem)
        params = driver.Params(self.parameters)
        for name, value in self.fixed_args(problem).items():
            setattr(params, name, value)
        main = driver.Launch(int(kernel.handle), geo.grid, geo.block, geo.smem, params)
        steps = [f"{self.entry}: grid {geo.grid}, block {geo.block}, {geo.smem} B dynamic shared memory"]
        if batch <= MAX_GRID_Z:
            if batch:
                steps.append(f"batched: {batch} products in one launch, one per gridDim.z index, A's matrices "
                             f"{problem.stride_a} and B's {problem.stride_b} elements apart (0: broadcast)")
            return CudaPlan(self, problem, layout, steps=steps, main=main, fill=self.fill)
        last = batch - MAX_GRID_Z * (ceil_div(batch, MAX_GRID_Z) - 1)
        tail = main if last == MAX_GRID_Z else \
            driver.Launch(int(kernel.handle), (*geo.grid[:2], last), geo.block, geo.smem, params)
        firsts = range(0, batch, MAX_GRID_Z)
        slices = [(main if first + MAX_GRID_Z < batch else tail, first) for first in firsts]
        steps.append(f"batched: {batch} products in {len(slices)} launches of at most {MAX_GRID_Z} (gridDim.z's "
                     f"limit), one per gridDim.z index, A's matrices {problem.stride_a} and B's {problem.stride_b} "
                     "elements apart (0: broadcast)")
        e = problem.prec.input_bytes
        return SlicedBatchPlan(self, problem, layout, steps=steps, main=main, fill=self.fill, slices=slices,
                               product_bytes=(e * problem.stride_a, e * problem.stride_b,
                                              problem.output_bytes * problem.m * problem.n))
