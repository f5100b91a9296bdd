"""`gemmlab verify`: every selected kernel over a sweep of ragged shapes, pass or fail per kernel and shape.

On a GPU every kernel runs every shape of the sweep. Without one, numba kernels run under the CUDA simulator at
the shapes it can finish (small ones), CUDA C kernels are compile-checked, and the rest are reported not run.
``--sanitize`` reruns the sweep's ragged shapes of each CUDA and Gluon kernel under compute-sanitizer (memcheck and
racecheck) in a child process and reports, per kernel, the reports that name its entry. Racecheck's hazards between
the state bytes of Triton's warp_specialize protocol (a worker warp's load of its state against the default
partition's stores of the start or exit states, found by PC in each build's SASS) are a false positive of racecheck
(docs/gluon.md): a Gluon level whose every hazard is one of those is clean, with them counted; any other keeps it in
error.

A level that moves every operand by TMA in place (the Gluon levels: no staged copy) refuses N and K whose rows are not
16-byte multiples; there the sweep runs the same M with N and K rounded up to a multiple of ALIGN (``runnable``):
still ragged against every tile, so the partial tiles, NaN-poisoned C and the sanitizers reach it too.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys

from dataclasses import dataclass
from typing import NamedTuple

from gemmlab.errors import GemmlabError, NoGPUError
from gemmlab import device
from gemmlab.harness import env
from gemmlab.harness.verify import SIMULATOR_SHAPES, SWEEP_DIMS, check, compile_check, sweep_shapes, where_runs
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.registry import list_kernels, select
from gemmlab.problem import Problem

# Ragged in every dimension; the last has N % 4 == 0, so tc4 stores C through TMA there (partial boxes in M and N, an
# odd number of them in the last column), where the others take the register path. The first three are decode-sized,
# what the gemv levels (at most 16 or 32 rows of A) take: K = 999 reads the rows element by element (no 16-byte chunk
# divides it), K = 4096 in 16-byte chunks; on these weights of few rows gemv2 runs x's rows in two slices (13 rows in
# the 8-row build, 29 in the 16-row one), and M = 29 against 1057 rows runs its 32-row build unsliced.
SANITIZE_SHAPES = ((3, 131, 999), (13, 520, 4096), (29, 129, 4096), (29, 1057, 999), (33, 17, 65), (127, 129, 255),
                   (257, 31, 1000), (300, 520, 200))
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
                                (f"rel err {e.rel_err:.1e} (tol {e.tolerance:.0e}), {where}" if e.passed else
                                 f"{e.failure()}, {where}") if e else result.reason,
                                e.rel_err if e else None, e.tolerance if e else None))
    if opts.sanitize and not gpu:
        records.append(_row("(all)", "sanitize", "not run", "—", "compute-sanitizer needs a GPU"))
    elif opts.sanitize:
        targets = [s for s in specs if s.backend in ("cuda", "numba", "gluon")]
        for tool in ("memcheck", "racecheck"):
            steps.step(f"compute-sanitizer {tool}: {len(targets)} kernels in one process", done, total)
            done += 1
            for row in sanitize(targets, tool):
                failures += not row.clean
                record = _row(row.kernel, "sanitize", f"{tool} {'clean' if row.clean else 'ERRORS'}",
                              "compute-sanitizer", row.detail)
                if row.protocol_hazards is not None:
                    record["protocol_hazards"] = row.protocol_hazards
                records.append(record)
    return {"env": env.collect(gpu, "gpu" if gpu else "cpu-only"), "records": records}, failures


def _row(kernel: str, shape: str, result: str, where: str, detail: str, rel_err: float | None = None,
         tolerance: float | None = None) -> dict:
    """One verify record as the JSON keeps it; ``detail`` is the console's text for it."""
    return {"kernel": kernel, "shape": shape, "result": result, "detail": detail, "where": where,
            "rel_err": rel_err, "tolerance": tolerance}


class SanitizerRow(NamedTuple):
    kernel: str
    clean: bool
    detail: str
    protocol_hazards: int | None = None  # racecheck: hazards told apart as warp_specialize's protocol (None: not told)


