"""kernel="auto": which kernel runs a problem, from what was measured on this GPU.

The dispatch table holds, per GPU, precision and measured shape, gemmlab's own kernels that verified there, fastest
first (peers are never picked: gemmlab.matmul runs gemmlab's kernels), each row with the layout it was timed in where
that is not the harness's natural one (``gemmlab bench --layout``: B as w.t(), and the copies its time includes).
``gemmlab dispatch --write`` adds a bench run's results to the table of this machine (``$GEMMLAB_CACHE/dispatch.json``);
the H200's, from the runs committed under results/h200/ (the suite's grid among them: ``gemmlab bench --suite-grid``),
ships with gemmlab (data/dispatch-h200.json, ``gemmlab dispatch --build``) as the default.

For a problem, ``rank`` reads the measured shapes nearest to it (in log space over M, N and K: the shape itself if it
was measured, else the nearest and those within a doubling of it) and predicts each kernel measured there: its
measured time scaled by a model of how the kernel's time changes between the two shapes (analysis/scaling.py:
waves and tile fill from its tile and the SM count, bytes and flops against this GPU's roofs, the copies and
pre-passes of each call). ``choose`` takes the first, fastest predicted, that takes the problem and reads the
operands' layout in place; if none reads it in place, the first that takes the problem after a copy. Between
measured shapes the model's ratio is trusted only so far: the winner measured at the nearest shape stands against a
prediction less than (1 + MARGIN)^(1 + distance) faster. Without an entry for this GPU, each precision's default
level runs.

"Fastest" is what a call from an idle GPU waits: where records carry it (small problems, ``call_host_us``), the
host time of one gemmlab.matmul call, then the kernel's GPU time. Host time belongs to the call path, not the
kernel: ``rank`` counts for each kernel the median host time of the kernels measured at that shape whose calls launch
as many kernels (the one-launch calls' host times at a shape fall near 13 or near 20 µs whatever the kernel), and for
a launch count none measured there the nearest measured count's, HOST_LAUNCH_US a launch more or less. A kernel whose
plan launches twice (a pre-pass, then the kernel) pays more host time than one launch; a kernel faster on the GPU by
more than its extra host time still leads. Calls within HOST_TIE of the fastest go by GPU time: host times of one
call path differ by about that much from run to run, and a CUDA graph or a stream that runs ahead waits for the
kernels alone. A kernel that failed verification at a shape a prediction reads is never run.

Matrix-vector products (M = 1 or N = 1) in FP32 and TF32 run gemv1 in FP32 wherever it reads the layout in place
(``SMALL_M``), before the table: the tiled levels spend most of a tile on one row, and torch's matrix-vector path
computes TF32 calls in FP32, so a TF32 call there gets FP32's accuracy as torch's does. From 2 rows on, FP32 and
TF32 follow the table (gemv1 where it was measured fastest).

Host arrays (NumPy, CPU tensors) run on the host (cpu/blas; BF16 and FP16 widened to FP32 there, ``HOST_WIDENED``),
as torch runs CPU tensors on the CPU. A measured kernel whose spec says why it is not for "auto"
(``KernelSpec.auto_refusal``: tc7_3xtf32, whose splits turn an infinite input into NaN; the TF32 builds that truncate
instead of rounding to nearest) runs only when named; the defaults are an explicit list and are not filtered so (tc1
TF32, which truncates, is the TF32 default of a GPU without wgmma).
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gemmlab.cache import cache_root, read_json, write_json
from gemmlab.device import SHIPPED_GPU, shipped_name_for
from gemmlab.dispatch_layout import operand_copies, refuse_layout, row_layout
from gemmlab.kernels.plan import Layout
from gemmlab.problem import BatchedProblem, PrecisionTable, Problem

SHIPPED = Path(__file__).parent / "data" / "dispatch-h200.json"
# Without a measured entry: each precision's levels in the order they are tried, the first one this GPU runs
DEFAULTS = PrecisionTable(lambda p: p.auto_defaults)
HOST_DEFAULT = "cpu/blas"
# Host operands of these precisions run on HOST_DEFAULT widened to FP32 (exactly), C rounded once to its type after any
# epilogue: torch's CPU matmul accumulates BF16 and FP16 in FP32 too, and returns the operands' dtype
HOST_WIDENED = ("bf16", "fp16")
# The matrix-vector kernel per precision, ahead of the table for M = 1 or N = 1 (FP32 products for TF32 calls too)
SMALL_M = {"fp32": "cuda/gemv1_warp_dot_fp32", "tf32": "cuda/gemv1_warp_dot_tf32"}
# Calls within this fraction of the fastest call's time (host, then GPU) are one time and go by GPU time
HOST_TIE = 0.05
# Host time of one more launch in a call, where no call of that many launches was measured at a shape: assumed, about
# a prepared launch from Python (DEVICE.md: cuda.core's, 5 µs)
HOST_LAUNCH_US = 5.0
NEIGHBOURS = 4  # measured shapes a prediction between them reads, at most
REACH = math.log(2)  # ... those within one doubling of one dimension farther than the nearest
MARGIN = 0.05  # between measured shapes, how much faster a prediction must be to displace the nearest's winner


def shipped_gpu():
    """The GPU the shipped table was measured on, as gemmlab.device describes one: what ``gemmlab dispatch`` and a grid
    plan answer for on a machine without a GPU."""
    return SHIPPED_GPU


def sibling(gpu, table: dict) -> str | None:
    """The shipped table's GPU where ``gpu`` is another GPU of its chip (gemmlab.device.shipped_name_for: an H100 SXM
    for the H200) and the table holds its rows; else None."""
    near = shipped_name_for(gpu.name, gpu)
    return near if near != gpu.name and near in table else None


def table_rows(gpu, table: dict, precision: str) -> dict:
    """The measured shapes of ``precision`` that ``gpu`` reads ({"MxNxK": rows}): its own, over those of the shipped
    table's GPU where it is of that chip (``sibling``: the H200's rows fill every shape it has none of, so a few rows
    of its own, a bench's `gemmlab dispatch --write`, do not hide the rest)."""
    near = sibling(gpu, table)
    rows = dict(table.get(near, {}).get(precision, {})) if near else {}
    rows.update(table.get(gpu.name, {}).get(precision, {}))
    return rows


