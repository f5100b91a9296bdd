"""Hardware counters for one call of each of several kernels, through one Nsight Compute process.

``profile_kernels`` runs ``ncu`` around a child process (``python -m gemmlab._profile_target``) that builds each
kernel, warms it up and makes one call inside an NVTX range, after a one-thread marker launch; ncu profiles only
the launches inside the range, so CuPy's random-number kernels and the warm-ups stay out, and the markers split
the profiled launches into one group per kernel. ``--clock-control none`` leaves the clocks as the
timing harness finds them (ncu would otherwise lock them to base). ncu's default cache control flushes L2 before
each replay pass, so the DRAM bytes are those of a cold-L2 launch: the same condition as the cold-L2 timing.

The numbers that matter against the seeds' model are the DRAM bytes: the model counts every global load a
thread issues (8MNK bytes for the naive kernel); L1 and L2 absorb most of them, and the difference is what the
report shows. Where ncu is missing or cannot read counters (no permission, a sandbox without the profiler
library), the result says ``unavailable: why`` and nothing raises.
"""
from __future__ import annotations

from dataclasses import dataclass

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

from gemmlab.problem import Problem

# metric -> the key it gets in the profile dict; how rows of one call combine: sum over launches, or the
# launch-time-weighted mean for ratios and per-thread properties
METRICS: dict[str, tuple[str, str]] = {
    "dram__bytes_read.sum": ("dram_read_bytes", "sum"),
    "dram__bytes_write.sum": ("dram_write_bytes", "sum"),
    "lts__t_bytes.sum": ("l2_bytes", "sum"),
    "l1tex__t_bytes.sum": ("l1_bytes", "sum"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("smem_bank_conflicts_ld", "sum"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("smem_bank_conflicts_st", "sum"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("achieved_occupancy_pct", "mean"),
    "launch__registers_per_thread": ("registers_per_thread", "max"),
    "launch__shared_mem_per_block_static": ("smem_static_bytes", "max"),
    "launch__shared_mem_per_block_dynamic": ("smem_dynamic_bytes", "max"),
    "launch__grid_size": ("grid_size", "sum"),
    "launch__block_size": ("block_size", "max"),
    "gpu__time_duration.sum": ("duration_ns", "sum"),
    "sm__cycles_elapsed.avg.per_second": ("sm_clock_hz", "mean"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("dram_throughput_pct", "mean"),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("sm_throughput_pct", "mean"),
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("ffma_thread_inst", "sum"),
}

_TARGET = "gemmlab._profile_target"
_NVTX_RANGE = "gemmlab_profile"
_MARKER = "gemmlab_profile_marker"


def unavailable(reason: str) -> dict[str, Any]:
    return {"status": "unavailable", "reason": f"unavailable: {reason}"}


def find_ncu() -> str | None:
    """ncu on PATH, else the usual install places (CUDA toolkit, standalone Nsight Compute)."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "ncu"]
    for root in (Path("/opt/nvidia/nsight-compute"), Path("/usr/local/NVIDIA-Nsight-Compute")):
        if root.is_dir():
            candidates += sorted(root.glob("*/ncu"), reverse=True) + [root / "ncu"]
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def ncu_command(ncu: str, kernels: str | list[str], problem: Problem, *, metrics: Iterable[str] = METRICS,
                launch_skip: int = 0, launch_count: int | None = None, warmup: int = 2, seed: int = 0,
                python: str | None = None) -> list[str]:
    """The ncu command line that profiles one call of each kernel on ``problem``.

    ``launch_count=None`` profiles every launch inside the NVTX ranges (a call may launch several kernels);
    ``launch_skip`` skips launches inside them.
    """
    names = [kernels] if isinstance(kernels, str) else list(kernels)
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all",
           "--nvtx", "--nvtx-include", f"{_NVTX_RANGE}/",
           "--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    cmd += ["--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(metrics),
            python or sys.executable, "-m", _TARGET, "--shape", problem.label(), "--seed", str(seed),
            "--warmup", str(warmup), *names]
    return cmd


def profile_kernel(kernel: str, problem: Problem, **options) -> dict[str, Any]:
    """Profile one call of ``kernel`` (a registry name) on ``problem``; see ``profile_kernels``."""
    return profile_kernels([kernel], problem, **options)[kernel]


def profile_kernels(kernels: list[str], problem: Problem, *, launch_skip: int = 0, launch_count: int | None = None,
                    warmup: int = 2, seed: int = 0, timeout_s: float = 900.0,
                    csv_path: str | os.PathLike | None = None, ncu: str | None = None) -> dict[str, dict[str, Any]]:
    """Profile one call of each kernel on ``problem`` with one ncu process.

    Returns ``{kernel: summarize(its rows) + command}`` or, for a kernel without counters,
    ``{"status": "unavailable", "reason": "unavailable: ..."}``. ``csv_path`` keeps ncu's raw CSV.
    """
    def everyone(result: dict) -> dict[str, dict[str, Any]]:
        return {k: dict(result) for k in kernels}

    ncu = ncu or find_ncu()
    if ncu is None:
        return everyone(unavailable("Nsight Compute (ncu) is not on PATH or in /usr/local/cuda/bin"))
    cmd = ncu_command(ncu, kernels, problem, launch_skip=launch_skip, launch_count=launch_count,
                      warmup=warmup, seed=seed)
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])  # the child imports this same gemmlab
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return everyone(unavailable(f"ncu did not finish within {timeout_s:.0f} s") | {"command": _shell(cmd)})
    except OSError as exc:
        return everyone(unavailable(f"ncu could not start ({exc})"))
    out = proc.stdout or ""
    if csv_path is not None:  # the folder only now, when ncu ran and there is a CSV to keep in it
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        Path(csv_path).write_text(out)
    results = results_from_output(out, proc.stderr or "", proc.returncode, kernels)
    for kernel, result in results.items():
        result["command"] = _shell(cmd)
        result["problem"] = {"m": problem.m, "n": problem.n, "k": problem.k, "precision": problem.precision}
        result["kernel"] = kernel
    return results


def split_by_marker(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The profiled launches, one group per kernel call: each group starts at a marker launch (dropped).
    Output without markers (one kernel profiled on its own) is one group."""
    if not any(_MARKER in str(r.get("Kernel Name", "")) for r in rows):
        return [rows]
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if _MARKER in str(row.get("Kernel Name", "")):
            groups.append([])
        elif groups:
            groups[-1].append(row)
    return groups


def results_from_output(stdout: str, stderr: str, returncode: int, kernels: list[str]) -> dict[str, dict[str, Any]]:
    """One ncu run's output as a profile dict per kernel, or an 'unavailable' one that says why."""
    import json

    summary = next((json.loads(line) for line in reversed(stdout.splitlines()) if line.startswith('{"ok"')), {})
    order = summary.get("kernels", kernels if len(kernels) == 1 else [])
    skipped = summary.get("skipped", {})
    try:
        groups = split_by_marker(parse_ncu_csv(stdout))
    except ValueError:
        groups = []
    results: dict[str, dict[str, Any]] = {}
    for kernel in kernels:
        if kernel in skipped:
            results[kernel] = unavailable(f"the kernel did not run: {skipped[kernel]}")
        elif kernel in order and order.index(kernel) < len(groups) and groups[order.index(kernel)]:
            results[kernel] = result_from_rows(groups[order.index(kernel)], stdout + "\n" + stderr)
        else:
            results[kernel] = result_from_output(stdout if len(kernels) == 1 else "", stderr, returncode)
            if results[kernel]["status"] == "ok":  # rows without a group of its own cannot be attributed
                results[kernel] = unavailable("ncu profiled no launch of this kernel")
    return results


def result_from_rows(rows: list[dict[str, Any]], text: str) -> dict[str, Any]:
    result = summarize(rows)
    problem = ncu_error(text)
    if problem:
        result["warning"] = problem
    return result


def result_from_output(stdout: str, stderr: str, returncode: int) -> dict[str, Any]:
    """Turn one ncu run's output into the profile dict, or an 'unavailable' one that says why."""
    problem = ncu_error(stdout + "\n" + stderr)
    try:
        rows = parse_ncu_csv(stdout)
    except ValueError:
        rows = []
    if not rows:
        target = _target_failure(stdout)
        if target:
            return unavailable(f"the kernel did not run: {target}")
        if problem:
            return unavailable(problem)
        if returncode != 0:
            tail = (stderr or stdout).strip().splitlines()[-3:]
            return unavailable(f"ncu exited with status {returncode}: {' | '.join(tail) or 'no output'}")
        return unavailable("ncu profiled no kernel launch (was the NVTX range seen?)")
    return result_from_rows(rows, stdout + "\n" + stderr)


def _target_failure(stdout: str) -> str | None:
    """The reason the profile target printed when it refused to run (an invalid problem, say)."""
    import json

    for line in stdout.splitlines():
        if line.startswith('{"ok": false'):
            try:
                return str(json.loads(line).get("reason"))
            except ValueError:
                return line
    return None


_ERROR_HINTS = (
    (re.compile(r"ERR_NVGPUCTRPERM"), "no permission to read GPU performance counters (ERR_NVGPUCTRPERM; "
                                      "run as root or set NVreg_RestrictProfilingToAdminUsers=0)"),
    (re.compile(r"Failed to initialize the profiler[^\n]*"), None),
    (re.compile(r"==ERROR==[^\n]*"), None),
    (re.compile(r"No kernels were profiled[^\n]*"), None),
)


def ncu_error(text: str) -> str | None:
    """The first line of ncu's output that says why counters could not be read, if any."""
    for pattern, message in _ERROR_HINTS:
        match = pattern.search(text)
        if match:
            return message or match.group(0).replace("==ERROR==", "").replace("==WARNING==", "").strip()
    return None


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Rows of ``ncu --csv --page raw`` output, one dict per profiled launch.

    The CSV starts at the header line whose first field is "ID"; ncu's own messages (``==PROF==`` lines) and
    the target's stdout may come before it. With ``--print-units`` a second row holds the units and an empty
    ID; it is skipped. Numbers lose their thousands separators and become floats; other fields stay strings.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with \"ID\") in the text")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = next(reader)
    rows: list[dict[str, Any]] = []
    for fields in reader:
        if not fields or len(fields) != len(header) or fields[0].startswith("=="):
            continue
        if not fields[0].strip():  # the units row
            continue
        rows.append({name: _number(value) for name, value in zip(header, fields)})
    return rows


def _number(value: str) -> Any:
    text = value.strip()
    if not text:
        return text
    plain = text.replace(",", "")
    try:
        return int(plain) if re.fullmatch(r"[+-]?\d+", plain) else float(plain)
    except ValueError:
        return text


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine the launches of one call into the counters the report uses.

    Byte counts, conflicts, durations and instruction counts add up over launches; occupancy and throughput
    percentages are weighted by each launch's duration; registers and shared memory are the largest of any launch.
    """
    durations = [float(r.get("gpu__time_duration.sum") or 0.0) for r in rows]
    total_time = sum(durations)
    out: dict[str, Any] = {"status": "ok", "launches": len(rows),
                           "kernel_names": [str(r.get("Kernel Name", "?")) for r in rows]}
    if rows and "Device" in rows[0]:
        out["device"] = str(rows[0]["Device"])
    raw: dict[str, float] = {}
    for metric, (key, how) in METRICS.items():
        values = [r.get(metric) for r in rows]
        pairs = [(float(v), d) for v, d in zip(values, durations) if isinstance(v, (int, float))]
        if not pairs:
            continue
        if how == "sum":
            value = sum(v for v, _ in pairs)
        elif how == "max":
            value = max(v for v, _ in pairs)
        else:
            weight = sum(d for _, d in pairs)
            value = sum(v * d for v, d in pairs) / weight if weight > 0 else sum(v for v, _ in pairs) / len(pairs)
        raw[metric] = value
        out[key] = value
    out["metrics"] = raw
    if "dram_read_bytes" in out or "dram_write_bytes" in out:
        out["dram_bytes"] = out.get("dram_read_bytes", 0.0) + out.get("dram_write_bytes", 0.0)
    if total_time > 0:
        out["duration_ms"] = total_time / 1e6
    return out


def measured_intensity(flops: float, profile: dict[str, Any] | None) -> float | None:
    """FLOPs over the DRAM bytes ncu measured, or None where there is no usable profile."""
    if not profile or profile.get("status") != "ok":
        return None
    dram = profile.get("dram_bytes")
    if dram is None:
        dram = (profile.get("dram_read_bytes") or 0.0) + (profile.get("dram_write_bytes") or 0.0)
    return flops / dram if dram else None


def _shell(cmd: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(part) for part in cmd)


def merge_profile(results_path: str | os.PathLike, profile: dict[str, Any]) -> bool:
    """Store ``profile`` in the record of the same kernel and shape in a results JSON.

    Returns True when such a record exists; otherwise the profile is kept under ``results["profiles"]`` (the
    report still shows it) and False is returned.
    """
    import json

    path = Path(results_path)
    results = json.loads(path.read_text())
    problem = profile.get("problem") or {}
    key = (profile.get("kernel"), problem.get("m"), problem.get("n"), problem.get("k"))
    found = False
    for rec in results.get("records", []):
        if (rec.get("kernel"), rec.get("m"), rec.get("n"), rec.get("k")) == key:
            rec["profile"] = profile
            found = True
    if not found:
        others = [p for p in results.get("profiles", []) if (p.get("kernel"), (p.get("problem") or {}).get("m"),
                  (p.get("problem") or {}).get("n"), (p.get("problem") or {}).get("k")) != key]
        results["profiles"] = others + [profile]
    path.write_text(json.dumps(results, indent=1, default=float))
    return found


@dataclass(frozen=True)
class ProfileOptions:
    kernels: str  # a kernel name or glob(s): one ncu process for all of them
    shape: tuple[int, int, int]
    json_path: Path | None = None  # a results JSON that gemmlab bench wrote: counters merged into its records


@dataclass
class Profiled:
    """One kernel's counters beside the problem they were read at; ``merged``: whether a record of the same kernel
    and shape in --json took them (None without --json or without counters)."""

    spec: object
    problem: Problem
    result: dict
    merged: bool | None = None


def run_profile(opts: ProfileOptions) -> tuple[list[Profiled], list[str]]:
    """``gemmlab profile KERNELS [--shape MxNxK] [--json RESULTS]``: counters beside each kernel's model, and the
    lines of the kernels refused.

    All kernels are profiled by one ncu process. With --json the raw ncu CSV is kept beside it (``<stem>.ncu/``)
    and each kernel's counters are merged into its record of the same shape. Everything that can be refused is
    refused before ncu starts: CPU kernels, kernels that do not take the shape, a --json that is not a results
    file, a machine without a GPU. Where the GPU is there but ncu or its counters are not, the result says why:
    profiling is an addition to a run, never a reason for it to fail.
    """
    import shlex
    import zlib

    from gemmlab.device import require_gpu
    from gemmlab.errors import GemmlabError, ResultsFileError
    from gemmlab.kernels.registry import select
    from gemmlab.results import load_results

    dims, json_path = opts.shape, opts.json_path
    specs, refused = [], []
    for spec in select(opts.kernels):
        reason = ("runs on the CPU; Nsight Compute counts GPU kernels" if spec.device == "cpu"
                  else spec.is_valid(Problem(*dims, spec.precision)))
        if reason:
            refused.append(f"{spec.name}: {reason}")
        else:
            specs.append(spec)
    if not specs:
        raise GemmlabError("nothing to profile: " + "; ".join(refused))
    if json_path:
        try:
            load_results(json_path)  # the counters are merged into its records
        except ResultsFileError as exc:
            raise ResultsFileError(f"--json: {exc}; profile adds counters to the results of a gemmlab bench "
                                   "run") from None
    require_gpu("gemmlab profile")
    label = Problem(*dims).label()
    csv_path = None
    if json_path:
        folder = json_path.with_name(json_path.stem + ".ncu")
        names = ",".join(s.name for s in specs)
        stem = specs[0].name.replace("/", "_") if len(specs) == 1 else f"{len(specs)}_kernels_{zlib.crc32(names.encode()):08x}"
        csv_path = folder / f"{stem}_{label}.csv"
    results = profile_kernels([s.name for s in specs], Problem(*dims, specs[0].precision), csv_path=csv_path)
    command = f"gemmlab profile {shlex.quote(opts.kernels)} --shape {label}" + (f" --json {json_path}" if json_path else "")
    rows = []
    for spec in specs:
        problem = Problem(*dims, spec.precision)
        result = results[spec.name]
        result["problem"] = {"m": problem.m, "n": problem.n, "k": problem.k, "precision": problem.precision}
        result["kernel"] = spec.name
        result["gemmlab_command"] = command
        row = Profiled(spec, problem, result)
        if result.get("status") == "ok":
            if csv_path is not None:
                result["csv"] = str(csv_path)
            if json_path:  # an unavailable rerun never replaces counters already kept
                row.merged = merge_profile(json_path, result)
        rows.append(row)
    return rows, refused
