"""``gemmlab dispatch``: what kernel='auto' runs for a shape, precision and layout, the candidates ranked beside it;
with --build or --write, the dispatch table made from bench results instead, with --split-k tc10's table of
measured tiles and splits, and with --held-out the table's own check of kernel='auto' between its shapes.
``console`` is the command line's (gemmlab.cli)."""
from __future__ import annotations

from pathlib import Path

from gemmlab.cli_parser import output_path
from gemmlab.errors import GemmlabError, LayoutError, OutputPathError


def cmd_dispatch(args, console) -> int:
    """What kernel='auto' runs for a shape, precision and layout on this GPU (or the H200's table without one): the
    kernel, why, its predicted time and the other candidates' (or, with --build and --write, the table itself)."""
    from gemmlab import dispatch
    from gemmlab.device import gpu
    from gemmlab.kernels.plan import COL, ROW, Layout
    from gemmlab.problem import PRECISIONS, Problem, require_fits

    if args.build or args.write:
        return _write_table(args.build or args.write, args.out, console, replace=bool(args.build))
    if args.split_k:
        return _write_split_k(args.split_k, args.out, console)
    if args.held_out:
        return _held_out(args.precision, args.out, console)
    info = gpu()
    here = info is not None
    info = info or dispatch.shipped_gpu()
    shapes = args.shape or [(4096, 4096, 4096)]
    precisions = args.precision or [n for n, p in PRECISIONS.items() if not p.scaled]
    for shape in shapes:  # a shape no precision fits in the GPU's memory is refused before anything is printed
        fits = []
        for precision in precisions:
            try:
                require_fits(Problem(*shape, precision), info.total_mem_bytes, info.name)
                fits.append(precision)
            except GemmlabError as exc:
                refusal = exc
        if not fits:
            raise refusal
    if not here:
        console.print("no CUDA GPU here: what gemmlab.matmul would run on an NVIDIA H200 (the shipped table)",
                      highlight=False)
    layout = args.layout or Layout(b=COL if args.b_transposed else ROW)
    for shape in shapes:
        for precision in precisions:
            problem = Problem(*shape, precision)
            head = f"{problem.label()} {precision}"
            try:
                require_fits(problem, info.total_mem_bytes, info.name)
                choice = dispatch.choose(problem, layout, info)
            except LayoutError as exc:  # no candidate reads these operands' layout (fp8's wgmma: B K-major only)
                fix = "" if args.layout or args.b_transposed else "; --b-transposed asks for B as w.t()"
                console.print(f"{head}, {layout.label()}: no kernel takes it: {exc}{fix}", highlight=False)
                continue
            except GemmlabError as exc:
                console.print(f"{head}: {exc}", highlight=False)
                continue
            copies = f"; {', '.join(choice.copies)} copied into row-major order first" if choice.copies else ""
            console.print(f"{head}: {choice.spec.name} ({choice.why}{copies})", highlight=False)
            for c in dispatch.rank(problem, layout, info):
                how = ("not for auto: " + c.refusal) if c.refusal else "reads it in place" if c.copies == () else \
                    f"copies {', '.join(c.copies)}" if c.copies else "reads no layout a copy makes of it"
                mark = "*" if c.spec == choice.spec else " "
                console.print(f"  {mark} {c.spec.name:32} {c.per_call_ms:9.4g} ms a call  {how}; "
                              f"{dispatch.explain(c)}", highlight=False, soft_wrap=True)
    return 0


def _write_table(paths, out, console, *, replace: bool) -> int:
    """--build (``replace``: the table of these results alone, the shipped one by default) or --write (these
    results over this machine's table, or the table at --out)."""
    from gemmlab import dispatch
    from gemmlab.results import load_results

    checked = output_path(out, "--out") if out else None  # before any file is read
    runs = [load_results(Path(p)) for p in paths]
    table = dispatch.table_from_runs(runs)
    if not any("ms" in row for precs in table.values() for shapes in precs.values() for rows in shapes.values()
               for row in rows):
        raise GemmlabError(f"no verified GPU records of gemmlab's kernels in {', '.join(paths)}")
    if replace and not out:
        _require_shipped_precisions(table, dispatch.SHIPPED)
    flag = "--out" if out else "--build" if replace else "--write"
    target = checked or (dispatch.SHIPPED if replace else dispatch.local_path())
    written = dispatch.write_table(runs, target, replace=replace)
    if written is None:
        raise OutputPathError(f"{flag}: cannot write {target}")
    path, table = written
    shapes = sum(len(shapes) for precs in table.values() for shapes in precs.values())
    console.print(f"wrote {path}: {', '.join(table)}, {shapes} (precision, shape) entries", highlight=False)
    return 0