def _table_source(gpu, table: dict, precision: str) -> str:
    """How a choice names the table it read: "dispatch table for GPU", and where it reads another GPU's rows of its
    chip, which, and whether some of its own lie over them."""
    near = sibling(gpu, table)
    if near is None or not table.get(near, {}).get(precision):
        return f"dispatch table for {gpu.name}"
    own = " under its own rows" if table.get(gpu.name, {}).get(precision) else ""
    return (f"dispatch table for {near}, read for this {gpu.name}{own} (the same chip: compute capability "
            f"{gpu.cc[0]}.{gpu.cc[1]}, {gpu.sm_count} SMs; the times are {near}'s)")


def local_path() -> Path:
    return cache_root() / "dispatch.json"


@dataclass(frozen=True)
class Choice:
    spec: object
    why: str
    copies: tuple[str, ...] = ()  # operands gemmlab.matmul copies into row-major order first


def per_call_ms(row: dict, typical_host_us: float = 0.0) -> float:
    """A table row's time of one call from an idle GPU: its host time (``typical_host_us`` for a row that has none),
    then its GPU time."""
    return row["ms"] + row.get("host_us", typical_host_us) / 1e3


def table_from_results(results: dict) -> dict:
    """{gpu: {precision: {"MxNxK": [{"kernel", "ms"[, "host_us"][, "layout", "copies"][, "BM"]}, ...fastest per
    call first]}}} from a results JSON's verified records of gemmlab's registered GPU kernels (not bench --variant's;
    "BM": the tile height of a kernel that picks one per problem, _tile_rows). A
    record timed in a layout of its own (bench --layout) keeps it, and the copies its time includes; a kernel has a
    row per layout it was timed in. A kernel that failed verification at a shape gets a row {"kernel", "failed":
    true} there, last: it replaces that kernel's earlier measurement when tables merge, and ``choose`` never runs
    it."""
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
        layout = {"layout": r["layout"]} if r.get("layout") else {}
        if failed:
            rows.append({"kernel": r["kernel"], "failed": True, **layout})
            continue
        row = {"kernel": r["kernel"], "ms": r["median_ms"], **layout, **_tile_rows(r)}
        if r.get("copies"):
            row["copies"] = list(r["copies"])
        if r.get("call_host_us"):
            row["host_us"] = r["call_host_us"]
        rows.append(row)
    for precision, shapes in table.get(gpu, {}).items():
        for label, rows in shapes.items():
            shapes[label] = _ranked(rows, precision, label)
    return table


