"""Figures from a saved results JSON: the roofline of each precision and shape, and the ladder of each shape.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas, never through pyplot, so rendering
touches no global backend state and works on a machine without a display. Each function returns the Figure;
artists carry a ``gid`` ("tflops", "ratio" in the ladder) so tests and readers can find the plotted data again.

Roofline: the hierarchical one (analysis/roofline.py), a roof per memory level and one for the arithmetic of each
set of units the kernels run on, each kernel at each level's FLOP per byte; the seeds' cache-free view is in the
report's tables. Artists of the roofline carry gids "roof_<level>", "roof_compute" (the precision's own units),
"roof_compute_<units>_<operations per multiply-add>" (others': tc7's "roof_compute_tf32_3"), "points_<level>" and
"label".
"""
from __future__ import annotations

import math
from pathlib import Path

from gemmlab.report import data as D
from gemmlab.report._mpl import Figure, FigureCanvasAgg

_PRECISION_COLOR = {"fp32": "#1f77b4", "tf32": "#ff7f0e", "bf16": "#2ca02c", "fp16": "#8c564b", "fp8": "#d62728",
                    "fp8_block": "#9467bd"}


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _palette(n: int):
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    cmap = colormaps["tab20"]  # its dark shades first, then the light ones
    return [cmap((2 * i) % 20 + (2 * i) // 20) for i in range(n)]


# each memory level: its name in the figure, the marker of its points, the roof it is held to (L1 and shared memory
# share one data path, so one roof)
_LEVELS = {"dram": ("DRAM", "s", "dram"), "l2": ("L2", "o", "l2"), "smem": ("shared memory", "^", "smem"),
           "l1": ("L1", "D", "smem")}
_ROOFS = {"dram": ("DRAM", "black"), "l2": ("L2", "tab:blue"), "smem": ("L1 / shared memory", "tab:green")}


def roofline_figure(results: dict, precision: str, shape: D.Shape) -> Figure:
    """The hierarchical roofline of ``precision`` at ``shape``, log-log: a roof per memory level (its bandwidth ×
    FLOP per byte of that level) under the arithmetic roofs at the maximum clock (the precision's own and, dashed,
    that of other units a kernel's multiply-adds run on, named with it: tc7's TF32 / 3), and each timed kernel once
    per level, at FLOPs over the bytes the model counts there and its measured TFLOPS, the points joined. A point sits
    under its roof exactly when the level's bytes take no longer than the kernel did. The labels stand in a column
    right of the points, spread so that none overlaps another, each joined to its kernel's rightmost point."""
    records = D.attach_profiles(results)
    timed = [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)]
    kernels = [r for r in timed if "levels" in (r.get("model") or {})]
    fig = Figure(figsize=(12.5, 6.6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.07, 0.08, 0.585, 0.85))  # fixed, so that label placement knows where everything lands
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"Roofline {D.PRECISION_LABEL.get(precision, precision)}, {D.shape_label(shape)} on "
                 f"{D.roofs(results, precision).device}: a roof per level", fontsize=10)
    ax.set_xlabel("FLOP per byte of the level (FLOPs / the bytes the model counts there)")
    ax.set_ylabel("TFLOPS (measured)")
    if not kernels:
        ax.text(0.5, 0.5, "no record here carries the levels:\ngemmlab roofline --remodel RESULTS.json",
                ha="center", va="center", transform=ax.transAxes)
        return fig

    clock = _max_clock(results, kernels)
    # an arithmetic roof per set of units the kernels run on, the precision's own first: tc7's FP32 runs on the TF32
    # tensor cores (its model's compute level holds TF32's rate / 3), a roof no FP32 FFMA kernel is held to
    computes = {}  # (units, operations per multiply-add) -> (TFLOPS at the clock, compute level, kernels)
    for rec in sorted(kernels, key=lambda r: D.peak_share(r) != (precision, 1)):
        compute = rec["model"]["levels"]["compute"]
        peak = compute["sm_count"] * compute["flop_per_clk"] * clock * 1e6 / 1e12
        computes.setdefault(D.peak_share(rec), (peak, compute, []))[2].append(rec["kernel"])
    top = max(peak for peak, _, _ in computes.values())
    roofs = {}  # roof -> (slope in TFLOPS per FLOP/byte, i.e. TB/s; its level's record)
    for rec in kernels:
        for name, level in rec["model"]["levels"].items():
            if name in _LEVELS and not level.get("serial"):
                slope = level["gbs"] / 1e3 if "gbs" in level else level["bytes_per_clk"] * clock * 1e6 / 1e12
                roofs.setdefault(_LEVELS[name][2], (slope, level))

    colors = _palette(len(kernels))
    points = []  # (x, y, level, colour, record)
    for rec, color in zip(kernels, colors):
        for name, level in rec["model"]["levels"].items():
            if name in _LEVELS and not level.get("serial") and level.get("bytes"):
                points.append((D.flops(rec) / level["bytes"], D.tflops(rec), name, color, rec))
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    knees = [peak / slope for slope, _ in roofs.values() for peak, _, _ in computes.values()]
    x_lo = 10 ** math.floor(math.log10(min(xs + knees) / 3))
    x_text = max(xs + knees) * 4  # the labels' column, right of every point and knee
    # the axis reaches far enough right for the longest label to end inside it: in log x, the column starts at
    # the share (log x_text - log x_lo) / (log x_hi - log x_lo) of the axes' width, which the label's width must
    # leave room after
    width = ax.get_window_extent(fig.canvas.get_renderer()).width
    longest = max(_text_width(ax, line) for rec in kernels for line in _label_text(rec).split("\n")) + 12
    room = max(width - longest, 0.25 * width) / width
    x_hi = 10 ** math.ceil(max(math.log10(x_text * 10),
                               math.log10(x_lo) + (math.log10(x_text) - math.log10(x_lo)) / room))
    y_lo, y_hi = min(ys) / 3, top * 2
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)

    for roof, (slope, level) in roofs.items():
        label, color = _ROOFS[roof]
        bw = f"{slope:,.1f} TB/s" + (f" at {clock:.0f} MHz" if "bytes_per_clk" in level else "")
        ax.plot([x_lo, top / slope], [slope * x_lo, top], color=color, lw=1.8, gid=f"roof_{roof}",
                label=f"{label} roof: {bw} ({level.get('source') or '?'})")
    for (units, ops), (peak, compute, names) in computes.items():
        own = (units, ops) == (precision, 1)
        start = min(peak / slope for slope, _ in roofs.values())
        ax.plot([start, x_text / 1.5], [peak, peak], color="dimgray" if own else _PRECISION_COLOR.get(units, "gray"),
                lw=2.2, ls="-" if own else "--", gid="roof_compute" if own else f"roof_compute_{units}_{ops}",
                label=("" if own else ", ".join(names) + ": ")
                + f"{D.peak_label(units, ops)} roof: {peak:,.1f} TFLOPS at {clock:.0f} MHz "
                  f"({compute.get('source') or '?'})")
    for rec, color in zip(kernels, colors):
        mine = sorted((p for p in points if p[4] is rec), key=lambda p: p[0])
        ax.plot([p[0] for p in mine], [p[1] for p in mine], color=color, lw=0.8, alpha=0.6)
    for name, (label, marker, _) in _LEVELS.items():
        mine = [p for p in points if p[2] == name]
        if mine:
            ax.scatter([p[0] for p in mine], [p[1] for p in mine], c=[p[3] for p in mine], marker=marker, s=34,
                       zorder=3, gid=f"points_{name}", label=f"a kernel at its {label} bytes")
    anchors = [max((p for p in points if p[4] is rec), key=lambda p: p[0]) for rec in kernels]
    _label_column(ax, anchors, x_text)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    seeds_only = [r["kernel"] for r in timed if r not in kernels]
    note = ("label: kernel (the level that binds it in the model)\na roof's slope is its level's bandwidth; the flat "
            "roof\nis the arithmetic at the maximum SM clock")
    if any(share != (precision, 1) for share in computes):
        note += (f" (dashed: the units a\nkernel runs on in place of {D.PRECISION_LABEL.get(precision, precision)}'s "
                 "own, per multiply-add)")
    if seeds_only:  # a record of the seeds' model alone has no levels to place
        note += "\nnot drawn (the seeds' model only):\n" + "\n".join(seeds_only)
    ax.text(1.02, 0.0, note, transform=ax.transAxes, fontsize=7, va="bottom")
    return fig


