"""Shared pieces of the FP32 ladder's specs (v3 and up): launch geometry and the checks every level makes.

Each level's own constraints live in its module; these are the limits of the hardware and of the shared
device helpers in sgemm_common.cuh, phrased as the reason a configuration is rejected.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Mapping

from gemmlab.kernels.cuda.launch.gpu import RESOURCES, Resources
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.spec import SM_COUNT, Traffic, tiled_traffic
from gemmlab.problem import Problem

STATIC_SMEM_LIMIT = 48 * 1024  # a block's static __shared__ arrays
DYNAMIC_SMEM_LIMIT = 227 * 1024  # sm_90 opt-in maximum per block
SM_SMEM = 228 * 1024  # shared memory per SM, shared by the resident blocks
SM_REGISTERS = 65536


def block_tile_grid(threads_of):
    """Geometry of the levels that launch a 2D grid of BM×BN block tiles: x over N, y over M."""

    def geometry(problem, p):
        return Geometry(grid=(ceil_div(problem.n, p["BN"]), ceil_div(problem.m, p["BM"]), 1),
                        block=(threads_of(p), 1, 1))

    return geometry


def thread_errors(threads: int) -> list[str]:
    errors = []
    if threads > 1024:
        errors.append(f"{threads} threads per block, past the 1024 limit")
    if threads % 32:
        errors.append(f"{threads} threads per block is not a whole number of warps")
    return errors


def divides(errors: list[str], a: int, b: int, what: str) -> None:
    """Append '<what>: a does not divide b' when it does not."""
    if a <= 0 or b % a:
        errors.append(f"{what}: {a} does not divide {b}")


def traffic_of(p, warp: tuple[int, int] | None = None):
    """The tiled model of a level's parameters: its warp tile (WM×WN unless given) and tile order (GROUP_M)."""
    warp = warp or (p["WM"], p["WN"])
    return lambda problem, sm_count=SM_COUNT: tiled_traffic(problem, p["BM"], p["BN"], warp=warp,
                                                            group_m=p.get("GROUP_M", 1))


