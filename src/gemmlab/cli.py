"""gemmlab command line: list | bench | verify | roofline | report | profile | timeline | accuracy | dispatch | tune."""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gemmlab.console import Fitted
from gemmlab.errors import GemmlabError, OutputPathError, UnknownKernelError

# Records tables are wide; a pipe or CI log gets 160 columns instead of rich's 80-column default.
console = Console(width=None if Console().is_terminal else 160)


# -- arguments: each checked where it is read, so that a bad one costs no work --------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument told in one line (usage is one --help away), exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(kind, low, *, above: bool = False):
    """An argparse type: an int or a finite float of at least ``low`` (greater than it, with ``above``)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'a whole number' if kind is int else 'a number'}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < low or (above and value == low):
            raise argparse.ArgumentTypeError(f"must be {'greater than' if above else 'at least'} {low}, got {text}")
        return value
    return parse


def _shape(text: str) -> tuple[int, int, int]:
    from gemmlab.problem import parse_shape

    try:
        return parse_shape(text)
    except GemmlabError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _gpu(text: str) -> str:
    from gemmlab.analysis.roofline import device_spec

    try:
        device_spec(text)
    except GemmlabError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _output(path: str, flag: str, *, folder: bool = False) -> Path:
    """``path`` checked now as a file (or, with ``folder``, a directory) gemmlab can write when the work is done;
    nothing is created. Missing parent directories are fine where they can be made."""
    p = Path(path)
    if folder and p.exists() and not p.is_dir():
        raise OutputPathError(f"{flag} {path}: a file is there, not a directory")
    if not folder and p.is_dir():
        raise OutputPathError(f"{flag} {path}: is a directory; name a file")
    base = p if folder else p.parent
    existing = next(d for d in (base, *base.parents) if d.exists())
    if not existing.is_dir():
        raise OutputPathError(f"{flag} {path}: {existing} is not a directory")
    try:
        if not folder and p.exists():
            open(p, "ab").close()  # appending nothing: writable, and the file untouched
        else:
            tempfile.TemporaryFile(dir=existing).close()
    except OSError as exc:
        raise OutputPathError(f"{flag} {path}: cannot write in {existing} ({exc.strerror or exc})") from None
    return p


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _variant(text: str) -> tuple[str, dict]:
    """KERNEL:NAME=V[,NAME=V...] -> (KERNEL, {NAME: V}) with integer values, for bench --variant."""
    kernel, sep, changes = text.partition(":")
    pairs = [c.partition("=") for c in changes.split(",") if c.strip()]
    if not sep or not kernel.strip() or not pairs or any(not eq or not name.strip() for name, eq, _ in pairs):
        raise argparse.ArgumentTypeError(f"{text!r}: a variant is KERNEL:NAME=V[,NAME=V], e.g. "
                                         "cuda/tc8_block_scaled_fp8:BM=128,STAGES=5")
    out = {}
    for name, _, value in pairs:
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: {name.strip()}={value!r} is not an integer") from None
    return kernel.strip(), out


def _specs(pattern: str | None):
    """The kernels a --kernels glob names (all without one); none matching is an error in every command."""
    from gemmlab.kernels.registry import list_kernels, select

    return select(pattern) if pattern else list_kernels()


def _command(args) -> str:
    return "gemmlab " + " ".join(shlex.quote(a) for a in args.argv)


# -- commands ---------------------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    t = Table(header_style="bold")
    for col in ("kernel", "level", "precision", "runs on", "params", "what it does"):
        t.add_column(col)
    for s in _specs(args.kernels):
        t.add_row(s.name, "" if s.level is None else str(s.level), s.precision, s.device,
                  " ".join(f"{k}={v}" for k, v in s.params.items()), s.title)
    console.print(Fitted(t))
    return 0


def cmd_bench(args) -> int:
    if args.distributed is not None:  # under torchrun, every rank; its options are its own
        from gemmlab.distributed.bench import main as distributed_main

        return distributed_main(args.distributed)
    json_path = _output(args.json, "--json") if args.json else None
    if args.api:
        return cmd_bench_api(args, json_path)
    from gemmlab import device
    from gemmlab.analysis.roofline import device_spec
    from gemmlab.console import BenchPrinter
    from gemmlab.harness import bench, env
    from gemmlab.harness.timing import BlockOptions, TimingOptions

    if args.append and not json_path:
        raise GemmlabError("--append adds to the file named by --json; name one")
    earlier = _earlier_run(json_path) if args.append and json_path.exists() else None
    device.configure_numba()  # before any kernel module imports numba: it reads the simulator switch once
    specs = _specs(args.kernels) if args.kernels else None  # all kernels need no check (nor the import, yet)
    info, why = device.probe()
    if earlier is not None and ((earlier["env"].get("gpu") or {}).get("name")) != (info.name if info else None):
        raise GemmlabError(f"--append: {json_path} holds results from "
                           f"{(earlier['env'].get('gpu') or {}).get('name', 'no GPU')}, this run is on "
                           f"{info.name if info else 'no GPU'}; write a new file instead")
    timing = TimingOptions(repeat=args.repeat, min_repeat=min(20, args.repeat), cold_l2=not args.warm,
                           max_seconds=args.max_seconds)
    blocks = BlockOptions(args.blocks, args.block_seconds) if args.blocks else None
    opts = bench.BenchOptions(shapes=args.shape or [], kernels=args.kernels, timing=timing, seed=args.seed,
                              gpu=args.gpu, pause_s=args.pause, ceilings=not args.no_ceilings, blocks=blocks,
                              variants=tuple(args.variant or ()))
    if opts.variants:
        specs = bench.selected(opts)  # the variants' own errors (parameters, constraints) before anything runs
    dev = device_spec(info.name if info else args.gpu)
    console.print(Text.assemble(("gemmlab bench", "bold"), f"{' on ' + info.name if info else ''} (git "
                                f"{env.git_sha()[:12]}): {bench.plan(opts, info, why, dev, specs)}"))
    finished = {}  # each table's records as it is printed: what an interrupted run still writes
    with BenchPrinter(console) as printer:
        print_table = printer.table
        printer.table = lambda kind, title, records: (
            finished.update({tuple(r[k] for k in ("kernel", "precision", "m", "n", "k")): r for r in records}),
            print_table(kind, title, records))
        try:
            results = bench.run_bench(opts, printer)
        except KeyboardInterrupt:
            if not json_path or not finished:
                raise
            results = {"env": {**env.collect(info, "gpu" if info else "cpu-only"), "command": _command(args)},
                       "records": list(finished.values()), "partial": "interrupted: the records of the tables "
                       "printed before Ctrl-C", "notes": []}
            if earlier is not None:  # --append: the earlier run's records stay
                results = {**_merge(earlier, results), "partial": results["partial"]}
            _write(json_path, json.dumps(results, indent=1, default=float))
            console.print(f"interrupted: wrote the {len(finished)} records finished so far to {json_path} (partial)")
            return 130
    for n in results.get("noise", []):
        console.print(f"noise: {n['kernel']} at {n['m']}x{n['n']}x{n['k']} timed twice: {n['first_ms']:.4f} vs "
                      f"{n['second_ms']:.4f} ms ({n['diff_pct']:.2f}%); smaller gaps between kernels are noise")
    if info is not None:
        ceil = results["env"].get("ceilings")
        if ceil:
            console.print(f"measured ceilings: copy {ceil['copy_bw_gbs']:.0f} GB/s, cuBLAS FP32 "
                          f"{ceil['cublas_fp32_tflops']:.1f} TFLOPS at {ceil['cublas_fp32_shape']}³ (datasheet: "
                          f"{dev.dram_gbs:.0f} GB/s, {dev.tflops['fp32']} TFLOPS FP32)")
        console.print("columns: × peer = peer time / kernel time (same precision, same run, launches of the two "
                      "interleaved); × prev = speedup over the previous level of the same backend (a --variant: "
                      "over the registered parameters, the two interleaved, 'reg.'); model I = FLOP "
                      "per modeled global byte; BW util = modeled global bytes/s over DRAM bandwidth (>100%: caches "
                      "absorbed re-reads)", style="dim", highlight=False)
    else:
        console.print("columns: × blas = cpu/blas time / kernel time; model I = FLOP per modeled global byte; "
                      "roofline TFLOPS = min(peak, bandwidth × model I)", style="dim", highlight=False)
    if json_path:
        results["env"]["command"] = _command(args)
        if earlier is not None:
            results = _merge(earlier, results)
        _write(json_path, json.dumps(results, indent=1, default=float))
        console.print(f"wrote {json_path}")
    failed = [r for r in results["records"] if r["status"] == "FAILED"]
    return 1 if failed else 0


def cmd_bench_api(args, json_path: Path | None) -> int:
    from gemmlab.harness import api_bench

    opts = api_bench.ApiBenchOptions(seed=args.seed)
    if args.shape:
        opts.shapes = tuple(args.shape)
    results = api_bench.run_api_bench(opts, say=lambda line: console.print(line, highlight=False))
    if json_path:
        results["env"]["command"] = _command(args)
        _write(json_path, json.dumps(results, indent=1, default=float))
        _write(json_path.with_suffix(".md"), api_bench.markdown(results))
        console.print(f"wrote {json_path} and {json_path.with_suffix('.md')}")
    return 0 if all(r["verified"] for r in results["records"]) else 1


def _earlier_run(path: Path) -> dict:
    """--append's file, read before the run: it must be a gemmlab bench results JSON."""
    from gemmlab.errors import ResultsFileError
    from gemmlab.results import load_results

    try:
        return load_results(path)
    except ResultsFileError as exc:
        raise ResultsFileError(f"--append: {exc}") from None


