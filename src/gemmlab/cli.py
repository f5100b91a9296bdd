"""gemmlab command line: list | bench | verify | roofline | report | profile | timeline | accuracy | dispatch |
tune | chapter. The commands; their arguments are in gemmlab.cli_parser, their tables in gemmlab.console."""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gemmlab.cli_parser import build_parser, output_path
from gemmlab.console import Fitted
from gemmlab.errors import GemmlabError, OutputPathError, UnknownKernelError

# Records tables are wide; a pipe or CI log gets 160 columns instead of rich's 80-column default.
console = Console(width=None if Console().is_terminal else 160)


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` (checked writable by output_path before the work); a write that fails after it (a full
    disk, a path removed meanwhile) is an OutputPathError naming the file and why, not an unexpected error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise OutputPathError(f"{path}: could not be written ({exc.strerror or exc})") from None


def _specs(pattern: str | None):
    """The kernels a --kernels glob names (all without one); none matching is an error in every command."""
    from gemmlab.kernels.registry import list_kernels, select

    return select(pattern) if pattern else list_kernels()


def _require_some_fit(shapes, specs, dev) -> None:
    """Refuse, before anything runs, a shape whose operands fit the device's memory in none of the kernels'
    precisions (every precision's when ``specs`` is None, which imports no kernel): no kernel runs or is modeled
    there."""
    from gemmlab.problem import PRECISIONS, Problem, require_fits

    precisions = {s.precision for s in specs} if specs else set(PRECISIONS)
    for shape in shapes or []:
        refusals = []
        for precision in sorted(precisions, key=lambda p: Problem(1, 1, 1, p).compulsory_bytes()):  # least first
            try:
                require_fits(Problem(*shape, precision), dev.memory_bytes, dev.name)
            except GemmlabError as exc:
                refusals.append(exc)
        if dev.memory_bytes and len(refusals) == len(precisions):
            raise refusals[0]


def _command(args) -> str:
    return "gemmlab " + " ".join(shlex.quote(a) for a in args.argv)


# -- commands ---------------------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    from gemmlab.console import kernels_table

    console.print(Fitted(kernels_table(_specs(args.kernels))))
    return 0


def cmd_bench(args) -> int:
    if args.distributed is not None:  # under torchrun, every rank; its options are its own
        from gemmlab.distributed.bench import main as distributed_main

        return distributed_main(args.distributed)
    json_path = output_path(args.json, "--json") if args.json else None
    if args.api or args.suite:
        return cmd_bench_api(args, json_path)
    from gemmlab import device
    from gemmlab.analysis.roofline import device_spec, gpu_spec
    from gemmlab.console import BenchPrinter, bench_closing
    from gemmlab.harness import bench, env

    if args.append and not json_path:
        raise GemmlabError("--append adds to the file named by --json; name one")
    earlier = _earlier_run(json_path) if args.append and json_path.exists() else None
    info, why = device.probe()  # first: numba runs on the GPU the probe finds
    device.configure_numba()  # before any kernel module imports numba: it reads the simulator switch once
    specs = _specs(args.kernels) if args.kernels else None  # all kernels need no check (nor the import, yet)
    if earlier is not None:
        _check_same_gpu(earlier, json_path, info)
    opts = _bench_options(args)
    if args.suite_grid:
        opts = _suite_grid(opts, args.suite_grid, info)
        specs = _specs(opts.kernels)
    if opts.variants:
        specs = bench.selected(opts)  # the variants' own errors (parameters, constraints) before anything runs
    dev = gpu_spec(info) if info else device_spec(args.gpu)
    _require_some_fit(opts.shapes, specs, dev)
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
            return _write_partial(args, json_path, earlier, info, list(finished.values()))
    for line, options in bench_closing(results, info, dev):
        console.print(line, **options)
    if json_path:
        results["env"]["command"] = _command(args)
        if earlier is not None:
            from gemmlab.results import merge_runs

            results = merge_runs(earlier, results)
        _write(json_path, json.dumps(results, indent=1, default=float))
        console.print(f"wrote {json_path}")
    failed = [r for r in results["records"] if r["status"] == "FAILED"]
    return 1 if failed else 0


def _write_partial(args, json_path: Path, earlier: dict | None, info, records: list[dict]) -> int:
    """bench --json interrupted (Ctrl-C): the records of the tables printed so far, marked partial (with --append,
    beside the earlier run's); exit 130."""
    from gemmlab.harness import env
    from gemmlab.results import merge_runs

    results = {"env": {**env.collect(info, "gpu" if info else "cpu-only"), "command": _command(args)},
               "records": records, "partial": "interrupted: the records of the tables printed before Ctrl-C",
               "notes": []}
    if earlier is not None:  # --append: the earlier run's records stay
        results = {**merge_runs(earlier, results), "partial": results["partial"]}
    _write(json_path, json.dumps(results, indent=1, default=float))
    console.print(f"interrupted: wrote the {len(records)} records finished so far to {json_path} (partial)")
    return 130


def _suite_grid(opts, precision: str, info):
    """bench --suite-grid: the grid's shapes (after any --shape), its candidates for ``precision`` unless --kernels
    names others, each pruned where the shipped table predicts it hopeless (harness/grid.py)."""
    import dataclasses

    from gemmlab.dispatch import shipped_gpu
    from gemmlab.harness import grid
    from gemmlab.kernels.plan import ROW_MAJOR

    gpu = info or shipped_gpu()
    return dataclasses.replace(opts, shapes=list(opts.shapes) + list(grid.SHAPES),
                               kernels=opts.kernels or grid.CANDIDATES[precision],
                               skip=grid.pruner(opts.layout or ROW_MAJOR, gpu))


def cmd_bench_api(args, json_path: Path | None) -> int:
    from gemmlab.harness import api_bench

    if args.suite:
        from gemmlab.harness import api_suite

        return api_suite.main(args, json_path, _command(args),
                              lambda line: console.print(line, highlight=False, soft_wrap=True))
    opts = api_bench.ApiBenchOptions(seed=args.seed)
    if args.shape:
        opts.shapes = tuple(args.shape)
    if args.precision:
        opts.precisions = tuple(args.precision)
    results = api_bench.run_api_bench(opts, say=lambda line: console.print(line, highlight=False))
    if json_path:
        results["env"]["command"] = _command(args)
        _write(json_path, json.dumps(results, indent=1, default=float))
        _write(json_path.with_suffix(".md"), api_bench.markdown(results))
        console.print(f"wrote {json_path} and {json_path.with_suffix('.md')}")
    return 0 if all(r["verified"] for r in results["records"]) else 1


def _bench_options(args):
    from gemmlab.harness.bench import BenchOptions
    from gemmlab.harness.timing import BlockOptions, TimingOptions

    timing = TimingOptions(repeat=args.repeat, min_repeat=min(20, args.repeat), cold_l2=not args.warm,
                           max_seconds=args.max_seconds)
    blocks = BlockOptions(args.blocks, args.block_seconds or BlockOptions.seconds) if args.blocks else None
    return BenchOptions(shapes=args.shape or [], kernels=args.kernels, timing=timing, seed=args.seed, gpu=args.gpu,
                        pause_s=args.pause, ceilings=not args.no_ceilings, blocks=blocks,
                        variants=tuple(args.variant or ()), layout=args.layout, peers=not args.no_peers)


def _earlier_run(path: Path) -> dict:
    """--append's file, read before the run: it must be a gemmlab bench results JSON."""
    from gemmlab.errors import ResultsFileError
    from gemmlab.results import load_results

    try:
        return load_results(path)
    except ResultsFileError as exc:
        raise ResultsFileError(f"--append: {exc}") from None


def _check_same_gpu(earlier: dict, path: Path, info) -> None:
    """--append adds to a file of the GPU this run is on (``info``; None: no GPU) only."""
    if ((earlier["env"].get("gpu") or {}).get("name")) != (info.name if info else None):
        raise GemmlabError(f"--append: {path} holds results from "
                           f"{(earlier['env'].get('gpu') or {}).get('name', 'no GPU')}, this run is on "
                           f"{info.name if info else 'no GPU'}; write a new file instead")


def cmd_verify(args) -> int:
    from gemmlab import device
    from gemmlab.console import Steps, verify_table
    from gemmlab.harness.sweep import VerifyOptions, run_verify

    json_path = output_path(args.json, "--json") if args.json else None
    device.probe()  # numba runs on the GPU the probe finds
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
    if args.measure:
        return _roofline_measure(args)
    if args.remodel:
        return _roofline_remodel(args)
    if args.check:
        return _roofline_check(args.check)
    from gemmlab import device
    from gemmlab.analysis.roofline import (device_spec, gpu_spec, models_at, refusal, roofs_of, seed_examples,
                                           seed_roof)
    from gemmlab.console import devices_table, roofline_table
    from gemmlab.harness.roof_probes import stored_ceilings
    from gemmlab.problem import SEED_SHAPE, Problem, get_precision

    # CPU kernels have no place under a GPU roofline
    if not any(s.device != "cpu" for s in _specs(args.kernels)):
        raise UnknownKernelError(f"no GPU kernel matches {args.kernels!r}; the roofline models GPU kernels only")
    info = device.gpu()
    dev = gpu_spec(info) if info is not None and not args.gpu else device_spec(args.gpu or "h200")
    roofs = roofs_of(dev, ceilings_path=args.ceilings)
    if not args.ceilings and info is not None and not args.gpu:
        roofs = stored_ceilings(roofs)
    # every shape's models first: one the model refuses (past the device's memory) is told before any table
    shapes = args.shape or [SEED_SHAPE]
    models = [models_at(_specs(args.kernels), shape, dev, roofs) for shape in shapes]
    console.print(Fitted(devices_table()))
    ex = seed_examples()
    console.print(f"the seeds' numbers: A100 ridge {ex['a100_ridge']:.1f} FLOP/byte; naive kernel intensity "
                  f"{ex['naive_intensity']:.2f} FLOP/byte at any size; 4096³ best intensity {ex['square_intensity_4096']:.1f} "
                  f"(= N/6); naive re-reads at 4096³: {ex['naive_redundancy_4096']:.0f}× the compulsory input bytes")
    for shape in args.shape or []:  # the same counts at the shapes asked for
        pr = Problem(*shape)
        square = " (= N/6)" if len(set(shape)) == 1 else ""
        console.print(f"at {pr.label()}: best intensity {pr.intensity():.1f} FLOP/byte{square}; naive re-reads "
                      f"{2 * pr.m * pr.n * pr.k / (pr.m * pr.k + pr.k * pr.n):.0f}× the compulsory input bytes",
                      highlight=False)
    console.print(f"roofs of the hierarchy: {roofs.describe()}", highlight=False)
    for shape, at in zip(shapes, models):
        console.print(Fitted(roofline_table(dev, shape, at)))
    # each precision's ridge from one source (seed_roof): name the precisions whose ridge is the measured roofs'
    measured = [get_precision(p).label for p in roofs.flop_per_clk if seed_roof(roofs, p)[2] == "measured"]
    ridge = "the datasheet's ridge: its peak over its DRAM bandwidth"
    if measured:
        ridge = (f"the measured ridge for {', '.join(measured)}: the measured peak at the maximum clock over the "
                 "measured DRAM bandwidth; the datasheet's (its peak over its bandwidth) for the rest")
    console.print(f"seeds: every global load counted as DRAM traffic (I = FLOP per such byte, against {ridge}); "
                  "hierarchy: each level's modeled bytes against its own roof, the arithmetic at the maximum clock, "
                  "the largest time binds", style="dim", highlight=False)
    for shape in shapes:  # kernels with no launch to model there: why each has no row
        for s in _specs(args.kernels):
            why = refusal(s, shape, dev) if s.device != "cpu" else None
            if why:
                why = why if s.name in why else f"{s.name}: {why}"  # most reasons name their kernel
                console.print(f"not modeled at {'x'.join(map(str, shape))}: {why}", style="dim", highlight=False,
                              markup=False)
    return 0


def _roofline_measure(args) -> int:
    from gemmlab import device
    from gemmlab.analysis.ceilings import load as load_ceilings
    from gemmlab.analysis.roofline import ceilings_for, gpu_spec
    from gemmlab.harness.roof_probes import measure_ceilings, stored_ceilings

    json_path = output_path(args.json, "--json") if args.json else None
    info = device.require_gpu("gemmlab roofline --measure")
    measured = measure_ceilings()
    measured["command"] = _command(args)
    if json_path:
        _write(json_path, json.dumps(measured, indent=1, default=float))
        console.print(f"wrote {json_path}")
    base = ceilings_for(gpu_spec(info))
    roofs = load_ceilings(args.json, base) if args.json else stored_ceilings(base)
    console.print(f"measured: {roofs.describe()}", highlight=False)
    console.print(f"(reference: cuBLAS FP32 {measured['cublas_fp32_tflops']:.1f} TFLOPS at "
                  f"{measured['cublas_fp32_shape']}³; SM clock {measured['clock'].get('median_mhz', 0):.0f} MHz)",
                  highlight=False)
    return 0


def _roofline_remodel(args) -> int:
    from gemmlab.analysis.remodel import remodel_file

    for name in args.remodel:
        remodeled, skipped, roofs = remodel_file(name, args.ceilings, _command(args))
        console.print(f"{Path(name)}: {remodeled} records remodeled under {roofs.describe()}", highlight=False)
        for line in skipped:
            console.print(f"  [yellow]kept the old model:[/] {line}", highlight=False)
    return 0


def _roofline_check(paths) -> int:
    from gemmlab.analysis.remodel import check_records
    from gemmlab.console import check_table
    from gemmlab.results import load_results

    table, reasons, above = check_table([(Path(name).name, row) for name in paths
                                         for row in check_records(load_results(name))])
    console.print(Fitted(table))
    for kernel, reason in reasons.items():
        console.print(f"* {kernel}: {reason}", highlight=False)
    console.print(f"{above} record(s) above their own ceiling", highlight=False)
    return 1 if above else 0


def cmd_report(args) -> int:
    from gemmlab.report import render_report, summary

    if args.summary:
        print(summary(args.results))
        return 0
    out = output_path(args.out, "--out", folder=True)
    for path in render_report(args.results, out):
        console.print(f"wrote {path}")
    return 0


def cmd_compare(args) -> int:
    from gemmlab.report.compare import compare, markdown

    out = None if args.out is None else output_path(args.out, "--out")
    text = markdown(compare(args.before, args.after, args.time))
    if out is None:
        print(text, end="")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"wrote {out}")
    return 0


def cmd_profile(args) -> int:
    from gemmlab.console import profile_table
    from gemmlab.harness.profile import ProfileOptions, run_profile

    json_path = output_path(args.json, "--json") if args.json else None
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

    json_path = output_path(args.json, "--json") if args.json else None
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
    from gemmlab.console import tune_table
    from gemmlab.problem import SEED_SHAPE
    from gemmlab.tune import TUNABLE, cache_path, tune

    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] if args.kernels else TUNABLE
    results = tune(args.shape or [SEED_SHAPE], kernels, log=lambda line: console.print(line, highlight=False))
    console.print(Fitted(tune_table(results)))
    for kernel in sorted({r.kernel for r in results}):
        console.print(f"{kernel}: cached in {cache_path(kernel)}, read when the kernel builds on this GPU")
    return 0


def cmd_accuracy(args) -> int:
    """Error against float64 of each way of computing an FP32-input product, against K and the inputs' scale."""
    from gemmlab.harness.accuracy import DEFAULT_KS, AccuracyOptions, measure
    from gemmlab.report import accuracy as report

    json_path = output_path(args.json, "--json")
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
    from gemmlab import dispatch_command

    return dispatch_command.cmd_dispatch(args, console)


def cmd_chapter(args) -> int:
    from gemmlab.chapter import command

    return command.cmd_chapter(args)


COMMANDS = {"list": cmd_list, "bench": cmd_bench, "verify": cmd_verify, "roofline": cmd_roofline, "report": cmd_report,
            "compare": cmd_compare, "profile": cmd_profile, "timeline": cmd_timeline, "accuracy": cmd_accuracy,
            "dispatch": cmd_dispatch, "tune": cmd_tune, "chapter": cmd_chapter}


def _say(command: str, what: str) -> None:
    """One line on stderr, as it is: plain text, so no terminal setting (a width of 0 columns) can drop it, and a
    glob's brackets are not read as markup."""
    print(f"gemmlab {command}: error: {what}", file=sys.stderr)


# (command, option's attribute, option, whether what it goes with is given, what it goes with): an option given
# without the one that uses it is refused, rather than ignored
COMPANIONS = (("bench", "precision", "--precision", lambda a: a.api or a.suite, "--api"),
              ("bench", "op", "--op", lambda a: a.api and a.suite, "--api --suite"),
              ("bench", "block_seconds", "--block-seconds", lambda a: a.blocks, "--blocks"),
              ("roofline", "json", "--json", lambda a: a.measure, "--measure"),
              ("dispatch", "out", "--out", lambda a: a.build or a.write or a.split_k or a.held_out,
               "--build, --write, --split-k or --held-out"))


# bench's options for its kernels' runs, which bench --api (--suite) does not read: it times gemmlab.matmul with
# kernel="auto" against torch, by its own method
API_IGNORES = (("kernels", "--kernels"), ("variant", "--variant"), ("layout", "--layout"),
               ("suite_grid", "--suite-grid"), ("blocks", "--blocks"), ("no_peers", "--no-peers"),
               ("no_ceilings", "--no-ceilings"), ("warm", "--warm"), ("repeat", "--repeat"),
               ("max_seconds", "--max-seconds"), ("pause", "--pause"), ("gpu", "--gpu"), ("append", "--append"))
_ROOFLINE_MODELS = (("shape", "--shape"), ("kernels", "--kernels"), ("gpu", "--gpu"))
_DISPATCH_PROBLEM = (("shape", "--shape"), ("layout", "--layout"), ("b_transposed", "--b-transposed"))
# (command, its mode's option (attribute, flag), what the mode does, the options it does not read); a command's modes
# exclude each other (the parser's groups)
MODE_IGNORES = (
    ("roofline", ("measure", "--measure"), "measures this GPU's roofs",
     _ROOFLINE_MODELS + (("ceilings", "--ceilings"),)),
    ("roofline", ("remodel", "--remodel"), "rewrites the models of saved records", _ROOFLINE_MODELS),
    ("roofline", ("check", "--check"), "checks saved records against their own models",
     _ROOFLINE_MODELS + (("ceilings", "--ceilings"),)),
    ("dispatch", ("build", "--build"), "writes a table", _DISPATCH_PROBLEM + (("precision", "--precision"),)),
    ("dispatch", ("write", "--write"), "writes a table", _DISPATCH_PROBLEM + (("precision", "--precision"),)),
    ("dispatch", ("split_k", "--split-k"), "writes tc10's table", _DISPATCH_PROBLEM + (("precision", "--precision"),)),
    ("dispatch", ("held_out", "--held-out"), "checks every shape of the table", _DISPATCH_PROBLEM),
)


def _ignored(args, options) -> list[str]:
    """The flags among ``options`` ((attribute, flag), ...) given away from their defaults."""
    plain = build_parser().parse_args([args.command])
    return [flag for dest, flag in options if getattr(args, dest) != getattr(plain, dest)]


def _check_companions(args) -> None:
    for command, attr, option, given, needs in COMPANIONS:
        if args.command == command and getattr(args, attr, None) is not None and not given(args):
            raise GemmlabError(f"{option} goes with {needs}, which is not given: alone it would be ignored")
    if args.command == "bench" and (args.api or args.suite):
        ignored = _ignored(args, API_IGNORES)
        if ignored:
            mode = "--api --suite" if args.suite else "--api"
            raise GemmlabError(f"{', '.join(ignored)}: bench {mode} times gemmlab.matmul (kernel='auto') against "
                               "torch by its own method and does not read it; alone it would be ignored")
    mode = next((m for m in MODE_IGNORES if m[0] == args.command and getattr(args, m[1][0])), None)
    if mode is not None:
        ignored = _ignored(args, mode[3])
        if ignored:
            raise GemmlabError(f"{', '.join(ignored)}: not read by {args.command} {mode[1][1]}, which {mode[2]}; "
                               f"alone {'it' if len(ignored) == 1 else 'they'} would be ignored")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        args = build_parser().parse_args(argv)
        args.argv, command = argv, args.command
        _check_companions(args)
        return COMMANDS[args.command](args)
    except GemmlabError as exc:
        _say(command, str(exc))
        return 2
    except KeyboardInterrupt:
        print(f"gemmlab {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing left to say, and nowhere to say it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - what no check turned into a GemmlabError: still one line, not a trace
        if os.environ.get("GEMMLAB_TRACEBACK"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        _say(command, f"{type(exc).__name__}{': ' + first if first else ''} (unexpected here: GEMMLAB_TRACEBACK=1 "
                      "shows where it was raised)")
        return 2


if __name__ == "__main__":
    sys.exit(main())