def _tile_rows(record: dict) -> dict:
    """{"BM": rows} for a record of a kernel that picks its tile height per problem (short_tile): the height it
    was measured on, which rank models that measurement at (the table's older rows were measured before the kernel
    picked one, on its registered height). {} for the other kernels."""
    from gemmlab.errors import GemmlabError
    from gemmlab.kernels.registry import get_kernel

    try:
        spec = get_kernel(record["kernel"])
    except GemmlabError:
        return {}
    if getattr(spec, "short_tile", None) is None:
        return {}
    return {"BM": (record.get("params") or spec.params)["BM"]}


def _measured_build(spec, row: dict):
    """The build a table row was measured on: where the row names its tile height (_tile_rows), the spec pinned
    to it; else the spec, whose for_problem picks what runs at the measured shape."""
    bm = row.get("BM")
    if bm is None or getattr(spec, "short_tile", None) is None:
        return spec
    return spec.short() if bm == spec.short_tile["BM"] else dataclasses.replace(spec, short_tile=None)


def _height_change(spec, row: dict, problem: Problem, sm_count: int) -> float:
    """A short_tile kernel's time at ``problem`` on the tile height it picks there over its time on the height
    ``row`` was measured on, by the count its choice is made by (tiles.short_cost, fitted to both heights' times at
    the same shapes): 1 where they are the same height."""
    from gemmlab.kernels.cuda.tc.model.tiles import short_cost

    measured, runs = row.get("BM"), spec.for_problem(problem, sm_count).params["BM"]
    if measured is None or measured == runs:
        return 1.0
    tall, short = max(measured, runs), min(measured, runs)
    cost = short_cost(problem.m, problem.n, {**spec.params, "BM": tall}, short, sm_count)
    return cost if runs == short else 1.0 / cost


def _key(row: dict) -> tuple[str, str]:
    """What a table holds one row of per shape: a kernel in a layout ("": the natural one)."""
    return row["kernel"], row.get("layout", "")


def _ranked(rows: list[dict], precision: str, label: str) -> list[dict]:
    """One row per kernel and layout, fastest per call first (each with the host time of its call path there:
    ``_host_us``); a kernel that failed in any of them, last, as failed."""
    failed = {_key(row) for row in rows if row.get("failed")}
    best: dict = {}
    for row in rows:  # a kernel timed twice (two runs merged) keeps its record with a host time, the faster
        if _key(row) in failed:
            continue
        old = best.get(_key(row))
        if old is None or ("host_us" in row, -per_call_ms(row)) > ("host_us" in old, -per_call_ms(old)):
            best[_key(row)] = row
    launches = {key: _launches(row, precision, label) for key, row in best.items()}
    host = _host_us(_host_medians(best, launches), launches)
    order = fastest_first(list(best), lambda key: best[key]["ms"] + host[key] / 1e3, lambda key: best[key]["ms"])
    return [best[key] for key in order] + [{"kernel": k, "failed": True, **({"layout": layout} if layout else {})}
                                           for k, layout in sorted(failed)]


def _launches(row: dict, precision: str, label: str) -> int:
    """The kernels a call with ``row``'s kernel launches at shape ``label`` in the row's layout (the scaling model's
    count: copies, pre-passes, the kernel); one where gemmlab has no such kernel or no model of it. The count does not
    depend on the roofs: the H200's serve any table."""
    from gemmlab.analysis.scaling import estimate
    from gemmlab.errors import GemmlabError
    from gemmlab.kernels.registry import get_kernel

    try:
        spec = get_kernel(row["kernel"])
        problem = Problem(*_dims(label), precision)
        return estimate(spec, problem, _roofs("NVIDIA H200", 132), row_layout(row, precision),
                        tuple(row.get("copies", ()))).launches
    except (GemmlabError, KeyError, TypeError):
        return 1


def fastest_first(items, call, gpu) -> list:
    """``items`` by ``call`` (ms a call from an idle GPU), those within HOST_TIE of the fastest call first, by
    ``gpu`` (GPU ms)."""
    by_call = sorted(items, key=lambda x: (call(x), gpu(x)))
    if not by_call:
        return by_call
    tied = sum(call(x) <= call(by_call[0]) * (1 + HOST_TIE) for x in by_call)
    return sorted(by_call[:tied], key=gpu) + by_call[tied:]


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
                timed = {_key(row) for row in rows}
                mine[label] = _ranked([row for row in mine.get(label, []) if _key(row) not in timed] + rows, p, label)
    return out


