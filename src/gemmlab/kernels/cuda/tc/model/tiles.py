"""How a wgmma level walks a problem: the k-tile, the shared-memory descriptor, the order tiles are handed out in,
and the per-problem choices (NARROW_BN-wide tiles, shorter tiles, A rounded in place instead of by a pre-pass)."""
from __future__ import annotations

from gemmlab.kernels.cuda.tc.model.budget import stage_bytes
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.spec import tile_walk
from gemmlab.problem import Problem, get_precision


def bk(precision: str) -> int:
    """K elements per k-tile: one 128-byte swizzle row (64 bf16, 32 tf32, 128 fp8)."""
    return get_precision(precision).k_tile


def wgmma_desc(addr: int, lbo: int, sbo: int) -> int:
    """The 64-bit wgmma shared-memory descriptor (128-byte swizzle), as the kernels' wgmma_desc builds it."""
    return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)


def tile_order(tiles_m: int, tiles_n: int, group_m: int) -> list[tuple[int, int]]:
    """The (row, column) of each cluster tile in the order tc4's scheduler hands them out: grouped order, odd
    groups walking their columns right to left (the snake order)."""
    return tile_walk(tiles_m, tiles_n, group_m, snake=True)


# A NARROW_BN-wide (n192) tile's cost per output column against the BN-wide (n256) one's: the narrower wgmma
# reads more shared memory per multiply-add, and the per-tile costs weigh more (measured on the H200, see tc4)
NARROW_COST = 1.1


def narrow_pays(m: int, n: int, p: dict, sm_count: int = 132) -> bool:
    """Whether whole tiles NARROW_BN wide finish an M×N problem sooner than BN-wide ones. The busiest cluster runs
    ceil(tiles / clusters) tiles, so a partial last wave costs a whole tile, and a problem of fewer tiles than
    clusters leaves clusters idle while each runs one whole tile; narrower tiles can fill either better. The busiest
    cluster's columns, ceil(tiles / clusters) · width, are compared with the narrow ones weighted by NARROW_COST."""
    narrow = p.get("NARROW_BN", 0)
    if not narrow or p.get("STREAM_K", 0):
        return False
    clusters = _clusters(p, sm_count)

    def busiest(width: int) -> int:
        return ceil_div(_cluster_tiles(m, n, p, width), clusters) * width

    return busiest(narrow) * NARROW_COST < busiest(p["BN"])


# Tile widths off the 64-column swizzle atom that tc4's 16-bit and FP8 builds take when pinned (a --variant with
# OFF_ATOM_BUILD): B read K-major in boxes of b_box_rows, C stored from registers (the TMA epilogue's boxes and held
# boxes are whole atoms of 16-bit C), no narrower tile chosen per problem. No problem chooses them: measured slower
# than the atom's widths at every shape where they fill the waves better (tc4.md, "Tile widths off the 64-column
# atom").
OFF_ATOM_WIDTHS = (144, 224)
OFF_ATOM_BUILD = {"EPI_TMA": 0, "EPI_DEFER": 0, "NARROW_BN": 0}


def b_box_rows(bn: int) -> int:
    """The rows of a K-major B box (tc_layout.cuh's B_BOX_ROWS): 64, or 32 or 16 for a width off the 64-column
    atom, so that whole boxes tile BN."""
    return 64 if bn % 64 == 0 else 32 if bn % 32 == 0 else 16


# A short tile's (a level's ``short_tile``: tc8's 128 rows) time per row of C against its level's taller one (tc8's
# 192): two consumer warpgroups in place of three to cover each k-tile's promotion with another's wgmma, and more
# shared-memory bytes a clock (tc8.md's table: 160 against 149). Fitted on the H100 at the suite's block-scaled rows
# of M = 256-2048 and the squares 1024-4096 (results/h100/tc8_short_tile*.json): 1.2-1.35 where both run the same
# waves.
SHORT_COST = 1.25


def with_tile_rows(p: dict, bm: int, **changes) -> dict:
    """p for a tile ``bm`` rows tall (and ``changes``), its ring as many bytes as p's: more stages of a shorter
    tile."""
    return {**p, "BM": bm, "STAGES": p["STAGES"] * stage_bytes(p["BM"], p["BN"]) // stage_bytes(bm, p["BN"]),
            **changes}


def short_pays(m: int, n: int, p: dict, short_bm: int, sm_count: int = 132) -> bool:
    """Whether whole tiles ``short_bm`` rows tall finish an M×N problem sooner than BM-tall ones: narrow_pays along
    M. A tall tile pads M to its height (M = 256 is 384 rows of 192-row tiles), and a few tall tiles can leave the
    last wave mostly empty; the busiest cluster's rows, ceil(tiles / clusters) · height, are compared, the short
    tile's weighted by SHORT_COST (short_cost)."""
    if not 0 < short_bm < p["BM"] or p.get("STREAM_K", 0):
        return False
    return short_cost(m, n, p, short_bm, sm_count) < 1


def short_cost(m: int, n: int, p: dict, short_bm: int, sm_count: int = 132) -> float:
    """The time of an M×N problem on ``short_bm``-row tiles over its time on BM-row ones, by short_pays's count: the
    busiest cluster's rows, the short tile's weighted by SHORT_COST."""
    clusters = _clusters(p, sm_count)

    def busiest(height: int) -> int:
        tiles = ceil_div(m, height * p.get("CM", 1)) * ceil_div(n, p["BN"] * p.get("CN", 1))
        return ceil_div(tiles, clusters) * height

    return busiest(short_bm) * SHORT_COST / busiest(p["BM"])


def narrow_fills_last_wave(m: int, n: int, p: dict, sm_count: int = 132) -> bool:
    """narrow_pays where the BN-wide tiles are more than the clusters: a partial last wave that narrower tiles fill
    better. Where they are fewer, stream-K (tc6) fills the idle clusters with splits of K instead."""
    return _cluster_tiles(m, n, p, p["BN"]) > _clusters(p, sm_count) and narrow_pays(m, n, p, sm_count)


def _clusters(p: dict, sm_count: int) -> int:
    return max(1, sm_count // (p.get("CM", 1) * p.get("CN", 1)))


def _cluster_tiles(m: int, n: int, p: dict, width: int) -> int:
    return ceil_div(m, p["BM"] * p.get("CM", 1)) * ceil_div(n, width * p.get("CN", 1))


ONE_LAUNCH_MAX_K = 512  # past it the in-place pass costs a CTA more k-tiles than the launch it saves


def rounds_a_in_place(problem: Problem, one_launch_mnk: int) -> bool:
    """Whether a TF32_ROUND=3 level runs ``problem`` in one launch, A rounded in shared memory (TF32_ROUND=2): up to
    ``one_launch_mnk`` multiply-adds, K at most ONE_LAUNCH_MAX_K (the pass's cost grows with the k-tiles each CTA
    walks, the launch it saves does not), and A's rows a whole number of 16 bytes (else A is copied into a pitched
    workspace first anyway, which the pre-pass does as it rounds)."""
    m, n, k = problem.shape
    return m * n * k <= one_launch_mnk and k <= ONE_LAUNCH_MAX_K and k % 4 == 0
