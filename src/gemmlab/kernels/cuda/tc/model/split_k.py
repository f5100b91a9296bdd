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
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.kernels.cuda.tc.model.tiles import bk
from gemmlab.kernels.cuda.tc.model.timeline import TENSOR_FMA_PER_SM_CLOCK
from gemmlab.kernels.geometry import ceil_div
from gemmlab.problem import get_precision

# (BM, BN, STAGES) of each build, the ring as deep as fits in about 200 KB of shared memory (stages of
# (BM + BN) x 128 bytes); fp8_block takes the tiles whose BN divides 128 (one B scale a k-tile). No 128x256: its
# accumulators beside the split's state spill, and where a problem has tiles enough for it tc4 runs them.
TILES = ((64, 64, 8), (64, 128, 8), (128, 128, 6))
SM_BYTES_PER_CLOCK = 64  # assumed: what one SM reads from L2 per clock, the operands' tiles and the partials alike
CTA_START_CLOCKS = 2000  # assumed: a CTA's ring set-up and its first k-tile's copies, about 1 µs, not overlapped
MIN_SPLIT_KTILES = 4  # k-tiles a split at least: the pipeline depth that covers a TMA copy's latency
MAX_WAVES = 2  # S is capped where the tiles x S CTAs would take more waves than this: the partials grow with S


def tiles_for(precision: str) -> tuple[tuple[int, int, int], ...]:
    """The (BM, BN, STAGES) builds of ``precision``: fp8_block's only where a tile's columns sit in one 128-wide
    block of B's scales."""
    if get_precision(precision).block_scaled:
        return tuple(t for t in TILES if 128 % t[1] == 0)
    return TILES


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


def clocks(m: int, n: int, k: int, precision: str, bm: int, bn: int, splits: int, sm_count: int) -> float:
    """The model's SM clocks of one launch at this tile and S (module docstring)."""
    prec = get_precision(precision)
    kt = ceil_div(k, bk(precision))
    tiles = ceil_div(m, bm) * ceil_div(n, bn)
    ktile = max(bm * bn * bk(precision) / TENSOR_FMA_PER_SM_CLOCK[precision], (bm + bn) * 128 / SM_BYTES_PER_CLOCK)
    waves = ceil_div(tiles * splits, sm_count)
    main = waves * (ceil_div(kt, splits) * ktile + CTA_START_CLOCKS)
    partial = 4 * bm * bn / SM_BYTES_PER_CLOCK
    reduce = (1 + splits) * partial if splits > 1 else 0.0
    return main + reduce + bm * bn * prec.output_bytes / SM_BYTES_PER_CLOCK


def choose(m: int, n: int, k: int, precision: str, sm_count: int = 132) -> SplitPlan:
    """The tile and S of least modeled clocks (ties: fewer splits, then the earlier tile in TILES): S from 1 up to
    KT // MIN_SPLIT_KTILES and at most MAX_WAVES waves of CTAs."""
    kt = ceil_div(k, bk(precision))
    best = None
    for bm, bn, stages in tiles_for(precision):
        tiles = ceil_div(m, bm) * ceil_div(n, bn)
        most = max(1, min(kt // MIN_SPLIT_KTILES, MAX_WAVES * sm_count // tiles))
        for splits in range(1, most + 1):
            c = clocks(m, n, k, precision, bm, bn, splits, sm_count)
            if best is None or c < best.clocks:
                best = SplitPlan(bm, bn, stages, splits, tiles, kt, c)
    return best


def pinned(m: int, n: int, k: int, precision: str, bm: int, bn: int, stages: int, splits: int,
           sm_count: int = 132) -> SplitPlan:
    """The plan of a configuration that names its tile and S (a bench --variant's), S at most KT."""
    kt = ceil_div(k, bk(precision))
    splits = min(splits, kt)
    return SplitPlan(bm, bn, stages, splits, ceil_div(m, bm) * ceil_div(n, bn), kt,
                     clocks(m, n, k, precision, bm, bn, splits, sm_count))