def thread_tile_warp(p, tm: int, tn: int) -> tuple[int, int]:
    """The rows and columns of C one warp covers when threads hold TM×TN results in row-major order across the
    block tile (v4-v6): BN/TN threads along a row, the warp's 32 spread over 32/(BN/TN) rows of threads."""
    lanes_n = min(32, p["BN"] // tn)
    return 32 // lanes_n * tm, lanes_n * tn


def scalar_staging_errors(p: dict, threads_of, divisors: list[tuple[str, str]]) -> list[str]:
    """v3 and v4: each (tile, dim) must divide its block dimension, the staging loops split the A and B tiles
    evenly over the threads, and both tiles fit the static shared-memory limit."""
    errors = []
    for tile, dim in divisors:
        divides(errors, p[tile], p[dim], f"{tile} must divide {dim}")
    if errors:
        return errors
    threads = threads_of(p)
    errors += thread_errors(threads)
    divides(errors, threads, p["BM"] * p["BK"], "threads must split the A tile evenly")
    divides(errors, threads, p["BK"] * p["BN"], "threads must split the B tile evenly")
    if 4 * p["BK"] * (p["BM"] + p["BN"]) > STATIC_SMEM_LIMIT:
        errors.append("the A and B tiles exceed 48 KiB of static shared memory")
    return errors


def staged_quads_errors(p: dict, threads: int) -> list[str]:
    """sgemm_common's 128-bit staging (v5 to v7): the A and B tiles split into quads, evenly over threads."""
    errors = thread_errors(threads)
    divides(errors, 4, p["BK"], "BK must be a multiple of 4 (A is staged in quads along k)")
    divides(errors, 4, p["BN"], "BN must be a multiple of 4 (B is staged in quads along n)")
    if not errors:
        divides(errors, threads, p["BM"] * p["BK"] // 4, "threads must split the A tile's quads evenly")
        divides(errors, threads, p["BK"] * p["BN"] // 4, "threads must split the B tile's quads evenly")
    smem = 4 * p["BK"] * (p["BM"] + 4 + p["BN"])
    if smem > STATIC_SMEM_LIMIT:
        errors.append(f"the A and B tiles need {smem} bytes of static shared memory, past 48 KiB")
    return errors


def warptile_threads(p) -> int:
    """Threads of the warp-tiled levels (v7 and up): one warp per WM×WN warp tile of the BM×BN block tile."""
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def warptile_errors(p: dict, names: tuple[str, ...]) -> list[str]:
    """v8 and up: every parameter present, warp tiles dividing the block tile, 4·RM×4·RN per lane over 32 lanes,
    quads along BM and BN, a legal block size."""
    missing = [name for name in names if name not in p]
    if missing:
        return [f"missing parameters {', '.join(missing)}"]
    errors = []
    divides(errors, p["WM"], p["BM"], "WM must divide BM")
    divides(errors, p["WN"], p["BN"], "WN must divide BN")
    divides(errors, 4 * p["RM"], p["WM"], "a lane's 4·RM rows must divide WM")
    divides(errors, 4 * p["RN"], p["WN"], "a lane's 4·RN columns must divide WN")
    divides(errors, 4, p["BM"], "BM must be a multiple of 4 (rows of the transposed A tile are read as quads)")
    divides(errors, 4, p["BN"], "BN must be a multiple of 4 (B is loaded in quads)")
    for name in ("GROUP_M", "MIN_BLOCKS"):
        if p[name] < 1:
            errors.append(f"{name}={p[name]} must be at least 1")
    if errors:
        return errors
    lanes = (p["WM"] // (4 * p["RM"])) * (p["WN"] // (4 * p["RN"]))
    if lanes != 32:
        errors.append(f"a {p['WM']}×{p['WN']} warp tile with {4 * p['RM']}×{4 * p['RN']} per lane needs {lanes} "
                      "lanes, not 32")
    return errors + thread_errors(warptile_threads(p))


def residency_errors(p: dict, smem: int, what: str) -> list[str]:
    """Shared memory within the per-block limit, and MIN_BLOCKS blocks fitting an SM's shared memory and
    registers (the __launch_bounds__ minimum would otherwise force spills)."""
    errors = []
    if smem > DYNAMIC_SMEM_LIMIT:
        errors.append(f"{what} need {smem} bytes of shared memory, past the {DYNAMIC_SMEM_LIMIT}-byte per-block limit")
    elif p["MIN_BLOCKS"] * smem > SM_SMEM:
        errors.append(f"MIN_BLOCKS={p['MIN_BLOCKS']} blocks of {smem} bytes exceed an SM's shared memory")
    t = warptile_threads(p)
    if p["MIN_BLOCKS"] * t * 32 > SM_REGISTERS:
        errors.append(f"MIN_BLOCKS={p['MIN_BLOCKS']} blocks of {t} threads leave under 32 registers a thread")
    return errors


def b_stride(p: dict) -> int:
    """Floats between two k rows of a shared B tile: BN, or BN + 4 where B is stored transposed (B_KMAJOR=1),
    padded as A's tile is so that the transposing stores spread over the banks."""
    return p["BN"] + 4 * p.get("B_KMAJOR", 0)


@dataclass(frozen=True, kw_only=True)
class KMajorBKernel(CudaKernel):
    """A level whose source also reads B handed over as the N×K matrix Bᵀ (x @ w.t(), what nn.Linear computes) in
    place: B_KMAJOR=1 loads B's tile along K, as A's, and stores it transposed into shared memory. The plan sets it
    from the operands' layout, so a call with w.t() makes no row-major copy of w."""

    @property
    def layouts(self) -> frozenset:
        return frozenset({ROW_MAJOR, Layout(b=COL)})

    def for_layout(self, layout: Layout) -> "KMajorBKernel":
        """The build that reads ``layout``: B_KMAJOR=1 for a K-major B (its own binary, and its own parameters in
        the plan's explain())."""
        if layout.b != COL or self.params.get("B_KMAJOR", 0):
            return self
        return dataclasses.replace(self, params={**self.params, "B_KMAJOR": 1})

    def make_plan(self, problem: Problem, layout: Layout, info, gpu: Resources = RESOURCES):
        return CudaKernel.make_plan(self.for_layout(layout), problem, layout, info, gpu)


@dataclass(frozen=True, kw_only=True)
class AutotunedKernel(KMajorBKernel):
    """A CudaKernel whose tile parameters are chosen per problem: the ``gemmlab tune`` cache of ``family`` for
    this GPU (the shape, else the nearest cached shape), then the ``tuned`` table measured when the level was
    written (this GPU's rows, else those of the GPU of its chip they were measured on), then ``params`` (the
    fallback). ``make`` builds the plain spec of the chosen parameters."""

    family: str = ""
    tuned: Mapping[str, Mapping[str, dict]] = field(default_factory=dict)
    make: Callable[..., CudaKernel] | None = None

    def params_for(self, problem: Problem, gpu_name: str | None = None, info=None) -> dict:
        """``info``: the plan's GPU (a GPUInfo), where the caller has it; else the GPU called ``gpu_name`` (default
        this machine's)."""
        from gemmlab.kernels import tuned

        gpu_name = _gpu_name(gpu_name if info is None else info.name)
        return (tuned.lookup(gpu_name, problem, tuned.cache_path(self.family))
                or tuned.nearest(self._built_in(gpu_name, info), problem) or dict(self.params))

    def _built_in(self, gpu_name: str, info=None) -> Mapping[str, dict]:
        """The ``tuned`` rows of this GPU, else of the GPU of its chip they were measured on (an H100 SXM: the
        H200's; gemmlab.device.shipped_name_for, on ``info`` where given)."""
        from gemmlab.device import shipped_name_for

        return self.tuned.get(gpu_name) or self.tuned.get(shipped_name_for(gpu_name, info), {})

    def configurations(self, gpu_name: str | None = None) -> list[CudaKernel]:
        """Every distinct plain spec this kernel can run on this GPU (the cached choices, the built-in ones, the
        fallback), for checks that must cover each, such as the sanitizer's."""
        from gemmlab.kernels import tuned

        gpu_name = _gpu_name(gpu_name)
        entries = [*tuned.load_cache(tuned.cache_path(self.family)).get(gpu_name, {}).values(),
                   *self._built_in(gpu_name).values(), {"params": self.params}]
        distinct = []
        for entry in entries:
            if dict(entry["params"]) not in distinct:
                distinct.append(dict(entry["params"]))
        return [self.make(self.name, self.level, self.title, p, self.doc) for p in distinct]

    def concrete(self, problem: Problem, gpu_name: str | None = None, info=None) -> CudaKernel:
        """The plain spec this problem runs with (and this spec's fused epilogue); ``info`` as params_for's."""
        import dataclasses

        made = self.make(self.name, self.level, self.title, self.params_for(problem, gpu_name, info), self.doc)
        if self.epilogue is None:
            return made
        return dataclasses.replace(made, epilogue=self.epilogue, addend_dtype=self.addend_dtype,
                                   fuses_epilogue=True)

    def for_problem(self, problem: Problem, sm_count: int = SM_COUNT) -> CudaKernel:
        return self.concrete(problem)  # a tuned tile per shape, whatever the SMs

    def traffic(self, problem: Problem, sm_count: int = SM_COUNT, layout=None) -> Traffic:
        return self.concrete(problem).traffic(problem, sm_count)

    def launch_geometry(self, problem: Problem):
        return self.concrete(problem).launch_geometry(problem)

    def plan(self, problem: Problem, layout=ROW_MAJOR):
        return self.concrete(problem).plan(problem, layout)

    def make_plan(self, problem: Problem, layout: Layout, info, gpu: Resources = RESOURCES):
        return self.concrete(problem, info=info).make_plan(problem, layout, info, gpu)


def _gpu_name(name: str | None) -> str:
    """The given GPU name, else the present GPU's, else "" (no GPU: only the fallback parameters apply)."""
    if name is not None:
        return name
    from gemmlab.device import gpu

    info = gpu()
    return info.name if info else ""
