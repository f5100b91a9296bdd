"""Terminal output for bench, verify, list and roofline: rich tables, and progress while a command works."""
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


def _status(rec) -> str:
    style = STATUS_STYLE.get(rec["status"], "")
    return f"[{style}]{rec['status']}[/]" if style else str(rec["status"])


def _table(columns) -> Table:
    t = Table(header_style="bold")
    for col, just in columns:
        t.add_column(col, justify=just, no_wrap=col == "kernel")
    return t


class Fitted:
    """A table as it is where the terminal is wide enough for it; else stacked, one block per row and a line per
    column, so that no header or cell is cut to an ellipsis (rich's way of fitting a table) on a narrow one."""

    def __init__(self, table: Table):
        self.table = table

    def __rich_console__(self, console, options):
        from rich.measure import Measurement
        from rich.text import Text

        natural = Measurement.get(console, options.update(max_width=10_000), self.table).maximum  # unclamped
        if natural <= options.max_width:
            yield self.table
            return
        columns = self.table.columns
        if self.table.title:
            yield Text(str(self.table.title), style="bold")
        for row in zip(*(column._cells for column in columns)):
            yield Text.assemble(console.render_str(str(row[0]), style="bold"))
            for column, cell in zip(columns[1:], row[1:]):
                yield Text.assemble(f"  {column.header}: ", console.render_str(str(cell)))


def _peer_column(records) -> str:
    peer = records[0].get("peer") if records else None
    return f"× {peer.split('/')[-1] if peer else 'peer'}"


def timed_table(records: list[dict]) -> Table:
    """A GPU run's shape and precision: the seeds' columns plus ratios, model and roofline bound."""
    t = _table((("kernel", "left"), ("status", "left"), ("ms", "right"), ("TFLOPS", "right"),
                       ("% peak", "right"), (_peer_column(records), "right"), ("× prev", "right"),
                       ("rel err", "right"), ("model I", "right"), ("bound", "left"), ("BW util", "right")))
    for r in records:
        mod = r.get("model") or {}
        ratio = _f(r.get("peer_ratio"), ".2f")
        if r.get("blocks"):  # the steady-state ratio from alternating blocks (bench --blocks)
            ratio += f" (blocks {r['blocks']['ratio']:.2f})"
        # a bench --variant: its speedup over the registered parameters, in place of the previous level's
        prev = f"{r['variant_gain']:.2f} reg." if r.get("variant_gain") else _f(r.get("speedup_prev"), ".2f")
        t.add_row(r["kernel"], _status(r), _f(r.get("median_ms"), ".3f"), _rate(r), _f(r.get("pct_peak"), ".1f"),
                  ratio, prev, _f(r.get("rel_err"), ".1e"),
                  _f(mod.get("modeled_intensity"), ".2f"), mod.get("bound", "—"), _f(r.get("bw_util_model"), ".0f"))
    return t


def cpu_table(records: list[dict]) -> Table:
    """Host kernels as timed without a GPU: time, rate, ratio to the CPU peer, error, launches."""
    t = _table((("kernel", "left"), ("status", "left"), ("ms (median)", "right"), ("IQR ms", "right"),
                       ("GFLOPS", "right"), (_peer_column(records), "right"), ("rel err", "right"),
                       ("launches", "right")))
    for r in records:
        t.add_row(r["kernel"], _status(r), _f(r.get("median_ms"), ".3f"), _f(r.get("iqr_ms"), ".3f"),
                  _f(r.get("gflops"), ".1f"), _f(r.get("peer_ratio"), ".2f"), _f(r.get("rel_err"), ".1e"),
                  str(r["samples"]) if r.get("samples") else "—")
    return t


def compiled_table(records: list[dict]) -> Table:
    """CUDA C kernels compiled without a GPU: what ptxas assigned them."""
    t = _table((("kernel", "left"), ("status", "left"), ("registers", "right"), ("spill bytes", "right"),
                       ("shared KiB", "right")))
    for r in records:
        smem = r.get("smem_bytes")
        t.add_row(r["kernel"], _status(r), _f(r.get("registers"), "d"), _f(r.get("spills"), "d"),
                  _f(smem / 1024 if smem is not None else None, ".1f"))
    return t


def simulator_table(records: list[dict]) -> Table:
    """numba kernels run on the CUDA simulator: each shape's result and the worst error."""
    t = _table((("kernel", "left"), ("result", "left"), ("shapes run", "left"), ("max rel err", "right"),
                       ("tolerance", "right")))
    for r in records:
        runs = r.get("simulator") or []
        errs = [x["rel_err"] for x in runs if x.get("rel_err") is not None]
        tols = [x["tolerance"] for x in runs if x.get("tolerance") is not None]
        t.add_row(r["kernel"], "[green]passed[/]" if r["status"] == "simulated" else _status(r),
                  ", ".join(x["shape"] for x in runs) or "—", _f(max(errs) if errs else None, ".1e"),
                  _f(min(tols) if tols else None, ".0e"))
    return t


def model_table(records: list[dict]) -> Table:
    """The roofline model of each GPU kernel (no measurement), beside what this machine did with it."""
    t = _table((("kernel", "left"), ("precision", "left"), ("model I", "right"), ("bound", "left"),
                       ("roofline TFLOPS", "right"), ("here", "left")))
    for r in records:
        mod = r.get("model") or {}
        t.add_row(r["kernel"], r["precision"], _f(mod.get("modeled_intensity"), ".2f"), mod.get("bound", "—"),
                  _f(mod.get("predicted_tflops"), ".1f"), _status(r))
    return t


