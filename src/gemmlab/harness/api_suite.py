"""gemmlab bench --api --suite: the shape suite, gemmlab.matmul against torch over the shapes a model's layers meet.

Each record is one (op, precision, shape). Op "bmm" is ``gemmlab.call.batched_matmul(A, B)`` on a contiguous batch
of squares (one launch) against ``torch.bmm`` on the same tensors, BF16, batch 8 to 64 of 512 to 2048 (BMM_SIZES,
BMM_BATCHES); its records hold ``batch``, and its checks index the batch's rows stacked. Op "mm" is ``gemmlab.matmul(x, w.t())`` (B as the transpose of an N×K
weight, what nn.Linear computes) against torch's call on the same tensors (bench --api's peers: torch.matmul with
TF32 off for fp32 and on for tf32, torch.matmul for bf16 and fp16 (BF16 / FP16 C on both sides, torch's default),
torch._scaled_mm for fp8 and fp8_block), torch
writing C in the dtype gemmlab's result has. An op is one entry of suite_ops.OPS, a precision one of PRECISIONS: an op
says how to make its arguments, gemmlab's and torch's calls and the float64 reference; the runner does the rest.

Two times per side, both median CUDA-event times over the same tensors, gemmlab and torch alternating call by call,
the L2 evicted before every call:
- GPU time (timing.gpu_times): the GPU's work for the call, every kernel it launches counted; the host issues the
  call behind a spin kernel, so its host time is left out.
- eager time (timing.eager_times, bench --api's): from an idle GPU, host time included: what a caller waits for;
  with it, each side's host time in those samples (``eager_host_us``), the part of it the GPU waits on.
An op with a fused epilogue (linear_bias, linear_bias_gelu) times a third call in the same rotation, gemmlab's plain
GEMM of its x and w (``plain_gpu_us``): ``over_plain`` is what the epilogue costs, and its bar (OVER_PLAIN_BAR) reads
the geomean from M = OVER_PLAIN_M up, where the GEMM is long enough for the epilogue's share to be measured.
After every case is timed, one more call of each side under CUDA's profiler records the kernels it launched
(``kernels``, ``torch_kernels``: name, grid, block, µs; harness.launches): what cuBLAS ran at the shape against what
gemmlab ran (record_launches: the profiler, once started, slows every later call's host path).

Every result is checked against float64 (FP8: the product of the dequantized operands) before it is timed, torch's
too: gemmlab's first call (its plan made) and a second through the cached plan, the call that is timed, whose C's
memory is filled with NaN first (``poisoned_call``); a fused op's plain GEMM too, timed only where it passes. A peer
off the reference (torch's blockwise scaled mm where ceil(K/128) is not a multiple of 4) is marked
``peer_wrong`` and left out of the geomeans. The DRAM roof of a shape is its A, B and C bytes at the copy bandwidth
measured once per run; ``dram_fraction`` is that roof over gemmlab's GPU time.

The JSON is written after every record (a run cut short leaves its finished records, marked partial), and a run
of some precisions replaces those records in an existing file and keeps the others: a run per precision fills one
file.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gemmlab.errors import GemmlabError, ResultsFileError
from gemmlab.harness.api_bench import PRECISIONS
from gemmlab.harness.suite_ops import OPS, Case, check, checked_rows, error_line, peer_note, verify_note

LINEAR_M = tuple(2 ** i for i in range(14))  # 1 .. 8192: decode to prefill
LINEAR_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (1024, 8192))  # (N, K) of a 7-8B model's projections
SQUARES = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192)
LONG_K = ((256, 256, 16384), (512, 512, 16384), (1024, 1024, 16384), (256, 256, 65536))
BMM_SIZES = (512, 1024, 2048)  # M = N = K of each product
BMM_BATCHES = (8, 16, 32, 64)  # at 64 x 2048², BF16 A and B and an FP32 C take 2 GiB
BMM_PRECISIONS = ("bf16",)
LINEAR_OPS_M = (16, 128, 2048, 8192)  # linear_bias and linear_bias_gelu: at the layers' (N, K), decode to prefill
LINEAR_OPS_PRECISIONS = ("bf16",)
DECODE_M = 64  # rows up to this many are decode: held to the DRAM roof
# The regimes a summary reads the linear rows in, as issue 32 names them: decode up to REGIME_DECODE_M rows, mid sizes
# up to REGIME_MID_M, large past it; the squares and long K as their groups
REGIME_DECODE_M, REGIME_MID_M = 128, 2048
REGIMES = ("decode", "mid", "large", "square", "long_k", "bmm", "given")
# The bars each op and precision is held to, as the issues set them; a bar a row does not name does not apply to
# it. mm at BF16 and FP8 per tensor: BARS (and the decode rows at 75% of the DRAM roof); FP8 block-scaled its own
# geomean and minimum; TF32 and FP32 their own, with no DRAM bar; bmm and linear_bias_gelu a geomean each (and the
# fused ops OVER_PLAIN_BAR, below); linear_bias none.
BARS = {"gpu_geomean": 1.0, "gpu_min": 0.85, "eager_geomean": 0.95, "decode_dram": 0.75}
PRECISION_BARS = {"fp8_block": {**BARS, "gpu_geomean": 0.95, "gpu_min": 0.80},
                  "tf32": {"gpu_geomean": 0.95, "gpu_min": 0.75, "eager_geomean": 0.90},
                  "fp32": {"gpu_geomean": 0.90, "gpu_min": 0.60, "eager_geomean": 0.90}}
OP_BARS = {"bmm": {"gpu_geomean": 0.95}, "linear_bias_gelu": {"gpu_geomean": 1.0}, "linear_bias": {}}
# an op with a fused epilogue: its GPU time over gemmlab's plain GEMM's in the same run (``over_plain``), geomean
# over the rows of at least OVER_PLAIN_M, at most OVER_PLAIN_BAR (the epilogue within 3% of the GEMM it rides on)
OVER_PLAIN_M = 2048
OVER_PLAIN_BAR = 1.03
OPS_RUN = ("mm", "bmm", "linear_bias", "linear_bias_gelu")  # the ops a run makes records of
SUITE = "api_suite"  # the results file's "suite" field: what tells it apart


def grid() -> list[tuple[str, tuple[int, int, int]]]:
    """(group, (M, N, K)) of the suite: 56 linear, 9 square, 4 long-K shapes. 4096³ is both a linear shape and a
    square: timed twice in a run, its two records show the spread between timings of one shape."""
    return ([("linear", (m, n, k)) for n, k in LINEAR_NK for m in LINEAR_M]
            + [("square", (s, s, s)) for s in SQUARES] + [("long_k", s) for s in LONG_K])


def bmm_grid() -> list[tuple[int, int]]:
    """(size, batch) of the bmm records: every batch of every square."""
    return [(size, batch) for size in BMM_SIZES for batch in BMM_BATCHES]


def cases(precisions, shapes=None, ops=("mm",)) -> list[Case]:
    """The records a run makes, precision by precision: the grid, or ``shapes`` in its place (a grid shape in its
    grid groups, so that its record replaces the grid's in a file that holds it; any other in group "given"); bmm
    at its own grid (BF16), and not among given shapes (which are M×N×K, no batch)."""
    chosen = grid()
    if shapes:
        given = [tuple(s) for s in shapes]
        chosen = [(g, shape) for g, shape in chosen if shape in given] + \
                 [("given", shape) for shape in dict.fromkeys(given) if shape not in {x for _, x in chosen}]
    out = []
    for p in precisions:
        for op in ops:
            if op == "mm":
                out += [Case(op, p, g, *shape) for g, shape in chosen]
            elif op == "bmm" and not shapes and p in BMM_PRECISIONS:
                out += [Case(op, p, "bmm", size, size, size, batch) for size, batch in bmm_grid()]
            elif op.startswith("linear") and not shapes and p in LINEAR_OPS_PRECISIONS:
                out += [Case(op, p, "linear", m, n, k) for n, k in LINEAR_NK for m in LINEAR_OPS_M]
    return out


def key(rec: dict) -> tuple:
    """What a record is of: a later run's record with the same key replaces it."""
    return tuple(rec.get(f) for f in ("op", "precision", "group", "m", "n", "k", "layout", "batch"))


# -- the summary the report and the run's last lines show ---------------------------------------------------------
def geomean(xs) -> float | None:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def bars_for(op: str, precision: str) -> dict:
    """The bars of ``op`` at ``precision`` (name -> the least ratio or DRAM fraction that meets it)."""
    if op != "mm":
        return OP_BARS.get(op, {})
    return PRECISION_BARS.get(precision, BARS)


def shape_name(r: dict) -> str:
    """A record's shape as the summary names it: MxNxK, a batch's count first."""
    return (f"{r['batch']} × " if r.get("batch") else "") + f"{r['m']}x{r['n']}x{r['k']}"


def regime(r: dict) -> str:
    """The regime of a record's shape: a linear row's by its M ("decode" to REGIME_DECODE_M rows, "mid" to
    REGIME_MID_M, "large" past it), any other's its group ("square", "long_k", "bmm", "given")."""
    if r.get("group") != "linear":
        return r.get("group") or "given"
    return "decode" if r["m"] <= REGIME_DECODE_M else "mid" if r["m"] <= REGIME_MID_M else "large"


def _ratios(rows: list[dict]) -> dict:
    """Over ``rows`` (timed, each with a GPU ratio): their count, GPU-time geomean and lowest (where), eager geomean."""
    low = min(rows, key=lambda r: r["gpu_ratio"], default=None)
    return {"n": len(rows), "gpu_geomean": geomean(r["gpu_ratio"] for r in rows), "gpu_min": low and low["gpu_ratio"],
            "gpu_min_at": low and shape_name(low),
            "eager_geomean": geomean(r["eager_ratio"] for r in rows if r.get("eager_ratio"))}


def summarize(records: list[dict]) -> dict:
    """Per (op, precision): the geomean and minimum GPU-time ratio and the eager geomean, over the records with a
    correct peer (``peer_ok``), over all timed ones (``all``) and over each regime's with a correct peer
    (``regimes``), the decode rows' lowest DRAM fraction, the counts left out (peer wrong, no peer, failed) and each
    bar met or not (on ``peer_ok``)."""
    out = {}
    for op, precision in dict.fromkeys((r["op"], r["precision"]) for r in records):
        mine = [r for r in records if r["op"] == op and r["precision"] == precision]
        timed = [r for r in mine if r.get("verified") and r.get("gpu_ratio")]
        fair = [r for r in timed if not r.get("peer_wrong")]
        entry = {"records": len(mine), "failed": sum(not r.get("verified") for r in mine),
                 "no_peer": sum(bool(r.get("verified")) and not r.get("gpu_ratio") for r in mine),
                 "peer_wrong": len(timed) - len(fair)}
        entry["peer_ok"], entry["all"] = _ratios(fair), _ratios(timed)
        by_regime = {}  # the same over each regime's records with a correct peer, in REGIMES' order
        for r in fair:
            by_regime.setdefault(regime(r), []).append(r)
        entry["regimes"] = {name: _ratios(by_regime[name]) for name in REGIMES if name in by_regime}
        hosted = [r for r in timed if r.get("eager_host_us") and r.get("torch_eager_host_us")]
        entry["eager_host_us"] = {"gemmlab": statistics.median(r["eager_host_us"] for r in hosted),
                                  "torch": statistics.median(r["torch_eager_host_us"] for r in hosted)} \
            if hosted else None  # medians over the records: a call's host time from an idle GPU, each side's
        decode = [r for r in mine if r.get("group") == "linear" and r["m"] <= DECODE_M and r.get("dram_fraction")]
        low = min(decode, key=lambda r: r["dram_fraction"], default=None)
        entry["decode_dram_min"] = low and low["dram_fraction"]
        entry["decode_dram_min_at"] = low and f"{low['m']}x{low['n']}x{low['k']}"
        s = entry["peer_ok"]
        reached = {"gpu_geomean": s["gpu_geomean"], "gpu_min": None if entry["failed"] else s["gpu_min"],
                   "eager_geomean": s["eager_geomean"], "decode_dram": entry["decode_dram_min"]}
        entry["bars"] = {name: reached[name] is not None and reached[name] >= bar
                         for name, bar in bars_for(op, precision).items()}
        fused = [r for r in timed if r.get("over_plain")]
        if fused:
            large = [r for r in fused if r["m"] >= OVER_PLAIN_M]
            high = max(large, key=lambda r: r["over_plain"], default=None)
            entry["over_plain"] = {"n": len(large), "geomean": geomean(r["over_plain"] for r in large),
                                   "max": high and high["over_plain"],
                                   "max_at": high and f"{high['m']}x{high['n']}x{high['k']}",
                                   "all_geomean": geomean(r["over_plain"] for r in fused),
                                   # the peer's own epilogue over its plain GEMM, the same rows: what it costs cuBLASLt
                                   "torch_geomean": geomean(r["torch_over_plain"] for r in large
                                                            if r.get("torch_over_plain"))}
            g = entry["over_plain"]["geomean"]
            entry["bars"]["over_plain"] = g is not None and g <= OVER_PLAIN_BAR
        out[f"{op} {precision}"] = entry
    return out


# -- the results file ---------------------------------------------------------------------------------------------
class SuiteFile:
    """The run's JSON, written after every record. An existing suite file is read first: this run's records
    replace those with the same key, the others stay, with the runs that made them (``env.runs``). ``partial`` is
    true while any run whose records the file holds has not finished."""

    def __init__(self, path: Path | None, env: dict, run: dict):
        self.path = path
        self.results = {"suite": SUITE, "partial": True, "env": env, "records": [], "notes": []}
        earlier = load(path) if path is not None and path.exists() else {"records": [], "env": {}}
        there, here = ((e.get("gpu") or {}).get("name") for e in (earlier["env"], env))
        if earlier["records"] and there != here:  # one GPU's records a file: a summary over two would mean nothing
            raise GemmlabError(f"--json: {path} holds a suite run on {there or 'no GPU'}, this run is on "
                               f"{here or 'no GPU'}; write it to another file")
        run["gpu"] = here
        self.results["records"] = earlier["records"]
        self.results["env"]["runs"] = earlier["env"].get("runs", [])
        self.run = run
        self.results["env"]["runs"].append(run)
        self.fresh: set = set()

    def add(self, rec: dict) -> None:
        rec["run"] = self.run["started"]
        records = self.results["records"]
        k = key(rec)
        self.fresh.add(k)
        records[:] = [r for r in records if key(r) != k] + [rec]
        self.write()

    def finish(self) -> None:
        self.run["finished"] = True
        self.write()

    def write(self) -> None:
        used = {r.get("run") for r in self.results["records"]}
        runs = self.results["env"]["runs"] = [r for r in self.results["env"]["runs"]
                                              if r["started"] in used or r is self.run]
        self.results["partial"] = not all(r.get("finished") for r in runs)
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.results, indent=1, default=float))
        os.replace(tmp, self.path)  # whole or not at all: a kill mid-write leaves the previous record's file