def _merge(old: dict, new: dict) -> dict:
    """--append: add a run's records to a results file written by an earlier run on the same GPU; a kernel timed
    again at a shape and precision replaces its earlier record there (and a peer's noise entry its earlier one).
    ``env.runs`` keeps each command with the git SHA and time it ran at; ``notes`` say what a replacement dropped
    (profile counters) and where kernels left as they were keep ratios to an earlier timing of a re-timed peer."""
    def key(r, *fields):
        return tuple(r.get(f) for f in fields)

    record_key = ("kernel", "precision", "m", "n", "k")
    again = {key(r, *record_key) for r in new["records"]}
    notes = [n for n in new.get("notes", []) if n not in old.get("notes", [])]
    for r in old["records"]:
        if key(r, *record_key) in again and r.get("profile"):
            notes.append(f"--append: {r['kernel']} at {r['m']}x{r['n']}x{r['k']} timed again; the earlier record's "
                         "profile counters went with it (gemmlab profile adds them again)")
    for r in new["records"]:
        if r.get("backend") != "peer":
            continue
        shape = key(r, "precision", "m", "n", "k")
        kept = sorted({o["kernel"] for o in old["records"] if key(o, "precision", "m", "n", "k") == shape
                       and key(o, *record_key) not in again and o.get("peer") == r["kernel"]})
        if kept:
            notes.append(f"--append: {r['kernel']} timed again at {r['m']}x{r['n']}x{r['k']}; "
                         f"{', '.join(kept)} keep their ratios to its earlier timing")
    merged = dict(old)
    merged["records"] = [r for r in old["records"] if key(r, *record_key) not in again] + new["records"]
    noise_again = {key(r, "kernel", "m", "n", "k") for r in new.get("noise", [])}
    merged["noise"] = [r for r in old.get("noise", []) if key(r, "kernel", "m", "n", "k") not in noise_again] + \
        new.get("noise", [])
    merged["notes"] = old.get("notes", []) + notes
    commands = old["env"].get("commands") or [old["env"].get("command")]
    runs = old["env"].get("runs") or [{"command": c, **({"git_sha": old["env"].get("git_sha"),
                                                          "time": old["env"].get("time")} if i == 0 else {})}
                                      for i, c in enumerate(commands) if c]
    runs = runs + [{"command": new["env"]["command"], "git_sha": new["env"].get("git_sha"),
                    "time": new["env"].get("time"), "records": len(new["records"])}]
    merged["env"] = {**old["env"], "commands": [c for c in commands if c] + [new["env"]["command"]], "runs": runs}
    return merged


