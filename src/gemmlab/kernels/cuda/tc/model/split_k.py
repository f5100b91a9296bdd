"""Split-K (tc10) in Python: the tile and the number of splits S of K that a problem runs with, and each split's
k-tiles (the model of split_begin in tc10_split_k.cu).

A launch is tiles x S CTAs; each runs ceil(KT / S) k-tiles of its tile at most, then (S > 1) writes its FP32
partial tile, and the last of a tile's S CTAs to arrive reads all S partials back and stores C. The choice weighs,
in SM clocks: the waves of CTAs over the SMs, each CTA's k-tiles at the slower of its tensor-core rate and the
bytes it reads from L2, a CTA's start (the ring's first copies, no k-tile to hide them under), and the reduction
that one CTA does alone: its partial written, S partials read. More splits fill more SMs and shorten each CTA's
k-range but lengthen the reduction, and smaller tiles make the partials cheaper but read the operands more often;
each split keeps at least MIN_SPLIT_KTILES k-tiles, the depth of tc3's and tc4's rings, so that the producer's
copies run ahead of the wgmma (a deeper ring only serves a longer split).

The FP32 ladder's split-K level (sgemm/v11_split_k.py) makes the same choice over its own tiles with an ``Engine`` of
its own: the CUDA cores' FFMA rate, its k-tile, its splits' least k-tiles, the CTAs an SM holds at once, the warps an
SM needs resident before its loop runs at that rate (fewer leave the loads' latencies showing) and three waves of
CTAs at most; tc10's is ``wgmma(precision)``, the default of every function here, one CTA an SM whose producer warp
hides the copies.

The model misranks some problems (docs/tensor_cores/tc10.md, "The choice measured"): where a sweep of tc10's pinned
builds on a GPU (bench --variant over every tile and S, B as w.t()) found another tile and S faster than the model's
choice by more than the spread of one timing (MEASURED_MARGIN), that choice is kept in a table (``measured_table``;
the H200's ships as data/split_k-h200.json, ``gemmlab dispatch --split-k``) and ``measured`` returns it for that
exact problem on that GPU or one of its chip, whatever the call's layout, C's type or epilogue; every other problem
takes the model's. A table measured on another GPU of the chip ships beside it (data/split_k-h100.json, the H100
SXM's): on that GPU its choices come first, and the chip's table answers for the problems it holds none for.
"""
from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Callable

from gemmlab.kernels.cuda.tc.model.tiles import bk
from gemmlab.kernels.cuda.tc.model.timeline import TENSOR_FMA_PER_SM_CLOCK
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.spec import Traffic
from gemmlab.problem import get_precision

# (BM, BN, STAGES) of each build, the ring as deep as fits in about 200 KB of shared memory (stages of
# (BM + BN) x 128 bytes); fp8_block takes the tiles whose BN divides 128 (one B scale a k-tile). These are the
# model's; MEASURED_TILES are built and run where a measured table takes them, never by the model: 128x64 (two
# consumer warpgroups of m64n64), which the model cannot tell from 64x128 where N is a multiple of 128 (the same
# bytes and multiply-adds a k-tile) and prefers for its fewer tiles where N is not, where no sweep has timed it; and
# 128x256 (two of m64n256, a ring of 4), which reads 3/4 of 128x128's bytes from L2 a multiply-add, where the model's
# one L2 rate a clock cannot say whether that or its partials, twice as large, weigh more.
TILES = ((64, 64, 8), (64, 128, 8), (128, 128, 6))
MEASURED_TILES = ((128, 64, 8), (128, 256, 4))
SM_BYTES_PER_CLOCK = 64  # assumed: what one SM reads from L2 per clock, the operands' tiles and the partials alike
CTA_START_CLOCKS = 2000  # assumed: a CTA's ring set-up and its first k-tile's copies, about 1 µs, not overlapped
MIN_SPLIT_KTILES = 4  # k-tiles a split at least: the pipeline depth that covers a TMA copy's latency
MAX_WAVES = 2  # S is capped where the tiles x S CTAs would take more waves than this: the partials grow with S
CLUSTER_MAX = 8  # the portable cluster size: S up to this adds its partials across a cluster's shared memory
DATA = files("gemmlab") / "data"
MEASURED = DATA / "split_k-h200.json"
MEASURED_MARGIN = 0.05  # a measured choice replaces the model's where faster by more than this (one timing's spread)


