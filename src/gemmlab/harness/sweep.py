"""`gemmlab verify`: every selected kernel over a sweep of ragged shapes, pass or fail per kernel and shape.

On a GPU every kernel runs every shape of the sweep. Without one, numba kernels run under the CUDA simulator at
the shapes it can finish (small ones), CUDA C kernels are compile-checked, and the rest are reported not run.
``--sanitize`` reruns the sweep's ragged shapes of each CUDA kernel under compute-sanitizer (memcheck and
racecheck) in a child process and reports its error count.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

from rich.table import Table

from gemmlab.errors import NoGPUError
from gemmlab import device
from gemmlab.harness.verify import SIMULATOR_SHAPES, check, compile_check, sweep_shapes, where_runs
from gemmlab.kernels.registry import list_kernels, select
from gemmlab.problem import Problem

# Ragged in every dimension; the last has N % 4 == 0, so tc4 stores C through TMA there (partial boxes in M and N, an
# odd number of them in the last column), where the others take the register path.
SANITIZE_SHAPES = ((33, 17, 65), (127, 129, 255), (257, 31, 1000), (300, 520, 200))


def run_verify(args, console) -> int:
    specs = select(args.kernels) if args.kernels else list_kernels()
    rows, failures = [], 0
    gpu = device.gpu()
    for spec in specs:
        try:
            where = where_runs(spec)
        except NoGPUError as exc:
            if hasattr(spec, "compile"):
                rep = compile_check(spec)
                rows.append((spec.name, "sm_90a", "compiled",
                             f"{rep.registers} regs, {rep.spills} spill bytes; not run (no GPU)"))
            else:
                rows.append((spec.name, "—", "not run", str(exc)))
            continue
        if where == "simulator":
            shapes = SIMULATOR_SHAPES
        else:
            shapes = sweep_shapes(args.full, args.sample, args.seed, max_flops=None if where == "gpu" else 2e9)
        for i, shape in enumerate(shapes):
            problem = Problem(*shape, spec.precision)
            result = check(spec, problem, seed=args.seed + i)
            if result.status == "skipped":
                rows.append((spec.name, problem.label(), "skipped", result.reason))
                continue
            if not result.passed:
                failures += 1
            detail = (f"rel err {result.error.rel_err:.1e} (tol {result.error.tolerance:.0e}), {where}"
                      if result.error else result.reason)
            rows.append((spec.name, problem.label(), result.status, detail))
    if args.sanitize and not gpu:
        rows.append(("(all)", "sanitize", "not run", "compute-sanitizer needs a GPU"))
    elif args.sanitize:
        targets = [s for s in specs if s.backend in ("cuda", "numba")]
        for tool in ("memcheck", "racecheck"):
            for name, ok, detail in sanitize(targets, tool):
                failures += not ok
                rows.append((name, "sanitize", f"{tool} {'clean' if ok else 'ERRORS'}", detail))
    table = Table(title="gemmlab verify", header_style="bold", title_justify="left")
    for col in ("kernel", "shape", "result", "detail"):
        table.add_column(col)
    for name, shape, status, detail in rows:
        style = {"passed": "green", "FAILED": "bold red", "error": "red"}.get(status.split()[0], "")
        table.add_row(name, shape, f"[{style}]{status}[/]" if style else status, detail)
    console.print(table)
    passed = sum(1 for r in rows if r[2] == "passed")
    console.print(f"{passed} passed, {failures} failed")
    if getattr(args, "json", None):
        with open(args.json, "w") as fh:
            json.dump([dict(zip(("kernel", "shape", "result", "detail"), r)) for r in rows], fh, indent=1)
    return 1 if failures else 0


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
        entry = getattr(s, "entry", None)
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
        for variant in spec.configurations() if hasattr(spec, "configurations") else [spec]:
            for i, shape in enumerate(SANITIZE_SHAPES):
                problem = Problem(*shape, spec.precision)
                if variant.is_valid(problem):
                    continue
                if not check(variant, problem, seed=i).passed:
                    print(f"FAILED {kernel} {dict(variant.params)} {problem.label()}", flush=True)
                    bad += 1
    return 4 if bad else 0


if __name__ == "__main__":
    sys.exit(_sanitize_target(sys.argv[1:]))