def write_table(runs: list[dict], path: Path | None = None, replace: bool = False) -> tuple[Path, dict] | None:
    """Write the table of ``runs`` (results JSONs, their records pooled per GPU: table_from_runs) over the table at
    ``path`` (default: this machine's, which kernel="auto" reads over the shipped one), each kernel's rows replacing
    its own there (merge); with ``replace``, the table of these runs alone (the shipped one: ``gemmlab dispatch
    --build``). The path and the table written; None where the runs hold no row or the file cannot be written."""
    new = table_from_runs(runs)
    if not new:
        return None
    path = local_path() if path is None else Path(path)
    table = new if replace else merge(read_json(path), new)
    if not write_json(path, table):
        return None
    load_table.cache_clear()
    return path, table


def record(results: dict) -> Path | None:
    """Add a run's measurements to this machine's dispatch table; the path written, None if nothing was."""
    written = write_table([results])
    return written[0] if written else None


@lru_cache(maxsize=1)
def load_table() -> dict:
    """The shipped table with this machine's measurements on top (read once per process)."""
    return merge(read_json(SHIPPED), read_json(local_path()))


def _dims(label: str) -> tuple[int, int, int] | None:
    try:
        dims = tuple(int(x) for x in label.split("x"))
    except ValueError:
        return None
    return dims if len(dims) == 3 and min(dims) > 0 else None


@dataclass(frozen=True)
class Point:
    """A measured shape near a problem: its label, dimensions, distance in log space and rows."""

    label: str
    dims: tuple
    distance: float
    rows: list


def neighbours(shapes: dict, problem: Problem) -> list[Point]:
    """The measured shapes a prediction for ``problem`` reads: the exact one if it was measured; else the nearest
    (the sum over M, N and K of |log(ratio)|) and up to NEIGHBOURS - 1 more within REACH of it."""
    points = []
    for label, rows in shapes.items():
        dims = _dims(label)
        if dims:
            points.append(Point(label, dims, sum(abs(math.log(a / b)) for a, b in zip(dims, problem.shape)), rows))
    points.sort(key=lambda p: p.distance)
    if not points or points[0].distance == 0:
        return points[:1]
    return [p for p in points[:NEIGHBOURS] if p.distance <= points[0].distance + REACH]


@dataclass(frozen=True)
class Candidate:
    """A kernel measured near a problem, with its predicted time there and where the prediction comes from."""

    spec: object
    ms: float  # predicted GPU time of a call, copies included
    per_call_ms: float  # ... after the host time of a call, where the measurements have one
    copies: tuple | None  # operands gemmlab.matmul copies first; None where no copy makes the layout readable
    refusal: str  # why kernel="auto" passes it over ("" if it may run it)
    # (label, measured row, ratio, distance, host µs, scaled) per measured shape it reads, nearest first; scaled:
    # whether the prediction reads it (a shape measured in another build of a kernel with unscaled_params is not)
    basis: tuple
    model: object = None  # the scaling model's Estimate at the problem, None where it has none
    batch: bool = False  # predicted for a batch, from the measurements of its flattened shape

    @property
    def exact(self) -> bool:
        """Whether the prediction is a measurement: of this configuration, at this problem."""
        return not self.batch and len(self.basis) == 1 and self.basis[0][3] == 0


@lru_cache(maxsize=8)
def _roofs(gpu_name: str, sm_count: int):
    """The roofs of this GPU for the scaling model: its stored measurement over the datasheet (for the shipped
    table's GPU without one, the measurement shipped beside the table: analysis.ceilings.SHIPPED), its own SM
    count."""
    import dataclasses

    from gemmlab.analysis.ceilings import stored_ceilings
    from gemmlab.analysis.roofline import DEVICES, ceilings_for, device_spec
    from gemmlab.errors import GemmlabError

    try:
        dev = device_spec(gpu_name)
    except GemmlabError:  # a GPU without a datasheet here: the H200's per-SM rates, its own SM count
        dev = DEVICES["h200"]
    return dataclasses.replace(stored_ceilings(ceilings_for(dev)), sm_count=sm_count)


def model_roofs(gpu):
    """The roofs ``rank`` scales measurements by on ``gpu`` (``_roofs``)."""
    return _roofs(gpu.name, gpu.sm_count)


def _pick_rows(rows: list, layout: Layout, precision: str) -> tuple[dict, set]:
    """Per kernel the row measured in ``layout`` where there is one, else in the natural layout, else any; and the
    kernels that failed verification there."""
    failed = {row["kernel"] for row in rows if row.get("failed")}
    natural = row_layout({}, precision)
    best: dict = {}
    for row in rows:
        if row.get("failed") or row["kernel"] in failed:
            continue
        measured = row_layout(row, precision)
        score = 2 if measured == layout else 1 if measured == natural else 0
        if row["kernel"] not in best or score > best[row["kernel"]][0]:
            best[row["kernel"]] = (score, row)
    return {k: row for k, (_, row) in best.items()}, failed


