"""Figures from a saved results JSON: the roofline of each precision and shape, and the ladder of each shape.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas, never through pyplot, so rendering
touches no global backend state and works on a machine without a display. Each function returns the Figure;
artists carry a ``gid`` ("memory_roof", "compute_roof", "ridge", "modeled", "measured", "tflops", "ratio") so
tests and readers can find the plotted data again.

Roofline (the seeds' model): attainable TFLOPS = min(peak, bandwidth × intensity), log-log. Each kernel sits
at its modeled intensity (FLOPs / the global bytes its traffic model counts) and its measured TFLOPS; where
ncu profiled it, a hollow marker of the same colour sits at the measured intensity (FLOPs / DRAM bytes), joined
to the modeled one: the horizontal gap is the traffic the caches absorbed that the model counts.
"""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gemmlab.report import data as D

_PRECISION_COLOR = {"fp32": "#1f77b4", "tf32": "#ff7f0e", "bf16": "#2ca02c", "fp8": "#d62728",
                    "fp8_block": "#9467bd"}


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _palette(n: int):
    from matplotlib import colormaps

    cmap = colormaps["tab20" if n > 10 else "tab10"]
    return [cmap(i % cmap.N) for i in range(n)]


def roofline_figure(results: dict, precision: str, shape: D.Shape) -> Figure:
    """Log-log roofline of ``precision`` with every GPU kernel timed at ``shape``."""
    records = D.attach_profiles(results)
    roofs = D.roofs(results, precision)
    kernels = [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)
               and D.modeled_intensity(r)]
    fig = _new_figure(8.5, 5.6)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")

    xs = [D.modeled_intensity(r) for r in kernels] + [D.measured_intensity(r) for r in kernels if D.profiled(r)]
    ys = [D.tflops(r) for r in kernels]
    if roofs.ridge:
        xs.append(roofs.ridge)
    if roofs.peak_tflops:
        ys.append(roofs.peak_tflops)
    x_lo = 10 ** math.floor(math.log10(min(xs + [0.25]) / 2))
    x_hi = 10 ** math.ceil(math.log10(max(xs + [10.0]) * 3))
    y_hi = 10 ** math.ceil(math.log10(max(ys + [1.0]) * 1.5))
    y_lo = 10 ** math.floor(math.log10(max(min([y for y in ys if y] + [1.0]) / 3, 1e-3)))

    if roofs.dram_gbs and roofs.peak_tflops:
        ridge = roofs.ridge
        label = D.PRECISION_LABEL.get(precision, precision)
        ax.plot([x_lo, ridge], [roofs.dram_gbs * 1e9 * x_lo / 1e12, roofs.peak_tflops], color="black", lw=2,
                gid="memory_roof", label=f"memory roof: {roofs.dram_gbs:,.0f} GB/s × intensity (datasheet)")
        ax.plot([ridge, x_hi], [roofs.peak_tflops, roofs.peak_tflops], color="dimgray", lw=2, gid="compute_roof",
                label=f"compute roof: {roofs.peak_tflops:g} TFLOPS {label} (datasheet)")
        ax.plot([ridge], [roofs.peak_tflops], marker="D", color="black", ms=7, ls="none", gid="ridge",
                label=f"ridge point {ridge:.1f} FLOP/byte")
        ax.axvline(ridge, color="black", lw=0.7, ls=":")
    if roofs.measured_bw_gbs:
        top = roofs.measured_tflops or roofs.peak_tflops or y_hi
        knee = top * 1e12 / (roofs.measured_bw_gbs * 1e9)
        ax.plot([x_lo, knee], [roofs.measured_bw_gbs * 1e9 * x_lo / 1e12, top], color="gray", lw=1.3, ls="--",
                gid="measured_memory_roof", label=f"measured copy {roofs.measured_bw_gbs:,.0f} GB/s")
    if roofs.measured_tflops:
        ax.axhline(roofs.measured_tflops, color="gray", lw=1.3, ls="-.", gid="measured_compute_roof",
                   label=f"measured cuBLAS FP32 {roofs.measured_tflops:.1f} TFLOPS")
    best = _problem_intensity(kernels)
    if best:
        ax.axvline(best, color="tab:purple", lw=0.8, ls="--", gid="problem_intensity",
                   label=f"problem's intensity (compulsory bytes) {best:.0f}")

    colors = _palette(max(len(kernels), 1))
    mod_x, mod_y, mod_c, meas_x, meas_y, meas_c = [], [], [], [], [], []
    for i, (rec, color) in enumerate(zip(kernels, colors)):
        x, y = D.modeled_intensity(rec), D.tflops(rec)
        mod_x.append(x), mod_y.append(y), mod_c.append(color)
        # alternate labels above and below: levels of different backends often share an intensity
        ax.annotate(rec["kernel"], (x, y), textcoords="offset points", xytext=(5, 4 if i % 2 == 0 else -10),
                    fontsize=7, color=color)
        if D.profiled(rec):
            mx = D.measured_intensity(rec)
            meas_x.append(mx), meas_y.append(y), meas_c.append(color)
            ax.plot([x, mx], [y, y], color=color, lw=0.8, alpha=0.7)
    if mod_x:
        ax.scatter(mod_x, mod_y, c=mod_c, s=42, zorder=3, gid="modeled",
                   label="kernel at modeled intensity (traffic model)")
    if meas_x:
        ax.scatter(meas_x, meas_y, facecolors="none", edgecolors=meas_c, s=60, lw=1.5, zorder=3, gid="measured",
                   label="same kernel at measured intensity (ncu DRAM bytes)")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"Roofline {D.PRECISION_LABEL.get(precision, precision)}, {D.shape_label(shape)} on {roofs.device}")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _problem_intensity(kernels: list[dict]) -> float | None:
    for rec in kernels:
        model = rec.get("model") or {}
        if model.get("intensity"):
            return float(model["intensity"])
    return None