def load(path) -> dict:
    """A suite results JSON; anything else is refused (a run must not overwrite another kind of results)."""
    from gemmlab.results import load as load_any

    kind, results = load_any(path)
    if kind != "suite":
        raise ResultsFileError(f"{path}: holds {kind} results, not those of gemmlab bench --api --suite")
    return results


# -- the run ------------------------------------------------------------------------------------------------------
@dataclass
class SuiteOptions:
    precisions: tuple = PRECISIONS
    shapes: tuple | None = None  # None: the grid
    ops: tuple = OPS_RUN
    seed: int = 2026
    rounds: int = 200  # timed calls per side and method, cut back past max_seconds, never below min_rounds
    min_rounds: int = 20
    max_seconds: float = 0.25
    json_path: Path | None = None
    command: str = "gemmlab bench --api --suite"


def main(args, json_path: Path | None, command: str, say) -> int:
    """``gemmlab bench --api --suite``: 0 when every record verified (or nothing could be timed here), else 1. An
    existing --json file that is not a suite's is refused before anything runs."""
    unknown = [op for op in args.op or () if op not in OPS_RUN]
    if unknown:
        raise GemmlabError(f"--op {unknown[0]}: the suite's ops are {', '.join(OPS_RUN)}")
    if json_path is not None and json_path.exists():
        load(json_path)
    opts = SuiteOptions(precisions=tuple(args.precision or PRECISIONS), shapes=tuple(args.shape or ()) or None,
                        ops=tuple(op for op in OPS_RUN if op in (args.op or OPS_RUN)), seed=args.seed,
                        json_path=json_path, command=command)
    if not cases(opts.precisions, opts.shapes, opts.ops):
        raise GemmlabError(f"--op {', '.join(opts.ops)}: no case at these precisions and shapes (bmm runs "
                           f"{', '.join(BMM_PRECISIONS)} and the linear ops {', '.join(LINEAR_OPS_PRECISIONS)} on "
                           "their own grids, not at given shapes)")
    results = run_suite(opts, say)
    if results is None:
        return 0
    if json_path is not None:
        say(f"wrote {json_path} ({len(results['records'])} records; gemmlab report {json_path} --out DIR renders it)")
    this_run = results["env"]["runs"][-1]["started"]
    return 0 if all(r["verified"] for r in results["records"] if r.get("run") == this_run) else 1