def rank(problem: Problem, layout: Layout, gpu, table: dict | None = None) -> list[Candidate]:
    """The kernels measured at the shapes near ``problem`` (``neighbours``) for ``gpu``, fastest predicted per call
    first. A kernel's prediction from one measured shape g is its time there times estimate(problem) / estimate(g)
    (analysis/scaling.py: waves, tile fill, bytes and copies under this GPU's roofs), after its host time there where
    that was measured; from several, their geometric mean weighted by 1 / distance (of a kernel whose row counts
    are separate builds the model does not see, ``KernelSpec.unscaled_params``: gemv's, the shapes that run the
    same build where some near ones do). At a measured shape, the measurement. A kernel that failed verification at
    any of the shapes is left out; one this gemmlab does not have too. A precision without a table of its own
    (``Precision.dispatch_from``: FP16) reads that precision's, each kernel by its own name for this precision
    (``_renamed``). Each candidate is the registered build its rows measured; tc5's and tc6's A_IN_REGS (the operands
    exchanged) is a variant, run only when named: their maps round both operands, leaving no pre-pass for the
    exchange to shrink."""
    from gemmlab.analysis.scaling import estimate
    from gemmlab.errors import GemmlabError, UnknownKernelError
    from gemmlab.kernels.registry import get_kernel

    table = load_table() if table is None else table
    asked = problem  # a batch: the measured neighbours of its flattened shape (its work), the model of the batch
    if isinstance(problem, BatchedProblem):
        problem = problem.flattened()
    source = problem.prec.dispatch_precision
    points = neighbours(table_rows(gpu, table, source), problem)
    roofs = _roofs(gpu.name, gpu.sm_count)
    picked, banned = [], set()
    for point in points:
        rows, failed = _pick_rows(point.rows, layout, source)
        picked.append((point, rows))
        banned |= failed
    kernels = {}  # name: (spec, copies, refusal, the model here)
    for name in dict.fromkeys(k for _, rows in picked for k in rows):
        if name in banned:
            continue
        try:
            spec = get_kernel(_renamed(name, source, problem.precision))
        except UnknownKernelError:
            continue  # a table from another version of gemmlab, or a level without a build for this precision
        copies = operand_copies(layout, spec)
        try:
            here = estimate(spec, asked, roofs, layout, copies or ())
        except (GemmlabError, KeyError):  # no model of this kernel here: the measurements as they are
            here = None
        refusal = spec.is_valid(asked) or spec.in_place_refusal(asked, layout) or spec.unsupported(gpu) or \
            spec.auto_refusal()
        kernels[name] = (spec, copies, str(refusal or ""), here)
    # name: the measured shapes that run its build here, where some do and some do not (same_build); the others
    # stay in its basis, where choose's margin reads what was measured fastest at the nearest shape
    same = {}
    for name in kernels:
        runs = {point.label for point, rows in picked if name in rows and
                kernels[name][0].same_build(problem, _point_problem(point, problem), gpu.sm_count)}
        if runs and len(runs) < sum(name in rows for _, rows in picked):
            same[name] = runs
    predicted = {name: [] for name in kernels}  # (weight, GPU ms, ms a call) from each measured shape
    basis = {name: [] for name in kernels}
    scaled_at = []  # per measured shape: {name: (ratio of the model here to there, launches a call makes there)}
    for point, rows in picked:
        there = {}
        for name, row in rows.items():
            if name not in kernels:
                continue
            spec, copies, _, here = kernels[name]
            built = _measured_build(spec, row)
            try:
                model = estimate(built, _point_problem(point, problem), roofs, row_layout(row, problem.precision),
                                 tuple(row.get("copies", ())))
                if not point.distance and built is not spec and here is not None:
                    # at a measured shape, the measurement of the build it ran, scaled for the caller's layout and
                    # copies, and from the tile height it ran to the one the kernel picks there now by the rule
                    # that picks it (_height_change)
                    here = estimate(built, asked, roofs, layout, copies or ())
                    here = dataclasses.replace(here, ms=here.ms * _height_change(spec, row, problem, gpu.sm_count))
            except (GemmlabError, KeyError):
                model = None
            ratio = here.ms / model.ms if here is not None and model is not None else 1.0
            there[name] = (ratio, model.launches if model is not None else 1)
        scaled_at.append(there)
    medians = [_host_medians(rows, {name: n for name, (_, n) in there.items()})
               for (_, rows), there in zip(picked, scaled_at)]
    # a shape whose rows hold no host time (measured large, where none is taken) reads the near shapes' call path
    pooled = {n: statistics.median(m[n] for m in medians if n in m) for n in {n for m in medians for n in m}}
    for (point, rows), there, measured in zip(picked, scaled_at, medians):
        host = _host_us(measured or pooled, {name: launches for name, (_, launches) in there.items()})
        for name, (ratio, _) in there.items():
            row = rows[name]
            gpu_ms = row["ms"] * ratio
            scaled = name not in same or point.label in same[name]
            basis[name].append((point.label, row, ratio, point.distance, host[name], scaled))
            if scaled:
                predicted[name].append((1.0 / point.distance if point.distance else 1.0, gpu_ms,
                                        gpu_ms + host[name] / 1e3))
    out = []
    for name, (spec, copies, refusal, here) in kernels.items():
        if len(predicted[name]) == 1:
            _, ms, per_call = predicted[name][0]
        else:  # the geometric mean, weighted by closeness
            total = sum(w for w, _, _ in predicted[name])
            ms = math.exp(sum(w * math.log(g) for w, g, _ in predicted[name]) / total)
            per_call = math.exp(sum(w * math.log(c) for w, _, c in predicted[name]) / total)
        out.append(Candidate(spec, ms, per_call, copies, refusal, tuple(basis[name]), here,
                             batch=isinstance(asked, BatchedProblem)))
    return fastest_first(out, lambda c: c.per_call_ms, lambda c: c.ms)