BENCH_TABLES = {"timed": timed_table, "cpu": cpu_table, "compiled": compiled_table, "simulator": simulator_table,
                "model": model_table}


def verify_table(records: list[dict]) -> Table:
    """gemmlab verify's records: kernel, shape, result (coloured by outcome), detail."""
    table = Table(title="gemmlab verify", header_style="bold", title_justify="left")
    for col in ("kernel", "shape", "result", "detail"):
        table.add_column(col)
    for r in records:
        style = {"passed": "green", "FAILED": "bold red", "error": "red"}.get(r["result"].split()[0], "")
        table.add_row(r["kernel"], r["shape"], f"[{style}]{r['result']}[/]" if style else r["result"], r["detail"])
    return table


def profile_table(spec, problem, result: dict) -> Table:
    """gemmlab profile's counters for one kernel beside its traffic model."""
    from gemmlab.harness.profile import measured_intensity

    traffic = spec.traffic(problem)
    table = Table(title=f"{spec.name} at {problem.label()} {problem.precision}: model against ncu "
                        f"({result['launches']} launch{'es' if result['launches'] != 1 else ''}: "
                        f"{', '.join(result['kernel_names'])[:80]})")
    table.add_column("quantity")
    table.add_column("model", justify="right")
    table.add_column("measured", justify="right")

    def gb(v):
        return "—" if v is None else f"{v / 1e9:,.3f} GB"

    intensity = measured_intensity(problem.flops(), result)
    table.add_row("global / DRAM read", gb(traffic.global_read), gb(result.get("dram_read_bytes")))
    table.add_row("global / DRAM write", gb(traffic.global_write), gb(result.get("dram_write_bytes")))
    table.add_row("L2 bytes", "", gb(result.get("l2_bytes")))
    table.add_row("L1 bytes", "", gb(result.get("l1_bytes")))
    table.add_row("intensity FLOP/byte", f"{traffic.intensity(problem):,.2f}", f"{intensity:,.2f}" if intensity else "—")
    if result.get("dram_read_bytes"):
        table.add_row("model / DRAM read", "", f"{traffic.global_read / result['dram_read_bytes']:,.1f}×")
    for label, key, fmt in (("shared-memory bank conflicts (ld)", "smem_bank_conflicts_ld", "{:,.0f}"),
                            ("shared-memory bank conflicts (st)", "smem_bank_conflicts_st", "{:,.0f}"),
                            ("achieved occupancy", "achieved_occupancy_pct", "{:.1f}%"),
                            ("registers per thread", "registers_per_thread", "{:.0f}"),
                            ("duration (one cold-L2 launch)", "duration_ms", "{:.3f} ms"),
                            ("SM clock", "sm_clock_hz", "{:.0f} Hz")):
        if result.get(key) is not None:
            table.add_row(label, "", fmt.format(result[key]))
    return table


def timeline_table(records: list[dict]) -> Table:
    """gemmlab timeline's summaries: where each consumer warpgroup's cycles go."""
    from gemmlab.harness import timeline

    t = Table(title="gemmlab timeline: where each consumer warpgroup's cycles go", header_style="bold",
              title_justify="left")
    for col in timeline.COLUMNS:
        t.add_column(col)
    for row in timeline.table_rows(records):
        t.add_row(*row)
    return t


def reasons(records: list[dict]) -> list[str]:
    """Why a row failed, erred or was skipped: the one thing a table cell cannot hold."""
    return [f"{r['kernel']} {r['m']}x{r['n']}x{r['k']}: {r['status']}: {r['reason'].splitlines()[0]}"
            for r in records if r["status"] in ("skipped", "error", "FAILED") and r.get("reason")]


class Steps:
    """Progress of a long command: a rich bar on a terminal; elsewhere (a pipe, a CI log) one plain line per step,
    so that the log says what runs while it runs. ``print`` goes above the bar."""

    def __init__(self, console):
        self.console = console
        self._bar = self._task = None

    def step(self, label: str, done: int, total: int, *, log: bool = True) -> None:
        """``label`` starts, ``done`` of ``total`` are finished. Without a terminal: the line "[done+1/total]
        label", unless ``log`` is False (a step too small for a line of its own in a log)."""
        if not self.console.is_terminal:
            if log:
                self.console.print(f"[{done + 1}/{total}] {label}" if total else label, markup=False,
                                   highlight=False)
            return
        if self._bar is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(label, total=total or None)
        self._bar.update(self._task, description=label, completed=done, total=total or None)

    def print(self, *things, **options) -> None:
        self.console.print(*things, **options)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class BenchPrinter(Steps):
    """The bench run's Listener: progress as it goes, each table as soon as its records are complete."""

    def table(self, kind: str, title: str, records: list[dict]) -> None:
        self.print(title, style="bold", markup=False, highlight=False, soft_wrap=True)  # a line, whatever the width
        self.print(Fitted(BENCH_TABLES[kind](records)))
        if kind != "model":  # the model table repeats kernels whose reasons the tables above gave
            for line in reasons(records):
                self.print(f"  {line}", markup=False, highlight=False)