def cmd_verify(args) -> int:
    from gemmlab import device
    from gemmlab.console import Steps, verify_table
    from gemmlab.harness.sweep import VerifyOptions, run_verify

    json_path = _output(args.json, "--json") if args.json else None
    device.configure_numba()  # before any kernel module imports numba: it reads the simulator switch once
    opts = VerifyOptions(args.kernels, args.full, args.sample, args.seed, args.sanitize)
    with Steps(console) as steps:
        results, failures = run_verify(opts, steps)
    console.print(verify_table(results["records"]))
    passed = sum(1 for r in results["records"] if r["result"] == "passed")
    console.print(f"{passed} passed, {failures} failed")
    if json_path:
        results["env"]["command"] = _command(args)
        _write(json_path, json.dumps(results, indent=1, default=float))
        console.print(f"wrote {json_path}")
    return 1 if failures else 0


def cmd_roofline(args) -> int:
    from gemmlab.analysis import remodel
    from gemmlab.analysis.ceilings import load as load_ceilings, with_measured
    from gemmlab.analysis.roofline import DEVICES, ceilings_for, device_spec, model, seed_examples
    from gemmlab import device
    from gemmlab.harness.ceilings import stored_ceilings
    from gemmlab.problem import PRECISIONS, SEED_SHAPE, Problem
    from gemmlab.results import load_results

    def roofs_of(dev, results=None):
        """The datasheet of ``dev``, what a results file measured in its own run, then --ceilings on top."""
        base = ceilings_for(dev)
        measured = ((results or {}).get("env") or {}).get("ceilings") or {}
        if measured:  # older runs measured the copy alone, as copy_bw_gbs
            base = with_measured(base, {**measured, "dram_gbs": measured.get("dram_gbs") or measured.get("copy_bw_gbs")},
                                 "the run's own measurement (env.ceilings)")
        return load_ceilings(args.ceilings, base) if args.ceilings else base

    if args.measure:
        from gemmlab.harness.ceilings import measure_ceilings

        json_path = _output(args.json, "--json") if args.json else None
        info = device.require_gpu("gemmlab roofline --measure")
        measured = measure_ceilings()
        measured["command"] = _command(args)
        if json_path:
            _write(json_path, json.dumps(measured, indent=1, default=float))
            console.print(f"wrote {json_path}")
        roofs = load_ceilings(args.json, ceilings_for(device_spec(info.name))) if args.json else \
            stored_ceilings(ceilings_for(device_spec(info.name)))
        console.print(f"measured: {roofs.describe()}", highlight=False)
        console.print(f"(reference: cuBLAS FP32 {measured['cublas_fp32_tflops']:.1f} TFLOPS at "
                      f"{measured['cublas_fp32_shape']}³; SM clock {measured['clock'].get('median_mhz', 0):.0f} MHz)",
                      highlight=False)
        return 0
    if args.remodel:
        for name in args.remodel:
            path = Path(name)
            results = load_results(path)
            gpu = ((results.get("env") or {}).get("gpu") or {}).get("name") or "h200"
            roofs = roofs_of(device_spec(gpu), results)
            command = _command(args)
            out, skipped = remodel.remodel_results(results, roofs, command)
            path.write_text(json.dumps(out, indent=1, default=float))
            console.print(f"{path}: {len(out['records']) - len(skipped)} records remodeled under {roofs.describe()}",
                          highlight=False)
            for line in skipped:
                console.print(f"  [yellow]kept the old model:[/] {line}", highlight=False)
        return 0
    if args.check:
        above, reasons = 0, {}
        t = Table(title="verified GPU records against their own roofline", header_style="bold", title_justify="left")
        for col in ("file", "kernel", "shape", "MHz", "measured TFLOPS", "predicted TFLOPS", "bound",
                    "time / predicted"):
            t.add_column(col, justify="right" if "TFLOPS" in col or col in ("MHz", "time / predicted") else "left")
        for name in args.check:
            for row in remodel.check_records(load_results(name)):
                above += row.above
                named = row.ratio > remodel.RATIO_NAMED and row.unmodeled
                if named:
                    reasons[row.kernel] = row.unmodeled
                t.add_row(Path(name).name, row.kernel, row.shape, f"{row.clock_mhz or 0:.0f}",
                          f"{row.measured_tflops:.1f}", f"{row.predicted_tflops:.1f}", row.bound,
                          "[bold red]ABOVE[/]" if row.above else f"{row.ratio:.2f}" + (" *" if named else ""))
        console.print(Fitted(t))
        for kernel, reason in reasons.items():
            console.print(f"* {kernel}: {reason}", highlight=False)
        console.print(f"{above} record(s) above their own ceiling", highlight=False)
        return 1 if above else 0

    # CPU kernels have no place under a GPU roofline
    specs = [s for s in _specs(args.kernels) if s.device != "cpu"]
    if not specs:
        raise UnknownKernelError(f"no GPU kernel matches {args.kernels!r}; the roofline models GPU kernels only")
    info = device.gpu()
    dev = device_spec(args.gpu or (info.name if info else "h200"))
    specs = [s for s in specs if s.precision in dev.tflops]  # not a precision the device has no units for (A100 FP8)
    roofs = roofs_of(dev)
    if not args.ceilings and info is not None and not args.gpu:
        roofs = stored_ceilings(roofs)
    t = Table(title="devices (dense datasheet peaks: the seeds' roofs)", header_style="bold", title_justify="left")
    listed = [p for p in PRECISIONS.values() if any(p.name in d.tflops for d in DEVICES.values())]  # A100: no FP8
    for col in ("device", "DRAM GB/s", *(p.label for p in listed), *(f"ridge {p.label}" for p in listed)):
        t.add_column(col, justify="left" if col == "device" else "right")
    for d in DEVICES.values():
        t.add_row(d.name, f"{d.dram_gbs:.0f}", *(f"{d.tflops[p.name]:.1f}" if p.name in d.tflops else "—"
                                                 for p in listed),
                  *(f"{d.ridge(p.name):.1f}" if p.name in d.tflops else "—" for p in listed))
    console.print(Fitted(t))
    ex = seed_examples()
    console.print(f"the seeds' numbers: A100 ridge {ex['a100_ridge']:.1f} FLOP/byte; naive kernel intensity "
                  f"{ex['naive_intensity']:.2f} FLOP/byte at any size; 4096³ best intensity {ex['square_intensity_4096']:.1f} "
                  f"(= N/6); naive re-reads at 4096³: {ex['naive_redundancy_4096']:.0f}× the compulsory input bytes")
    console.print(f"roofs of the hierarchy: {roofs.describe()}", highlight=False)
    for shape in args.shape or [SEED_SHAPE]:
        t = Table(title=f"{dev.name}, {shape[0]}×{shape[1]}×{shape[2]} (M×N×K): the seeds' cache-free view, then "
                        "the hierarchy beneath it", header_style="bold", title_justify="left")
        # each view's columns named by it: the two have a bound and a TFLOPS each
        for col in ("kernel", "GFLOP", "best I", "seeds: global MB", "seeds: I", "seeds: ridge", "seeds: bound",
                    "seeds: TFLOPS", "DRAM MB", "L2 MB", "smem/L1 MB", "hierarchy: bound", "hierarchy: TFLOPS"):
            t.add_column(col, justify="left" if col == "kernel" or col.endswith("bound") else "right")
        for s in specs:
            km = model(s, Problem(*shape, s.precision), roofs)
            t.add_row(s.name, f"{km.flops / 1e9:.1f}", f"{km.intensity:.1f}",
                      f"{(km.modeled_read_bytes + km.modeled_write_bytes) / 1e6:,.0f}", f"{km.modeled_intensity:.2f}",
                      f"{km.seed_ridge:.1f}", km.seed_bound, f"{km.seed_predicted_tflops:.1f}",
                      f"{km.dram_bytes / 1e6:,.0f}", f"{km.l2_bytes / 1e6:,.0f}", f"{km.smem_bytes / 1e6:,.0f}",
                      km.bound, f"{km.predicted_tflops:.1f}")
        console.print(Fitted(t))
    console.print("seeds: every global load counted as DRAM traffic (I = FLOP per such byte, against the datasheet "
                  "ridge); hierarchy: each level's modeled bytes against its own roof, the arithmetic at the maximum "
                  "clock, the largest time binds", style="dim")
    return 0