def _point_problem(point: Point, problem: Problem) -> Problem:
    """The problem measured at ``point``, in ``problem``'s precision and output type."""
    return Problem(*point.dims, problem.precision, out_dtype=problem.out_dtype)


def _host_medians(rows: dict, launches: dict) -> dict:
    """{launches a call makes: the median host time of the calls of that many launches} at one measured shape
    (``rows``, by name; ``launches``: the kernels each one's call launches there). Host time is the call path's, not
    the kernel's: the kernels whose calls launch as many kernels share one (the one-launch calls' host times at a
    shape fall near 13 or near 20 µs whatever the kernel: the host's state when each was measured)."""
    by_launches: dict = {}
    for name, row in rows.items():
        if "host_us" in row and name in launches:
            by_launches.setdefault(launches[name], []).append(row["host_us"])
    return {n: statistics.median(times) for n, times in by_launches.items()}


def _host_us(medians: dict, launches: dict) -> dict:
    """The host time of a call with each kernel (``launches``: the kernels each one's call launches) from the
    ``medians`` of the calls of each launch count (``_host_medians``): a launch count none measured, the nearest
    measured count's, HOST_LAUNCH_US a launch more or less; none measured at all: 0."""
    def host(n: int) -> float:
        if n in medians:
            return medians[n]
        if not medians:
            return 0.0
        near = min(medians, key=lambda m: (abs(m - n), m))
        return max(0.0, medians[near] + (n - near) * HOST_LAUNCH_US)

    return {name: host(n) for name, n in launches.items()}


def _renamed(name: str, source: str, precision: str) -> str:
    """The name of table precision ``source``'s kernel ``name`` for ``precision``: the precision is a kernel name's
    last part (cuda/tc4_persistent_bf16 -> cuda/tc4_persistent_fp16)."""
    if source == precision or not name.endswith("_" + source):
        return name
    return name[:-len(source)] + precision


def choose(problem: Problem, layout: Layout, gpu, epilogue=None, formats: tuple | None = None,
           table: dict | None = None) -> Choice:
    """The kernel gemmlab.matmul runs for ``problem`` on ``gpu`` (a GPUInfo), and why (``_choose``); a precision that
    reads another's dispatch table says so. ``formats``: the FP8 operands' dtypes (A's, B's), which a kernel must have
    a build for; ``table``: a dispatch table to read instead of this machine's (``load_table``)."""
    choice = _choose(problem, layout, gpu, epilogue, formats, table)
    source = problem.prec.dispatch_precision
    if source == problem.precision:
        return choice
    return dataclasses.replace(choice, why=f"{choice.why} ({problem.precision} has no measured grid of its own: "
                                           f"{source}'s dispatch table, the same tensor-core instruction rates)")


