"""Terminal tables (rich) for bench, verify, list and roofline."""
from __future__ import annotations

from rich.table import Table

STATUS_STYLE = {"ok": "green", "FAILED": "bold red", "error": "red", "skipped": "yellow", "compiled": "cyan",
                "simulated": "cyan", "passed": "green"}


def _f(value, fmt: str, empty: str = "—") -> str:
    return empty if value is None else format(value, fmt)


def _rate(rec) -> str:
    if rec.get("tflops") is None:
        return "—"
    return f"{rec['tflops']:.2f}" if rec["tflops"] >= 1 else f"{rec['tflops']:.3f}"


def bench_tables(results: dict) -> list[Table]:
    """One table per (shape, precision): the seeds' columns plus ratios, model and roofline bound."""
    groups: dict = {}
    for r in results["records"]:
        groups.setdefault((r["m"], r["n"], r["k"], r["precision"]), []).append(r)
    tables = []
    for (m, n, k, precision), recs in groups.items():
        peer = recs[0]["peer"] if recs else ""
        t = Table(title=f"{m}×{n}×{k} (M×N×K), {precision}", title_justify="left", header_style="bold")
        for col, just in (("kernel", "left"), ("status", "left"), ("ms", "right"), ("TFLOPS", "right"),
                          ("% peak", "right"), (f"× {peer.split('/')[-1] if peer else 'peer'}", "right"),
                          ("× prev", "right"), ("rel err", "right"), ("model I", "right"), ("bound", "left"),
                          ("BW util", "right")):
            t.add_column(col, justify=just, no_wrap=col == "kernel")
        for r in recs:
            mod = r.get("model") or {}
            style = STATUS_STYLE.get(r["status"], "")
            ratio = _f(r.get("peer_ratio"), ".2f")
            if r.get("blocks"):  # the steady-state ratio from alternating blocks (bench --blocks)
                ratio += f" (blocks {r['blocks']['ratio']:.2f})"
            t.add_row(
                r["kernel"], f"[{style}]{r['status']}[/]" if style else str(r["status"]),
                _f(r.get("median_ms"), ".3f"), _rate(r), _f(r.get("pct_peak"), ".1f"),
                ratio, _f(r.get("speedup_prev"), ".2f"), _f(r.get("rel_err"), ".1e"),
                _f(mod.get("modeled_intensity"), ".2f"), mod.get("bound", "—"), _f(r.get("bw_util_model"), ".0f", "—"),
            )
        tables.append(t)
    return tables


def reasons(results: dict) -> list[str]:
    lines = []
    for r in results["records"]:
        if r["status"] in ("skipped", "error", "FAILED", "compiled", "simulated") and r.get("reason"):
            lines.append(f"{r['kernel']} {r['m']}x{r['n']}x{r['k']}: {r['status']}: {r['reason'].splitlines()[0]}")
    return lines