def _max_clock(results: dict, kernels: list[dict]) -> float:
    gpu = (results.get("env") or {}).get("gpu") or {}
    return float(gpu.get("max_sm_clock_mhz") or D.device_spec(results).get("max_clock_mhz")
                 or max(r["model"]["clock_mhz"] for r in kernels))


def _label_column(ax, anchors, x_text: float, fontsize: float = 7.0) -> None:
    """One label per anchor point (x, y, level, colour, record), in a column at ``x_text``: each as near its point's
    height as the labels above and below it allow, none overlapping another, a leader line to its point."""
    renderer = ax.figure.canvas.get_renderer()
    to_px, to_data = ax.transData.transform, ax.transData.inverted().transform
    frame = ax.get_window_extent(renderer)
    lines = max(_label_text(a[4]).count("\n") + 1 for a in anchors)
    gap = lines * fontsize * ax.figure.dpi / 72 * 1.35  # the tallest label, in display pixels
    order = sorted(anchors, key=lambda a: a[1])
    want = [to_px((a[0], a[1]))[1] for a in order]
    ys = _spread(want, gap, frame.y0 + gap / 2, frame.y1 - gap / 2)
    px = to_px((x_text, 1.0))[0]
    for (x, y, _, color, rec), y_px in zip(order, ys):
        text = _label_text(rec)
        ink = tuple(0.65 * c for c in color[:3])  # the point's colour, dark enough to read as text
        ax.annotate(text, (x, y), xytext=(x_text, to_data((px, y_px))[1]), textcoords="data", fontsize=fontsize,
                    color=ink, va="center", ha="left", zorder=4, gid="label",
                    arrowprops={"arrowstyle": "-", "color": color, "lw": 0.5, "shrinkA": 1, "shrinkB": 3})