@dataclass(frozen=True)
class Engine:
    """What the model needs of a mainloop: a k-tile's K, an operand element's bytes, the multiply-adds an SM retires a
    clock, C's element bytes, the (BM, BN, STAGES) builds, a split's least k-tiles, how many CTAs of a BM x BN tile an
    SM holds at once (which then share its multiply-adds), the share of the SM's rate that tile's loop reaches, and
    (``hiding_warps`` > 0) the warps of a CTA and how many an SM needs resident to reach that rate: with fewer, the
    loop's load latencies show and the SM runs at resident / hiding_warps of it."""

    k_tile: int
    operand_bytes: int
    fma_per_clock: float
    output_bytes: int
    tiles: tuple[tuple[int, int, int], ...]
    min_split_ktiles: int = MIN_SPLIT_KTILES
    per_sm: Callable[[int, int], int] = field(default=lambda bm, bn: 1)
    share: Callable[[int, int], float] = field(default=lambda bm, bn: 1.0)
    warps: Callable[[int, int], int] = field(default=lambda bm, bn: 1)
    hiding_warps: int = 0
    max_waves: int = MAX_WAVES


def wgmma(precision: str) -> Engine:
    """tc10's engine: the tensor cores at ``precision``, one CTA an SM."""
    prec = get_precision(precision)
    return Engine(bk(precision), prec.input_bytes, TENSOR_FMA_PER_SM_CLOCK[precision], prec.output_bytes,
                  tiles_for(precision))


def tiles_for(precision: str, measured: bool = False) -> tuple[tuple[int, int, int], ...]:
    """The (BM, BN, STAGES) tiles the model chooses among for ``precision`` (``measured``: every build, those a
    measured table alone takes too): fp8_block's only where a tile's columns sit in one 128-wide block of B's
    scales."""
    tiles = TILES + MEASURED_TILES if measured else TILES
    if get_precision(precision).block_scaled:
        return tuple(t for t in tiles if 128 % t[1] == 0)
    return tiles


def split_begin(s: int, splits: int, kt: int) -> int:
    """The first k-tile of split s of ``splits`` over ``kt`` k-tiles (split s runs [split_begin(s), split_begin(s+1)):
    kt // splits k-tiles or one more, none empty where splits <= kt)."""
    return s * kt // splits


@dataclass(frozen=True)
class SplitPlan:
    """How tc10 runs one problem: the tile, its ring, S splits of the KT k-tiles, and the model's clocks."""

    bm: int
    bn: int
    stages: int
    splits: int
    tiles: int
    kt: int
    clocks: float

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.tiles, self.splits, 1

    @property
    def ctas(self) -> int:
        return self.tiles * self.splits

    @property
    def workspace_bytes(self) -> int:
        """The partials (S FP32 tiles a tile); none without a split."""
        return 4 * self.bm * self.bn * self.ctas if self.splits > 1 else 0

    def ranges(self) -> list[tuple[int, int]]:
        """Each split's k-tiles [begin, end), in split order: the order the reduction adds their partials in."""
        return [(split_begin(s, self.splits, self.kt), split_begin(s + 1, self.splits, self.kt))
                for s in range(self.splits)]


def with_partials(t: Traffic, s: SplitPlan, sm_count: int, cluster: bool = False, spread: bool = False) -> Traffic:
    """The traffic ``t`` of the plan's tile plus each partial written once and read once (S > 1; none of it in L2 or
    DRAM where ``cluster`` adds them in shared memory; with ``spread``, also each tile's sums written by its splits
    and read back by the last); the walk's tiles are all split along K over the grid's CTAs (a wave of them, as
    stream-K's split tail), so the busiest SM holds about 1/S of a tile's arithmetic."""
    ws = s.workspace_bytes
    if not ws:
        return t
    if spread:
        ws += 4 * s.bm * s.bn * s.tiles
    walk = t.walk and dataclasses.replace(t.walk, split_tail=s.tiles, wave=min(s.ctas, sm_count))
    if cluster:  # the partials never leave the cluster's shared memory
        return dataclasses.replace(t, walk=walk, basis=f"{t.basis}, {s.splits} splits of K a tile added across a "
                                                       "cluster's shared memory")
    return dataclasses.replace(t, global_read=t.global_read + ws, global_write=t.global_write + ws, walk=walk,
                               l2_read=(t.l2_read or t.global_read) + ws,
                               l2_write=(t.l2_write or t.global_write) + ws,
                               basis=f"{t.basis}, plus {s.ctas} partials of {s.bm}x{s.bn} written and read back "
                                     f"({s.splits} splits of K a tile{', each adding a share' if spread else ''})")