def _require_shipped_precisions(table: dict, shipped) -> None:
    """--build without --out replaces the table shipped with gemmlab: only with a table holding measurements of every
    GPU and precision the shipped one holds, so that a build from some of its results (one precision's) is refused
    rather than written with the rest dropped."""
    from gemmlab.cache import read_json

    missing: dict = {}
    for gpu, precisions in read_json(shipped).items():
        for precision in precisions:
            rows = table.get(gpu, {}).get(precision, {})
            if not any("ms" in row for shape_rows in rows.values() for row in shape_rows):
                missing.setdefault(gpu, []).append(precision)
    if missing:
        lost = "; ".join(f"{gpu} {', '.join(sorted(precisions))}" for gpu, precisions in missing.items())
        raise GemmlabError(f"--build: these results hold no verified records of {lost}, which the shipped table "
                           f"({shipped}) holds and would lose; build it from the full set "
                           "(gemmlab dispatch --help) or write this table elsewhere with --out")


SPLIT_K_LAYOUT = "row,col"  # what the table is measured in: B as w.t(), as x @ w.t() and the suite hand it over
SPLIT_K_PARAMS = ("BM", "BN", "STAGES", "SPLITS")  # what a sweep's builds may change
# tc10's parameters added after runs the table reads, as those runs' builds had them (a record lacks the key)
SPLIT_K_LATER = {"SK_CLUSTER": 0, "SK_SPREAD": 0}


def split_k_rows(results: dict) -> list[tuple]:
    """(precision, (M, N, K), params, µs, gain) of each verified tc10 record of a bench run with B as w.t(): the
    build that ran (the record's ``params``: the registered kernel's choice for the problem, or a --variant's pinned
    tile and S) and its speedup over the run's registered build in launches interleaved with it (``variant_gain``;
    1.0 for the registered build). A variant that changes more than the tile, the ring and S is refused: the table
    holds those alone."""
    from gemmlab.kernels.registry import get_kernel
    from gemmlab.problem import get_precision

    rows = []
    for r in results.get("records", []):
        name = r.get("variant_of") or r.get("kernel", "")
        if not name.startswith("cuda/tc10_split_k_") or not r.get("verified") or not r.get("median_ms"):
            continue
        if (r.get("layout") or ("row,col" if get_precision(r["precision"]).kmajor_b else "row,row")) != SPLIT_K_LAYOUT:
            continue  # FP8's records name no layout: its B is always K-major, w.t()'s
        params, base = r.get("params") or {}, get_kernel(name).params
        ran = {**SPLIT_K_LATER, **params}
        other = sorted(key for key in {*ran, *base} - set(SPLIT_K_PARAMS) if ran.get(key, 0) != base.get(key, 0))
        if not params or other:
            raise GemmlabError(f"{r['kernel']} at {r['m']}x{r['n']}x{r['k']}: "
                               + (f"changes {', '.join(other)}; tc10's table holds builds that differ from "
                                  f"{name} in {', '.join(SPLIT_K_PARAMS)} alone" if params else
                                  "the record names no parameters (a bench run before records held them)"))
        gain = r.get("variant_gain") if r.get("variant_of") else 1.0
        rows.append((r["precision"], (r["m"], r["n"], r["k"]), params, 1e3 * r["median_ms"], gain))
    return rows


def split_k_runs(results: dict) -> list[list[tuple]]:
    """split_k_rows of each bench run a results file holds (its records' ``run``: a file written with --append holds
    several), in the order the file first names them: measured_table compares gains within a run only."""
    runs: dict = {}
    for r in results.get("records", []):
        runs.setdefault(r.get("run"), []).append(r)
    return [split_k_rows({"records": records}) for records in runs.values()]


def _write_split_k(paths, out, console) -> int:
    """--split-k: tc10's measured choices (split_k.measured_table) from bench runs of its builds on one GPU, written
    to the table shipped with gemmlab (the H200's: runs on an H200 only) or to --out."""
    import json

    from gemmlab import dispatch
    from gemmlab.kernels.cuda.tc.model import split_k
    from gemmlab.results import load_results

    checked = output_path(out, "--out") if out else None  # before any file is read
    runs = {p: load_results(Path(p)) for p in paths}
    unnamed = [p for p, r in runs.items() if not ((r.get("env") or {}).get("gpu") or {}).get("name")]
    if unnamed:
        raise GemmlabError(f"--split-k: {', '.join(unnamed)} name no GPU (env.gpu): a table is one GPU's")
    gpus = {(r["env"]["gpu"]["name"], r["env"]["gpu"].get("sm_count")) for r in runs.values()}
    per_run = [rows for r in runs.values() for rows in split_k_runs(r)]
    rows = [row for run in per_run for row in run]
    if len(gpus) != 1 or not rows:
        raise GemmlabError(f"--split-k takes bench runs of cuda/tc10_split_k_* (--layout {SPLIT_K_LAYOUT}, its "
                           f"--variant builds beside it) on one GPU; {', '.join(paths)} hold {len(rows)} verified "
                           f"records of it from {len(gpus)} GPUs")
    (gpu, sm_count), = gpus
    shipped = dispatch.shipped_gpu()
    if not out and (gpu, sm_count) != (shipped.name, shipped.sm_count):
        raise GemmlabError(f"--split-k: the runs are of an {gpu}, the shipped table is the {shipped.name}'s; "
                           "write it elsewhere with --out")
    if not out:  # the shipped table is replaced only by runs of every precision it holds choices for
        held = json.loads(split_k.MEASURED.read_text()).get("choices", {}) if split_k.MEASURED.is_file() else {}
        missing = sorted(set(held) - {row[0] for row in rows})
        if missing:
            raise GemmlabError(f"--split-k: these runs hold no tc10 records of {', '.join(missing)}, whose measured "
                               f"choices the shipped table ({split_k.MEASURED}) holds and would lose; "
                               "name runs of every precision (gemmlab dispatch --help) or write this table elsewhere "
                               "with --out")
    table = split_k.measured_table(per_run, gpu, sm_count, sources=[Path(p).name for p in paths])
    target = checked or split_k.MEASURED
    try:
        Path(target).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        raise OutputPathError(f"--split-k: cannot write {target}: {exc.strerror}") from None
    kept = sum(len(v) for v in table["choices"].values())
    console.print(f"wrote {target}: {kept} problems where a measured tile and S beat the model's by more than "
                  f"{100 * split_k.MEASURED_MARGIN:.0f}%", highlight=False)
    return 0


