"""gemmlab command line: list | bench | verify | roofline | report | profile | timeline | tune."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gemmlab.errors import GemmlabError

# Records tables are wide; a pipe or CI log gets 160 columns instead of rich's 80-column default.
console = Console(width=None if Console().is_terminal else 160)


def _shapes(values):
    from gemmlab.problem import parse_shape

    return [parse_shape(v) for v in values or []]


def cmd_list(args) -> int:
    from gemmlab.kernels.registry import list_kernels

    t = Table(header_style="bold")
    for col in ("kernel", "level", "precision", "runs on", "params", "what it does"):
        t.add_column(col)
    for s in list_kernels(args.kernels):
        t.add_row(s.name, "" if s.level is None else str(s.level), s.precision, s.device,
                  " ".join(f"{k}={v}" for k, v in s.params.items()), s.title)
    console.print(t)
    return 0


def cmd_bench(args) -> int:
    if args.api:
        return cmd_bench_api(args)
    if args.distributed is not None:  # under torchrun, every rank; its options are its own
        from gemmlab.distributed.bench import main as distributed_main

        return distributed_main(args.distributed)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from gemmlab.harness.bench import BenchOptions, run_bench
    from gemmlab.harness.timing import BlockOptions, TimingOptions

    timing = TimingOptions(repeat=args.repeat, min_repeat=min(20, args.repeat), cold_l2=not args.warm,
                           max_seconds=args.max_seconds)
    if args.blocks < 0 or args.block_seconds <= 0:
        raise GemmlabError(f"--blocks {args.blocks} --block-seconds {args.block_seconds}: rounds must be 0 or more "
                           "and a block must last a positive time")
    blocks = BlockOptions(args.blocks, args.block_seconds) if args.blocks else None
    opts = BenchOptions(shapes=_shapes(args.shape), kernels=args.kernels, timing=timing, seed=args.seed,
                        gpu=args.gpu, pause_s=args.pause, ceilings=not args.no_ceilings, blocks=blocks)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        results = run_bench(opts, progress)
    _print_results(results)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        results["env"]["command"] = "gemmlab " + " ".join(shlex.quote(a) for a in args.argv)
        if args.append and path.exists():
            results = _merge(json.loads(path.read_text()), results)
        path.write_text(json.dumps(results, indent=1, default=float))
        console.print(f"wrote {path}")
    failed = [r for r in results["records"] if r["status"] == "FAILED"]
    return 1 if failed else 0


def cmd_bench_api(args) -> int:
    from gemmlab.harness import api_bench

    opts = api_bench.ApiBenchOptions(seed=args.seed)
    if args.shape:
        opts.shapes = tuple(_shapes(args.shape))
    results = api_bench.run_api_bench(opts, say=lambda line: console.print(line, highlight=False))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        results["env"]["command"] = "gemmlab " + " ".join(shlex.quote(a) for a in args.argv)
        path.write_text(json.dumps(results, indent=1, default=float))
        path.with_suffix(".md").write_text(api_bench.markdown(results))
        console.print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0 if all(r["verified"] for r in results["records"]) else 1


def _merge(old: dict, new: dict) -> dict:
    """--append: add a run's records to a results file written by an earlier run on the same GPU."""
    old_gpu, new_gpu = (old.get("env") or {}).get("gpu"), new["env"].get("gpu")
    if (old_gpu or {}).get("name") != (new_gpu or {}).get("name"):
        raise GemmlabError(f"--append: the file holds results from {(old_gpu or {}).get('name', 'no GPU')}, this "
                           f"run is on {(new_gpu or {}).get('name', 'no GPU')}; write a new file instead")
    merged = dict(old)
    merged["records"] = old["records"] + new["records"]
    merged["noise"] = old.get("noise", []) + new.get("noise", [])
    merged["notes"] = old.get("notes", []) + [n for n in new.get("notes", []) if n not in old.get("notes", [])]
    commands = old["env"].get("commands") or [old["env"].get("command")]
    merged["env"] = {**old["env"], "commands": [c for c in commands if c] + [new["env"]["command"]]}
    return merged


