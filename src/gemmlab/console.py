"""Terminal output of every command: its rich tables, the bench run's closing lines, and progress while a command
works. The CLI prints what these return."""
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


def kernels_table(specs) -> Table:
    """gemmlab list: each registered kernel, its level, precision, device, parameters and what it does."""
    t = Table(header_style="bold")
    for col in ("kernel", "level", "precision", "runs on", "params", "what it does"):
        t.add_column(col)
    for s in specs:
        t.add_row(s.name, "" if s.level is None else str(s.level), s.precision, s.device,
                  " ".join(f"{k}={v}" for k, v in s.params.items()), s.title)
    return t


def bench_closing(results: dict, info, dev) -> list[tuple[str, dict]]:
    """What gemmlab bench prints after its tables: the run's noise, the ceilings it measured and what the columns
    mean, each a (line, print options) pair."""
    lines = [(f"noise: {n['kernel']} at {n['m']}x{n['n']}x{n['k']} timed twice: {n['first_ms']:.4f} vs "
              f"{n['second_ms']:.4f} ms ({n['diff_pct']:.2f}%); smaller gaps between kernels are noise", {})
             for n in results.get("noise", [])]
    lines += host_bound_lines(results.get("records", []))
    dim = {"style": "dim", "highlight": False}
    if info is None:
        return lines + [("columns: × blas = cpu/blas time / kernel time; model I = FLOP per modeled global byte; "
                         "bound and roofline TFLOPS: the levels model (each memory level's bytes over its own roof and the "
                       "arithmetic at the maximum clock; the slowest binds), not the seeds' min(peak, DRAM × model I)",
                       dim)]
    ceil = results["env"].get("ceilings")
    if ceil:
        lines.append((f"measured ceilings: copy {ceil['copy_bw_gbs']:.0f} GB/s, cuBLAS FP32 "
                      f"{ceil['cublas_fp32_tflops']:.1f} TFLOPS at {ceil['cublas_fp32_shape']}³ (datasheet: "
                      f"{dev.dram_gbs:.0f} GB/s, {dev.tflops['fp32']} TFLOPS FP32)", {}))
    return lines + [("columns: × peer = peer time / kernel time (same precision, same run, launches of the two "
                     "interleaved); × prev = speedup over the previous level of the same backend (a --variant: "
                     "over the registered parameters, the two interleaved, 'reg.'); model I = FLOP "
                     "per modeled global byte; BW util = modeled global bytes/s over DRAM bandwidth (>100%: caches "
                     "absorbed re-reads)", dim)]


HOST_BOUND_SHOWN = 6  # records a host-bound line names; the rest it counts


def host_bound_lines(records: list[dict]) -> list[tuple[str, dict]]:
    """A warning naming the records of which more than half the timed samples were late (Timing.late: the GPU had
    passed the start event before the host issued the launch, so the sample holds host time): their times, and any
    ratio to them, are not the GPU's alone. A peer called through Python (torch._scaled_mm at decode sizes) is the
    usual case."""
    bound = [r for r in records
             if isinstance(r.get("late"), int) and r.get("samples") and 2 * r["late"] > r["samples"]]
    if not bound:
        return []
    named = ", ".join(f"{r['kernel']} at {r['m']}x{r['n']}x{r['k']} ({r['late']}/{r['samples']})"
                      for r in bound[:HOST_BOUND_SHOWN])
    more = f" and {len(bound) - HOST_BOUND_SHOWN} more" if len(bound) > HOST_BOUND_SHOWN else ""
    return [(f"host-bound: {len(bound)} record(s) with most samples late, the GPU waiting on the host's launch, "
             f"so their times and ratios hold host time: {named}{more}", {"style": "yellow", "highlight": False})]


