"""gemmlab compare: two sides of shape-suite runs (bench --api --suite --json) at the same rows on one GPU, say the
code before a change and after it, run alternately: per row, each side's GPU time as the mean over its runs and the
ratio after / before; per (op, precision), the geomean of those ratios beside the spread between runs of one side
at the same row (the largest over the smallest of its times), whose median says how far a row moves with no change
at all: a geomean closer to 1 than that is noise.

``time="eager"`` compares eager times instead, for a change to a call's host path: an eager time moves with the
host's state from one process to the next (torch's as much as gemmlab's), so each run's eager time counts as its
ratio to torch's in the same run, call by call alternating (the record's eager_ratio, torch / gemmlab), and a row's
after / before is that of the ratios' means: above 1 the change made the call faster against torch."""
from __future__ import annotations

import statistics
from collections import defaultdict

from gemmlab.errors import GemmlabError
from gemmlab.harness.api_suite import geomean, key, load, shape_name
from gemmlab.report.suite import groups


def _gpu(results: dict) -> str | None:
    return (results.get("env", {}).get("gpu") or {}).get("name")


# what a row's value is, by time compared: the record's field and what the Markdown calls it
VALUES = {"gpu": ("gpu_us", "GPU time (µs)", "below 1: faster after"),
          "eager": ("eager_ratio", "eager time's ratio to torch's (torch / gemmlab)",
                    "above 1: faster against torch after, so the lowest row is the one that gained least")}


def _rows(results: dict, field: str) -> dict:
    """The verified records with a value of ``field``, by what they are of (api_suite.key)."""
    return {key(r): r for r in results["records"] if r.get("verified") and r.get(field)}


def compare(before: list[str], after: list[str], time: str = "gpu") -> dict:
    """The comparison of the runs in the files ``before`` and ``after`` (one run a file; a side's files may each hold
    some of its rows), over the rows both sides hold verified, each side's values (VALUES[time]) from every file
    holding the row: {"gpu", "time", "before", "after" (the paths), "rows": [...], "groups": {(op, precision):
    summary}}."""
    field = VALUES[time][0]
    sides = {name: [load(p) for p in paths] for name, paths in (("before", before), ("after", after))}
    gpus = {_gpu(r) for runs in sides.values() for r in runs}
    if len(gpus) != 1 or None in gpus:
        raise GemmlabError(f"compare: the files hold runs on {', '.join(sorted(map(str, gpus)))}; one GPU's runs "
                           "compare")
    # each side's records of a row, from every file that holds it verified (a side's files may split its precisions)
    timed = {name: defaultdict(list) for name in sides}
    for name, runs in sides.items():
        for results in runs:
            for k, rec in _rows(results, field).items():
                timed[name][k].append(rec)
    common = set(timed["before"]) & set(timed["after"])
    if not common:
        raise GemmlabError("compare: no row is verified and timed on both sides; compare runs of the same shapes")
    rows = []
    for k in common:
        values = {name: [r[field] for r in timed[name][k]] for name in sides}
        last = timed["after"][k][-1]
        rows.append({"op": last["op"], "precision": last["precision"], "m": last["m"], "n": last["n"],
                     "k": last["k"], "batch": last.get("batch"), "kernel": last.get("kernel"),
                     "kernel_before": timed["before"][k][-1].get("kernel"), "before_values": values["before"],
                     "after_values": values["after"], "torch_us": last.get(f"torch_{time}_us"),
                     "ratio": statistics.mean(values["after"]) / statistics.mean(values["before"]),
                     "spread": [max(v) / min(v) for v in values.values() if len(v) > 1]})
    by_group = defaultdict(list)
    for r in rows:
        by_group[(r["op"], r["precision"])].append(r)
    summary = {}
    for g, rs in by_group.items():
        spreads = [s for r in rs for s in r["spread"]]
        summary[g] = {"rows": len(rs), "geomean": geomean(r["ratio"] for r in rs),
                      "lowest": min(rs, key=lambda r: r["ratio"]), "highest": max(rs, key=lambda r: r["ratio"]),
                      "spread_median": statistics.median(spreads) if spreads else None,
                      "spread_max": max(spreads) if spreads else None}
    order = {g: i for i, g in enumerate(groups(rows))}
    rows.sort(key=lambda r: (order[(r["op"], r["precision"])], r["batch"] or 0, r["m"], r["n"], r["k"]))
    return {"gpu": gpus.pop(), "time": time, "before": list(before), "after": list(after), "rows": rows,
            "groups": dict(sorted(summary.items(), key=lambda kv: order[kv[0]]))}


def markdown(result: dict) -> str:
    """The comparison as Markdown: the files, a summary line per (op, precision), then every row."""
    fmt = lambda xs: " ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    lines = [f"# Before and after: {result['gpu']}", "",
             "Before: " + ", ".join(f"`{p}`" for p in result["before"]),
             "After: " + ", ".join(f"`{p}`" for p in result["after"]), "",
             f"The {VALUES[result['time']][1]} of each run, each side's mean, after / before "
             f"({VALUES[result['time']][2]}). Spread: the "
             "largest over the smallest value of one side's runs at a row, its median over the rows and sides; a "
             "geomean closer to 1 than it is noise.", "",
             "| op | precision | rows | after / before, geomean | lowest (at) | highest (at) | spread median | "
             "spread max |", "|---|---|---:|---:|---|---|---:|---:|"]
    for (op, prec), s in result["groups"].items():
        lo, hi = s["lowest"], s["highest"]
        sm = "—" if s["spread_median"] is None else f"{s['spread_median']:.3f}"
        sx = "—" if s["spread_max"] is None else f"{s['spread_max']:.3f}"
        lines.append(f"| {op} | {prec} | {s['rows']} | {s['geomean']:.3f} | {lo['ratio']:.3f} ({shape_name(lo)}) | "
                     f"{hi['ratio']:.3f} ({shape_name(hi)}) | {sm} | {sx} |")
    unit = "µs" if result["time"] == "gpu" else "ratio"
    lines += ["", f"| op | precision | shape | kernel | before {unit} | after {unit} | after / before | torch µs "
                  "(the last run) |",
              "|---|---|---|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        kernel = r["kernel"] if r["kernel"] == r["kernel_before"] else f"{r['kernel_before']} → {r['kernel']}"
        torch = "—" if r["torch_us"] is None else f"{r['torch_us']:.2f}"
        lines.append(f"| {r['op']} | {r['precision']} | {shape_name(r)} | {kernel} | {fmt(r['before_values'])} | "
                     f"{fmt(r['after_values'])} | {r['ratio']:.3f} | {torch} |")
    return "\n".join(lines) + "\n"
