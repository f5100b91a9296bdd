"""How a kernel's time changes from one shape to another: the model kernel="auto" scales measurements with.

A measured time holds everything the roofline leaves out (latency, issue slots, a pipeline's ramp); what changes
between two nearby shapes is mostly what the roofline does count. So the dispatcher predicts a kernel's time at a
shape it did not measure as its measured time at a nearby shape times ``estimate(shape) / estimate(nearby)``,
where ``estimate`` is this module's model of one call (gemmlab.dispatch):

- the arithmetic of the busiest SM: whole tiles, each on one SM (or cluster), so T tiles over P places cost
  ceil(T / P) tiles, padded to the tile and the k-tile (a fractional last wave costs a whole one, and a problem of
  few tiles leaves most SMs idle); a stream-K launch spreads its split tail over its whole grid
  (tc/model/stream_k.py: stream_k_grid, stream_k_dp_tiles), a split-K one (tc10, SPLITS = S) runs tiles x S CTAs
  of 1/S of a tile's k-tiles each (tc/model/split_k.py);
- the bytes: each input once from DRAM and C once, the stream-K or split-K partials written and read back, and on the L2
  level the tiled re-reads (A once per tile column, B once per tile row), each over its roof;
- what runs before the kernel on every call, one after the other: the copies gemmlab.matmul makes of an operand
  the kernel does not read in place, the TF32 pre-passes (Bᵀ, A rounded), each its bytes over DRAM and a launch;
- ``LAUNCH_US`` per launch: the floor of a call that the roofs do not see, which keeps small problems' ratios near 1;
- split-K's reduction (tc10): a tile's last split reads S partials and writes its own through one SM, its share of
  the L2 bandwidth, after the mainloops.

The overlapped levels take the largest; the serial ones add. Every term is a closed form in M, N, K and the tile,
so an estimate costs microseconds at any size (the roofline analysis walks the tiles to model the L2 and is not
for this). The roofs are this GPU's: its stored measurement (``gemmlab roofline --measure``) over the datasheet's.
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.kernels.cuda.tc.model.split_k import reduction_partials
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW, Layout
from gemmlab.problem import BatchedProblem, Problem

LAUNCH_US = 5.0  # assumed: below the smallest calls the shipped table measured; it keeps small ratios near 1


@dataclass(frozen=True)
class Estimate:
    """The model of one call of a kernel at one shape: its time and the factors it comes from."""

    ms: float
    tiles: int  # output tiles (cluster tiles) of the launch; 0 for a kernel without a tile
    places: int  # where tiles run at once: the SMs, or the clusters they hold
    fill: float  # the arithmetic over what the busiest place's share would give every place (1: whole waves)
    split: int  # tiles split along K over the grid (stream-K, split-K)
    compute_ms: float
    dram_ms: float
    l2_ms: float
    serial_ms: float  # copies and pre-passes before the kernel
    bound: str  # "compute", "dram" or "l2": the largest overlapped level
    reduce_ms: float = 0.0  # split-K (tc10): the busiest CTA of a tile's reduction (split_k.reduction_partials)
    launches: int = 1  # kernels a call launches: the copies and pre-passes, then the kernel

    @property
    def waves(self) -> float:
        return self.tiles / self.places if self.places else 0.0

    def factors(self) -> str:
        """One phrase: the tiles, waves and fill, what bounds it, the serial part."""
        parts = []
        if self.tiles:
            parts.append(f"{self.tiles} tiles over {self.places} places ({self.waves:.2g} waves, "
                         f"{100 * self.fill:.0f}% filled{f', {self.split} split along K' if self.split else ''})")
        parts.append(f"{self.bound}-bound")
        if self.serial_ms:
            parts.append(f"{1e3 * self.serial_ms:.3g} µs of copies or pre-passes")
        if self.reduce_ms:
            parts.append(f"{1e3 * self.reduce_ms:.3g} µs of split-K reduction on one SM")
        return ", ".join(parts)


def _tile(runs) -> tuple[int, int, int, int, int]:
    """(BM, BN, CM, CN, k elements per k-tile) of the configuration that runs; BM = 0 for a kernel without tiles."""
    p = runs.params
    if "BM" not in p or "BN" not in p:
        return 0, 0, 1, 1, 1
    k_tile = getattr(runs, "k_tile", None) or p.get("BK", 1)
    return p["BM"], p["BN"], p.get("CM", 1), p.get("CN", 1), k_tile


def _launch(runs, m: int, n: int, k: int, sm_count: int, batch: int = 1) -> tuple[int, int, int, float]:
    """(tiles, places, split tiles, tiles' worth of arithmetic on the busiest place) of one launch of ``batch``
    products of M×N×K, each tiled on its own; places are the SMs, or the clusters they hold."""
    from gemmlab.kernels.cuda.tc.model.stream_k import (SK_FILL, SK_MIN_KTILES, SK_SKIP_FILL, stream_k_dp_tiles,
                                                        stream_k_grid)

    bm, bn, cm, cn, kt = _tile(runs)
    tiles = batch * ceil_div(m, bm * cm) * ceil_div(n, bn * cn)
    places = max(1, sm_count // (cm * cn))
    p = runs.params
    if p.get("STREAM_K", 0):
        grid = stream_k_grid(tiles, ceil_div(k, kt), sm_count, p.get("SK_MIN_KTILES", SK_MIN_KTILES))
        dp = stream_k_dp_tiles(tiles, grid, p.get("SK_FILL", SK_FILL), p.get("SK_SKIP_FILL", SK_SKIP_FILL))
        return tiles, places, tiles - dp, ceil_div(dp, grid) + (tiles - dp) / grid
    splits = p.get("SPLITS", 0)
    if splits > 1:  # tc10: tiles x S CTAs in waves over the SMs, each ceil(KT / S) of its tile's KT k-tiles
        ktiles = ceil_div(k, kt)
        return tiles, places, tiles, ceil_div(tiles * splits, places) * ceil_div(ktiles, splits) / ktiles
    # a persistent grid of resident clusters, or one CTA per tile: whole tiles either way
    return tiles, places, 0, ceil_div(tiles, places)


def _matrices(problem: Problem) -> tuple[int, int, int]:
    """(products, A's matrices, B's matrices) of a call: a batch's (an operand broadcast over it, stride 0, is one
    matrix), or 1, 1, 1."""
    if not isinstance(problem, BatchedProblem):
        return 1, 1, 1
    return problem.batch, problem.batch if problem.stride_a else 1, problem.batch if problem.stride_b else 1


def _serial_bytes(runs, problem: Problem, read, copies: tuple) -> tuple[float, int]:
    """(DRAM bytes, launches) of what runs before the kernel on every call: gemmlab.matmul's ``copies``, then the
    TF32 levels' pre-passes (Bᵀ where the tensor cores read B K-major and it comes row-major; A rounded,
    TF32_ROUND=3), and the TMA levels' copies of an operand whose rows are off 16 bytes into a pitched workspace
    (``staged_operands``). ``read``: the operands' layout after the copies (None: row-major)."""
    m, n, k = problem.shape
    e = problem.prec.input_bytes
    _, a_count, b_count = _matrices(problem)
    size = {"A": a_count * m * k, "B": b_count * k * n}
    moved, launches = sum(2.0 * e * size[x] for x in copies), len(copies)
    prec = problem.prec
    read = read or Layout()
    if prec.tf32_multiply and hasattr(runs, "swap_ab") and not runs.swap_ab and read.b != COL and \
            not (prec.reads_b_n_major or prec.kmajor_b):
        moved, launches = moved + 8.0 * size["B"], launches + 1
    if runs.params.get("TF32_ROUND", 0) == 3:
        moved, launches = moved + 8.0 * size["A"], launches + 1
    if not isinstance(problem, BatchedProblem):  # a batch is read in place or refused
        for x in runs.staged_operands(problem, read):
            moved, launches = moved + 2.0 * e * size[x], launches + 1
    return moved, launches


