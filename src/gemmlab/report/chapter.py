"""The report of a chapter JSON (gemmlab chapter --json): the claims walk-through in English and Chinese, the seeds'
single-roof roofline and gemmlab's roof-per-level one beside it, at 4096³ (the first seed's measured table)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from gemmlab.analysis.roofline import DEVICES
from gemmlab.report import data as D

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SHAPE = (4096, 4096, 4096)
# the first seed's measured table (A100, 4096³), quoted: V1 ~1150 GFLOPS, cuBLAS ~172,000 GFLOPS
SEED_POINTS = (("V1 (the seed, A100)", 0.25, 1.150), ("cuBLAS (the seed, A100)", 4096 / 6, 172.0))


def single_roof_figure(results: dict) -> Figure:
    """The seeds' picture: one DRAM slope and one FP32 ceiling, the ridge where they meet, each kernel at the
    intensity the seeds count (every load from DRAM) and its measured TFLOPS. The A100's roof carries the seed's own
    two figures; the H200's this run's kernels at 4096³. A point above its roof is a load the roof took for DRAM
    traffic that a cache served."""
    from gemmlab.report._mpl import Figure, FigureCanvasAgg  # matplotlib for the figures only (gemmlab[plots])

    fig = Figure(figsize=(7.5, 5.4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.1, 0.1, 0.86, 0.82))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("The seeds' roofline: one DRAM roof (every load from DRAM)", fontsize=10)
    ax.set_xlabel("FLOP per byte loaded (the seeds' count)")
    ax.set_ylabel("TFLOPS")
    ceil = (results.get("env") or {}).get("ceilings") or {}
    h200 = DEVICES["h200"]
    a100 = DEVICES["a100"]
    # each roof says where its figures come from: the H200's DRAM slope is this run's copy bandwidth where it measured
    # one, its FP32 ceiling the datasheet's (the seeds' convention), so its ridge is neither the datasheet's nor the
    # measured roofs' (the claims give both)
    copy = ceil.get("copy_bw_gbs")
    roofs = [("A100 (datasheet): 1555 GB/s, 19.5 TFLOPS FP32", a100.dram_gbs, a100.tflops["fp32"], "tab:gray"),
             (f"H200: {copy or h200.dram_gbs:,.0f} GB/s ({'measured' if copy else 'datasheet'}), "
              f"{h200.tflops['fp32']} TFLOPS FP32 (datasheet)", copy or h200.dram_gbs, h200.tflops["fp32"], "black")]
    x = [0.05, 2000.0]
    for name, gbs, peak, color in roofs:
        ridge = peak * 1e3 / gbs
        ax.plot([x[0], ridge, x[1]], [gbs * x[0] / 1e3, peak, peak], color=color, lw=1.8, label=name, gid="roof")
        ax.axvline(ridge, color=color, ls=":", lw=1)
        ax.annotate(f"ridge {ridge:.1f}", (ridge, peak), textcoords="offset points", xytext=(4, -12), fontsize=7,
                    color=color)
    for name, i, t in SEED_POINTS:
        ax.scatter([i], [t], marker="x", color="tab:gray", zorder=3)
        right = i > 100  # near the axis's right end: the label goes left of the point
        ax.annotate(name, (i, t), textcoords="offset points", xytext=(-5 if right else 5, 4), fontsize=7,
                    color="tab:gray", ha="right" if right else "left")
    records = [r for r in D.group(results["records"], "fp32", SHAPE) if D.is_gpu(r) and D.is_timed(r)
               and (r.get("model") or {}).get("modeled_intensity")]
    for r in records:
        i, t = r["model"]["modeled_intensity"], D.tflops(r)
        ax.scatter([i], [t], zorder=3, gid="kernel")
        ax.annotate(r["kernel"], (i, t), textcoords="offset points", xytext=(5, -3), fontsize=7)
    if not records:
        ax.text(0.03, 0.95, "no H200 kernel timed at 4096³ in this JSON", transform=ax.transAxes, ha="left",
                fontsize=8)
    ax.set_xlim(*x)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def render(results: dict, source: str) -> tuple[list, dict]:
    """(figures, pages): the two rooflines and the walk-through in both languages, the figures linked from here."""
    from gemmlab.chapter.render import page
    from gemmlab.report import plots

    figures = [("roofline_single.png", single_roof_figure(results)),
               ("roofline_levels.png", plots.roofline_figure(results, "fp32", SHAPE))]
    pages = {"report.md": page(results, "en", source, "."), "report_zh.md": page(results, "zh", source, ".")}
    return figures, pages
