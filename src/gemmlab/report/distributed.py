"""The distributed bench's table and scaling figure, from saved ``distributed.json`` files only.

``render([paths], out_png)`` draws three panels: weak-scaling efficiency t(1)/t(P) by GPU count, strong-scaling
speedup t(1)/t(P), and the share of communication hidden, one line per op; the non-overlapped peer's
efficiency and speedup (one collective, then ``torch.mm``) are dashed in the op's colour. Several files (one per
machine: h200x2, h200x4, h200x8) join into one figure; for the same op, scaling and count, a later file's record
replaces an earlier one's. Lines carry ``gid`` = "<scaling>:<op>" (peer: "...:peer", hidden: "hidden:<op>").
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gemmlab.report._mpl import Figure, FigureCanvasAgg

OP_COLOR = {"all_gather_matmul": "#1f77b4", "matmul_reduce_scatter": "#d62728", "summa": "#2ca02c"}
WEAK_EFFICIENCY_BAR = 0.90  # what the distributed work sets out to reach at every count
HIDDEN_BAR = 0.80


def _merged(results: list[dict]) -> list[dict]:
    by_key: dict = {}
    for res in results:
        for r in res["records"]:
            by_key[(r["op"], r.get("scaling"), r["gpus"])] = r
    return list(by_key.values())


def _series(records: list[dict], op: str, scaling: str, value) -> tuple[list[int], list[float]]:
    points = sorted((r["gpus"], value(r)) for r in records
                    if r["op"] == op and r.get("scaling") == scaling and r.get("status") == "ok"
                    and value(r) is not None)
    return [p for p, _ in points], [v for _, v in points]


def _one_gpu_over(r: dict, key: str) -> float | None:
    """t(1 GPU) / r[key]: weak-scaling efficiency, or strong-scaling speedup."""
    return r["one_gpu_ms"] / r[key] if r.get("one_gpu_ms") and r.get(key) else None


def scaling_figure(results: list[dict]) -> Figure:
    records = _merged(results)
    ops = [op for op in OP_COLOR if any(r["op"] == op for r in records)]
    fig = Figure(figsize=(13, 5.0), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    weak, strong, hidden = fig.subplots(1, 3)
    for op in ops:
        color = OP_COLOR[op]
        for ax, scaling in ((weak, "weak"), (strong, "strong")):
            x, y = _series(records, op, scaling, lambda r: _one_gpu_over(r, "ms"))
            ax.plot(x, y, marker="o", color=color, label=op, gid=f"{scaling}:{op}")
            x, y = _series(records, op, scaling, lambda r: _one_gpu_over(r, "peer_ms"))
            ax.plot(x, y, ls="--", marker=".", color=color, alpha=0.7, label=f"{op} peer", gid=f"{scaling}:{op}:peer")
        x, y = _series(records, op, "weak", lambda r: r.get("hidden_fraction"))
        hidden.plot(x, y, marker="o", color=color, label=op, gid=f"hidden:{op}")
    weak.axhline(WEAK_EFFICIENCY_BAR, color="gray", ls=":", gid="bar",
                 label=f"weak-scaling bar ({WEAK_EFFICIENCY_BAR:.2f})")
    hidden.axhline(HIDDEN_BAR, color="gray", ls=":", gid="bar",
                   label=f"hidden-communication bar ({HIDDEN_BAR:.2f})")
    counts = sorted({r["gpus"] for r in records})
    strong.plot(counts, counts, color="gray", ls=":", gid="ideal", label="ideal (P×)")
    for ax, title, ylabel in ((weak, "weak scaling (fixed per-GPU problem)", "efficiency t(1) / t(P)"),
                              (strong, "strong scaling (fixed total problem)", "speedup t(1) / t(P)"),
                              (hidden, "communication hidden (weak scaling)", "(comm + compute − both) / comm")):
        ax.set_title(title)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(ylabel)
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(counts) / 1.3, max(counts) * 1.3)  # explicit: a panel may have no points at all
        ax.set_xticks(counts, [str(c) for c in counts])
        ax.grid(alpha=0.3)
    weak.set_ylim(0, 1.1)
    strong.set_ylim(0, max(counts) * 1.1)  # from zero: near 1.0 a clipped axis made 0.95 and 1.00 look far apart
    hidden.set_ylim(0, 1.05)
    if not any(line.get_xdata().size for line in hidden.get_lines() if str(line.get_gid()).startswith("hidden:")):
        hidden.text(0.5, 0.5, "no communication to hide\n(one GPU: nothing crosses between ranks)",
                    ha="center", va="center", transform=hidden.transAxes, fontsize=9, gid="empty")
    # one key for all three panels, below them: inside the panels it covered points
    handles = {}
    for ax in (weak, strong, hidden):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncols=min(4, len(handles)),
               fontsize=8)
    env = (results[-1].get("env") or {}) if results else {}
    gpu = (env.get("gpu") or {}).get("name", "CPU")
    fig.suptitle(f"gemmlab distributed GEMM on {gpu}, git {str(env.get('git_sha', ''))[:12]}", fontsize=10)
    return fig


def render(paths: list[str | os.PathLike], out: str | os.PathLike) -> Path:
    """The scaling figure of the given distributed.json files, written as a PNG to ``out``."""
    from gemmlab.results import read_text

    results = [json.loads(read_text(p)) for p in paths]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scaling_figure(results).savefig(out)
    return out


def _f(value, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def print_table(results: dict) -> None:
    console = Console(width=None if Console().is_terminal else 180)
    env = results["env"]
    dist = env.get("distributed") or {}
    console.print(f"[bold]gemmlab bench --distributed[/] on {dist.get('ranks')} × "
                  f"{(env.get('gpu') or {}).get('name', 'CPU')}, {dist.get('backend')}, git {env['git_sha'][:12]}")
    t = Table(header_style="bold")
    for col in ("op", "scaling", "GPUs", "M×N×K", "ms", "TFLOPS", "efficiency", "hidden", "comm ms", "compute ms",
                "peer ms", "fused ms", "status"):
        t.add_column(col, justify="left" if col in ("op", "scaling", "status") else "right")
    for r in results["records"]:
        shape = f"{r['m']}×{r['n']}×{r['k']}" if "m" in r else "—"
        t.add_row(r["op"], r.get("scaling", ""), str(r["gpus"]), shape, _f(r.get("ms"), ".3f"),
                  _f(r.get("tflops"), ".2f"), _f(r.get("efficiency"), ".3f"), _f(r.get("hidden_fraction"), ".2f"),
                  _f(r.get("comm_ms"), ".3f"), _f(r.get("compute_ms"), ".3f"), _f(r.get("peer_ms"), ".3f"),
                  _f(r.get("fused_peer_ms"), ".3f"), r.get("status", "") + (f": {r['reason']}" if r.get("reason") else ""))
    console.print(t)
    console.print("efficiency: weak t(1 GPU)/t(P), strong t(1)/(P·t(P)); hidden: (comm + compute − together)/comm; "
                  "peer: one collective then torch.mm; fused: torch.ops.symm_mem where it runs", style="dim")
