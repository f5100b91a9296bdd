"""Reports rendered from a saved results JSON only: Markdown tables and PNG figures.

``render_report(results_json_path, out_dir)`` writes ``report.md`` and, for bench results, one roofline PNG per
precision and shape and one ladder PNG per shape (for a chapter JSON: the seeds' single-roof roofline beside the
roof-per-level one, and report_zh.md), and returns the paths it wrote; ``summary(path)`` is the compact
table. Both take every JSON gemmlab writes (bench, bench --api, verify, timeline, accuracy, chapter and bench --api
--suite --json) and refuse anything else (an accuracy study gets its tables and its figure, accuracy.png; the shape
suite its tables and a figure per op and precision, suite_OP_PRECISION.png; bench --api its table against torch).
Nothing is measured here, so a committed JSON renders the same report on any machine, with or without a GPU; only
the figures need matplotlib (gemmlab[plots]).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["render_report", "summary"]


def render_report(results_json_path: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    from gemmlab.report import data as D
    from gemmlab.report import markdown

    kind, results = D.load(results_json_path)
    out = Path(out_dir)
    link = markdown.relpath(str(results_json_path), str(out))
    figures: list = []  # (file name, figure), rendered before the folder exists: a failure leaves no half report
    pages: dict = {}  # further pages beside report.md (a chapter's Chinese walk-through)
    if kind == "bench":
        figures, names = _bench_figures(results)
        text = markdown.render_markdown(results, str(results_json_path), names, link=link, out_dir=str(out_dir))
    elif kind == "verify":
        text = markdown.verify_markdown(results, str(results_json_path), link=link, out_dir=str(out_dir))
    elif kind == "suite":
        from gemmlab.report import suite

        figures, names = suite.figures(results)
        text = suite.markdown(results, names)
    elif kind == "chapter":
        from gemmlab.report import chapter

        figures, pages = chapter.render(results, link)
        text = pages.pop("report.md")
    elif kind == "accuracy":
        from gemmlab.report import accuracy

        figures = [("accuracy.png", accuracy.figure(results))]
        text = accuracy.markdown(results) + "\n![error against K and against the inputs](accuracy.png)\n"
    elif kind == "api":
        from gemmlab.harness import api_bench

        text = api_bench.markdown(results)
    else:
        from gemmlab.harness import timeline

        text = timeline.markdown(results)  # the table timeline --json writes beside the JSON
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if figures:  # tables alone (verify, timeline, api) need no matplotlib
        from gemmlab.report import plots

        written = [plots.save(fig, out / name) for name, fig in figures]
    report = out / "report.md"
    report.write_text(text)
    for name, page in pages.items():
        (out / name).write_text(page)
    return written + [report] + [out / name for name in pages]


def _bench_figures(results: dict) -> tuple[list, dict]:
    """The ladder figure of each shape and the roofline of each precision and shape with timed GPU kernels, and
    the names the Markdown links them by."""
    from gemmlab.report import data as D
    from gemmlab.report import plots

    records = D.attach_profiles(results)
    figures, names = [], {}
    for shape in D.shapes(records):
        label = D.shape_label(shape)
        fig = plots.ladder_figure(results, shape)
        if fig is not None:
            figures.append((f"ladder_{label}.png", fig))
            names[("ladder", shape)] = figures[-1][0]
        for precision in D.precisions(records):
            timed = [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)]
            if timed:
                figures.append((f"roofline_{precision}_{label}.png", plots.roofline_figure(results, precision, shape)))
                names[("roofline", precision, shape)] = figures[-1][0]
    return figures, names


def summary(results_json_path: str | os.PathLike) -> str:
    """The compact Markdown table of any results JSON gemmlab writes: the ladder of a bench run, a verify run's
    result per kernel, a timeline's cycle budget, a chapter's claims."""
    from gemmlab.report import data as D
    from gemmlab.report import markdown

    kind, results = D.load(results_json_path)
    if kind == "accuracy":
        from gemmlab.report import accuracy

        return accuracy.markdown(results)
    if kind == "api":
        from gemmlab.harness import api_bench

        return api_bench.markdown(results)
    if kind == "suite":
        from gemmlab.report import suite

        return suite.summary_markdown(results)
    if kind == "chapter":
        from gemmlab.chapter import render

        return render.summary(results)
    return {"bench": markdown.summary_markdown, "verify": markdown.verify_summary,
            "timeline": markdown.timeline_summary}[kind](results)