def spreads(s: SplitPlan, sk_spread: int, sm_count: int) -> bool:
    """Whether tc10's S splits of a tile each add a share of it over the partials (SK_SPREAD=1): S > 1 and the grid
    of tiles x S CTAs no more than the SMs, one CTA an SM (the ring's shared memory), so that all are resident at once
    and a split that waits for its tile's others cannot deadlock."""
    return bool(sk_spread) and s.splits > 1 and s.ctas <= sm_count


def reduces_in_cluster(splits: int, sk_cluster: int) -> bool:
    """Whether tc10's S splits of a tile add their partials across a cluster of the S CTAs' shared memory (SK_CLUSTER=1,
    1 < S <= CLUSTER_MAX) rather than through the workspace and the last split's ticket."""
    return bool(sk_cluster) and 1 < splits <= CLUSTER_MAX


def reduction_partials(splits: int, spread: bool) -> float:
    """The partial tiles that the busiest CTA of a tile's reduction moves through L2: with the last split adding
    them, its own written and all S read back (1 + S); with every split adding a share (``spread``), its own written,
    S shares of 1/S read back, its share's sums written, and the sums read back by the last to store C (3 + 1/S).
    None without a split."""
    if splits <= 1:
        return 0.0
    return 3 + 1 / splits if spread else 1 + splits


def clocks(m: int, n: int, k: int, precision: str, bm: int, bn: int, splits: int, sm_count: int,
           engine: Engine | None = None, spread: bool = False) -> float:
    """The model's SM clocks of one launch at this tile and S (module docstring); ``spread``: the reduction shared
    by the S splits (SK_SPREAD=1) where the grid is resident at once (``spreads``), else the last split's."""
    e = engine or wgmma(precision)
    kt = ceil_div(k, e.k_tile)
    tiles = ceil_div(m, bm) * ceil_div(n, bn)
    ktile = max(bm * bn * e.k_tile / (e.fma_per_clock * e.share(bm, bn)),
                (bm + bn) * e.k_tile * e.operand_bytes / SM_BYTES_PER_CLOCK)
    per_sm = e.per_sm(bm, bn)
    waves = ceil_div(tiles * splits, sm_count * per_sm)
    sharing = min(per_sm, ceil_div(tiles * splits, sm_count))  # CTAs on the busiest SM at once
    hidden = min(1.0, sharing * e.warps(bm, bn) / e.hiding_warps) if e.hiding_warps else 1.0
    main = waves * (ceil_div(kt, splits) * ktile * sharing / hidden + CTA_START_CLOCKS)
    partial = 4 * bm * bn / SM_BYTES_PER_CLOCK
    reduce = reduction_partials(splits, spread and tiles * splits <= sm_count) * partial
    return main + reduce + bm * bn * e.output_bytes / SM_BYTES_PER_CLOCK