def sanitize(specs, tool: str) -> list[SanitizerRow]:
    """Run every kernel at SANITIZE_SHAPES under one compute-sanitizer process per tool.

    One process for all kernels keeps the cost to two sanitizer start-ups; each error line names the kernel
    entry it happened in, which attributes it to a spec ("at v2_smem+0x1a0"). Under racecheck, a Gluon level named
    in the log has its builds' warp_specialize state accesses read from their SASS (protocol_accesses), by which
    sanitizer_rows tells the protocol's hazards apart."""
    exe = shutil.which("compute-sanitizer")
    if not exe:
        return [SanitizerRow(s.name, False, "compute-sanitizer is not on PATH") for s in specs]
    cmd = [exe, "--tool", tool, "--error-exitcode", "3", "--report-api-errors", "no", sys.executable, "-m", "gemmlab.harness.sweep",
           *(s.name for s in specs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    log = proc.stdout + proc.stderr
    named = {entry for entry, _ in _ACCESS.findall(log)}
    protocol = protocol_accesses([s for s in specs if s.backend == "gluon" and s.entry in named]) \
        if tool == "racecheck" else {}
    return sanitizer_rows(specs, log, proc.returncode, protocol)


def protocol_accesses(specs) -> dict:
    """Per Gluon level, its builds' warp_specialize state accesses (ws_racecheck.level_state_accesses), or why they
    cannot be had here (no Triton it is written for, no nvdisasm, the accesses not found): then none of its hazards
    is told apart."""
    from gemmlab.harness.probes.ws_racecheck import level_state_accesses

    found = {}
    for s in specs:
        try:
            found[s.name] = level_state_accesses(s)
        except (GemmlabError, ValueError, OSError, subprocess.CalledProcessError) as exc:
            found[s.name] = str(exc)
    return found


# a PC a compute-sanitizer report names: "at v2_smem+0x1a0", "at void sgemm<128>(float*)+0x1a0"
_ACCESS = re.compile(r"\bat (?:void )?(\w+)(?:<[^>]*>)?(?:\(.*?\))?\+0x([0-9a-f]+)")
# racecheck's report of one read or write PC and each PC it races with: "Race reported between Read access at E+0x100
# ..." then "and Write access at E+0x45d0 ... [9 hazards]" a line
_RACE = re.compile(r"Race reported between (Read|Write) access at (\w+)\+0x([0-9a-f]+)")
_RACE_WITH = re.compile(r"and (Read|Write) access at (\w+)\+0x([0-9a-f]+).*\[(\d+) hazards?\]")
PROTOCOL = ("between Triton's warp_specialize state-byte stores and loads (a false positive of racecheck: "
            "docs/gluon.md)")


def _reports(log: str) -> list[list[str]]:
    """The sanitizer's reports in ``log``, each its lines: a report starts at an unindented line after the
    sanitizer's prefix ("========= Error: ..."), goes on over the indented ones and ends at the bare prefix."""
    reports, current = [], None
    for line in log.splitlines():
        m = re.match(r"=+( *)(\S.*)?$", line)
        if not m or not m.group(2):
            current = None if m else current  # the bare prefix ends a report; the program's own output does not
            continue
        if m.group(1).startswith("  ") and current is not None:
            current.append(m.group(2))
        else:
            current = [m.group(2)]
            reports.append(current)
    return reports


def _race_pairs(report: list[str]) -> list[tuple[tuple, tuple, int]]:
    """A racecheck report's pairs: ((kind, entry, pc), (kind, entry, pc), hazards); none for any other report."""
    first = _RACE.search(report[0])
    if not first:
        return []
    one = (first[1], first[2], int(first[3], 16))
    return [(one, (m[1], m[2], int(m[3], 16)), int(m[4])) for m in map(_RACE_WITH.search, report[1:]) if m]


def _is_protocol(pair: tuple, entry: str, builds: list) -> bool:
    """Whether a racecheck pair is a state load against a state store of one build of ``entry``."""
    (kind_a, entry_a, pc_a), (kind_b, entry_b, pc_b), _ = pair
    if {kind_a, kind_b} != {"Read", "Write"} or entry_a != entry or entry_b != entry:
        return False
    read, write = (pc_a, pc_b) if kind_a == "Read" else (pc_b, pc_a)
    return any(b.protocol(read, write) for b in builds)


def sanitizer_rows(specs, log: str, returncode: int, protocol: dict | None = None) -> list[SanitizerRow]:
    """A row per spec from one compute-sanitizer log: clean where no report names its kernel entry (and no check
    failed), with the reports that do name it counted. ``protocol`` (racecheck's, from protocol_accesses): per Gluon
    level its builds' warp_specialize state accesses, or why they are unknown; a level whose every report is
    racecheck's pairs of a state load and a state store of one of its builds is clean, with those hazards counted
    (a false positive of racecheck on Triton's protocol, docs/gluon.md); any other report keeps it in error."""
    protocol = protocol or {}
    summary = [line.strip("= ").strip() for line in log.splitlines() if "SUMMARY" in line]
    named = collections.Counter(entry for entry, _ in _ACCESS.findall(log))
    reports = _reports(log)
    failed_checks = set(re.findall(r"^FAILED (\S+)", log, flags=re.M))
    untested = set(re.findall(r"^UNTESTED (\S+)", log, flags=re.M))
    never = "no sanitizer shape is one it takes: it never ran under the sanitizer"
    if returncode not in (0, 3, 4) and not summary:  # (a process none of whose kernels launched ends so too)
        why = f"sanitizer exited {returncode}: {(log.strip().splitlines() or ['?'])[-1]}"
        return [SanitizerRow(s.name, False, never if s.name in untested else why) for s in specs]
    run = f"the run's {summary[-1]}" if summary else "no summary"
    rows = []
    for s in specs:
        if s.name in untested:
            rows.append(SanitizerRow(s.name, False, never))
            continue
        entry = getattr(s, "entry", None) if s.compiles or s.backend == "gluon" else None  # the name a log gives
        if not entry:  # a kernel the log cannot name: any report may be its
            bad = s.name in failed_checks or bool(named)
            rows.append(SanitizerRow(s.name, not bad, f"errors in this run ({run})" if bad else run))
            continue
        # each report naming this entry, with the PCs it names and its racecheck pairs
        mine = [(pcs, _race_pairs(r)) for r in reports
                for pcs in [_ACCESS.findall("\n".join(r))] if any(e == entry for e, _ in pcs)]
        pairs = [p for _, ps in mine for p in ps]
        hazards = sum(h for _, _, h in pairs)
        builds = protocol.get(s.name) if s.backend == "gluon" else None  # Triton's protocol is in Gluon code only
        told = isinstance(builds, list) and bool(builds)
        # every PC the log names in this kernel is an error but those of the protocol's pairs: a report's first PC
        # once all its pairs are the protocol's, and each other PC of a protocol pair
        told_hazards, others = 0, named[entry]
        for pcs, ps in mine if told else ():
            if len(ps) + 1 != len(pcs):  # a line of it this does not read
                continue
            ours = [p for p in ps if _is_protocol(p, entry, builds)]
            told_hazards += sum(h for _, _, h in ours)
            others -= len(ours) + (len(ours) == len(ps))
        failed = s.name in failed_checks
        detail = (f"{len(mine)} report{'s' * (len(mine) != 1)} in this kernel"
                  + (f", {hazards} hazards" if pairs else "") + f" ({run})")
        if failed:
            detail = f"a check failed under the sanitizer; {detail}"
        if told_hazards and (others or failed):
            detail += f"; {told_hazards} of the hazards {PROTOCOL}"
        elif told_hazards:
            detail = f"racecheck: {told_hazards} hazards, all {PROTOCOL}"
        if isinstance(builds, str) and mine:
            detail += f"; none told apart as warp_specialize's protocol: {builds}"
        rows.append(SanitizerRow(s.name, not (others or failed), detail, told_hazards if told else None))
    return rows


def _sanitize_target(kernels: list[str]) -> int:
    """Child of ``sanitize``: one launch per kernel and ragged shape, verified afterwards. A kernel tuned per shape
    runs every configuration it can pick on this GPU, since each is its own compiled code."""
    from gemmlab.kernels.registry import get_kernel

    bad = 0
    for kernel in kernels:
        spec = get_kernel(kernel)
        ran = 0
        for variant in spec.configurations():
            split = (STREAM_K_SANITIZE_SHAPE,) if variant.params.get("STREAM_K", 0) else ()
            for i, shape in enumerate(SANITIZE_SHAPES + split):
                problem = runnable(variant, Problem(*shape, spec.precision))
                if variant.is_valid(problem):
                    continue
                ran += 1
                if not check(variant, problem, seed=i).passed:
                    print(f"FAILED {kernel} {dict(variant.params)} {problem.label()}", flush=True)
                    bad += 1
        if not ran:  # a clean log would say nothing of a kernel that never launched
            print(f"UNTESTED {kernel}", flush=True)
            bad += 1
    return 4 if bad else 0


if __name__ == "__main__":
    sys.exit(_sanitize_target(sys.argv[1:]))