def _print_results(results: dict) -> None:
    from gemmlab.console import bench_tables, reasons

    e = results["env"]
    gpu = e["gpu"]["name"] if e.get("gpu") else "no GPU"
    console.print(f"[bold]gemmlab bench[/] on {gpu}, git {e['git_sha'][:12]}, {e['time']}")
    ceil = e.get("ceilings")
    if ceil:
        console.print(f"measured ceilings: copy {ceil['copy_bw_gbs']:.0f} GB/s, cuBLAS FP32 {ceil['cublas_fp32_tflops']:.1f} "
                      f"TFLOPS at {ceil['cublas_fp32_shape']}³ (datasheet: {e['device_spec']['dram_gbs']:.0f} GB/s, "
                      f"{e['device_spec']['fp32_tflops']} TFLOPS FP32)")
    for note in results.get("notes", []):
        console.print(f"[yellow]note:[/] {note}")
    for t in bench_tables(results):
        console.print(t)
    for line in reasons(results):
        console.print(f"  {line}", highlight=False)
    for n in results.get("noise", []):
        console.print(f"noise: {n['kernel']} at {n['m']}x{n['n']}x{n['k']} timed twice: {n['first_ms']:.4f} vs "
                      f"{n['second_ms']:.4f} ms ({n['diff_pct']:.2f}%); smaller gaps between kernels are noise")
    console.print("columns: × peer = peer time / kernel time (same precision, same run, launches of the two "
                  "interleaved); × prev = speedup over the "
                  "previous level of the same backend; model I = FLOP per modeled global byte; BW util = modeled "
                  "global bytes/s over DRAM bandwidth (>100%: caches absorbed re-reads)", style="dim")


def cmd_verify(args) -> int:
    from gemmlab.harness.sweep import run_verify

    return run_verify(args, console)


def cmd_roofline(args) -> int:
    from gemmlab.analysis.roofline import DEVICES, device_spec, measure_ceilings, model, seed_examples
    from gemmlab import device
    from gemmlab.kernels.registry import list_kernels, select
    from gemmlab.problem import SEED_SHAPE, Problem

    info = device.gpu()
    dev = device_spec(args.gpu or (info.name if info else "h200"))
    bw = None
    if args.measure:
        ceilings = measure_ceilings() if device.require_gpu("roofline --measure") else None
        bw = ceilings["copy_bw_gbs"]
        console.print(f"measured on {info.name}: copy {bw:.0f} GB/s, cuBLAS FP32 {ceilings['cublas_fp32_tflops']:.1f} "
                      f"TFLOPS at {ceilings['cublas_fp32_shape']}³")
    t = Table(title="devices (dense datasheet peaks)", header_style="bold", title_justify="left")
    for col in ("device", "DRAM GB/s", "FP32", "TF32", "BF16", "ridge FP32", "ridge TF32", "ridge BF16"):
        t.add_column(col, justify="left" if col == "device" else "right")
    for d in DEVICES.values():
        t.add_row(d.name, f"{d.dram_gbs:.0f}", *(f"{d.tflops[p]:.1f}" for p in ("fp32", "tf32", "bf16")),
                  *(f"{d.ridge(p):.1f}" for p in ("fp32", "tf32", "bf16")))
    console.print(t)
    ex = seed_examples()
    console.print(f"the seeds' numbers: A100 ridge {ex['a100_ridge']:.1f} FLOP/byte; naive kernel intensity "
                  f"{ex['naive_intensity']:.2f} FLOP/byte at any size; 4096³ best intensity {ex['square_intensity_4096']:.1f} "
                  f"(= N/6); naive re-reads at 4096³: {ex['naive_redundancy_4096']:.0f}× the compulsory input bytes")
    # CPU kernels have no place under a GPU roofline, nor kernels of a precision the device has no units for
    specs = [s for s in (select(args.kernels) if args.kernels else list_kernels()) if s.device != "cpu"
             and s.precision in dev.tflops]
    for shape in _shapes(args.shape) or [SEED_SHAPE]:
        t = Table(title=f"{dev.name}, {shape[0]}×{shape[1]}×{shape[2]} (M×N×K)", header_style="bold", title_justify="left")
        for col in ("kernel", "precision", "GFLOP", "compulsory MB", "best I", "modeled MB read", "model I",
                    "ridge", "bound", "roofline TFLOPS"):
            t.add_column(col, justify="left" if col in ("kernel", "bound", "precision") else "right")
        for s in specs:
            pr = Problem(*shape, s.precision)
            km = model(s, pr, dev, bw)
            ridge = dev.peak_tflops(s.precision) * 1e3 / (bw or dev.dram_gbs)
            t.add_row(s.name, s.precision, f"{km.flops / 1e9:.1f}", f"{km.compulsory_bytes / 1e6:.1f}", f"{km.intensity:.1f}",
                      f"{km.modeled_read_bytes / 1e6:.0f}", f"{km.modeled_intensity:.2f}", f"{ridge:.1f}", km.bound,
                      f"{km.predicted_tflops:.1f}")
        console.print(t)
    return 0