def check_table(checked) -> tuple[Table, dict, int]:
    """gemmlab roofline --check: ``checked`` is (file name, remodel.Check) pairs; the table, the reasons the specs
    give for records far below their roof, and how many records are above theirs."""
    from gemmlab.analysis.remodel import RATIO_NAMED

    above, named_reasons = 0, {}
    t = Table(title="verified GPU records against their own roofline", header_style="bold", title_justify="left")
    for col in ("file", "kernel", "shape", "MHz", "measured TFLOPS", "predicted TFLOPS", "bound",
                "time / predicted"):
        t.add_column(col, justify="right" if "TFLOPS" in col or col in ("MHz", "time / predicted") else "left")
    for name, row in checked:
        above += row.above
        named = row.ratio > RATIO_NAMED and row.unmodeled
        if named:
            named_reasons[row.kernel] = row.unmodeled
        t.add_row(name, row.kernel, row.shape, f"{row.clock_mhz or 0:.0f}",
                  f"{row.measured_tflops:.1f}", f"{row.predicted_tflops:.1f}", row.bound,
                  "[bold red]ABOVE[/]" if row.above else f"{row.ratio:.2f}" + (" *" if named else ""))
    return t, named_reasons, above


def devices_table() -> Table:
    """Each device's DRAM bandwidth, dense peak and ridge point per precision: the seeds' roofs (— where a device
    has no units for one)."""
    from gemmlab.analysis.roofline import DEVICES, listed_precisions

    t = Table(title="devices (dense datasheet peaks)", header_style="bold", title_justify="left")
    listed = listed_precisions()
    for col in ("device", "DRAM GB/s", *(p.label for p in listed), *(f"ridge {p.label}" for p in listed)):
        t.add_column(col, justify="left" if col == "device" else "right")
    for d in DEVICES.values():
        t.add_row(d.name, f"{d.dram_gbs:.0f}", *(f"{d.tflops[p.name]:.1f}" if p.name in d.tflops else "—"
                                                 for p in listed),
                  *(f"{d.ridge(p.name):.1f}" if p.name in d.tflops else "—" for p in listed))
    return t


def roofline_table(dev, shape, models) -> Table:
    """Each kernel's model at one shape (``models``: (spec, KernelModel) pairs): the seeds' cache-free view, then
    the hierarchy beneath it."""
    t = Table(title=f"{dev.name}, {shape[0]}×{shape[1]}×{shape[2]} (M×N×K): the seeds' cache-free view, then "
                    "the hierarchy beneath it", header_style="bold", title_justify="left")
    # each view's columns named by it: the two have a bound and a TFLOPS each
    for col in ("kernel", "GFLOP", "best I", "seeds: global MB", "seeds: I", "seeds: ridge", "seeds: bound",
                "seeds: TFLOPS", "DRAM MB", "L2 MB", "smem/L1 MB", "hierarchy: bound", "hierarchy: TFLOPS"):
        t.add_column(col, justify="left" if col == "kernel" or col.endswith("bound") else "right")
    for s, km in models:
        t.add_row(s.name, f"{km.flops / 1e9:.1f}", f"{km.intensity:.1f}",
                  f"{(km.modeled_read_bytes + km.modeled_write_bytes) / 1e6:,.0f}", f"{km.modeled_intensity:.2f}",
                  f"{km.seed_ridge:.1f}", km.seed_bound, f"{km.seed_predicted_tflops:.1f}",
                  f"{km.dram_bytes / 1e6:,.0f}", f"{km.l2_bytes / 1e6:,.0f}", f"{km.smem_bytes / 1e6:,.0f}",
                  km.bound, f"{km.predicted_tflops:.1f}")
    return t


def tune_table(results) -> Table:
    """gemmlab tune: the best parameters found per shape, and how many candidates ran."""
    t = Table(title="gemmlab tune", header_style="bold", title_justify="left")
    for col in ("shape", "best parameters", "ms", "TFLOPS", "candidates run", "dropped"):
        t.add_column(col)
    for r in results:
        ran = sum("ms" in trial for trial in r.trials)
        t.add_row("x".join(map(str, r.shape)), " ".join(f"{k}={v}" for k, v in (r.best or {}).items()) or "none ran",
                  f"{r.ms:.3f}" if r.ms else "—", f"{r.tflops:.1f}" if r.tflops else "—", str(ran),
                  str(len(r.trials) - ran))
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
