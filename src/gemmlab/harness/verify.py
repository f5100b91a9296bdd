"""Verification: one launch on fresh N(0,1) inputs into a NaN-poisoned C, compared with the float64 reference.

Where a kernel runs: CPU kernels on NumPy arrays; GPU kernels on CuPy arrays; numba kernels on NumPy arrays under
the CUDA simulator when there is no GPU. A CUDA C kernel on a machine without a GPU cannot run: ``check``
raises NoGPUError and ``compile_check`` is what can be done instead.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np

from gemmlab.errors import GemmlabError, NoGPUError
from gemmlab import device
from gemmlab.harness.reference import ErrorReport, array_module, compare, reference, tolerance_for
from gemmlab.kernels.spec import CPU, KernelSpec
from gemmlab.problem import Problem


@dataclass(frozen=True)
class CheckResult:
    kernel: str
    problem: Problem
    where: str  # "cpu" | "gpu" | "simulator"
    error: ErrorReport | None
    reason: str = ""  # why it was not run, or what went wrong

    @property
    def passed(self) -> bool:
        return self.error is not None and self.error.passed

    @property
    def status(self) -> str:
        if self.error is None:
            return "skipped" if self.reason.startswith("skipped") else "error"
        return "passed" if self.error.passed else "FAILED"


def where_runs(spec: KernelSpec) -> str:
    """Where ``spec`` would run on this machine: cpu, gpu or simulator; raises NoGPUError if nowhere."""
    if spec.device == CPU:
        return "cpu"
    if spec.backend == "numba" and device.configure_numba() == "simulator":
        return "simulator"
    device.require_gpu(spec.name)
    return "gpu"


def array_module_for(where: str):
    if where == "gpu":
        import cupy

        return cupy
    return np


def run_once(spec: KernelSpec, problem: Problem, a, b, launch=None):
    """Launch ``spec`` once into a NaN-poisoned C and return C (synchronized)."""
    xp = array_module(a)
    c = xp.full((problem.m, problem.n), xp.nan, dtype=spec.output_dtype(problem))
    (launch or spec.build(problem))(a, b, c)
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()
    return c


def check(spec: KernelSpec, problem: Problem, seed: int = 0, launch=None, inputs=None, ref=None) -> CheckResult:
    """Verify ``spec`` on ``problem`` with inputs drawn from ``seed`` (or the given inputs and reference)."""
    reason = spec.is_valid(problem)
    if reason:
        return CheckResult(spec.name, problem, "", None, f"skipped: {reason}")
    where = where_runs(spec)
    xp = array_module_for(where)
    a, b = inputs if inputs is not None else spec.make_inputs(problem, seed, xp)
    if ref is None:
        ref = reference(a, b)
    if spec.epilogue is not None:  # the fused epilogue on the float64 product, with an addend drawn here
        ref, launch = _with_epilogue(spec, problem, ref, seed, xp, launch)
    try:
        c = run_once(spec, problem, a, b, launch)
    except GemmlabError:
        raise
    except Exception as exc:  # a launch failure is a failed kernel, reported, never a crash of the sweep
        return CheckResult(spec.name, problem, where, None, f"{type(exc).__name__}: {exc}")
    error = compare(c, ref, tolerance_for(problem), problem.prec.recipe_tolerance)
    return CheckResult(spec.name, problem, where, error)


def draw_addend(spec: KernelSpec, problem: Problem, seed: int, xp):
    """The addend of ``spec``'s epilogue for ``problem`` (None if it adds none): N(0, K) values, the product's scale,
    a length-N bias or an M×N matrix, in the spec's addend dtype."""
    from gemmlab.problem import np_dtype

    kind = spec.epilogue.addend
    if kind is None:
        return None
    rng = xp.random.default_rng(seed + 1)
    shape = (problem.n,) if kind == "bias" else (problem.m, problem.n)
    d = rng.standard_normal(shape, dtype=xp.float32) * np.float32(problem.k ** 0.5)
    return d.astype(np_dtype(spec.addend_dtype or "float32"))


def _with_epilogue(spec: KernelSpec, problem: Problem, ref, seed: int, xp, launch):
    """The reference with ``spec``'s epilogue applied in float64 (FP8's exact and recipe products both), and the
    launch of a plan that reads the addend drawn for it."""
    from gemmlab.harness.reference import ScaledReference

    d = draw_addend(spec, problem, seed, xp)
    if isinstance(ref, ScaledReference):
        ref = ScaledReference(spec.epilogue.apply_numpy(ref.exact, d),
                              None if ref.recipe is None else spec.epilogue.apply_numpy(ref.recipe, d))
    else:
        ref = spec.epilogue.apply_numpy(ref, d)
    from gemmlab.kernels.plan import Plan

    if launch is None:
        plan = spec.plan(problem, spec.natural_layout(problem))
        launch = plan.run
    else:  # the harness's own plan (which it times after): its run
        plan = getattr(launch, "__self__", None)
        if not isinstance(plan, Plan):
            raise GemmlabError(f"{spec.name} fuses {spec.epilogue.describe()}: verify binds its addend to a plan, so "
                               "the launch must be a plan's run")
    plan.bind_epilogue(None if d is None else (0, 1) if d.ndim == 1 else (problem.n, 1))
    if d is not None:
        plan.set_addend(d if xp is np else d.data.ptr)
        plan.keep = d  # read by address on every later launch of the plan (the harness times it after)
    return ref, launch


# Dimensions the sweep draws from: tiny, around warp and tile multiples, past a tile, odd large.
SWEEP_DIMS = (1, 2, 3, 17, 31, 33, 127, 129, 255, 257, 1000, 4097)
# Shapes that stress one dimension: tall-skinny, short-wide, K=1, long K; and the seed shape made ragged, more
# tiles than SMs (the persistent levels' multi-wave paths: tc4's narrower tiles, tc6's stream-K tail), once with N
# a multiple of 8, where 16-bit C leaves by TMA with edge tiles in M and N and several tiles per CTA (tc4's and
# tc8's boxes of C held for the next tile).
SPECIAL_SHAPES = ((4097, 3, 17), (3, 4097, 17), (257, 255, 1), (1, 1, 4097), (33, 31, 4097), (1000, 1, 129),
                  (1, 1000, 129), (2047, 3071, 4097), (2047, 3000, 4097))


def sweep_shapes(full: bool = False, sample: int = 24, seed: int = 0, max_flops: float | None = None):
    """The verify sweep: all M×N×K combinations of SWEEP_DIMS with ``full``, else a seeded sample of them,
    plus the special shapes. ``max_flops`` drops shapes too large for a slow backend (the simulator)."""
    combos = list(itertools.product(SWEEP_DIMS, repeat=3))
    if not full:
        rng = random.Random(seed)
        combos = rng.sample(combos, sample)
    shapes = sorted(set(combos) | set(SPECIAL_SHAPES), key=lambda s: (s[0] * s[1] * s[2], s))
    if max_flops is not None:
        shapes = [s for s in shapes if 2 * s[0] * s[1] * s[2] <= max_flops]
    return shapes


# The simulator runs every thread in Python; these shapes are ragged yet finish in seconds.
SIMULATOR_SHAPES = ((1, 1, 1), (33, 17, 65), (70, 45, 31), (2, 129, 3), (65, 3, 1))


def compile_check(spec: KernelSpec, arch: str = "sm_90a"):
    """Compile a CUDA C kernel without a GPU; returns its ptxas report (registers, spills, shared memory)."""
    if not spec.compiles:
        raise NoGPUError(f"{spec.name} has nothing to compile without a GPU")
    return spec.compile(arch).report