def _label_text(rec: dict) -> str:
    """The kernel and the level that binds it; a kernel with changed parameters (bench --variant) on two lines,
    its registered name above them."""
    name, bracket, changes = rec["kernel"].partition("[")
    return f"{name}\n{bracket}{changes} ({rec['model']['bound']})" if bracket else f"{name} ({rec['model']['bound']})"


def _text_width(ax, text: str, fontsize: float = 7.0) -> float:
    """The width in display pixels that ``text`` takes in ``ax``'s figure."""
    t = ax.text(0, 0, text, fontsize=fontsize, transform=None)
    width = t.get_window_extent(ax.figure.canvas.get_renderer()).width
    t.remove()
    return width


def _spread(want: list[float], gap: float, lo: float, hi: float) -> list[float]:
    """Positions as near ``want`` (ascending) as possible, each at least ``gap`` above the one below, within
    [lo, hi]: push up from below, then down from above, then centre each crowded run on what it wanted."""
    ys = list(want)
    for i in range(len(ys)):
        ys[i] = max(ys[i], lo if i == 0 else ys[i - 1] + gap)
    for i in reversed(range(len(ys))):
        ys[i] = min(ys[i], hi if i == len(ys) - 1 else ys[i + 1] - gap)
    return ys


# a peer whose quartiles spread wider than this share of its median at a shape (the gemmlab levels' own: 1-3%) ran
# erratically there: its bar, and every ratio taken against it, is marked as no comparison
ERRATIC_IQR = 0.10


def erratic_peers(records: list[dict], shape: D.Shape) -> dict:
    """Peer -> its IQR over its median, for each timed peer at ``shape`` past ERRATIC_IQR."""
    out = {}
    for rec in records:
        if rec.get("backend") == "peer" and D.shape_of(rec) == shape and D.is_timed(rec) and rec.get("iqr_ms"):
            spread = rec["iqr_ms"] / rec["median_ms"]
            if spread > ERRATIC_IQR:
                out[rec["kernel"]] = spread
    return out


