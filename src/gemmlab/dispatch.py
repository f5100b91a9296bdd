"""kernel="auto": which kernel runs a problem, from what was measured on this GPU.

The dispatch table holds, per GPU, precision and measured shape, gemmlab's own kernels that verified there, fastest
first (peers are never picked: gemmlab.matmul runs gemmlab's kernels). ``gemmlab dispatch --write RESULTS`` adds
the records of saved bench results to ``$GEMMLAB_CACHE/dispatch.json``, the table of the GPU they ran on (a bench
run writes its results only); the H200's, from the runs committed under results/h200/, ships with gemmlab
(data/dispatch-h200.json) as the default. For a problem, the entry of the
nearest measured shape (in log space over M, N and K) is read in order, and the first kernel that takes the problem
and reads the operands' layout in place wins; if none reads the layout in place, the first that takes the problem,
after a copy. Without an entry for this GPU, each precision's default level runs.

"Fastest" is what a caller issuing calls back to back waits per call: the GPU time, or where a record carries it
(small problems, ``call_host_us``), the host time of one gemmlab.matmul call with that kernel if that is longer; a
record without one, at a shape where others have it, counts the shape's median. A kernel whose plan launches twice
(a pre-pass, then the kernel) can be the faster on the GPU and the slower to call.

Host arrays (NumPy, CPU tensors) run on the host (cpu/blas), as torch runs CPU tensors on the CPU. A measured kernel
whose spec says why it is not for "auto" (``KernelSpec.auto_refusal``: tc7_3xtf32, whose splits turn an infinite
input into NaN; the TF32 builds that truncate instead of rounding to nearest) runs only when named; the defaults are
an explicit list and are not filtered so (tc1 TF32, which truncates, is the TF32 default of a GPU without wgmma).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gemmlab.cache import cache_root, read_json, write_json
from gemmlab.kernels.plan import ANY, Layout, target_layout
from gemmlab.problem import PrecisionTable, Problem

SHIPPED = Path(__file__).parent / "data" / "dispatch-h200.json"
# Without a measured entry: each precision's levels in the order they are tried, the first one this GPU runs
DEFAULTS = PrecisionTable(lambda p: p.auto_defaults)
HOST_DEFAULT = "cpu/blas"


def shipped_gpu():
    """The GPU the shipped table was measured on: what ``auto`` would run there, said on a machine without one."""
    from gemmlab.device import GPUInfo

    return GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")


def local_path() -> Path:
    return cache_root() / "dispatch.json"


@dataclass(frozen=True)
class Choice:
    spec: object
    why: str
    copies: tuple[str, ...] = ()  # operands gemmlab.matmul copies into row-major order first


def per_call_ms(row: dict, typical_host_us: float = 0.0) -> float:
    """A table row's time per call: its GPU time, or its host time where that binds (``typical_host_us`` for a row
    that has none)."""
    return max(row["ms"], row.get("host_us", typical_host_us) / 1e3)


def table_from_results(results: dict) -> dict:
    """{gpu: {precision: {"MxNxK": [{"kernel", "ms"[, "host_us"]}, ...fastest per call first]}}} from a results
    JSON's verified records of gemmlab's registered GPU kernels (not bench --variant's). A kernel that failed
    verification at a shape gets a row {"kernel", "failed": true} there, last: it replaces that kernel's earlier
    measurement when tables merge, and ``choose`` never runs it."""
    gpu = ((results.get("env") or {}).get("gpu") or {}).get("name")
    table: dict = {}
    if not gpu:
        return table
    for r in results.get("records", []):
        if r.get("backend") in ("peer", "cpu") or r.get("variant_of"):
            continue
        failed = r.get("status") == "FAILED"
        if not failed and (not r.get("verified") or not r.get("median_ms")):
            continue
        label = f"{r['m']}x{r['n']}x{r['k']}"
        rows = table.setdefault(gpu, {}).setdefault(r["precision"], {}).setdefault(label, [])
        if failed:
            rows.append({"kernel": r["kernel"], "failed": True})
            continue
        row = {"kernel": r["kernel"], "ms": r["median_ms"]}
        if r.get("call_host_us"):
            row["host_us"] = r["call_host_us"]
        rows.append(row)
    for shapes in table.get(gpu, {}).values():
        for label, rows in shapes.items():
            shapes[label] = _ranked(rows)
    return table


def _ranked(rows: list[dict]) -> list[dict]:
    """One row per kernel, fastest per call first; a kernel that failed in any of them, last, as failed."""
    failed = {row["kernel"] for row in rows if row.get("failed")}
    best: dict = {}
    for row in rows:  # a kernel timed twice (two runs merged) keeps its record with a host time, the faster
        if row["kernel"] in failed:
            continue
        old = best.get(row["kernel"])
        if old is None or ("host_us" in row, -_rank(row)[0]) > ("host_us" in old, -_rank(old)[0]):
            best[row["kernel"]] = row
    # a record without a host time where others of the shape have one (an older run): the shape's median, not none
    # at all, so that it does not rank above the kernels whose host time binds
    known = [row["host_us"] for row in best.values() if "host_us" in row]
    typical = statistics.median(known) if known else 0.0
    return sorted(best.values(), key=lambda row: _rank(row, typical)) + [{"kernel": k, "failed": True}
                                                                          for k in sorted(failed)]


def _rank(row: dict, typical_host_us: float = 0.0) -> tuple:
    return per_call_ms(row, typical_host_us), row["ms"]


def table_from_runs(runs: list[dict]) -> dict:
    """One table from several results JSONs (the shipped one: ``gemmlab dispatch --build``): the records of each GPU
    pooled, so a shape measured in two files ranks the kernels of both."""
    pooled: dict = {}
    for results in runs:
        gpu = ((results.get("env") or {}).get("gpu") or {}).get("name")
        if gpu:
            pooled.setdefault(gpu, []).extend(results.get("records", []))
    table: dict = {}
    for gpu, records in pooled.items():
        table.update(table_from_results({"env": {"gpu": {"name": gpu}}, "records": records}))
    return table


def merge(old: dict, new: dict) -> dict:
    """``new``'s rows replace ``old``'s rows of the same kernel at the same GPU, precision and shape (a failed row
    too); the kernels ``new`` did not time there keep their rows, ranked with the new ones (a run of a few kernels,
    or of variants alone, leaves the others' measurements in the table)."""
    out = {gpu: {p: dict(shapes) for p, shapes in precs.items()} for gpu, precs in old.items()}
    for gpu, precs in new.items():
        for p, shapes in precs.items():
            mine = out.setdefault(gpu, {}).setdefault(p, {})
            for label, rows in shapes.items():
                timed = {row["kernel"] for row in rows}
                mine[label] = _ranked([row for row in mine.get(label, []) if row["kernel"] not in timed] + rows)
    return out


def record(results: dict) -> Path | None:
    """Add a run's measurements to this machine's dispatch table; the path written, None if nothing was."""
    new = table_from_results(results)
    if not new:
        return None
    path = local_path()
    if not write_json(path, merge(read_json(path), new)):
        return None
    load_table.cache_clear()
    return path


@lru_cache(maxsize=1)
def load_table() -> dict:
    """The shipped table with this machine's measurements on top (read once per process)."""
    return merge(read_json(SHIPPED), read_json(local_path()))


def _nearest(shapes: dict, problem: Problem) -> tuple[str, list] | None:
    best, best_d = None, math.inf
    for label, rows in shapes.items():
        try:
            dims = tuple(int(x) for x in label.split("x"))
        except ValueError:
            continue
        d = sum(abs(math.log(a / b)) for a, b in zip(dims, problem.shape))
        if d < best_d:
            best, best_d = (label, rows), d
    return best


def choose(problem: Problem, layout: Layout, gpu) -> Choice:
    """The kernel gemmlab.matmul runs for ``problem`` on ``gpu`` (a GPUInfo), and why."""
    from gemmlab.errors import UnknownKernelError
    from gemmlab.kernels.registry import get_kernel

    refusals: list = []

    def usable(name: str, measured: bool = True):
        try:
            spec = get_kernel(name)
        except UnknownKernelError:
            return None  # a table from another version of gemmlab
        why = spec.is_valid(problem) or spec.unsupported(gpu)
        if why:
            refusals.append(why)
            return None
        return None if measured and spec.auto_refusal() else spec

    entry = _nearest(load_table().get(gpu.name, {}).get(problem.precision, {}), problem)
    if entry:
        label, rows = entry
        rows = [row for row in rows if not row.get("failed")]
        specs = [s for s in (usable(row["kernel"]) for row in rows) if s is not None]
        copies = [(spec, _copies(layout, spec)) for spec in specs]  # None: no copy makes the layout readable
        for spec, copied in copies:
            if copied == ():  # read as given
                rank = next(i for i, row in enumerate(rows) if row["kernel"] == spec.name)
                return Choice(spec, f"dispatch table for {gpu.name}: #{rank + 1} of the {len(rows)} kernels "
                                    f"measured at {label} ({_measured(rows[rank])} there) that takes "
                                    f"{problem.label()} with {layout.label()} in place")
        for spec, copied in copies:
            if copied is not None:
                return Choice(spec, f"dispatch table for {gpu.name}: fastest at {label} that takes "
                                    f"{problem.label()}; none of the measured kernels it may run reads "
                                    f"{layout.label()} in place", copies=copied)
        if specs:
            _refuse(layout, specs[0])
    spec = next((s for s in (usable(name, measured=False) for name in DEFAULTS[problem.precision]) if s is not None),
                None)
    if spec is None:
        from gemmlab.errors import NoGPUError

        error = getattr(refusals[0], "error", NoGPUError) if refusals else NoGPUError
        raise error(f"no gemmlab {problem.precision} kernel runs {problem.label()} on {gpu.name}: "
                    f"{refusals[0] if refusals else 'none is registered'}")
    why = (f"no dispatch table entry for {problem.precision} on {gpu.name}: {spec.name}, the first of the "
           f"{problem.precision} defaults ({', '.join(DEFAULTS[problem.precision])}) that runs there")
    copied = _copies(layout, spec)
    if copied is None:
        _refuse(layout, spec)
    return Choice(spec, why, copies=copied)


def _measured(row: dict) -> str:
    text = f"{row['ms']:.4g} ms on the GPU"
    if row.get("host_us", 0.0) / 1e3 > row["ms"]:
        text += f", {row['host_us']:.3g} µs of host time a call, which binds"
    return text


def _copies(layout: Layout, spec) -> tuple[str, ...] | None:
    """The operands ``spec`` would copy to run ``layout`` (a vector, ANY, is read in either major); None where no
    copy makes the layout readable."""
    runs = target_layout(layout, spec.layouts)
    if runs is None:
        return None
    return tuple(name for name, given, used in (("A", layout.a, runs.a), ("B", layout.b, runs.b))
                 if given not in (used, ANY))


def _refuse(layout: Layout, spec):
    from gemmlab.errors import LayoutError

    raise LayoutError(spec.layout_refusal(layout))