def cmd_report(args) -> int:
    from gemmlab.report import render_report, summary

    if args.summary:
        print(summary(args.results))
        return 0
    out = _output(args.out, "--out", folder=True)
    for path in render_report(args.results, out):
        console.print(f"wrote {path}")
    return 0


def cmd_profile(args) -> int:
    from gemmlab.console import profile_table
    from gemmlab.harness.profile import ProfileOptions, run_profile

    json_path = _output(args.json, "--json") if args.json else None
    rows, refused = run_profile(ProfileOptions(args.kernel, args.shape, json_path))
    for line in refused:
        console.print(f"not profiled: {line}", style="yellow", markup=False, highlight=False)
    for row in rows:
        if row.result.get("status") != "ok":
            console.print(f"[yellow]{row.spec.name} {row.problem.label()}: {row.result['reason']}[/]")
            continue
        console.print(profile_table(row.spec, row.problem, row.result))
        if row.result.get("warning"):
            console.print(f"[yellow]ncu: {row.result['warning']}[/]")
        if row.merged is not None:
            console.print(f"{'merged into the record in' if row.merged else 'no record of this kernel and shape; kept under profiles in'} "
                          f"{json_path}")
    return 0


def cmd_timeline(args) -> int:
    from gemmlab.console import timeline_table
    from gemmlab.harness import timeline

    json_path = _output(args.json, "--json") if args.json else None
    opts = timeline.TimelineOptions(args.kernels, tuple(args.shape or [(4096, 4096, 4096)]), args.launches,
                                    _command(args))
    results = timeline.run_timeline(opts)
    console.print(timeline_table(results["records"]))
    if json_path:
        _write(json_path, json.dumps(results, indent=1, default=float))
        _write(json_path.with_suffix(".md"), timeline.markdown(results))
        console.print(f"wrote {json_path} and {json_path.with_suffix('.md')}")
    return 0