def cmd_report(args) -> int:
    from gemmlab.report import render_report

    if args.summary:
        from gemmlab.report.data import load_results
        from gemmlab.report.markdown import summary_markdown

        print(summary_markdown(load_results(args.results)))
        return 0
    if not args.out:
        raise GemmlabError("gemmlab report needs --out DIR (or --summary to print the ladder table)")
    for path in render_report(args.results, args.out):
        console.print(f"wrote {path}")
    return 0


def cmd_profile(args) -> int:
    from gemmlab.harness.profile import profile_command

    return profile_command(args, console)


def cmd_timeline(args) -> int:
    from gemmlab.harness import timeline
    from gemmlab.device import gpu
    from gemmlab.harness.env import collect
    from gemmlab.kernels.registry import list_kernels
    from gemmlab.problem import Problem

    specs = list_kernels(args.kernels)
    if not specs:
        raise GemmlabError(f"no kernel matches {args.kernels!r}")
    for spec in specs:
        timeline.instrumented(spec)  # every kernel named has stamps, before any GPU work
    records = [timeline.record(spec, Problem(*shape, spec.precision), launches=args.launches)
               for shape in _shapes(args.shape or ["4096"]) for spec in specs]
    results = {"env": {**collect(gpu(), "gpu"), "command": "gemmlab " + " ".join(shlex.quote(a) for a in args.argv)},
               "records": records}
    t = Table(title="gemmlab timeline: where each consumer warpgroup's cycles go", header_style="bold",
              title_justify="left")
    for col in timeline.COLUMNS:
        t.add_column(col)
    for row in timeline.table_rows(records):
        t.add_row(*row)
    console.print(t)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1, default=float))
        path.with_suffix(".md").write_text(timeline.markdown(results))
        console.print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


def cmd_tune(args) -> int:
    from gemmlab.problem import SEED_SHAPE
    from gemmlab.tune import TUNABLE, cache_path, tune

    results = tune(_shapes(args.shape) or [SEED_SHAPE], args.kernels or TUNABLE,
                   log=lambda line: console.print(line, highlight=False))
    t = Table(title="gemmlab tune", header_style="bold", title_justify="left")
    for col in ("shape", "best parameters", "ms", "TFLOPS", "candidates run", "dropped"):
        t.add_column(col)
    for r in results:
        ran = sum("ms" in trial for trial in r.trials)
        t.add_row("x".join(map(str, r.shape)), " ".join(f"{k}={v}" for k, v in (r.best or {}).items()) or "none ran",
                  f"{r.ms:.3f}" if r.ms else "—", f"{r.tflops:.1f}" if r.tflops else "—", str(ran),
                  str(len(r.trials) - ran))
    console.print(t)
    for kernel in sorted({r.kernel for r in results}):
        console.print(f"{kernel}: cached in {cache_path(kernel)}, read when the kernel builds on this GPU")
    return 0


