"""The accuracy study (gemmlab accuracy) rendered from its saved JSON: Markdown tables and one figure.

``render(json_path)`` writes ``<json stem>.md`` and ``<json stem>.png`` beside the JSON and returns their paths.
Tables: the relative Frobenius error of every series against K, each also as a multiple of cuBLAS FP32's at the
same K, and against the input distribution at one K. The figure: error against K (log-log) on the left, error
per distribution (log scale) on the right; its lines and bars carry ``gid`` = the series name. Nothing is
measured here.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from gemmlab.report._mpl import Figure, FigureCanvasAgg

BASELINE = "cublas_fp32"


def _err(value) -> str:
    return "non-finite" if value is None else f"{value:.2e}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|:---|" + "---:|" * (len(header) - 1)] + \
           ["| " + " | ".join(r) + " |" for r in rows]


def _by(results: dict, sweep: str) -> dict:
    """{(series, dist, k): record} of one sweep."""
    return {(r["series"], r["dist"], r["k"]): r for r in results["records"] if r["sweep"] == sweep}


def markdown(results: dict) -> str:
    env, opts = results.get("env") or {}, results.get("options") or {}
    gpu = (env.get("gpu") or {}).get("name", "no GPU")
    series = results["series"]
    ks = sorted({r["k"] for r in results["records"] if r["sweep"] == "k"})
    dists = [d for d in results.get("distributions", {}) if any(r["dist"] == d for r in results["records"]
                                                              if r["sweep"] == "scale")]
    k_recs, s_recs = _by(results, "k"), _by(results, "scale")
    mn = opts.get("mn")
    lines = [f"# gemmlab accuracy: {gpu}", "",
             f"`{env.get('command', 'gemmlab accuracy')}` at git {env.get('git_sha', 'unknown')}, {env.get('time', '')}. "
             f"Relative Frobenius error ‖C − C64‖/‖C64‖ against cuBLAS DGEMM of the same inputs, M = N = {mn}.", ""]
    if ks:
        lines += ["## Against K (N(0, 1) inputs)", ""]
        lines += _table(["series"] + [f"K={k}" for k in ks],
                        [[series[s]] + [_err(k_recs[(s, "normal", k)]["rel_err"]) if (s, "normal", k) in k_recs
                                        else "" for k in ks] for s in series])
        if BASELINE in series:
            lines += ["", f"As a multiple of {series[BASELINE]}'s error at the same K:", ""]
            rows = []
            for s in series:
                cells = []
                for k in ks:
                    r, base = k_recs.get((s, "normal", k)), k_recs.get((BASELINE, "normal", k))
                    ok = r and base and r["rel_err"] is not None and base["rel_err"]
                    cells.append(f"{r['rel_err'] / base['rel_err']:.2f}×" if ok else "")
                rows.append([series[s]] + cells)
            lines += _table(["series"] + [f"K={k}" for k in ks], rows)
    if dists:
        k = opts.get("scale_k")
        lines += ["", f"## Against the inputs (K = {k})", ""]
        lines += _table(["series"] + dists,
                        [[series[s]] + [_err(s_recs[(s, d, k)]["rel_err"]) if (s, d, k) in s_recs else ""
                                        for d in dists] for s in series])
        lines += [""] + [f"- `{d}`: {results['distributions'][d]}" for d in dists]
    return "\n".join(lines) + "\n"


def figure(results: dict) -> Figure:
    fig = Figure(figsize=(11, 5.2), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    series = results["series"]
    k_recs, s_recs = _by(results, "k"), _by(results, "scale")
    ks = sorted({k for (_, _, k) in k_recs})
    for s, label in series.items():
        pts = [(k, k_recs[(s, "normal", k)]["rel_err"]) for k in ks if (s, "normal", k) in k_recs
               and k_recs[(s, "normal", k)]["rel_err"]]
        if pts:
            left.plot(*zip(*pts), marker="o", label=label, gid=s)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("K")
    left.set_ylabel("relative Frobenius error")
    left.set_title("error against K, N(0, 1) inputs")
    left.grid(True, which="both", alpha=0.3)
    dists = list(results.get("distributions", {}))
    k = (results.get("options") or {}).get("scale_k")
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        xs, ys = [], []
        for j, d in enumerate(dists):
            r = s_recs.get((s, d, k))
            if r and r["rel_err"]:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(r["rel_err"])
        if xs:
            right.bar(xs, ys, width=width, label=series[s], gid=s)
    right.set_yscale("log")
    right.set_xticks(range(len(dists)), dists)
    right.set_ylabel("relative Frobenius error")
    right.set_title(f"error against the inputs, K = {k}")
    right.grid(True, axis="y", which="both", alpha=0.3)
    # one key for both panels, below them: inside the left panel it covered the lines it names
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    return fig


def render(json_path: str | os.PathLike) -> list[Path]:
    from gemmlab.results import read_text

    path = Path(json_path)
    results = json.loads(read_text(path))
    md, png = path.with_suffix(".md"), path.with_suffix(".png")
    md.write_text(markdown(results))
    figure(results).savefig(png)
    return [md, png]