def ladder_figure(results: dict, shape: D.Shape) -> Figure | None:
    """Each timed GPU kernel at ``shape``: TFLOPS (log) above, ratio to the same-precision peer below."""
    records = D.attach_profiles(results)
    rows = []
    for precision in D.precisions(records):
        rows += [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)]
    if not rows:
        return None
    fig = _new_figure(max(7.0, 0.55 * len(rows) + 2.5), 6.4)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    xs = list(range(len(rows)))
    colors = [_PRECISION_COLOR.get(r["precision"], "gray") for r in rows]
    values = [D.tflops(r) for r in rows]
    bars = top.bar(xs, values, color=colors, gid="tflops")
    for bar, rec in zip(bars, rows):
        if rec.get("backend") == "peer":
            bar.set_hatch("//")
            bar.set_edgecolor("white")
    for x, v in zip(xs, values):
        top.annotate(D.fmt(v), (x, v), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
    top.set_yscale("log")
    top.set_ylabel("TFLOPS")
    top.set_title(f"Ladder at {D.shape_label(shape)} (hatched: peers; colour: precision)")
    top.grid(True, axis="y", which="both", lw=0.3, alpha=0.5)

    # a peer is its own reference: its bar stands at 1.0
    ratios = [1.0 if r.get("peer") == r.get("kernel") else D.peer_ratio(r, records) for r in rows]
    ratio_bars = bottom.bar(xs, [r if r is not None else 0.0 for r in ratios], color=colors, gid="ratio")
    for bar, ratio, rec in zip(ratio_bars, ratios, rows):
        if ratio is None:
            bar.set_visible(False)
        elif rec.get("backend") == "peer":
            bar.set_hatch("//")
            bar.set_edgecolor("white")
    for x, ratio in zip(xs, ratios):
        if ratio is not None:
            bottom.annotate(f"{ratio:.2f}×", (x, ratio), textcoords="offset points", xytext=(0, 2), ha="center",
                            fontsize=7)
    bottom.axhline(1.0, color="black", lw=0.8, ls="--")
    bottom.set_ylabel("× cuBLAS, same precision")
    bottom.set_xticks(xs, [r["kernel"] for r in rows], rotation=40, ha="right", fontsize=8)
    from matplotlib.patches import Patch

    shown = [p for p in D.PRECISION_LABEL if any(r["precision"] == p for r in rows)]
    top.legend(handles=[Patch(color=_PRECISION_COLOR[p], label=D.PRECISION_LABEL[p]) for p in shown], fontsize=8,
               loc="upper left")
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