def cmd_dispatch(args) -> int:
    """What kernel='auto' runs for a shape, precision and layout on this GPU (or the H200's table without one)."""
    from gemmlab import dispatch
    from gemmlab.device import GPUInfo, gpu
    from gemmlab.kernels.plan import COL, ROW, Layout
    from gemmlab.problem import Problem

    info = gpu()
    if info is None:
        info = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
        console.print("no CUDA GPU here: what gemmlab.matmul would run on an NVIDIA H200 (the shipped table)",
                      highlight=False)
    layout = Layout(b=COL if args.b_transposed else ROW)
    for shape in _shapes(args.shape) or [(4096, 4096, 4096)]:
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemmlab", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="registered kernels")
    s.add_argument("--kernels", help="glob, e.g. 'cuda/*'")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("bench", help="verify and time kernels against cuBLAS (the main job)")
    s.add_argument("--shape", action="append", help="4096 or MxNxK, e.g. 2048x3072x4096; repeatable "
                                                    "(default: the seeds' 2048x3072x4096; 256x384x512 without a GPU)")
    s.add_argument("--kernels", help="glob(s), comma-separated, e.g. 'cuda/*,numba/v2_*'")
    s.add_argument("--repeat", type=int, default=50, help="timed launches per kernel (at least 20 are taken)")
    s.add_argument("--max-seconds", type=float, default=3.0, help="time budget per kernel before --repeat is cut "
                                                                  "back (never below 20 launches)")
    l2 = s.add_mutually_exclusive_group()
    l2.add_argument("--cold", action="store_true", default=True, help="rotate inputs larger than 2×L2 (default)")
    l2.add_argument("--warm", action="store_true", help="reuse one input set (L2-warm)")
    s.add_argument("--json", help="write all records and the environment here")
    s.add_argument("--append", action="store_true", help="add to the --json file of an earlier run on this GPU")
    s.add_argument("--seed", type=int, default=2026)
    s.add_argument("--gpu", default="h200", help="roofline device when no GPU is present (a100, h100, h200)")
    s.add_argument("--pause", type=float, default=0.3, help="seconds idle between kernels")
    s.add_argument("--blocks", type=int, default=0, metavar="ROUNDS",
                   help="also time each GPU kernel and its peer alone, in blocks alternated over ROUNDS rounds, each "
                        "long enough for clock and power to settle: a third ratio, from steady states")
    s.add_argument("--block-seconds", type=float, default=0.5, help="timed launches per block (with --blocks)")
    s.add_argument("--no-ceilings", action="store_true", help="skip measuring copy bandwidth and cuBLAS FP32 8192³")
    s.add_argument("--api", action="store_true", help="time gemmlab.matmul (kernel='auto') against torch on the same "
                                                      "CUDA tensors, host overhead included (needs torch with CUDA)")
    s.add_argument("--distributed", nargs=argparse.REMAINDER, metavar="...",
                   help="under torchrun: scaling of the distributed GEMMs; everything after it is its options "
                        "(gemmlab bench --distributed --help)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("verify", help="check kernels over a sweep of ragged shapes")
    s.add_argument("--kernels", help="glob(s)")
    s.add_argument("--full", action="store_true", help="every combination of the sweep's dimensions")
    s.add_argument("--sample", type=int, default=24, help="combinations drawn without --full")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer memcheck and racecheck")
    s.add_argument("--json", help="write the results here")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("roofline", help="the seeds' analysis: intensity, ridge point, bound per kernel")
    s.add_argument("--gpu", default=None, help="a100, h100, h200 (default: the present GPU, else h200)")
    s.add_argument("--shape", action="append")
    s.add_argument("--kernels")
    s.add_argument("--measure", action="store_true", help="measure copy bandwidth and cuBLAS FP32 on this GPU")
    s.set_defaults(func=cmd_roofline)

    s = sub.add_parser("report", help="Markdown and PNG report from a saved results JSON")
    s.add_argument("results")
    s.add_argument("--out", help="directory for report.md and the PNG figures")
    s.add_argument("--summary", action="store_true", help="print the compact ladder table (Markdown) instead")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("profile", help="Nsight Compute counters for one call of each kernel, beside its model")
    s.add_argument("kernel", help="a kernel name or glob(s), e.g. 'cuda/v*,peers/cublas_fp32': one ncu process for all")
    s.add_argument("--shape", default="2048x3072x4096")
    s.add_argument("--json", help="merge the counters into this results JSON")
    s.set_defaults(func=cmd_profile)

    s = sub.add_parser("timeline", help="where a tc4 kernel's cycles go: clock stamps from inside the kernel")
    s.add_argument("--kernels", default="cuda/tc4_persistent_*", help="glob(s) of tc4 and tc7 kernels")
    s.add_argument("--shape", action="append", help="4096 or MxNxK; repeatable (default 4096)")
    s.add_argument("--launches", type=int, default=10, help="launches summarized (after 3 warm-ups)")
    s.add_argument("--json", help="write the stamps' summary here, and a Markdown table beside it (.md)")
    s.set_defaults(func=cmd_timeline)

    s = sub.add_parser("dispatch", help="which kernel gemmlab.matmul's kernel='auto' runs, and why")
    s.add_argument("--shape", action="append", help="4096 or MxNxK; repeatable (default 4096)")
    s.add_argument("--precision", action="append", choices=["fp32", "tf32", "bf16", "fp8", "fp8_block"])
    s.add_argument("--b-transposed", action="store_true", help="B handed over as the transpose of an N×K matrix "
                                                                "(x @ w.T)")
    s.set_defaults(func=cmd_dispatch)

    s = sub.add_parser("tune", help="search tile parameters per shape on this GPU (cached)")
    s.add_argument("--shape", action="append")
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
        console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