def run_suite(opts: SuiteOptions, say=print) -> dict | None:
    """Time every case on the GPU, writing each record as it completes; without a usable GPU and CUDA torch, say so
    in the first line and list the cases with the kernel ``auto`` would choose on an H200 (returns None)."""
    from gemmlab import device

    info, why = device.probe()
    torch_why = _torch_cuda_missing()
    if info is None or torch_why:
        say(f"gemmlab bench --api --suite: nothing timed: it needs a CUDA GPU and torch with CUDA "
            f"({why if info is None else torch_why})" + (f"; {opts.json_path} not written" if opts.json_path else ""))
        say(f"the {len(cases(opts.precisions, opts.shapes, opts.ops))} cases, and the kernel that kernel='auto' would "
            "run for each on an NVIDIA H200 (the shipped dispatch table):")
        for line in describe(opts):
            say(line)
        return None
    return _run_gpu(opts, info, say)


def _torch_cuda_missing() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else f"torch {torch.__version__} has no CUDA"


def describe(opts: SuiteOptions) -> list[str]:
    """Each case and the kernel dispatch chooses for it on the shipped table's GPU, with the dispatch's reason."""
    from gemmlab import dispatch
    from gemmlab.kernels.plan import ROW, Layout
    from gemmlab.problem import BatchedProblem, Problem

    gpu, lines = dispatch.shipped_gpu(), []
    for i, c in enumerate(cases(opts.precisions, opts.shapes, opts.ops), 1):
        head = f"{i:>3} {c.precision:>9} {c.op} {c.group:7} {f'{c.batch}x' if c.batch > 1 else ''}{c.m}x{c.n}x{c.k}"
        problem = (BatchedProblem(c.m, c.n, c.k, c.precision, c.batch, c.m * c.k, c.k * c.n) if c.batch > 1
                   else Problem(c.m, c.n, c.k, c.precision))
        try:
            choice = dispatch.choose(problem, Layout(ROW, OPS[c.op].b_layout), gpu, OPS[c.op].epilogue)
        except GemmlabError as exc:
            lines.append(f"{head}: {exc}")
            continue
        copies = f"; {', '.join(choice.copies)} copied first" if choice.copies else ""
        lines.append(f"{head}: {choice.spec.name} ({choice.why}{copies})")
    return lines