def _choose(problem: Problem, layout: Layout, gpu, epilogue=None, formats: tuple | None = None,
            table: dict | None = None) -> Choice:
    """The kernel gemmlab.matmul runs for ``problem`` on ``gpu`` (a GPUInfo), and why: of the kernels ``rank``
    predicts fastest per call, the first that takes the problem and reads the layout in place, else the first that
    takes it after a copy (with a fused ``epilogue``, of the kernels that fuse it; with FP8 ``formats``, of those
    that have a build for them). Between measured shapes, the winner measured at the nearest one stands against a
    prediction faster by less than a factor (1 + MARGIN)^(1 + d), d that shape's distance: the model's ratio is
    trusted less the farther it reaches. Without a measured kernel that takes the problem, the precision's
    defaults."""
    from gemmlab.kernels.registry import get_kernel
    from gemmlab.errors import UnknownKernelError

    small = _small_m(problem, layout, gpu, epilogue)
    if small is not None:
        return small
    refusals: list = []  # (spec, why it refuses the problem)
    table = load_table() if table is None else table
    ranked = rank(problem, layout, gpu, table)
    source = _table_source(gpu, table, problem.prec.dispatch_precision)
    for c in ranked:
        runs = c.spec.is_valid(problem) or c.spec.in_place_refusal(problem, layout) or c.spec.unsupported(gpu) or \
            (formats and c.spec.formats_refusal(*formats))
        if runs:
            refusals.append((c.spec, runs))
    usable = [c for c in ranked if not c.refusal and not c.spec.epilogue_refusal(epilogue)
              and not (formats and c.spec.formats_refusal(*formats))]
    in_place = [c for c in usable if c.copies == ()]
    if in_place:
        pick = _anchored(in_place)
        return Choice(pick.spec, _why(source, problem, layout, ranked, pick, "in place", in_place[0]))
    copied = [c for c in usable if c.copies is not None]
    if copied:
        pick = _anchored(copied)
        return Choice(pick.spec, _why(source, problem, layout, ranked, pick, "after a copy", copied[0]),
                      copies=pick.copies)
    # measured kernels that cannot read the layout even after a copy (gemv1 against a row-major B): the defaults

    def default(name: str):
        try:
            spec = get_kernel(name)
        except UnknownKernelError:
            return None
        why = spec.is_valid(problem) or spec.in_place_refusal(problem, layout) or spec.unsupported(gpu) or \
            spec.epilogue_refusal(epilogue) or (formats and spec.formats_refusal(*formats))
        if why:
            refusals.append((spec, why))
            return None
        return spec

    names = DEFAULTS[problem.precision]
    if isinstance(problem, BatchedProblem):  # then the levels that take a batch, in the registry's order
        from gemmlab.kernels.registry import list_kernels

        names += tuple(s.name for s in list_kernels() if s.batches and s.precision == problem.precision)
    spec = next((s for s in (default(name) for name in names) if s is not None), None)
    if spec is None:
        from gemmlab.errors import NoGPUError

        if isinstance(problem, BatchedProblem):  # what the levels that take a batch need, not that others take none
            refusals = [(s, w) for s, w in refusals if s.batches] or refusals
        first = refusals[0][1] if refusals else None
        error = getattr(first, "error", NoGPUError) if refusals else NoGPUError
        raise error(f"no gemmlab {problem.precision} kernel runs {problem.label()} on {gpu.name}: "
                    f"{first if refusals else 'none is registered'}")
    why = (f"no dispatch table entry for {problem.precision} on {gpu.name}: {spec.name}, the first of the "
           f"{problem.precision} defaults ({', '.join(DEFAULTS[problem.precision])}) that runs there")
    copied = operand_copies(layout, spec)
    if copied is None:
        refuse_layout(layout, spec)
    return Choice(spec, why, copies=copied)


def _small_m(problem: Problem, layout: Layout, gpu, epilogue=None) -> Choice | None:
    """gemv1 in FP32 (SMALL_M) for a matrix-vector ``problem`` (M = 1 or N = 1),
    where it reads ``layout`` in place and fuses ``epilogue``; None elsewhere."""
    from gemmlab.kernels.registry import get_kernel

    name = SMALL_M.get(problem.precision)
    if name is None or (problem.m > 1 and problem.n != 1):
        return None
    spec = get_kernel(name)
    if spec.is_valid(problem) or spec.unsupported(gpu) or operand_copies(layout, spec) != () or \
            spec.epilogue_refusal(epilogue):
        return None
    return Choice(spec, f"{problem.label()} with {layout.label()}: {name}, the FP32 matrix-vector kernel, ahead of "
                        "the tiled levels for a vector A or B, in place (TF32 calls computed in FP32, as torch's "
                        "matrix-vector path does)")