def choose(m: int, n: int, k: int, precision: str, sm_count: int = 132, engine: Engine | None = None,
           spread: bool = False) -> SplitPlan:
    """The tile and S of least modeled clocks (ties: fewer splits, then the earlier tile in the engine's): S from 1 up
    to KT // its least k-tiles a split and at most the engine's max_waves waves of CTAs; ``spread``: priced with the
    shared reduction of SK_SPREAD=1 where the grid fits on the SMs."""
    e = engine or wgmma(precision)
    kt = ceil_div(k, e.k_tile)
    best = None
    for bm, bn, stages in e.tiles:
        tiles = ceil_div(m, bm) * ceil_div(n, bn)
        most = max(1, min(kt // e.min_split_ktiles, e.max_waves * sm_count * e.per_sm(bm, bn) // tiles))
        for splits in range(1, most + 1):
            c = clocks(m, n, k, precision, bm, bn, splits, sm_count, e, spread)
            if best is None or c < best.clocks:
                best = SplitPlan(bm, bn, stages, splits, tiles, kt, c)
    return best


def pinned(m: int, n: int, k: int, precision: str, bm: int, bn: int, stages: int, splits: int,
           sm_count: int = 132, engine: Engine | None = None) -> SplitPlan:
    """The plan of a configuration that names its tile and S (a bench --variant's), S at most KT."""
    e = engine or wgmma(precision)
    kt = ceil_div(k, e.k_tile)
    splits = min(splits, kt)
    return SplitPlan(bm, bn, stages, splits, ceil_div(m, bm) * ceil_div(n, bn), kt,
                     clocks(m, n, k, precision, bm, bn, splits, sm_count, e))


def measured_table(runs, gpu: str, sm_count: int, sources=()) -> dict:
    """The table ``measured`` reads, from one GPU's timings of tc10 at several tiles and S: ``runs`` holds each bench
    run's rows, (precision, (M, N, K), params, µs, gain) with params the build that ran (its BM, BN, STAGES and
    SPLITS, S >= 1) and gain its speedup over that run's registered build in launches interleaved with it (bench
    --variant's ``variant_gain``; 1.0 for the registered build, None where not measured).

    The rule: per problem, the fastest median among the builds with an interleaved gain is kept where two measures
    agree that it beats the model's choice (``choose``) by more than MEASURED_MARGIN: the medians (a build's fastest
    over the runs that count) and its gain over the model's choice in the run of that median. The fastest of many
    builds' medians, each with its spread, is biased low; the second measure keeps a build that was lucky once out.

    Gains compare only within a run, so a run counts at a problem only where it timed the model's choice there
    interleaved (registered, or pinned with a gain): a run whose registered build was an earlier table's choice, with
    the model's not pinned beside it, says nothing about the model's choice and leaves the choice other runs made. A
    build timed twice in one run (registered and pinned) keeps its faster median, and the gain 1.0 of its run's
    reference whatever its pinned twin measured. A run made with the table applied (the measured choice registered,
    the model's pinned beside it) is the same comparison from the other side."""
    times: dict = {}  # (precision, (M, N, K)) -> [{(BM, BN, STAGES, S): (µs, gain)} of each run]
    for rows in runs:
        run: dict = {}
        for precision, (m, n, k), p, us, gain in rows:
            plan = pinned(m, n, k, precision, p["BM"], p["BN"], p["STAGES"], p["SPLITS"], sm_count)
            cfg = (plan.bm, plan.bn, plan.stages, plan.splits)
            timed = run.setdefault((precision, (m, n, k)), {})
            was_us, was_gain = timed.get(cfg, (us, gain))
            reference_gain = 1.0 if 1.0 in (gain, was_gain) else (gain if us <= was_us else was_gain)
            timed[cfg] = (min(us, was_us), reference_gain)
        for problem, timed in run.items():
            times.setdefault(problem, []).append(timed)
    choices: dict = {}
    for (precision, (m, n, k)), per_run in sorted(times.items()):
        model = choose(m, n, k, precision, sm_count)
        ref = (model.bm, model.bn, model.stages, model.splits)
        best: dict = {}  # each build's fastest median over the runs that count, and its gain over ref in that run
        for timed in per_run:
            ref_gain = timed.get(ref, (None, None))[1]
            if not ref_gain:
                continue
            for cfg, (us, gain) in timed.items():
                if gain is not None and (cfg not in best or us < best[cfg][0]):
                    best[cfg] = (us, gain / ref_gain)
        if ref not in best:
            continue
        (bm, bn, stages, splits), (us, gain) = min(best.items(), key=lambda kv: kv[1][0])
        model_us = best[ref][0]
        if us < (1 - MEASURED_MARGIN) * model_us and gain > 1 + MEASURED_MARGIN:
            choices.setdefault(precision, {})[f"{m}x{n}x{k}"] = {
                "BM": bm, "BN": bn, "STAGES": stages, "SPLITS": splits, "us": round(us, 2), "gain": round(gain, 3),
                "model": {"BM": model.bm, "BN": model.bn, "SPLITS": model.splits, "us": round(model_us, 2)}}
    return {"gpu": gpu, "sm_count": sm_count, "margin": MEASURED_MARGIN, "from": sorted(set(sources)),
            "choices": choices}


@lru_cache(maxsize=None)
def _shipped() -> dict:
    """The table shipped with gemmlab, with its file's name (empty where the file is missing)."""
    return {**json.loads(MEASURED.read_text()), "file": MEASURED.name} if MEASURED.is_file() else {}


@lru_cache(maxsize=None)
def _tables() -> dict:
    """Every table shipped in data/, by the name of the GPU it was measured on."""
    found = {}
    for path in DATA.iterdir():
        if path.name.startswith("split_k-") and path.name.endswith(".json"):
            t = json.loads(path.read_text())
            found[t.get("gpu")] = {**t, "file": path.name}
    return found


_PLAN_GPU: ContextVar[str | None] = ContextVar("split_k_plan_gpu", default=None)


@contextmanager
def planning_for(gpu: str | None):
    """Within it, ``own_table`` reads the table of the GPU called ``gpu`` (the one a plan is made for) instead of
    this machine's first GPU."""
    token = _PLAN_GPU.set(gpu)
    try:
        yield
    finally:
        _PLAN_GPU.reset(token)


def own_table(gpu: str | None = None) -> dict | None:
    """The table measured on the GPU called ``gpu`` (default the one a plan is being made for, ``planning_for``,
    else this machine's), where gemmlab ships one apart from the chip's (``MEASURED``); None elsewhere, and on a
    machine without a GPU."""
    gpu = gpu or _PLAN_GPU.get()
    if gpu is None:
        from gemmlab import device

        info = device.gpu()
        gpu = info.name if info is not None else None
    t = _tables().get(gpu)
    return t if t is not None and t.get("file") != MEASURED.name else None


def _entry(table: dict, m: int, n: int, k: int, precision: str, sm_count: int) -> SplitPlan | None:
    """``table``'s choice for the problem, where it holds one that runs here: a GPU of its SM count, a tile the
    precision builds, S within the k-tiles."""
    if table.get("sm_count") != sm_count:
        return None
    hit = table.get("choices", {}).get(choices_of(precision, table), {}).get(f"{m}x{n}x{k}")
    if hit is None:
        return None
    tile = next((tl for tl in tiles_for(precision, measured=True) if tl == (hit["BM"], hit["BN"], hit["STAGES"])),
                None)
    if tile is None or not 1 <= hit["SPLITS"] <= ceil_div(k, bk(precision)):
        return None
    return pinned(m, n, k, precision, *tile, hit["SPLITS"], sm_count)


def source(m: int, n: int, k: int, precision: str, sm_count: int = 132) -> dict | None:
    """The table whose choice ``measured`` takes for this problem: this GPU's own where it holds one that runs here,
    else the shipped one where it does; None where neither does (the model's choice)."""
    return next((t for t in (own_table(), _shipped()) if t and _entry(t, m, n, k, precision, sm_count)), None)


def choices_of(precision: str, table: dict | None = None) -> str:
    """The precision whose measured choices ``precision`` reads: its own where the table (default the shipped one)
    has them, else the precision whose dispatch table it reads (FP16: BF16's, the same builds at the same rates)."""
    t = _shipped() if table is None else table
    return precision if precision in t.get("choices", {}) else get_precision(precision).dispatch_precision


def measured(m: int, n: int, k: int, precision: str, sm_count: int = 132,
             table: dict | None = None) -> SplitPlan | None:
    """The tile and S measured fastest for exactly this problem (``table``, default ``source``'s: this GPU's own table
    where it holds a choice, else the shipped H200 one) on a GPU of the table's SM count, or None: the model's
    choice stands. tc10 runs only on compute capability 9.0, so such a GPU is of the table's chip (an H100 SXM reads
    the H200's where its own holds no choice: the same SMs, tiles and waves; gemmlab.device.same_chip).
    A precision without choices of its own reads those of the precision whose dispatch table it reads (FP16: BF16's,
    the same builds at the same instruction rates). An entry whose tile the precision does not build, or whose S is
    past its k-tiles, is not taken."""
    t = source(m, n, k, precision, sm_count) if table is None else table
    return None if t is None else _entry(t, m, n, k, precision, sm_count)