def _run_gpu(opts: SuiteOptions, info, say) -> dict:
    import torch

    from gemmlab.harness import env, launches
    from gemmlab.harness.roof_probes import copy_bandwidth

    todo = cases(opts.precisions, opts.shapes, opts.ops)
    copy = copy_bandwidth()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    run = {"started": started, "command": opts.command, "git_sha": env.git_sha(), "precisions": list(opts.precisions),
           "cases": len(todo), "copy_gbs": copy["dram_gbs"], "finished": False}
    out = SuiteFile(opts.json_path, {**env.collect(info, "gpu"), "copy": copy}, run)
    say(f"gemmlab bench --api --suite on {info.name}: {len(todo)} cases; copy bandwidth {copy['dram_gbs']:.0f} GB/s")
    scratch = torch.empty(2 * info.l2_bytes // 4, device="cuda")
    ctx = {"clean": lambda: scratch.sum(), "copy_gbs": copy["dram_gbs"], "launches": launches.kernels}
    try:
        results = run_cases(todo, lambda case: measure(torch, case, opts, ctx), out, say, lambda: _release(torch))
        say("the kernels each side launched: one call of each under CUDA's profiler, every case timed first")
        record_launches(torch, todo, out, opts, ctx, lambda: _release(torch))
        return results
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def run_cases(todo: list[Case], one: Callable, out: SuiteFile, say, between=lambda: None) -> dict:
    """Each case's record written as it completes, a progress line for each, the summary of this run's records
    last; an interruption leaves the file with the records finished, marked partial."""
    for i, case in enumerate(todo, 1):
        rec = one(case)
        out.add(rec)
        say(f"{i:>3}/{len(todo)} {line(rec)}")
        between()
    out.finish()
    for name, s in summarize([r for r in out.results["records"] if key(r) in out.fresh]).items():
        say(summary_line(name, s))
    return out.results


def _release(torch) -> None:
    """The case's memory back to the device: torch's cache and CuPy's pool (FP8 quantization allocates there)."""
    import cupy

    torch.cuda.empty_cache()
    cupy.get_default_memory_pool().free_all_blocks()


def _identity(case: Case) -> dict:
    """The fields of a case's record that say what it is of (``key``'s)."""
    rec = {"op": case.op, "precision": case.precision, "group": case.group, "m": case.m, "n": case.n, "k": case.k,
           "layout": OPS[case.op].layout}
    if case.batch > 1:
        rec["batch"] = case.batch
    return rec


def measure(torch, case: Case, opts: SuiteOptions, ctx: dict) -> dict:
    """One record: plan, verify both sides, then the GPU and eager times of both."""
    import gemmlab
    from gemmlab.harness.reference import tolerance_for
    from gemmlab.harness.timing import eager_times, gpu_times
    from gemmlab.problem import Problem, get_precision

    op = OPS[case.op]
    rec = {**_identity(case), "kernel": None, "verified": False}
    torch.backends.cuda.matmul.allow_tf32 = get_precision(case.precision).tf32_multiply
    try:
        args = op.inputs(torch, case, opts.seed, ctx.get("device", "cuda"))
        chosen = op.plan(gemmlab, case.precision, args)
        rec.update(kernel=chosen.plan.spec.name, why=chosen.why,
                   copies=[x for x, c in (("A", chosen.copy_a), ("B", chosen.copy_b)) if c])
        ours = op.ours(gemmlab, case.precision)
        c = ours(*args)
    except Exception as exc:  # a refusal, or a plan that fails to build: recorded, and the run goes on
        rec["error"] = error_line(exc)
        return rec
    tol = tolerance_for(Problem(case.m, case.n, case.k, case.precision))
    rows = checked_rows(case.rows, case.n)
    ref = op.reference(torch, case.precision, args, None if rows is None else torch.tensor(rows, device=c.device))
    # the first call (its plan made) and a second through the cached plan, the path that is timed, its C's memory
    # poisoned first: an element it leaves unwritten reads NaN
    checks = [check(torch, op.matrix(x), ref, rows, tol) for x in (c, poisoned_call(torch, ours, args, c))]
    rec["rel_err"], rec["verified"] = max(e for e, _ in checks), all(ok for _, ok in checks)
    rec.update(verify=verify_note(case.rows, rows), tolerance=tol, out_dtype=str(c.dtype).removeprefix("torch."))
    theirs = op.theirs(torch, case.precision, c.dtype)  # C in gemmlab's dtype: like with like
    try:
        t = theirs(*args)
        rec["torch_out_dtype"] = str(t.dtype).removeprefix("torch.")
        rec["torch_rel_err"], rec["torch_verified"] = check(torch, op.matrix(t), ref, rows, tol)
        rec["peer_wrong"] = not rec["torch_verified"]
        if rec["peer_wrong"]:
            rec["peer_note"] = peer_note(case.precision, case.k) or "torch's result is off the float64 reference"
        del t
    except (RuntimeError, TypeError) as exc:  # no such call or argument in this torch, or not at this shape
        rec["torch_error"] = error_line(exc)
        theirs = None
    peer_fused = None
    if op.peer_epilogue is not None and theirs is not None:  # torch's own fused call, checked before it is timed
        peer_fused, peer_plain = op.peer_epilogue(torch)
        try:
            rec["torch_fused_rel_err"], ok = check(torch, op.matrix(peer_fused(*args)), ref, rows, tol)
        except (RuntimeError, TypeError) as exc:
            rec["torch_fused_error"], ok = error_line(exc), False
        peer_fused = peer_fused if ok else None
    del c, ref
    nbytes = op.bytes(case, Problem(case.m, case.n, case.k, case.precision).prec.input_bytes,
                      torch.finfo(getattr(torch, rec["out_dtype"])).bits // 8)
    rec.update(bytes=nbytes, dram_roof_us=nbytes / (ctx["copy_gbs"] * 1e3))
    if not rec["verified"]:
        return rec
    calls, sets = [ours] if theirs is None else [ours, theirs], [args]
    if op.plain is not None:  # gemmlab's GEMM without the epilogue, in the same interleaved run, checked first
        mm, plain_args = OPS["mm"], op.plain(args)
        rec["plain_kernel"] = mm.plan(gemmlab, case.precision, plain_args).plan.spec.name
        plain_call = mm.ours(gemmlab, case.precision)
        plain = lambda *a: plain_call(*op.plain(a))  # noqa: E731
        plain_ref = mm.reference(torch, case.precision, plain_args,
                                 None if rows is None else torch.tensor(rows, device=args[0].device))
        rec["plain_rel_err"], rec["plain_verified"] = check(torch, mm.matrix(plain(*args)), plain_ref, rows, tol)
        del plain_ref
        if rec["plain_verified"]:
            plain_at = len(calls)
            calls.append(plain)
    if peer_fused is not None:
        fused_at = len(calls)
        calls += [peer_fused, peer_plain]
    timing = (opts.rounds, opts.max_seconds, opts.min_rounds, ctx["clean"])
    g = gpu_times(torch, calls, sets, *timing)
    # torch's own fused call and its plain GEMM are GPU-timed only: what the epilogue costs the peer's kernels
    e = eager_times(torch, calls if peer_fused is None else calls[:fused_at], sets, *timing)
    eager = e.median_ms
    flops = case.flops()
    rec.update(gpu_us=1e3 * g.median_ms[0], eager_us=1e3 * eager[0], gpu_calls=g.calls, eager_calls=e.rounds,
               eager_host_us=e.host_us[0],
               gpu_method=f"events around the call after an L2 flush and a {g.head_start_us:.0f} µs spin",
               gpu_late=g.late[0], tflops=flops / (g.median_ms[0] * 1e9))
    rec["dram_fraction"] = rec["dram_roof_us"] / rec["gpu_us"]
    if theirs is not None:
        rec.update(torch_gpu_us=1e3 * g.median_ms[1], torch_eager_us=1e3 * eager[1], torch_gpu_late=g.late[1],
                   torch_eager_host_us=e.host_us[1],
                   torch_tflops=flops / (g.median_ms[1] * 1e9))
        rec.update(gpu_ratio=rec["torch_gpu_us"] / rec["gpu_us"], eager_ratio=rec["torch_eager_us"] / rec["eager_us"],
                   torch_dram_fraction=rec["dram_roof_us"] / rec["torch_gpu_us"])
    if op.plain is not None and rec["plain_verified"]:
        rec.update(plain_gpu_us=1e3 * g.median_ms[plain_at], plain_eager_us=1e3 * eager[plain_at])
        rec["over_plain"] = rec["gpu_us"] / rec["plain_gpu_us"]
    if peer_fused is not None:
        rec.update(torch_fused_gpu_us=1e3 * g.median_ms[fused_at], torch_plain_gpu_us=1e3 * g.median_ms[fused_at + 1])
        rec["torch_over_plain"] = rec["torch_fused_gpu_us"] / rec["torch_plain_gpu_us"]
    return rec


def record_launches(torch, todo: list[Case], out: SuiteFile, opts: SuiteOptions, ctx: dict,
                    between=lambda: None) -> None:
    """The kernels each side's call launches, into this run's verified records (``kernels``, ``torch_kernels``;
    ``kernels_error`` where the profiler cannot run), from one call of each side under ``ctx["launches"]`` (CUDA's
    profiler), on the case's operands made again, each after the L2 flush (``ctx["clean"]``) as the timed calls.
    Only after every case is timed: CUDA's profiler, once started, stays attached to the process and slows every
    later call's host path (torch's more than gemmlab's), which an eager time would count."""
    import gemmlab
    from gemmlab.problem import get_precision

    mine = {key(r): r for r in out.results["records"] if key(r) in out.fresh}
    for case in todo:
        op = OPS[case.op]
        rec = mine.get(key(_identity(case)))
        if rec is None or not rec.get("verified"):
            continue
        torch.backends.cuda.matmul.allow_tf32 = get_precision(case.precision).tf32_multiply
        try:
            args = op.inputs(torch, case, opts.seed, ctx.get("device", "cuda"))
            rec["kernels"] = ctx["launches"](torch, op.ours(gemmlab, case.precision), args, ctx["clean"])
            if "torch_gpu_us" in rec:
                theirs = op.theirs(torch, case.precision, getattr(torch, rec["out_dtype"]))
                rec["torch_kernels"] = ctx["launches"](torch, theirs, args, ctx["clean"])
        except (RuntimeError, OSError, ValueError) as exc:  # a profiler this torch or driver cannot run
            rec["kernels_error"] = error_line(exc)
        args = None
        between()
    out.write()


POISON_BLOCKS = 3  # C's, and one each for a copy of A and of B the call may take first where either is C's size


def poisoned_call(torch, call, args, like):
    """``call(*args)`` with the memory its C takes from torch's caching allocator filled with 0xFF bytes (NaN in
    FP32, BF16 and FP16) just before: POISON_BLOCKS blocks of ``like``'s bytes, on the same stream, freed and so
    handed out again for the next requests of that size (a copy of an operand of C's size, made before C, takes one
    of them, and C another)."""
    poison = [torch.full((like.untyped_storage().nbytes(),), 0xFF, dtype=torch.uint8, device=like.device)
              for _ in range(POISON_BLOCKS)]
    del poison
    return call(*args)


def line(r: dict) -> str:
    """The progress line of one record."""
    shape = f"{r['batch']}x" if r.get("batch") else ""
    head = f"{r['precision']:>9} {r['op']} {shape}{r['m']}x{r['n']}x{r['k']:<6} {str(r['kernel']):32}"
    if r.get("error"):
        return f"{head} ERROR {r['error']}"
    if not r["verified"]:
        return f"{head} FAILED verification: rel err {r['rel_err']:.2e}"
    tail = f" gpu {r['gpu_us']:9.1f} µs  eager {r['eager_us']:9.1f} µs  DRAM {100 * r['dram_fraction']:5.1f}%"
    if r.get("gpu_ratio"):
        tail += f"  ×{r['gpu_ratio']:.3f} gpu ×{r['eager_ratio']:.3f} eager"
        if r.get("peer_wrong"):
            tail += " (torch wrong)"
    else:
        tail += f"  torch: {r.get('torch_error')}"
    if r.get("over_plain"):
        tail += f"  plain {r['plain_gpu_us']:.1f} µs (fused ×{r['over_plain']:.3f})"
    if r.get("torch_over_plain"):
        tail += f"  torch fused ×{r['torch_over_plain']:.3f} its plain"
    if r.get("gpu_late") or r.get("torch_gpu_late"):
        tail += f"  host-bound samples {r.get('gpu_late', 0)}/{r.get('torch_gpu_late', 0)}"
    return head + tail


def summary_line(name: str, s: dict) -> str:
    def fmt(x, spec=".3f"):
        return "—" if x is None else format(x, spec)

    p, a = s["peer_ok"], s["all"]
    out = (f"{name}: gpu geomean ×{fmt(p['gpu_geomean'])}, min ×{fmt(p['gpu_min'])} at {p['gpu_min_at']}, "
           f"eager geomean ×{fmt(p['eager_geomean'])} over {p['n']} records")
    if s["peer_wrong"]:
        out += (f" (with the {s['peer_wrong']} whose peer is wrong: ×{fmt(a['gpu_geomean'])}, "
                f"min ×{fmt(a['gpu_min'])})")
    if len(s.get("regimes") or ()) > 1:
        out += "; by regime " + ", ".join(f"{name} ×{fmt(g['gpu_geomean'])} ({g['n']})"
                                          for name, g in s["regimes"].items())
    if s.get("eager_host_us"):
        out += (f"; host time from an idle GPU, median {s['eager_host_us']['gemmlab']:.1f} µs "
                f"(torch {s['eager_host_us']['torch']:.1f})")
    if s["decode_dram_min"] is not None:
        out += f"; decode DRAM roof min {100 * s['decode_dram_min']:.0f}% at {s['decode_dram_min_at']}"
    if s.get("over_plain"):
        o = s["over_plain"]
        out += (f"; over gemmlab's plain GEMM at M ≥ {OVER_PLAIN_M}: geomean ×{fmt(o['geomean'])}, "
                f"max ×{fmt(o['max'])} at {o['max_at']}")
        if o.get("torch_geomean"):
            out += f" (torch's own fused call over torch.mm: ×{fmt(o['torch_geomean'])})"
    if s["failed"] or s["no_peer"]:
        out += f"; {s['failed']} failed, {s['no_peer']} without a peer"
    return out
