"""kernel="auto" between measured shapes, checked on its own measurements (``gemmlab dispatch --held-out``).

Each shape of a GPU's dispatch table is held out in turn: ``dispatch.choose`` picks a kernel for it from the other
shapes alone, as it does for any shape the table never measured (each kernel's times at the nearest shapes scaled
by the model, the measured winner there kept within the margin), and the pick is scored against what the table
measured at the held-out shape itself:

- **regret**: the GPU time measured there of the kernel picked, over the fastest measured there among the kernels
  ``auto`` may run in that layout in place (1.0: the pick was the fastest);
- **error**: the pick's predicted GPU time over its measured one.

A pick the table did not measure at the shape (a kernel measured elsewhere only) has neither. No GPU is needed: the
table is the measurement. The scores are of the table's grid, whose shapes lie a doubling or more apart: a caller's
shape between two of them has nearer neighbours than a held-out one.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

from gemmlab.dispatch_layout import layout_key, row_layout


@dataclass(frozen=True)
class HeldOut:
    """One measured shape predicted from the others: what ``auto`` picks there, and how it measured."""

    precision: str
    shape: tuple
    layout: str  # as the table's rows name it ("row,col": B as w.t())
    pick: str  # the kernel picked
    predicted_ms: float | None  # the pick's predicted GPU time (None: a pick not from the table's rows)
    pick_ms: float | None  # the pick's GPU time measured at the shape (None: not measured there)
    best: str  # the fastest measured at the shape that auto may run in place
    best_ms: float

    @property
    def regret(self) -> float | None:
        return None if self.pick_ms is None else self.pick_ms / self.best_ms

    @property
    def error(self) -> float | None:
        return None if self.pick_ms is None or self.predicted_ms is None else self.predicted_ms / self.pick_ms

    def record(self) -> dict:
        return {**asdict(self), "shape": list(self.shape), "regret": self.regret, "error": self.error}


def _measured_here(rows: list, label: str, problem, layout, gpu) -> dict:
    """{kernel: GPU ms} of the kernels measured at the shape itself, in ``layout`` and with no copy, that auto may
    run there in place: dispatch.rank on a table of that shape alone, where a prediction is the measurement."""
    from gemmlab import dispatch

    only = {gpu.name: {problem.precision: {label: rows}}}
    return {c.spec.name: c.ms for c in dispatch.rank(problem, layout, gpu, only)
            if c.exact and not c.refusal and c.copies == () and not c.basis[0][1].get("copies")
            and row_layout(c.basis[0][1], problem.precision) == layout}


def held_out(table: dict, gpu, precisions=None) -> list[HeldOut]:
    """Every shape of ``gpu``'s tables in ``table`` (a dispatch table as dispatch.load_table reads it) whose rows
    measured a kernel auto may run in place there, held out and predicted from the rest; ``precisions``: those of
    the table's precisions to check (default all)."""
    from gemmlab import dispatch
    from gemmlab.errors import GemmlabError
    from gemmlab.problem import Problem

    mine = table.get(gpu.name, {})
    out = []
    for precision, shapes in mine.items():
        if precisions and precision not in precisions:
            continue
        for label, rows in shapes.items():
            dims = dispatch._dims(label)
            if dims is None or not rows:
                continue
            layout, problem = row_layout(rows[0], precision), Problem(*dims, precision)
            measured = _measured_here(rows, label, problem, layout, gpu)
            if not measured:
                continue
            rest = {**table, gpu.name: {**mine, precision: {k: v for k, v in shapes.items() if k != label}}}
            try:
                choice = dispatch.choose(problem, layout, gpu, table=rest)
            except GemmlabError:
                continue  # nothing near that runs it: the defaults' refusal, as a call would meet it
            ranked = [c for c in dispatch.rank(problem, layout, gpu, rest) if c.spec == choice.spec]
            best = min(measured, key=measured.get)
            out.append(HeldOut(precision, dims, layout_key(layout), choice.spec.name, ranked[0].ms if ranked else None,
                               measured.get(choice.spec.name), best, measured[best]))
    return out


def summary(rows: list[HeldOut]) -> dict:
    """Per precision: the shapes held out, those whose pick was measured there, how many picked the fastest, the
    geometric mean and the largest regret (and where), and the median |log| of the prediction's error."""
    out = {}
    for precision in dict.fromkeys(r.precision for r in rows):
        mine = [r for r in rows if r.precision == precision]
        scored = [r for r in mine if r.regret is not None]
        errors = [abs(math.log(r.error)) for r in scored if r.error]
        worst = max(scored, key=lambda r: r.regret, default=None)
        out[precision] = {
            "shapes": len(mine), "scored": len(scored),
            "fastest": sum(r.regret <= 1.0 for r in scored),
            "regret_geomean": math.exp(statistics.fmean(math.log(r.regret) for r in scored)) if scored else None,
            "regret_max": worst.regret if worst else None,
            "regret_max_at": "x".join(map(str, worst.shape)) if worst else None,
            "error_median": math.exp(statistics.median(errors)) if errors else None,
        }
    return out


def markdown(rows: list[HeldOut], env: dict, worst: int = 12) -> str:
    """The summary per precision and the picks farthest from the fastest, as Markdown (beside --out's JSON)."""
    sha = env["git_sha"]
    lines = [f"# kernel=\"auto\" held out on the {env['gpu']} dispatch table", "",
             f"`{env['command']}` at git {sha[:12]}{'-dirty' if sha.endswith('-dirty') else ''}, reading "
             f"{env['table']}: each measured shape held out "
             "and predicted from the others. Regret: the GPU time measured there of the kernel picked, over the "
             "fastest measured there that `auto` may run in place. Error: the pick's predicted GPU time over its "
             "measured one. A pick not measured at the shape (a kernel measured elsewhere only) is not scored."
             + (f" The model's roofs: {env['roofs']}." if env.get("roofs") else ""), "",
             "| precision | shapes | scored | pick fastest | regret geomean | regret max (at) | median error |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for precision, s in summary(rows).items():
        lines.append(f"| {precision} | {s['shapes']} | {s['scored']} | {s['fastest']} | "
                     + (f"{s['regret_geomean']:.3f} | {s['regret_max']:.2f} ({s['regret_max_at']}) | "
                        f"{100 * (s['error_median'] - 1):.1f}% |" if s["scored"] else "- | - | - |"))
    far = sorted((r for r in rows if r.regret and r.regret > 1.0), key=lambda r: -r.regret)[:worst]
    if far:
        lines += ["", "The picks farthest from the fastest measured:", "",
                  "| precision | shape | pick | regret | error | fastest there |", "|---|---|---|---:|---:|---|"]
        lines += [f"| {r.precision} | {'x'.join(map(str, r.shape))} | {r.pick} | {r.regret:.2f} | "
                  f"{f'{r.error:.2f}' if r.error else '-'} | {r.best} |" for r in far]
    return "\n".join(lines) + "\n"
