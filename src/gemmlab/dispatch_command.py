"""``gemmlab dispatch``: what kernel='auto' runs for a shape, precision and layout, the candidates ranked beside it;
with --build or --write, the dispatch table made from bench results instead, and with --split-k tc10's table of
measured tiles and splits. ``console`` and ``output`` (the
checked output path) are the command line's (gemmlab.cli)."""
from __future__ import annotations

from pathlib import Path

from gemmlab.errors import GemmlabError, OutputPathError


def cmd_dispatch(args, console, output) -> int:
    """What kernel='auto' runs for a shape, precision and layout on this GPU (or the H200's table without one): the
    kernel, why, its predicted time and the other candidates' (or, with --build and --write, the table itself)."""
    from gemmlab import dispatch
    from gemmlab.device import gpu
    from gemmlab.kernels.plan import COL, ROW, Layout
    from gemmlab.problem import PRECISIONS, Problem, require_fits

    if args.build or args.write:
        return _write_table(args.build or args.write, args.out, console, output, replace=bool(args.build))
    if args.split_k:
        return _write_split_k(args.split_k, args.out, console, output)
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
            except GemmlabError as exc:
                console.print(f"{head}: {exc}", highlight=False)
                continue
            copies = f"; {', '.join(choice.copies)} copied into row-major order first" if choice.copies else ""
            console.print(f"{head}: {choice.spec.name} ({choice.why}{copies})", highlight=False)
            for c in dispatch.rank(problem, layout, info):
                how = ("not for auto: " + c.refusal) if c.refusal else "reads it in place" if c.copies == () else \
                    f"copies {', '.join(c.copies)}" if c.copies else "reads no layout a copy makes of it"
                mark = "*" if c.spec is choice.spec else " "
                console.print(f"  {mark} {c.spec.name:34} {c.per_call_ms:9.4g} ms a call  {how}; "
                              f"{dispatch.explain(c)}", highlight=False, soft_wrap=True)
    return 0


def _write_table(paths, out, console, output, *, replace: bool) -> int:
    """--build (``replace``: the table of these results alone, the shipped one by default) or --write (these
    results over this machine's table, or the table at --out)."""
    from gemmlab import dispatch
    from gemmlab.results import load_results

    runs = [load_results(Path(p)) for p in paths]
    table = dispatch.table_from_runs(runs)
    if not any("ms" in row for precs in table.values() for shapes in precs.values() for rows in shapes.values()
               for row in rows):
        raise GemmlabError(f"no verified GPU records of gemmlab's kernels in {', '.join(paths)}")
    flag = "--out" if out else "--build" if replace else "--write"
    target = output(out, "--out") if out else dispatch.SHIPPED if replace else dispatch.local_path()
    written = dispatch.write_table(runs, target, replace=replace)
    if written is None:
        raise OutputPathError(f"{flag}: cannot write {target}")
    path, table = written
    shapes = sum(len(shapes) for precs in table.values() for shapes in precs.values())
    console.print(f"wrote {path}: {', '.join(table)}, {shapes} (precision, shape) entries", highlight=False)
    return 0


def split_k_rows(results: dict) -> list[tuple]:
    """(precision, (M, N, K), params, µs, gain) of each verified tc10 record of a bench run: the registered build
    (SPLITS = 0, the model's choice; gain None) and its --variant builds, their parameters the registered ones with
    the variant's label ("cuda/tc10_split_k_bf16[BM=64,BN=64,STAGES=8,SPLITS=2]") applied and their gain over the
    registered build in the same run (``variant_gain``)."""
    from gemmlab.kernels.registry import get_kernel

    rows = []
    for r in results.get("records", []):
        name = r.get("variant_of") or r.get("kernel", "")
        if not name.startswith("cuda/tc10_split_k_") or not r.get("verified") or not r.get("median_ms"):
            continue
        params = dict(get_kernel(name).params)
        if r.get("variant_of"):
            label = r["kernel"][len(name) + 1:-1]
            params.update((key, int(value)) for key, value in (kv.split("=") for kv in label.split(",")))
        rows.append((r["precision"], (r["m"], r["n"], r["k"]), params, 1e3 * r["median_ms"], r.get("variant_gain")))
    return rows


def _write_split_k(paths, out, console, output) -> int:
    """--split-k: tc10's measured choices (split_k.measured_table) from bench runs of its pinned builds on one GPU,
    written to the table shipped with gemmlab, or to --out."""
    import json

    from gemmlab.kernels.cuda.tc.model import split_k
    from gemmlab.results import load_results

    runs = [load_results(Path(p)) for p in paths]
    gpus = {(r["env"]["gpu"]["name"], r["env"]["gpu"]["sm_count"]) for r in runs if (r.get("env") or {}).get("gpu")}
    rows = [row for r in runs for row in split_k_rows(r)]
    if len(gpus) != 1 or not rows:
        raise GemmlabError(f"--split-k takes bench runs of cuda/tc10_split_k_* (its --variant builds beside it) on one "
                           f"GPU; {', '.join(paths)} hold {len(rows)} verified records of it from "
                           f"{len(gpus)} GPU(s)")
    (gpu, sm_count), = gpus
    table = split_k.measured_table(rows, gpu, sm_count, sources=[Path(p).name for p in paths])
    target = output(out, "--out") if out else split_k.MEASURED
    try:
        Path(target).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        raise OutputPathError(f"--split-k: cannot write {target}: {exc.strerror}") from None
    kept = sum(len(v) for v in table["choices"].values())
    console.print(f"wrote {target}: {kept} problems where a measured tile and S beat the model's by more than "
                  f"{100 * split_k.MEASURED_MARGIN:.0f}%", highlight=False)
    return 0