def estimate(spec, problem: Problem, roofs, layout=None, copies: tuple = ()) -> Estimate:
    """The model of one call of ``spec`` on ``problem`` under ``roofs`` (analysis.ceilings.Ceilings), its operands in
    ``layout`` (None: the kernel's natural one) with ``copies`` ("A", "B") made before it. A batch
    (BatchedProblem) is its products' tiles, each product tiled on its own, and its matrices' bytes."""
    runs = spec.for_problem(problem, roofs.sm_count)
    given = layout or Layout()
    read = Layout(ROW if "A" in copies else given.a, ROW if "B" in copies else given.b)  # after gemmlab.matmul's copies
    if getattr(runs, "exchanges", False):  # A_IN_REGS: the kernel runs Cᵀ = Bᵀ·Aᵀ, each operand in the other's role
        problem, runs = problem.transposed(), runs.kernel_build()
        read = read.transposed()
        copies = tuple({"A": "B", "B": "A"}[x] for x in copies)
    m, n, k = problem.shape
    batch, a_count, b_count = _matrices(problem)
    prec = problem.prec
    units, ops = spec.peak_share()
    sm_rate = roofs.flop_per_clk[units] / ops * roofs.max_clock_mhz * 1e6  # FLOP/s of one SM
    bm, bn, cm, cn, kt = _tile(runs)
    reduce = 0.0
    if bm:
        tiles, places, split, busiest = _launch(runs, m, n, k, roofs.sm_count, batch)
        tile_flops = 2.0 * bm * cm * bn * cn * ceil_div(k, kt) * kt
        compute = busiest * tile_flops / (cm * cn) / sm_rate
        fill = tiles / (busiest * places)
        l2 = batch * prec.input_bytes * (m * k * ceil_div(n, bn * cn) + k * n * ceil_div(m, bm * cm))
        splits = runs.params.get("SPLITS", 0)
        partials = tiles * splits if splits > 1 else min(places, split * ceil_div(k, kt)) if split else 0
        spill = 8.0 * bm * bn * partials
        if splits > 1:  # after the mainloops: the busiest CTA's partials through one SM's share of the L2 bandwidth
            moved = reduction_partials(splits, bool(runs.params.get("SK_SPREAD", 0)))
            reduce = moved * 4.0 * bm * bn / (roofs.l2_gbs * 1e9 / roofs.sm_count) * 1e3
    else:
        tiles = places = split = 0
        fill, spill = 1.0, 0.0
        compute = problem.flops() / roofs.sm_count / sm_rate
        l2 = prec.input_bytes * (a_count * m * k + b_count * k * n)
    out = problem.output_bytes * batch * m * n
    dram = prec.input_bytes * (a_count * m * k + b_count * k * n) + out + spill
    levels = {"compute": compute * 1e3, "dram": dram / (roofs.dram_gbs * 1e9) * 1e3,
              "l2": (l2 + out + spill) / (roofs.l2_gbs * 1e9) * 1e3}
    bound = max(levels, key=levels.get)
    moved, launches = _serial_bytes(runs, problem, read, copies)
    serial = moved / (roofs.dram_gbs * 1e9) * 1e3 + launches * LAUNCH_US / 1e3
    return Estimate(LAUNCH_US / 1e3 + levels[bound] + serial + reduce, tiles, places, fill, split, levels["compute"],
                    levels["dram"], levels["l2"], serial, bound, reduce, 1 + launches)