def paired_peer_tflops(peer: dict, records: list[dict]) -> float | None:
    """The peer's TFLOPS in the interleaved timings the ratios against it come from (the median over the kernels
    timed beside it), or None where no kernel was."""
    times = sorted(r["interleaved"]["peer_ms"] for r in records
                   if r.get("peer") == peer["kernel"] and r is not peer and D.shape_of(r) == D.shape_of(peer)
                   and r.get("precision") == peer.get("precision") and (r.get("interleaved") or {}).get("peer_ms"))
    if not times:
        return None
    return D.flops(peer) / (times[len(times) // 2] * 1e-3) / 1e12


def _tick_label(kernel: str, width: int = 26) -> str:
    """A kernel's name, and a variant's changed parameters (bench --variant) wrapped at their commas below it."""
    name, bracket, changes = kernel.partition("[")
    if not bracket:
        return name
    lines, line = [], ""
    for part in ("[" + changes).split(","):
        if line and len(line) + len(part) + 1 > width:
            lines.append(line + ",")
            line = part
        else:
            line = f"{line},{part}" if line else part
    return "\n".join([name, *lines, line])


def ladder_figure(results: dict, shape: D.Shape) -> Figure | None:
    """Each timed GPU kernel at ``shape``: TFLOPS above on a linear axis from zero (bar heights compare as the
    numbers do), the ratio to the same-precision peer below. A peer that ran erratically at the shape
    (``erratic_peers``) is drawn pale, and it and every ratio against it carry a * that the footnote explains; where
    its own median is far from what it ran at in the paired timings the ratios come from, a diamond marks the
    latter on its bar."""
    records = D.attach_profiles(results)
    rows = []
    for precision in D.precisions(records):
        rows += [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)]
    if not rows:
        return None
    erratic = erratic_peers(rows, shape)
    labels = [_tick_label(r["kernel"]) for r in rows]
    fig = _new_figure(max(7.0, 0.55 * len(rows) + 3.5), 7.4)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    xs = list(range(len(rows)))
    colors = [_PRECISION_COLOR.get(r["precision"], "gray") for r in rows]
    values = [D.tflops(r) for r in rows]
    bars = top.bar(xs, values, color=colors, gid="tflops")
    for bar, rec in zip(bars, rows):
        if rec.get("backend") == "peer":
            bar.set_hatch("//")
            bar.set_edgecolor("white")
        if rec["kernel"] in erratic:
            bar.set_alpha(0.4)
    paired = {}
    for x, v, rec in zip(xs, values, rows):
        at = paired_peer_tflops(rec, rows) if rec.get("backend") == "peer" else None
        if at is not None and abs(at - v) > ERRATIC_IQR * v:
            paired[x] = at
            top.plot([x], [at], marker="D", color="black", ms=5, ls="none", gid="peer_paired")
    for x, v, rec in zip(xs, values, rows):  # above the bar, or above its diamond where that stands higher
        top.annotate(D.fmt(v) + ("*" if rec["kernel"] in erratic else ""), (x, max(v, paired.get(x, 0))),
                     textcoords="offset points", xytext=(0, 5 if x in paired else 2), ha="center", fontsize=7)
    top.set_ylim(0, max(values + list(paired.values())) * 1.12)  # room for the value labels inside the axes
    top.set_ylabel("TFLOPS")
    top.set_title(f"Ladder at {D.shape_label(shape)} (hatched: peers; colour: precision)")
    top.grid(True, axis="y", lw=0.3, alpha=0.5)

    # a peer is its own reference: its bar stands at 1.0
    ratios = [1.0 if r.get("peer") == r.get("kernel") else D.peer_ratio(r, records) for r in rows]
    ratio_bars = bottom.bar(xs, [r if r is not None else 0.0 for r in ratios], color=colors, gid="ratio")
    for bar, ratio, rec in zip(ratio_bars, ratios, rows):
        if ratio is None:
            bar.set_visible(False)
        elif rec.get("backend") == "peer":
            bar.set_hatch("//")
            bar.set_edgecolor("white")
        if rec.get("peer") in erratic:
            bar.set_alpha(0.4)
    for x, ratio, rec in zip(xs, ratios, rows):
        if ratio is not None:
            bottom.annotate(f"{ratio:.2f}×" + ("*" if rec.get("peer") in erratic else ""), (x, ratio),
                            textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
    bottom.axhline(1.0, color="black", lw=0.8, ls="--")
    bottom.set_ylim(0, max([r for r in ratios if r is not None] + [1.0]) * 1.18)
    bottom.set_ylabel("× peer, same precision")
    # upright, so that a variant's wrapped lines stand side by side within its own bar's width
    bottom.set_xticks(xs, labels, rotation=90, ha="right", va="center", rotation_mode="anchor", fontsize=7)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = [p for p in D.PRECISION_LABEL if any(r["precision"] == p for r in rows)]
    handles = [Patch(color=_PRECISION_COLOR.get(p, "gray"), label=D.PRECISION_LABEL[p]) for p in shown]
    if paired:
        handles.append(Line2D([], [], marker="D", color="black", ls="none", ms=5,
                              label="the peer in the paired timings\nthe ratios come from (median)"))
    top.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if erratic:
        notes = [f"{peer}: IQR {spread:.0%} of its median" for peer, spread in erratic.items()]
        bottom.text(1.01, 1.0, "* ran erratically at this shape:\n" + "\n".join(notes) + "\nits time, and the ratios "
                    "against it,\nare no comparison", transform=bottom.transAxes, fontsize=7, va="top",
                    gid="erratic_note")
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
