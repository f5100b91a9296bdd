"""``gemmlab chapter``: run the chapter (or read a saved run), print the claims table, write the JSON and the pages."""
from __future__ import annotations

import json
from pathlib import Path

from gemmlab.cli_parser import output_path
from gemmlab.errors import ResultsFileError

DEFAULT_JSON = "results/h200/chapter.json"
FIGURES = "results/h200/chapter"  # where the docs expect gemmlab report's figures of the chapter JSON
# the checkout's copy of that folder: whether the pages link the figures depends on it alone, not on where --docs
# writes them
CHECKOUT = Path(__file__).resolve().parents[3]


class _DefaultPath(str):
    """--json given without a path: DEFAULT_JSON, told apart from the same path named (``default_json``)."""


def default_json(path) -> bool:
    """Whether ``path`` is --json's default, taken because --json was given without a path."""
    return isinstance(path, _DefaultPath)


def add_parser(sub, shape_type, *, file=str, folder=str, results=str) -> None:
    """The chapter's arguments; ``file``, ``folder`` and ``results``: the command line's types of a path written, a
    directory written and a file read (gemmlab.cli_parser: each refuses an empty one)."""
    s = sub.add_parser("chapter", help="each claim of the two seed texts beside gemmlab's measurement (V0, V1, V2, "
                                       "cuBLAS), with a verdict")
    s.add_argument("--json", nargs="?", const=_DefaultPath(DEFAULT_JSON), type=file, metavar="PATH",
                   help=f"write the chapter JSON here (default path: {DEFAULT_JSON}, which a run replaces only where "
                        "the file there was measured on the same GPU, or on none: another GPU's run is kept, and this "
                        "one goes to a PATH named)")
    s.add_argument("--lang", choices=["en", "zh"], default="en", help="the table's language (zh: Chinese)")
    s.add_argument("--from", dest="source", type=results, metavar="CHAPTER.json",
                   help="print (and with --docs write) from a saved chapter JSON instead of running")
    s.add_argument("--docs", type=folder, metavar="DIR", help="write DIR/chapter.md and DIR/zh/chapter.md, the "
                                                              "walk-through in English and Chinese, from the run or "
                                                              "--from")
    s.add_argument("--cpu-shape", action="append", type=shape_type, metavar="MxNxK",
                   help="V0's and the host BLAS's shapes (default 512³ and 1024³; the claims use the last)")


def load(path: str) -> dict:
    from gemmlab.results import read_text

    try:
        results = json.loads(read_text(path))
    except json.JSONDecodeError:
        raise ResultsFileError(f"{path}: not JSON") from None
    if not isinstance(results, dict) or results.get("kind") != "chapter" or not isinstance(results.get("claims"), list):
        raise ResultsFileError(f"{path}: not a chapter JSON (gemmlab chapter --json)")
    return results


def write_docs(results: dict, folder: Path, source: str) -> list[Path]:
    from gemmlab.chapter.render import page

    written = []
    drawn = (CHECKOUT / FIGURES / "roofline_single.png").exists()  # gemmlab report has drawn them in this checkout
    for lang, path in (("en", folder / "chapter.md"), ("zh", folder / "zh" / "chapter.md")):
        path.parent.mkdir(parents=True, exist_ok=True)
        figures = ("../" if lang == "en" else "../../") + FIGURES if drawn else None
        path.write_text(page(results, lang, source, figures))
        written.append(path)
    return written


def _gpu_of(results: dict) -> str | None:
    return ((results.get("env") or {}).get("gpu") or {}).get("name")


def check_default_json(path: Path, gpu: str | None, what: str = "this run") -> None:
    """--json without a path: DEFAULT_JSON (the H200's committed run, in a checkout) is replaced only by a run of the
    GPU that measured it (``gpu``: this run's, None for no GPU), or where the file there was measured on no GPU: as
    bench --append adds only to a file of this GPU, a run here must not overwrite another GPU's measurements (a run
    without a GPU would leave the GPU claims not measured). A file there that is not a chapter JSON is kept too."""
    if not path.exists():
        return
    try:
        there = _gpu_of(load(str(path)))
    except ResultsFileError as exc:
        raise ResultsFileError(f"--json: {exc}; name another path: --json PATH") from None
    if there is not None and there != gpu:
        raise ResultsFileError(f"--json: {path} (the default path) holds the chapter measured on {there}, {what} "
                               f"is on {gpu or 'no GPU'}; write it elsewhere: --json PATH")


class _Steps:
    """Each kernel's step, one dim line as it starts (bench's Listener; the tables come once, as the claims)."""

    def __init__(self, console):
        self.console = console

    def step(self, label: str, done: int, total: int) -> None:
        self.console.print(f"  {label}", style="dim", highlight=False, markup=False)

    def table(self, kind: str, title: str, records: list) -> None:
        pass


def _check_cpu_shapes(shapes) -> None:
    """Every --cpu-shape one that V0 and the host BLAS run (the claims about the CPU read both there), else the
    kernel's refusal, before anything runs."""
    from gemmlab.chapter import CPU_KERNELS
    from gemmlab.errors import GemmlabError
    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import Problem

    for shape in shapes:
        for name in CPU_KERNELS.split(","):
            why = get_kernel(name).is_valid(Problem(*shape, "fp32"))
            if why:
                raise getattr(why, "error", GemmlabError)(
                    f"--cpu-shape {'x'.join(map(str, shape))}: {name} does not run it ({why}); the chapter's CPU "
                    "claims need V0 and the host BLAS there")


def cmd_chapter(args) -> int:
    from rich.console import Console

    from gemmlab.chapter import ChapterOptions, counts, run
    from gemmlab.chapter.render import console_table
    from gemmlab.chapter.text import VERDICTS

    console = Console(width=None if Console().is_terminal else 200)
    json_path = output_path(args.json, "--json") if args.json else None
    docs = output_path(args.docs, "--docs", folder=True) if args.docs else None
    if args.source:
        from gemmlab.chapter import claims_table, facts_of

        results, source = load(args.source), args.source
        if default_json(args.json):
            check_default_json(json_path, _gpu_of(results), f"{args.source}'s run")
        results["claims"] = claims_table(facts_of(results))  # judged again on the saved records, by these claims
        if results.get("not_measured"):
            console.print(results["not_measured"][args.lang], style="yellow", highlight=False, markup=False)
    else:
        opts = ChapterOptions(cpu_shapes=tuple(args.cpu_shape)) if args.cpu_shape else ChapterOptions()
        _check_cpu_shapes(opts.cpu_shapes)
        from gemmlab import device
        from gemmlab.chapter import not_measured

        info, why = device.probe()
        if default_json(args.json):  # before anything is printed or runs
            check_default_json(json_path, info.name if info else None)
        if info is None:  # what this machine cannot measure, before anything runs
            console.print(not_measured(why, opts)[args.lang], style="yellow", highlight=False, markup=False)
        results = run(opts, _Steps(console))
        source = str(json_path) if json_path else "gemmlab chapter"
    console.print(console_table(results, args.lang))
    tally = counts(results["claims"])
    console.print(", ".join(f"{VERDICTS[v][args.lang].rstrip('：')}: {n}" for v, n in tally.items()), highlight=False)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(results, indent=1, default=float))
        console.print(f"wrote {json_path}", highlight=False)
    if docs:
        for path in write_docs(results, docs, source):
            console.print(f"wrote {path}", highlight=False)
    return 0