def cmd_tune(args) -> int:
    from gemmlab.problem import SEED_SHAPE
    from gemmlab.tune import TUNABLE, cache_path, tune

    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] if args.kernels else TUNABLE
    results = tune(args.shape or [SEED_SHAPE], kernels, log=lambda line: console.print(line, highlight=False))
    t = Table(title="gemmlab tune", header_style="bold", title_justify="left")
    for col in ("shape", "best parameters", "ms", "TFLOPS", "candidates run", "dropped"):
        t.add_column(col)
    for r in results:
        ran = sum("ms" in trial for trial in r.trials)
        t.add_row("x".join(map(str, r.shape)), " ".join(f"{k}={v}" for k, v in (r.best or {}).items()) or "none ran",
                  f"{r.ms:.3f}" if r.ms else "—", f"{r.tflops:.1f}" if r.tflops else "—", str(ran),
                  str(len(r.trials) - ran))
    console.print(Fitted(t))
    for kernel in sorted({r.kernel for r in results}):
        console.print(f"{kernel}: cached in {cache_path(kernel)}, read when the kernel builds on this GPU")
    return 0


def cmd_accuracy(args) -> int:
    """Error against float64 of each way of computing an FP32-input product, against K and the inputs' scale."""
    from gemmlab.harness.accuracy import DEFAULT_KS, AccuracyOptions, measure
    from gemmlab.report import accuracy as report

    json_path = _output(args.json, "--json")
    opts = AccuracyOptions(mn=args.mn, ks=tuple(args.k or DEFAULT_KS), scale_k=args.scale_k, seed=args.seed,
                           **({"distributions": tuple(args.dist)} if args.dist else {}),
                           **({"series": tuple(args.series)} if args.series else {}))
    results = measure(opts, say=lambda line: console.print(line, highlight=False))
    results["env"]["command"] = _command(args)
    _write(json_path, json.dumps(results, indent=1))
    for written in [json_path, *report.render(json_path)]:
        console.print(f"wrote {written}")
    return 0


