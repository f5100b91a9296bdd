"""KernelSpec: what every kernel declares about itself, so the harness can check, run and explain it.

A spec names the kernel (``backend/level_name``), its ladder level, precision and tile parameters, says whether
a problem is valid for it (and why not), models its global-memory traffic (the seeds' analysis), and builds a
launcher. Kernels never time or verify themselves: the harness does both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from gemmlab.errors import DTypeError, Refusal, SizeLimitError
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout, Plan
from gemmlab.problem import Problem

INT32_MAX = 2**31 - 1

# Where a kernel runs, which decides the array module the harness hands it.
CPU, GPU = "cpu", "gpu"


@dataclass(frozen=True)
class Traffic:
    """Modeled bytes one launch moves between global memory and the SMs.

    ``global_read`` counts every load a thread (or a copy engine) issues to global memory, as if no cache
    absorbed any of it: the seeds' model. Caches make the DRAM bytes smaller; ``gemmlab profile`` measures them.
    """

    global_read: float
    global_write: float
    basis: str  # one line: where the numbers come from

    @property
    def total(self) -> float:
        return self.global_read + self.global_write

    def intensity(self, problem: Problem) -> float:
        return problem.flops() / self.total


def naive_traffic(problem: Problem) -> Traffic:
    """One thread per C element, each reading a row of A and a column of B: 2MNK loads."""
    p = problem.prec
    m, n, k = problem.shape
    return Traffic(p.input_bytes * 2 * m * n * k, p.output_bytes * m * n,
                   "every thread reads its row of A and column of B: 2MNK elements")


def tiled_traffic(problem: Problem, bm: int, bn: int, split_k: int = 1) -> Traffic:
    """A BM×BN output tile reads a BM×K panel of A and a K×BN panel of B once.

    A is then read ceil(N/BN) times and B ceil(M/BM) times: the seeds' tiled intensity
    2·BM·BN·BK / ((BM+BN)·BK·4) in the limit of large, exact tiles. Split-K adds a write and a
    read of each partial tile.
    """
    p = problem.prec
    m, n, k = problem.shape
    tiles_n, tiles_m = -(-n // bn), -(-m // bm)
    read = p.input_bytes * (m * k * tiles_n + k * n * tiles_m)
    write = p.output_bytes * m * n
    basis = f"A read once per {bn}-column tile, B once per {bm}-row tile"
    if split_k > 1:
        read += 4 * m * n * split_k
        write += 4 * m * n * split_k
        basis += f", {split_k} FP32 partial tiles written and reduced"
    return Traffic(read, write, basis)


def compulsory_traffic(problem: Problem) -> Traffic:
    p = problem.prec
    m, n, k = problem.shape
    return Traffic(p.input_bytes * (m * k + k * n), p.output_bytes * m * n, "each input read once, C written once")


@dataclass(frozen=True, kw_only=True)
class KernelSpec:
    """Base of every kernel. Subclasses fill ``build``; most only pass arguments."""

    name: str  # "cuda/v2_smem": backend, then level and what changed
    backend: str  # cpu | cuda | numba | peer
    level: int | None  # ladder rung; the same number means the same algorithm in every backend
    precision: str  # fp32 | tf32 | bf16 | fp8 | fp8_block
    title: str  # one line: what this level does
    device: str = GPU
    params: Mapping[str, Any] = field(default_factory=dict)
    traffic_model: Callable[[Problem], Traffic] = compulsory_traffic
    int32_indices: bool = True  # element offsets computed in 32-bit ints
    max_flops: float | None = None  # refuse problems that would take minutes (CPU loops)
    doc: str = ""  # the module docstring: what changed, why, predicted gain

    def __post_init__(self):
        reason = self.config_error()
        if reason:
            from gemmlab.errors import InvalidConfigError

            raise InvalidConfigError(f"{self.name}: {reason}")

    # -- validity -----------------------------------------------------------------------------------
    def config_error(self) -> str | None:
        """Why these parameters cannot make a correct kernel (checked before anything compiles)."""
        return None

    def is_valid(self, problem: Problem) -> Refusal | None:
        """None when this kernel can compute ``problem``; otherwise the reason it cannot (a Refusal: its text, and
        the error class that tells a caller)."""
        if problem.precision != self.precision:
            return Refusal(f"{self.name} computes {self.precision}, the problem asks for {problem.precision}",
                           DTypeError)
        if self.int32_indices:
            m, n, k = problem.shape
            worst = max(m * k, k * n, m * n)
            if worst > INT32_MAX:
                return Refusal(f"{problem.label()} has {worst} elements in one operand, past this kernel's 32-bit "
                               f"index range ({INT32_MAX})", SizeLimitError)
        if self.max_flops is not None and problem.flops() > self.max_flops:
            return Refusal(f"{problem.flops() / 1e9:.1f} GFLOP is past this kernel's limit of "
                           f"{self.max_flops / 1e9:.1f} GFLOP (it would run for minutes); a smaller problem or "
                           "another kernel", SizeLimitError)
        return None

    def unsupported(self, gpu) -> str | None:
        """Why this kernel cannot run on ``gpu`` (a gemmlab.device.GPUInfo), or None."""
        return None

    def traffic(self, problem: Problem) -> Traffic:
        return self.traffic_model(problem)

    # -- operands -----------------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, seed: int = 0, xp=None):
        """A and B as this kernel reads them (what verification draws): the problem's, in this kernel's operand
        formats where a precision has several (FP8's e4m3 and e5m2)."""
        import numpy as np

        return problem.make_inputs(seed, np if xp is None else xp)

    def output_dtype(self, problem: Problem):
        """The dtype of the C this kernel writes."""
        return problem.output_dtype()

    def for_formats(self, a: str, b: str, out: str) -> "KernelSpec":
        """This kernel for A and B in dtypes ``a`` and ``b`` and C in ``out`` (dtype names); a kernel with one set
        of formats returns itself for those and refuses any other."""
        problem = Problem(1, 1, 1, self.precision)
        want = (problem.prec.input_dtype, problem.prec.input_dtype, str(self.output_dtype(problem)))
        if (a, b, out) != want:
            raise DTypeError(f"{self.name} takes {want[0]} A and B and writes {want[2]} C, not {a} A, {b} B and "
                             f"{out} C")
        return self

    def for_problem(self, problem: Problem) -> "KernelSpec":
        """The spec that actually runs ``problem``: itself, except for kernels that pick parameters per shape."""
        return self

    # -- running ------------------------------------------------------------------------------------
    def plan(self, problem: Problem, layout: Layout = ROW_MAJOR) -> Plan:
        """Resolve this kernel for ``problem`` once: compile, load, lay out parameters, allocate workspaces.

        ``layout`` must be one of ``self.layouts``. The plan's ``launch`` is the hot path; see kernels/plan.py.
        """
        raise NotImplementedError

    def build(self, problem: Problem) -> Callable[..., None]:
        """``run(A, B, C)`` for arrays already on the kernel's device (the harness's call): a plan's ``run``.

        A is M×K, B is K×N, C is M×N, all C-contiguous, in the precision's dtypes (FP8: gemmlab.fp8.Scaled
        operands, B stored N×K, and the plan reads B as that transpose). ``run`` only enqueues work (GPU kernels run
        on the current CuPy stream); the harness synchronizes and times.
        """
        return self.plan(problem, self.natural_layout(problem)).run

    @staticmethod
    def natural_layout(problem: Problem) -> Layout:
        """The layout the harness hands operands over in: row-major, B as N×K for FP8 (make_inputs)."""
        return Layout(b=COL) if problem.prec.kmajor_b else ROW_MAJOR

    @property
    def layouts(self) -> frozenset:
        """Operand layouts the kernel reads in place (kernels/plan.py); gemmlab.matmul copies any other."""
        return frozenset({ROW_MAJOR})

    @property
    def simulable(self) -> bool:
        """True when the kernel can run under numba's CUDA simulator (Python kernels)."""
        return False

    @property
    def short(self) -> str:
        return self.name.split("/", 1)[1]
