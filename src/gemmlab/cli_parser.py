"""gemmlab's command line, its arguments: each checked where argparse reads it, so that a bad one costs no work and
is told in one line (exit 2). The commands are in gemmlab.cli."""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

from gemmlab.errors import GemmlabError, OutputPathError
from gemmlab.problem import PRECISIONS, parse_shape

DESCRIPTION = ("gemmlab command line: list | bench | verify | roofline | report | compare | profile | timeline | "
               "accuracy | dispatch | tune | chapter.")


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


def _given(what: str):
    """An argparse type: the text as it is, refused when empty (or blank): an empty --json or --kernels read as no
    option at all (everything run, no JSON written; every kernel selected), an empty --out as the current directory."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{text!r} is empty; {what}")
        return text  # as it is (a default's own str subclass too: chapter --json without a path)
    return parse


FILE = _given("name a file")  # a file gemmlab writes (or merges into)
FOLDER = _given("name a directory ('.' for this one)")
RESULTS = _given("name a results JSON")  # a file gemmlab reads
GLOB = _given("name kernels (e.g. 'cuda/*'), or leave the option out for all of them")


def _shape(text: str) -> tuple[int, int, int]:
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


def _layout(text: str):
    from gemmlab.dispatch_layout import parse_layout

    try:
        return parse_layout(text)
    except GemmlabError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def output_path(path: str, flag: str, *, folder: bool = False) -> Path:
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


def _variant(text: str) -> tuple[str, dict]:
    """KERNEL:NAME=V[,NAME=V...] -> (KERNEL, {NAME: V}) with integer values, for bench --variant."""
    kernel, sep, changes = text.partition(":")
    pairs = [c.partition("=") for c in changes.split(",") if c.strip()]
    if not sep or not kernel.strip() or not pairs or any(not eq or not name.strip() for name, eq, _ in pairs):
        raise argparse.ArgumentTypeError(f"{text!r}: a variant is KERNEL:NAME=V[,NAME=V], e.g. "
                                         "cuda/tc8_block_scaled_fp8:BM=128,STAGES=5")
    out = {}
    for name, _, value in pairs:
        name = name.strip()
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: {name}={value!r} is not an integer") from None
        if number < 0:
            raise argparse.ArgumentTypeError(f"{text!r}: {name}={number}: a kernel's parameters are 0 or more")
        if name in out:
            raise argparse.ArgumentTypeError(f"{text!r}: {name} is set twice")
        out[name] = number
    return kernel.strip(), out


def build_parser() -> argparse.ArgumentParser:
    """Every command's arguments; ``args.command`` names the command that runs them (gemmlab.cli.COMMANDS)."""
    count, whole = _number(int, 1), _number(int, 0)
    seconds, idle = _number(float, 0, above=True), _number(float, 0)
    shape_help = "4096 or MxNxK, e.g. 2048x3072x4096; repeatable"
    p = _Parser(prog="gemmlab", description=DESCRIPTION)
    from gemmlab import __version__

    p.add_argument("--version", action="version", version=f"gemmlab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="registered kernels")
    s.add_argument("--kernels", type=GLOB, help="glob, e.g. 'cuda/*'")

    s = sub.add_parser("bench", help="verify and time kernels against cuBLAS (the main job)")
    s.add_argument("--shape", action="append", type=_shape, help=f"{shape_help} (default: the seeds' "
                                                                 "2048x3072x4096; 256x384x512 without a GPU)")
    s.add_argument("--kernels", type=GLOB, help="glob(s), comma-separated, e.g. 'cuda/*,numba/v2_*'")
    s.add_argument("--repeat", type=count, default=50, metavar="N",
                   help="timed launches per kernel (default 50); --max-seconds may take fewer, never below "
                        "min(N, 20)")
    s.add_argument("--max-seconds", type=seconds, default=3.0, metavar="S",
                   help="time budget for one kernel's timed launches (default 3): past it fewer than --repeat are "
                        "taken, but never fewer than min(--repeat, 20), however long they last")
    l2 = s.add_mutually_exclusive_group()
    l2.add_argument("--cold", action="store_true", default=True, help="rotate inputs larger than 2×L2 (default)")
    l2.add_argument("--warm", action="store_true", help="reuse one input set (L2-warm)")
    s.add_argument("--json", type=FILE, help="write all records and the environment here")
    s.add_argument("--append", action="store_true", help="add to the --json file of an earlier run on this GPU")
    s.add_argument("--seed", type=whole, default=2026)
    s.add_argument("--gpu", type=_gpu, default="h200", help="roofline device when no GPU is present (a100, h100, h200)")
    s.add_argument("--pause", type=idle, default=0.3, help="seconds idle between kernels")
    s.add_argument("--blocks", type=whole, default=0, metavar="ROUNDS",
                   help="also time each GPU kernel and its peer alone, in blocks alternated over ROUNDS rounds, each "
                        "long enough for clock and power to settle: a third ratio, from steady states")
    s.add_argument("--block-seconds", type=seconds, help="timed launches per block (with --blocks; default 0.5)")
    s.add_argument("--no-ceilings", action="store_true", help="skip measuring copy bandwidth and cuBLAS FP32 8192³")
    s.add_argument("--variant", action="append", type=_variant, metavar="KERNEL:NAME=V[,NAME=V]",
                   help="also run KERNEL, a wgmma level (cuda/tc2 up) or a seed level (the parameters its spec "
                        "names in varies), with these parameters changed, beside its registered ones and its peer "
                        "(each checked by the kernel's constraints; records named KERNEL[NAME=V,...]); repeatable")
    s.add_argument("--layout", type=_layout, metavar="A,B", help="hand the operands over in this layout, e.g. "
                   "row,col (B as w.t() of an N×K w): kernels that read it run in place, the others after "
                   "gemmlab.matmul's copy, timed with it (records: layout, copies)")
    s.add_argument("--no-peers", action="store_true", help="time gemmlab's kernels only, not each precision's peer")
    s.add_argument("--suite-grid", choices=list(PRECISIONS), metavar="PRECISION",
                   help="time the kernels kernel='auto' may run at PRECISION over the suite's grid of shapes, each "
                        "skipped where the shipped dispatch table predicts it over 3x the fastest (gemmlab dispatch "
                        "--build makes the table of the results)")
    s.add_argument("--api", action="store_true", help="time gemmlab.matmul (kernel='auto') against torch on the same "
                                                      "CUDA tensors, host overhead included (needs torch with CUDA)")
    s.add_argument("--suite", action="store_true", help="with --api: the shape suite (x @ w.T at 69 shapes per "
                   "precision, GPU and eager time of both sides; --shape replaces the grid); without a GPU, the grid "
                   "and the kernel auto would run")
    s.add_argument("--precision", action="append", choices=list(PRECISIONS),
                   help="with --api: only these precisions (repeatable; default all of them)")
    s.add_argument("--op", action="append", metavar="OP",
                   help="with --api --suite: only these ops, of mm, bmm, linear_bias and linear_bias_gelu "
                        "(repeatable; default all of them)")
    s.add_argument("--distributed", nargs=argparse.REMAINDER, metavar="...",
                   help="under torchrun: scaling of the distributed GEMMs; everything after it is its options "
                        "(gemmlab bench --distributed --help)")

    s = sub.add_parser("verify", help="check kernels over a sweep of ragged shapes")
    s.add_argument("--kernels", type=GLOB, help="glob(s)")
    s.add_argument("--full", action="store_true", help="every combination of the sweep's dimensions")
    s.add_argument("--sample", type=whole, default=24,
                   help="combinations drawn without --full (default 24; 0: only the special shapes)")
    s.add_argument("--seed", type=whole, default=0)
    s.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer memcheck and racecheck")
    s.add_argument("--json", type=FILE, help="write the results here")

    s = sub.add_parser("roofline", help="the seeds' analysis and the cache-aware roofline beneath it, per kernel")
    s.add_argument("--gpu", type=_gpu, default=None, help="a100, h100, h200 (default: the present GPU, else h200)")
    s.add_argument("--shape", action="append", type=_shape, help=shape_help)
    s.add_argument("--kernels", type=GLOB)
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--measure", action="store_true",
                      help="measure this GPU's roofs (DRAM, L2, shared memory, each precision's FLOPs per clock)")
    s.add_argument("--json", type=FILE, help="with --measure: write the ceilings here")
    s.add_argument("--ceilings", type=RESULTS, help="a ceilings JSON (from --measure --json) whose roofs replace the "
                                                    "datasheet's")
    mode.add_argument("--remodel", nargs="+", type=RESULTS, metavar="RESULTS", help="recompute the model of every "
                      "record in these results files (measured fields untouched) and write them back")
    mode.add_argument("--check", nargs="+", type=RESULTS, metavar="RESULTS", help="each verified GPU record against "
                      "its own predicted TFLOPS; exit 1 if any is above")

    s = sub.add_parser("report", help="Markdown and PNG report from a saved results JSON")
    s.add_argument("results", type=RESULTS, help="a JSON that gemmlab bench, bench --api (--suite), verify, timeline, "
                                                 "accuracy or chapter wrote (--json)")
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=FOLDER, help="directory for report.md (and, for bench results, the PNG figures)")
    what.add_argument("--summary", action="store_true", help="print the compact table (Markdown) instead")

    s = sub.add_parser("compare", help="shape-suite runs of the code before and after a change, row by row: each "
                                       "side's mean GPU time, after / before, the geomean and the runs' spread")
    s.add_argument("--before", nargs="+", type=RESULTS, required=True, metavar="SUITE",
                   help="suite JSONs (bench --api --suite --json), one run each, of the code before")
    s.add_argument("--after", nargs="+", type=RESULTS, required=True, metavar="SUITE",
                   help="the same rows' runs of the code after, on the same GPU")
    s.add_argument("--time", choices=("gpu", "eager"), default="gpu",
                   help="gpu (default): each side's GPU time; eager: each run's eager time as its ratio to torch's in "
                        "the same run, for a change to the host path (an eager time moves with the host's state)")
    s.add_argument("--out", type=FILE, help="write the Markdown here instead of printing it")

    s = sub.add_parser("profile", help="Nsight Compute counters for one call of each kernel, beside its model")
    s.add_argument("kernel", type=GLOB, help="a kernel name or glob(s), e.g. 'cuda/v*,peers/cublas_fp32': one ncu "
                                             "process for all")
    s.add_argument("--shape", type=_shape, default=(2048, 3072, 4096), help="4096 or MxNxK (default 2048x3072x4096)")
    s.add_argument("--json", type=RESULTS, help="merge the counters into this results JSON")

    s = sub.add_parser("timeline", help="where a tc4 kernel's cycles go: clock stamps from inside the kernel")
    s.add_argument("--kernels", type=GLOB, default="cuda/tc4_persistent_*", help="glob(s) of tc4 and tc8 kernels")
    s.add_argument("--shape", action="append", type=_shape, help=f"{shape_help} (default 4096)")
    s.add_argument("--launches", type=count, default=10, help="launches summarized (after 3 warm-ups)")
    s.add_argument("--json", type=FILE, help="write the stamps' summary here, and a Markdown table beside it (.md)")

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
    s.add_argument("--json", type=FILE, default="accuracy.json", help="write the results here (default "
                   "accuracy.json), the Markdown tables (.md) and the figure (.png) beside it")

    s = sub.add_parser("dispatch", help="which kernel gemmlab.matmul's kernel='auto' runs, and why")
    s.add_argument("--shape", action="append", type=_shape, help="4096 or MxNxK; repeatable (default 4096)")
    s.add_argument("--precision", action="append", choices=list(PRECISIONS))
    layout = s.add_mutually_exclusive_group()
    layout.add_argument("--b-transposed", action="store_true", help="B handed over as the transpose of an N×K "
                                                                     "matrix (x @ w.T): --layout row,col")
    layout.add_argument("--layout", type=_layout, metavar="A,B", help="the operands' layout, each row or col "
                        "(default row,row)")
    table = s.add_mutually_exclusive_group()
    table.add_argument("--build", nargs="+", type=RESULTS, metavar="RESULTS", help="write the dispatch table of "
                       "these bench results JSONs alone instead: to --out, or without it to the table shipped with "
                       "gemmlab, which it replaces only where the results hold every GPU and precision that table "
                       "holds (else refused, naming what it would lose: a subset goes to --out). The shipped one: "
                       "results/h200/{fp32,tensor_cores,fp8,split_k}.json and the grid's, results/h200/grid_*.json, "
                       "then each results/h200/update_grid_*.json, in the order measured, added over it with --write "
                       "--out src/gemmlab/data/dispatch-h200.json")
    table.add_argument("--write", nargs="+", type=RESULTS, metavar="RESULTS", help="add these bench results JSONs' "
                       "measurements to this machine's dispatch table instead (what kernel='auto' reads on their GPU; "
                       "a bench run does not write it), or to the table at --out, each kernel's rows replacing its "
                       "own")
    table.add_argument("--split-k", nargs="+", type=RESULTS, metavar="RESULTS", help="write tc10's table of "
                       "measured tiles and splits instead, from bench runs of cuda/tc10_split_k_* with --layout "
                       "row,col and --variant builds over every tile and S: to --out, or without it to the table "
                       "shipped with gemmlab, only from runs on its GPU that hold every precision it holds choices "
                       "for (else refused: a subset goes to --out). Gains compare within a run: a run counts at a "
                       "shape where it timed the model's choice there. The shipped ones: the sweeps each names in "
                       "its 'from' (results/h200/, results/h100/)")
    table.add_argument("--held-out", action="store_true", help="check kernel='auto' between measured shapes on its "
                       "own table instead: each measured shape held out, predicted from the others, the pick scored "
                       "against what was measured there (no GPU needed); --precision narrows it, --out writes the "
                       "records as JSON (checked writable before anything is computed)")
    s.add_argument("--out", type=FILE, help="where --build, --write or --split-k writes (default: for --build and "
                   "--split-k the tables shipped with gemmlab, from results covering every precision they hold; for "
                   "--write this machine's), and --held-out's records")

    from gemmlab.chapter.command import add_parser as add_chapter

    add_chapter(sub, _shape, file=FILE, folder=FOLDER, results=RESULTS)

    s = sub.add_parser("tune", help="search tile parameters per shape on this GPU (cached)")
    s.add_argument("--shape", action="append", type=_shape, help=shape_help)
    s.add_argument("--kernels", type=GLOB, default=None, help="tunable kernels (default: all of them)")
    return p
