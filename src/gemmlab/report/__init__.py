"""Reports rendered from a saved results JSON only: Markdown tables and PNG figures.

``render_report(results_json_path, out_dir)`` writes ``report.md``, one roofline PNG per precision and shape,
and one ladder PNG per shape, and returns the paths it wrote. Nothing is measured here, so a committed JSON
renders the same report on any machine, with or without a GPU.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["render_report"]


def render_report(results_json_path: str | os.PathLike, out_dir: str | os.PathLike) -> list[Path]:
    from gemmlab.report import data as D
    from gemmlab.report import markdown, plots

    results = D.load_results(results_json_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = D.attach_profiles(results)
    written: list[Path] = []
    figures: dict = {}
    for shape in D.shapes(records):
        label = D.shape_label(shape)
        fig = plots.ladder_figure(results, shape)
        if fig is not None:
            written.append(plots.save(fig, out / f"ladder_{label}.png"))
            figures[("ladder", shape)] = written[-1].name
        for precision in D.precisions(records):
            timed = [r for r in D.group(records, precision, shape) if D.is_gpu(r) and D.is_timed(r)]
            if not timed:
                continue
            fig = plots.roofline_figure(results, precision, shape)
            written.append(plots.save(fig, out / f"roofline_{precision}_{label}.png"))
            figures[("roofline", precision, shape)] = written[-1].name
    link = markdown.relpath(str(results_json_path), str(out))
    report = out / "report.md"
    report.write_text(markdown.render_markdown(results, str(results_json_path), figures, link=link,
                                               out_dir=str(out_dir)))
    written.append(report)
    return written