def _anchored(candidates: list[Candidate]) -> Candidate:
    """The first of ``candidates`` (fastest predicted), or the one measured fastest at the nearest shape where its
    prediction is within the factor ``choose`` names of the first's. Shapes equally near that measured different
    winners leave it to the prediction (else the table's order would pick among them)."""
    best = candidates[0]
    if best.exact:
        return best
    distance = min(b[3] for c in candidates for b in c.basis)
    winners = {}  # the winner measured at each nearest shape, by name
    for label in dict.fromkeys(b[0] for c in candidates for b in c.basis if math.isclose(b[3], distance)):
        there = [(c, b) for c in candidates for b in c.basis if b[0] == label]
        c = fastest_first(there, lambda cb: cb[1][1]["ms"] + cb[1][4] / 1e3, lambda cb: cb[1][1]["ms"])[0][0]
        winners[c.spec.name] = c
    if len(winners) > 1:  # the nearest shapes, equally near, measured different winners: none to anchor on
        return best
    anchor, = winners.values()
    return anchor if anchor.per_call_ms <= best.per_call_ms * (1 + MARGIN) ** (1 + distance) else best


def _why(source: str, problem: Problem, layout: Layout, ranked: list[Candidate], pick: Candidate, how: str,
         best: Candidate) -> str:
    """Why ``pick``, of the ``ranked`` candidates: where it was measured (``source``: the table, _table_source) or how
    it was predicted; where it is not ``best`` (the fastest predicted of those the call may run), the prediction it
    stands against (``_anchored``)."""
    place = ranked.index(pick) + 1
    label, row = pick.basis[0][:2]
    stands = "" if pick is best else \
        (f"stands against {best.spec.name}'s prediction of {best.per_call_ms:.4g} ms, within the model's margin there")
    if pick.exact:
        if how == "in place":
            return (f"{source}: #{place} of the {len(ranked)} candidates at {label}, measured there "
                    f"({_measured(row, pick, problem)}), that takes {problem.label()} with {layout.label()} in place"
                    + (f"; it {stands}" if stands else ""))
        return (f"{source}: fastest at {label} that takes {problem.label()}; none of the "
                f"measured kernels it may run reads {layout.label()} in place")
    taken = "with " + layout.label() + " in place" if how == "in place" else \
        f"after a copy (none of the measured kernels it may run reads {layout.label()} in place)"
    near = "at" if pick.basis[0][3] == 0 else "near"
    return (f"{source}: #{place} of the {len(ranked)} candidates ranked {near} "
            f"{problem.label()} that takes {problem.label()} {taken}, {pick.spec.name}, predicted "
            f"{pick.per_call_ms:.4g} ms a call ({explain(pick)})"
            + (f"; the fastest measured at {label}, which {stands}" if stands else ""))


def explain(c: Candidate) -> str:
    """Where a prediction comes from: each measured shape's time and the model's ratio, and the model's factors."""
    parts = [f"{row['ms']:.4g} ms at {label} × {ratio:.3g}" if scaled else
             f"{row['ms']:.4g} ms at {label}, another build, not read" for label, row, ratio, _, _, scaled in c.basis]
    text = "; ".join(parts)
    if c.model is not None:
        text += f"; model here: {c.model.factors()}"
    return text


def _measured(row: dict, pick: Candidate, problem: Problem) -> str:
    """A measured row's GPU time, after the host time ``rank`` counts for a call with its kernel there (the median of
    the kernels whose calls launch as many kernels: ``_host_us``); a row timed on a tile height the kernel no longer
    picks there says so, and what it was scaled by (_height_change)."""
    text = f"{row['ms']:.4g} ms on the GPU"
    if row.get("BM") and getattr(pick.spec, "short_tile", None):
        runs = pick.spec.for_problem(problem).params["BM"]
        if runs != row["BM"]:
            text += (f" on {row['BM']}-row tiles, × {pick.basis[0][2]:.3g} for the {runs} rows it runs here "
                     "(tiles.short_cost)")
    host_us = 1e3 * (pick.per_call_ms - pick.ms)
    if host_us > 0:
        text += f" after {host_us:.3g} µs of host time a call"
    return text
