"""`gemmlab verify`: every selected kernel over a sweep of ragged shapes, pass or fail per kernel and shape.

On a GPU every kernel runs every shape of the sweep. Without one, numba kernels run under the CUDA simulator at
the shapes it can finish (small ones), CUDA C kernels are compile-checked, and the rest are reported not run.
``--sanitize`` reruns the sweep's ragged shapes of each CUDA and Gluon kernel under compute-sanitizer (memcheck and
racecheck) in a child process and reports its error count.

A level that moves every operand by TMA in place (the Gluon levels: no staged copy) refuses N and K whose rows are not
16-byte multiples; there the sweep runs the same M with N and K rounded up to a multiple of ALIGN (``runnable``):
still ragged against every tile, so the partial tiles, NaN-poisoned C and the sanitizers reach it too.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from dataclasses import dataclass

from gemmlab.errors import GemmlabError, NoGPUError
from gemmlab import device
from gemmlab.harness import env
from gemmlab.harness.verify import SIMULATOR_SHAPES, SWEEP_DIMS, check, compile_check, sweep_shapes, where_runs
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.registry import list_kernels, select
from gemmlab.problem import Problem

# Ragged in every dimension; the last has N % 4 == 0, so tc4 stores C through TMA there (partial boxes in M and N, an
# odd number of them in the last column), where the others take the register path.
SANITIZE_SHAPES = ((33, 17, 65), (127, 129, 255), (257, 31, 1000), (300, 520, 200))
# and for the stream-K levels, one whose walk runs whole tiles and then a split tail, ragged in M and N
STREAM_K_SANITIZE_SHAPE = (2500, 2500, 384)
ALIGN = 16  # elements: 16-byte rows of every operand and C at any element size gemmlab has (FP8 up to FP32)


def runnable(spec, problem: Problem) -> Problem:
    """``problem``, or where ``spec`` refuses it and takes its M with N and K rounded up to ALIGN, that problem."""
    if not spec.is_valid(problem):
        return problem
    aligned = Problem(problem.m, ceil_div(problem.n, ALIGN) * ALIGN, ceil_div(problem.k, ALIGN) * ALIGN,
                      problem.precision)
    return problem if spec.is_valid(aligned) else aligned


@dataclass(frozen=True)
class VerifyOptions:
    kernels: str | None = None  # glob(s); None: every kernel
    full: bool = False  # every combination of the sweep's dimensions, not a sample
    sample: int = 24  # combinations drawn without ``full``
    seed: int = 0
    sanitize: bool = False  # also compute-sanitizer memcheck and racecheck


class Progress:
    """What run_verify says as it works (the CLI's Steps prints it); these defaults say nothing."""

    def step(self, label: str, done: int, total: int, *, log: bool = True) -> None:
        """``label`` starts; ``done`` of ``total`` steps are finished; ``log``: worth a line when piped."""


def run_verify(opts: VerifyOptions, progress: Progress | None = None) -> tuple[dict, int]:
    """Check every selected kernel over the sweep, telling ``progress`` as it goes. Returns the results ({"env",
    "records"}: one record per kernel and shape, or per sanitizer tool) and the failure count."""
    steps = progress or Progress()
    combos = len(SWEEP_DIMS) ** 3
    if not opts.full and opts.sample > combos:
        raise GemmlabError(f"--sample {opts.sample}: the sweep has {combos} combinations of its "
                           f"{len(SWEEP_DIMS)} dimensions; ask for at most {combos}, or --full")
    specs = select(opts.kernels) if opts.kernels else list_kernels()
    gpu = device.gpu()
    plan = []  # (spec, where it runs or None, shapes, why not)
    for spec in specs:
        try:
            where = where_runs(spec)
        except NoGPUError as exc:
            plan.append((spec, None, [], exc))
            continue
        shapes = SIMULATOR_SHAPES if where == "simulator" else sweep_shapes(
            opts.full, opts.sample, opts.seed, max_flops=None if where == "gpu" else 2e9)
        plan.append((spec, where, shapes, None))
    total = sum(max(1, len(shapes)) for _, _, shapes, _ in plan) + (2 if opts.sanitize and gpu else 0)
    done = 0
    records, failures = [], 0
    for spec, where, shapes, why in plan:
        if where is None:
            compiles = spec.compiles
            steps.step(f"{spec.name}: {'compile for sm_90a' if compiles else 'needs a GPU'} (none here)", done,
                       total)
            done += 1
            if compiles:
                rep = compile_check(spec)
                records.append(_row(spec.name, "sm_90a", "compiled", "nvrtc",
                                    f"{rep.registers} regs, {rep.spills} spill bytes; not run (no GPU)"))
            else:
                records.append(_row(spec.name, "—", "not run", "—", str(why)))
            continue
        steps.step(f"{spec.name}: {len(shapes)} shapes on the {where}", done, total)
        for i, shape in enumerate(shapes):
            problem = runnable(spec, Problem(*shape, spec.precision))
            steps.step(f"{spec.name} {problem.label()} on the {where}", done, total, log=False)
            done += 1
            result = check(spec, problem, seed=opts.seed + i)
            if result.status == "skipped":
                records.append(_row(spec.name, problem.label(), "skipped", where, result.reason))
                continue
            failures += not result.passed
            e = result.error
            records.append(_row(spec.name, problem.label(), result.status, where,
                                f"rel err {e.rel_err:.1e} (tol {e.tolerance:.0e}), {where}" if e else result.reason,
                                e.rel_err if e else None, e.tolerance if e else None))
    if opts.sanitize and not gpu:
        records.append(_row("(all)", "sanitize", "not run", "—", "compute-sanitizer needs a GPU"))
    elif opts.sanitize:
        targets = [s for s in specs if s.backend in ("cuda", "numba", "gluon")]
        for tool in ("memcheck", "racecheck"):
            steps.step(f"compute-sanitizer {tool}: {len(targets)} kernels in one process", done, total)
            done += 1
            for name, ok, detail in sanitize(targets, tool):
                failures += not ok
                records.append(_row(name, "sanitize", f"{tool} {'clean' if ok else 'ERRORS'}",
                                    "compute-sanitizer", detail))
    return {"env": env.collect(gpu, "gpu" if gpu else "cpu-only"), "records": records}, failures


def _row(kernel: str, shape: str, result: str, where: str, detail: str, rel_err: float | None = None,
         tolerance: float | None = None) -> dict:
    """One verify record as the JSON keeps it; ``detail`` is the console's text for it."""
    return {"kernel": kernel, "shape": shape, "result": result, "detail": detail, "where": where,
            "rel_err": rel_err, "tolerance": tolerance}


def sanitize(specs, tool: str) -> list[tuple[str, bool, str]]:
    """Run every kernel at SANITIZE_SHAPES under one compute-sanitizer process per tool.

    One process for all kernels keeps the cost to two sanitizer start-ups; each error line names the kernel
    entry it happened in, which attributes it to a spec ("at v2_smem+0x1a0")."""
    exe = shutil.which("compute-sanitizer")
    if not exe:
        return [(s.name, False, "compute-sanitizer is not on PATH") for s in specs]
    cmd = [exe, "--tool", tool, "--error-exitcode", "3", "--report-api-errors", "no", sys.executable, "-m", "gemmlab.harness.sweep",
           *(s.name for s in specs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    return sanitizer_rows(specs, proc.stdout + proc.stderr, proc.returncode)


def sanitizer_rows(specs, log: str, returncode: int) -> list[tuple[str, bool, str]]:
    """(kernel, clean, detail) per spec from one compute-sanitizer log."""
    summary = [line.strip("= ").strip() for line in log.splitlines() if "SUMMARY" in line]
    faulty = set(re.findall(r"\bat (?:void )?(\w+)(?:<[^>]*>)?(?:\(.*?\))?\+0x", log))
    failed_checks = set(re.findall(r"^FAILED (\S+)", log, flags=re.M))
    rows = []
    for s in specs:
        entry = getattr(s, "entry", None) if s.compiles or s.backend == "gluon" else None  # the name a log gives
        bad = s.name in failed_checks or (entry in faulty if entry else bool(faulty))
        if returncode not in (0, 3, 4) and not summary:
            rows.append((s.name, False, f"sanitizer exited {returncode}: {(log.strip().splitlines() or ['?'])[-1]}"))
            continue
        detail = "; ".join(summary[-1:]) if summary else "no summary"
        if bad:
            detail = f"errors in this kernel ({detail})"
        rows.append((s.name, not bad, detail))
    return rows


def _sanitize_target(kernels: list[str]) -> int:
    """Child of ``sanitize``: one launch per kernel and ragged shape, verified afterwards. A kernel tuned per shape
    runs every configuration it can pick on this GPU, since each is its own compiled code."""
    from gemmlab.kernels.registry import get_kernel

    bad = 0
    for kernel in kernels:
        spec = get_kernel(kernel)
        for variant in spec.configurations():
            split = (STREAM_K_SANITIZE_SHAPE,) if variant.params.get("STREAM_K", 0) else ()
            for i, shape in enumerate(SANITIZE_SHAPES + split):
                problem = runnable(variant, Problem(*shape, spec.precision))
                if variant.is_valid(problem):
                    continue
                if not check(variant, problem, seed=i).passed:
                    print(f"FAILED {kernel} {dict(variant.params)} {problem.label()}", flush=True)
                    bad += 1
    return 4 if bad else 0


if __name__ == "__main__":
    sys.exit(_sanitize_target(sys.argv[1:]))