HELD_OUT_WORST = 8  # the picks listed under the summary, by regret


def _held_out(precisions, out, console) -> int:
    """--held-out: kernel='auto' on each shape of this GPU's table (the H200's without a GPU, or on a GPU of its chip
    without a table of its own, whose rows auto reads there) from the other shapes alone, scored against the table's
    measurements there (gemmlab.dispatch_held_out); --out: the records."""
    import json

    from rich.table import Table

    from gemmlab import dispatch
    from gemmlab.device import gpu
    from gemmlab.dispatch_held_out import held_out, markdown, summary
    from gemmlab.provenance import git_sha

    target = output_path(out, "--out") if out else None  # checked before anything is computed or printed
    info = gpu() or dispatch.shipped_gpu()
    table = dispatch.load_table()
    near = dispatch.sibling(info, table)
    if info.name not in table and near is not None:
        console.print(f"{info.name} has no dispatch table of its own: the {near}'s, which kernel='auto' reads on it "
                      "(the same chip)", highlight=False)
        info = dispatch.shipped_gpu()
    if info.name not in table:
        raise GemmlabError(f"--held-out: no dispatch table for {info.name} (gemmlab dispatch --write adds bench "
                           "results to this machine's)")
    rows = held_out(table, info, precisions)
    if not rows:
        raise GemmlabError(f"--held-out: {info.name}'s table has no shape of {', '.join(precisions or ['any'])} "
                           "precision whose measured kernels auto may run")
    console.print(f"kernel='auto' on {info.name}'s dispatch table, each measured shape held out and predicted from "
                  "the others; regret: the pick's GPU time measured there over the fastest measured there (that auto "
                  "may run in place); error: the pick's prediction over its measurement", highlight=False)
    t = Table(header_style="bold")
    for col in ("precision", "shapes", "scored", "pick fastest", "regret geomean", "regret max (at)",
                "median |error|"):
        t.add_column(col, justify="left" if col == "precision" else "right")
    for precision, s in summary(rows).items():
        t.add_row(precision, str(s["shapes"]), str(s["scored"]), str(s["fastest"]),
                  f"{s['regret_geomean']:.3f}" if s["regret_geomean"] else "-",
                  f"{s['regret_max']:.2f} ({s['regret_max_at']})" if s["regret_max"] else "-",
                  f"{100 * (s['error_median'] - 1):.1f}%" if s["error_median"] else "-")
    console.print(t)
    worst = sorted((r for r in rows if r.regret and r.regret > 1.0), key=lambda r: -r.regret)[:HELD_OUT_WORST]
    if worst:
        w = Table(title="the picks farthest from the fastest measured", header_style="bold", title_justify="left")
        for col in ("precision", "shape", "pick", "regret", "error", "fastest there"):
            w.add_column(col, justify="right" if col in ("regret", "error") else "left")
        for r in worst:
            w.add_row(r.precision, "x".join(map(str, r.shape)), r.pick, f"{r.regret:.2f}",
                      f"{r.error:.2f}" if r.error else "-", r.best)
        console.print(w)
    if target:
        try:
            local = dispatch.local_path()
            env = {"gpu": info.name, "git_sha": git_sha(),
                   "table": f"data/{dispatch.SHIPPED.name}" + (f", then {local}" if local.exists() else ""),
                   "roofs": dispatch.model_roofs(info).describe(),
                   "command": "gemmlab dispatch --held-out" + "".join(f" --precision {p}" for p in precisions or ())}
            Path(target).write_text(json.dumps({"env": env, "summary": summary(rows),
                                                "records": [r.record() for r in rows]}, indent=1) + "\n")
            rendered = Path(target).with_suffix(".md")
            rendered.write_text(markdown(rows, env))
        except OSError as exc:
            raise OutputPathError(f"--held-out: cannot write {target}: {exc.strerror}") from None
        console.print(f"wrote {target} and {rendered}", highlight=False)
    return 0
