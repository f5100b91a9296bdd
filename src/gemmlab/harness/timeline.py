"""Where a persistent kernel's cycles go, read from inside the kernel.

tc4 (and tc8) built with TIMELINE=1 has each consumer warpgroup stamp clock64 as it works (the layout is
Timeline's in tc_timeline.cuh): at its start, when each unit's first k-tile has landed, when the unit's last wgmma
retires, when its epilogue has handed C on, and at its end; %globaltimer at the start and the end puts all warpgroups on
one time axis. ``summarize`` turns one launch's stamps into a cycle budget:

- prologue: start to the first k-tile landing (barrier setup, cluster sync, the first TMA loads from DRAM);
- mainloop, per unit: first k-tile landed to last wgmma retired. Divided by the unit's k-tiles it is the cycles one
  k-tile takes, beside what the tensor cores need for it (BM·BN·BK multiply-adds at the SM's dense rate);
- epilogue, per unit: last wgmma to C handed on (stores issued);
- gap: one unit's epilogue to the next unit's first k-tile (tile scheduling, the wait on the ring);
- tail: the last epilogue to the warpgroup's end.

Counters (Nsight Compute) say how busy each part of the SM was over the whole launch; the stamps say when, per
warpgroup, which is what splits a gap to cuBLAS into mainloop rate, per-tile overhead and launch edges.
The instrumented binary is a different build; ``record`` checks its C against the float64 reference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmlab.errors import GemmlabError
from gemmlab.problem import Problem


def _stats(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    if not v.size:
        return {"median": None, "p10": None, "p90": None, "n": 0}
    return {"median": float(np.median(v)), "p10": float(np.percentile(v, 10)), "p90": float(np.percentile(v, 90)),
            "n": int(v.size)}


def summarize(raw, k_tiles: int, ideal_ktile_cycles: float | None = None) -> dict:
    """The cycle budget of one launch from its stamps, ``raw`` of shape (blocks, warpgroups, slots): per warpgroup,
    4 readings for its start and end and 3 for each unit it ran.
    ``k_tiles``: k-tiles per unit (whole tiles: ceil(K / BK))."""
    raw = np.asarray(raw, dtype=np.int64)
    TL_SLOTS = raw.shape[-1]
    TL_UNITS = (TL_SLOTS - 4) // 3
    rows = raw.reshape(-1, TL_SLOTS)
    rows = rows[rows[:, 1] != 0]
    if not len(rows):
        raise GemmlabError("timeline: no warpgroup wrote its stamps (was the kernel built with TIMELINE=1?)")
    starts = rows[:, 2:2 + 3 * TL_UNITS:3]
    units = (starts != 0).sum(axis=1)
    if (units == TL_UNITS).any():
        raise GemmlabError(f"timeline: a warpgroup ran {TL_UNITS} units or more, past the stamps it holds; "
                           "use a smaller problem")
    main, epi, gap, pro, tail, busy = [], [], [], [], [], []
    for r, n in zip(rows, units):
        s, e, p = (r[2 + i:2 + 3 * n:3] for i in range(3))
        order = np.concatenate([r[1:2], np.column_stack([s, e, p]).ravel(), r[TL_SLOTS - 2:TL_SLOTS - 1]])
        if np.any(np.diff(order) < 0):
            raise GemmlabError("timeline: a warpgroup's stamps are out of order")
        main += list(e - s)
        epi += list(p - e)
        gap += list(s[1:] - p[:-1])
        if n:
            pro.append(s[0] - r[1])
            tail.append(r[TL_SLOTS - 2] - p[-1])
        busy.append((e - s).sum() / max(1, r[TL_SLOTS - 2] - r[1]))
    ns0, ns1 = rows[:, 0], rows[:, TL_SLOTS - 1]
    clock_mhz = (rows[:, TL_SLOTS - 2] - rows[:, 1]) / np.maximum(1, ns1 - ns0) * 1e3
    finish = ns1 - ns0.min()
    mainloop = _stats(main)
    ktile = mainloop["median"] / k_tiles if mainloop["median"] is not None else None
    return {
        "warpgroups": int(len(rows)),
        "units_per_warpgroup": {int(k): int(v) for k, v in zip(*np.unique(units, return_counts=True))},
        "k_tiles_per_unit": int(k_tiles),
        "mainloop_cycles": mainloop,
        "ktile_cycles": ktile,
        "ideal_ktile_cycles": ideal_ktile_cycles,
        "mainloop_efficiency": (ideal_ktile_cycles / ktile) if ideal_ktile_cycles and ktile else None,
        "epilogue_cycles": _stats(epi),
        "gap_cycles": _stats(gap),
        "prologue_cycles": _stats(pro),
        "tail_cycles": _stats(tail),
        "mainloop_share": float(np.median(busy)),
        "clock_mhz": float(np.median(clock_mhz)),
        "span_ns": int(ns1.max() - ns0.min()),
        "finish_ns": {"first": int(finish.min()), "median": float(np.median(finish)), "last": int(finish.max())},
    }


@dataclass(frozen=True)
class TimelineOptions:
    kernels: str  # glob(s) of kernels with stamps (tc4_persistent.cu)
    shapes: tuple  # (M, N, K) each
    launches: int = 10  # summarized, after 3 warm-ups
    command: str = "gemmlab timeline"


def run_timeline(opts: TimelineOptions) -> dict:
    """Every kernel named at every shape: {"env", "records"}, one stamped summary each. Every kernel is checked for
    stamps before any GPU work."""
    from gemmlab.device import gpu
    from gemmlab.harness.env import collect
    from gemmlab.kernels.registry import select

    specs = select(opts.kernels)
    for spec in specs:
        stamped(spec, Problem(*opts.shapes[0], spec.precision))
    records = [record(spec, Problem(*shape, spec.precision), launches=opts.launches)
               for shape in opts.shapes for spec in specs]
    return {"env": {**collect(gpu(), "gpu"), "command": opts.command}, "records": records}


def stamped(spec, problem: Problem, sm_count: int = 132):
    """The stamped build of the configuration that runs ``problem``, or a clear error for a kernel without stamps."""
    build = spec.instrumented(problem, sm_count)
    if build is None:
        raise GemmlabError(f"{spec.name}: gemmlab timeline reads the stamps of tc4_persistent.cu and tc8 kernels "
                           "walking whole tiles (tc4, tc8); this one has none")
    return build


def record(spec, problem: Problem, launches: int = 10, warmup: int = 3, seed: int = 0) -> dict:
    """Build ``spec`` with its stamps on, check its C once, and summarize ``launches`` launches (each after an L2
    clean, as the timing harness does). The launch with the median span stands for the run."""
    import cupy

    from gemmlab.device import require_gpu
    from gemmlab.harness.reference import compare, reference, tolerance_for
    from gemmlab.harness.timing import l2_cleaner

    info = require_gpu(f"gemmlab timeline {spec.name}")
    build = stamped(spec, problem, info.sm_count)
    t, ideal = build.spec, build.ideal_ktile_cycles
    why = t.is_valid(problem)
    if why:
        raise GemmlabError(f"{spec.name}: {why}")
    a, b = t.make_inputs(problem, seed, cupy)
    c = cupy.full((problem.m, problem.n), np.nan, t.output_dtype(problem))
    run = t.plan(problem, t.natural_layout(problem))
    clean = l2_cleaner(info.l2_bytes)
    kt = -(-problem.k // build.k_tile)
    runs = []
    for i in range(warmup + launches):
        clean()
        run.run(a, b, c)
        cupy.cuda.get_current_stream().synchronize()
        if i >= warmup:
            runs.append(summarize(run.timeline.get(), kt, ideal))
    err = compare(c, reference(a, b), tolerance_for(problem), problem.prec.recipe_tolerance)
    if not err.passed:
        raise GemmlabError(f"{spec.name} with TIMELINE=1 computed a wrong C at {problem.label()}: {err}")
    spans = [r["span_ns"] for r in runs]
    median = runs[int(np.argsort(spans)[len(spans) // 2])]
    return {"kernel": spec.name,
            "problem": {"m": problem.m, "n": problem.n, "k": problem.k, "precision": problem.precision},
            "params": {k: v for k, v in t.params.items() if k != "TIMELINE"}, "rel_err": err.rel_err,
            "launches": len(runs), "span_ns_all": spans, "summary": median}


COLUMNS = ("kernel", "shape", "units per warpgroup", "cycles per k-tile (tensor cores' own)", "mainloop share",
           "epilogue per unit", "gap per unit", "prologue", "tail", "clock MHz", "span µs")


def table_rows(records: list[dict]) -> list[list[str]]:
    """One row of strings per record, for the console and the Markdown table alike."""
    out = []
    for rec in records:
        s, p = rec["summary"], rec["problem"]
        med = lambda key: f"{s[key]['median']:,.0f}" if s[key]["median"] is not None else "—"
        units = ", ".join(f"{u} ({n})" for u, n in sorted(s["units_per_warpgroup"].items()))
        ktile = (f"{s['ktile_cycles']:,.0f} ({s['ideal_ktile_cycles']:,.0f}, {100 * s['mainloop_efficiency']:.1f}%)"
                 if s["mainloop_efficiency"] else "—")
        out.append([rec["kernel"], f"{p['m']}x{p['n']}x{p['k']}", units, ktile, f"{100 * s['mainloop_share']:.1f}%",
                    med("epilogue_cycles"), med("gap_cycles"), med("prologue_cycles"), med("tail_cycles"),
                    f"{s['clock_mhz']:,.0f}", f"{s['span_ns'] / 1e3:,.1f}"])
    return out


def markdown(results: dict) -> str:
    env = results.get("env") or {}
    gpu = (env.get("gpu") or {}).get("name", "no GPU")
    lines = [f"# gemmlab timeline: {gpu}", "",
             f"`{env.get('command', 'gemmlab timeline')}` at git {env.get('git_sha', 'unknown')}. Cycles are the "
             "median over warpgroups of the launch with the median span; units per warpgroup lists "
             "units (warpgroups). A unit is one output tile.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results["records"])]
    return "\n".join(lines) + "\n"