def cmd_dispatch(args) -> int:
    """What kernel='auto' runs for a shape, precision and layout on this GPU (or the H200's table without one)."""
    from gemmlab import dispatch
    from gemmlab.device import GPUInfo, gpu
    from gemmlab.kernels.plan import COL, ROW, Layout
    from gemmlab.problem import Problem

    if args.build:
        return _build_dispatch_table(args.build, args.out)
    info = gpu()
    if info is None:
        info = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
        console.print("no CUDA GPU here: what gemmlab.matmul would run on an NVIDIA H200 (the shipped table)",
                      highlight=False)
    layout = Layout(b=COL if args.b_transposed else ROW)
    for shape in args.shape or [(4096, 4096, 4096)]:
        for precision in args.precision or ["fp32", "tf32", "bf16"]:
            try:
                choice = dispatch.choose(Problem(*shape, precision), layout, info)
            except GemmlabError as exc:
                console.print(f"{'x'.join(map(str, shape))} {precision}: {exc}", highlight=False)
                continue
            copies = f"; {', '.join(choice.copies)} copied into row-major order first" if choice.copies else ""
            console.print(f"{'x'.join(map(str, shape))} {precision}: {choice.spec.name} ({choice.why}{copies})",
                          highlight=False)
    return 0


def _build_dispatch_table(paths, out) -> int:
    from gemmlab import dispatch
    from gemmlab.results import load_results

    table = dispatch.table_from_runs([load_results(Path(p)) for p in paths])
    if not any("ms" in row for precs in table.values() for shapes in precs.values() for rows in shapes.values()
               for row in rows):
        raise GemmlabError(f"no verified GPU records of gemmlab's kernels in {', '.join(paths)}")
    target = _output(out, "--out") if out else dispatch.SHIPPED
    _write(target, json.dumps(table, indent=1, sort_keys=True) + "\n")
    shapes = sum(len(shapes) for precs in table.values() for shapes in precs.values())
    console.print(f"wrote {target}: {', '.join(table)}, {shapes} (precision, shape) entries", highlight=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    count, whole = _number(int, 1), _number(int, 0)
    seconds, idle = _number(float, 0, above=True), _number(float, 0)
    shape_help = "4096 or MxNxK, e.g. 2048x3072x4096; repeatable"
    p = _Parser(prog="gemmlab", description=__doc__)
    from gemmlab import __version__

    p.add_argument("--version", action="version", version=f"gemmlab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="registered kernels")
    s.add_argument("--kernels", help="glob, e.g. 'cuda/*'")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("bench", help="verify and time kernels against cuBLAS (the main job)")
    s.add_argument("--shape", action="append", type=_shape, help=f"{shape_help} (default: the seeds' "
                                                                 "2048x3072x4096; 256x384x512 without a GPU)")
    s.add_argument("--kernels", help="glob(s), comma-separated, e.g. 'cuda/*,numba/v2_*'")
    s.add_argument("--repeat", type=count, default=50, metavar="N",
                   help="timed launches per kernel (default 50); --max-seconds may take fewer, never below "
                        "min(N, 20)")
    s.add_argument("--max-seconds", type=seconds, default=3.0, metavar="S",
                   help="time budget for one kernel's timed launches (default 3): past it fewer than --repeat are "
                        "taken, but never fewer than min(--repeat, 20), however long they last")
    l2 = s.add_mutually_exclusive_group()
    l2.add_argument("--cold", action="store_true", default=True, help="rotate inputs larger than 2×L2 (default)")
    l2.add_argument("--warm", action="store_true", help="reuse one input set (L2-warm)")
    s.add_argument("--json", help="write all records and the environment here")
    s.add_argument("--append", action="store_true", help="add to the --json file of an earlier run on this GPU")
    s.add_argument("--seed", type=whole, default=2026)
    s.add_argument("--gpu", type=_gpu, default="h200", help="roofline device when no GPU is present (a100, h100, h200)")
    s.add_argument("--pause", type=idle, default=0.3, help="seconds idle between kernels")
    s.add_argument("--blocks", type=whole, default=0, metavar="ROUNDS",
                   help="also time each GPU kernel and its peer alone, in blocks alternated over ROUNDS rounds, each "
                        "long enough for clock and power to settle: a third ratio, from steady states")
    s.add_argument("--block-seconds", type=seconds, default=0.5, help="timed launches per block (with --blocks)")
    s.add_argument("--no-ceilings", action="store_true", help="skip measuring copy bandwidth and cuBLAS FP32 8192³")
    s.add_argument("--variant", action="append", type=_variant, metavar="KERNEL:NAME=V[,NAME=V]",
                   help="also run KERNEL, a wgmma level (cuda/tc2 up), with these parameters changed, beside its "
                        "registered ones and its peer (each checked by the kernel's constraints; records named "
                        "KERNEL[NAME=V,...]); repeatable")
    s.add_argument("--api", action="store_true", help="time gemmlab.matmul (kernel='auto') against torch on the same "
                                                      "CUDA tensors, host overhead included (needs torch with CUDA)")
    s.add_argument("--distributed", nargs=argparse.REMAINDER, metavar="...",
                   help="under torchrun: scaling of the distributed GEMMs; everything after it is its options "
                        "(gemmlab bench --distributed --help)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("verify", help="check kernels over a sweep of ragged shapes")
    s.add_argument("--kernels", help="glob(s)")
    s.add_argument("--full", action="store_true", help="every combination of the sweep's dimensions")
    s.add_argument("--sample", type=whole, default=24,
                   help="combinations drawn without --full (default 24; 0: only the special shapes)")
    s.add_argument("--seed", type=whole, default=0)
    s.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer memcheck and racecheck")
    s.add_argument("--json", help="write the results here")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("roofline", help="the seeds' analysis and the cache-aware roofline beneath it, per kernel")
    s.add_argument("--gpu", type=_gpu, default=None, help="a100, h100, h200 (default: the present GPU, else h200)")
    s.add_argument("--shape", action="append", type=_shape, help=shape_help)
    s.add_argument("--kernels")
    s.add_argument("--measure", action="store_true",
                   help="measure this GPU's roofs (DRAM, L2, shared memory, each precision's FLOPs per clock)")
    s.add_argument("--json", help="with --measure: write the ceilings here")
    s.add_argument("--ceilings", help="a ceilings JSON (from --measure --json) whose roofs replace the datasheet's")
    s.add_argument("--remodel", nargs="+", metavar="RESULTS", help="recompute the model of every record in these "
                   "results files (measured fields untouched) and write them back")
    s.add_argument("--check", nargs="+", metavar="RESULTS", help="each verified GPU record against its own predicted "
                   "TFLOPS; exit 1 if any is above")
    s.set_defaults(func=cmd_roofline)

    s = sub.add_parser("report", help="Markdown and PNG report from a saved results JSON")
    s.add_argument("results", help="a JSON that gemmlab bench, bench --api, verify, timeline or accuracy wrote "
                                   "(--json)")
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", help="directory for report.md (and, for bench results, the PNG figures)")
    what.add_argument("--summary", action="store_true", help="print the compact table (Markdown) instead")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("profile", help="Nsight Compute counters for one call of each kernel, beside its model")
    s.add_argument("kernel", help="a kernel name or glob(s), e.g. 'cuda/v*,peers/cublas_fp32': one ncu process for all")
    s.add_argument("--shape", type=_shape, default=(2048, 3072, 4096), help="4096 or MxNxK (default 2048x3072x4096)")
    s.add_argument("--json", help="merge the counters into this results JSON")
    s.set_defaults(func=cmd_profile)

    s = sub.add_parser("timeline", help="where a tc4 kernel's cycles go: clock stamps from inside the kernel")
    s.add_argument("--kernels", default="cuda/tc4_persistent_*", help="glob(s) of tc4 and tc8 kernels")
    s.add_argument("--shape", action="append", type=_shape, help=f"{shape_help} (default 4096)")
    s.add_argument("--launches", type=count, default=10, help="launches summarized (after 3 warm-ups)")
    s.add_argument("--json", help="write the stamps' summary here, and a Markdown table beside it (.md)")
    s.set_defaults(func=cmd_timeline)

    from gemmlab.harness.accuracy import DISTRIBUTIONS, SERIES

    s = sub.add_parser("accuracy", help="error against float64 of FP32, TF32 and 3xTF32 products, against K and "
                                        "the inputs' scale (a GPU run; gemmlab report renders its JSON anywhere)")
    s.add_argument("--mn", type=count, default=2048, help="M = N of every product (default 2048)")
    s.add_argument("--k", action="append", type=count, help="K of the K sweep; repeatable "
                                                          "(default 256 1024 4096 16384 65536)")
    s.add_argument("--scale-k", type=count, default=4096, help="K of the sweep over input distributions")
    s.add_argument("--dist", action="append", choices=list(DISTRIBUTIONS), help="input distributions (default all)")
    s.add_argument("--series", action="append", choices=list(SERIES), help="ways to compute (default all)")
    s.add_argument("--seed", type=int, default=2026)
    s.add_argument("--json", default="accuracy.json", help="write the results here (default accuracy.json), the "
                                                           "Markdown tables (.md) and the figure (.png) beside it")
    s.set_defaults(func=cmd_accuracy)

    s = sub.add_parser("dispatch", help="which kernel gemmlab.matmul's kernel='auto' runs, and why")
    s.add_argument("--shape", action="append", type=_shape, help="4096 or MxNxK; repeatable (default 4096)")
    s.add_argument("--precision", action="append", choices=["fp32", "tf32", "bf16", "fp8", "fp8_block"])
    s.add_argument("--b-transposed", action="store_true", help="B handed over as the transpose of an N×K matrix "
                                                                "(x @ w.T)")
    s.add_argument("--build", nargs="+", metavar="RESULTS", help="write the dispatch table of these bench results "
                   "JSONs instead (the shipped one: results/h200/{fp32,tensor_cores,fp8}.json)")
    s.add_argument("--out", help="where --build writes (default: the table shipped with gemmlab)")
    s.set_defaults(func=cmd_dispatch)

    s = sub.add_parser("tune", help="search tile parameters per shape on this GPU (cached)")
    s.add_argument("--shape", action="append", type=_shape, help=shape_help)
    s.add_argument("--kernels", default=None, help="tunable kernels (default: all of them)")
    s.set_defaults(func=cmd_tune)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except GemmlabError as exc:
        # one line, unwrapped, on stderr; the message is text (a glob's brackets are not markup)
        Console(stderr=True, soft_wrap=True).print(Text.assemble((f"gemmlab {args.command}: error: ", "bold red"),
                                                                 str(exc)))
        return 2
    except KeyboardInterrupt:
        print(f"gemmlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing left to say, and nowhere to say it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
