"""The L2 model's arithmetic: waves of tiles in a kernel's own order against half the L2, worked out by hand."""
import pytest

from gemmlab.analysis.hierarchy import ctas_per_sm, dram_reads, reuse_fraction, staggered_reads, waves
from gemmlab.kernels.spec import TileWalk, tile_walk, tiled_traffic
from gemmlab.problem import Problem

MiB = 2**20
L2 = 60 * MiB  # the H200's: half of it, 30 MiB, keeps lines every SM reads


def test_grouped_order_whose_wave_fits_reads_each_panel_once():
    """1024×8192×2048 FP32 in 128×128 tiles (8 × 64 tiles, panels of 1 MiB), 132 at a time. GROUP_M=8 walks the
    8 tile rows column by column: a wave is 8 rows × at most 17 columns, 25 MiB, which the L2 keeps, so the next
    wave finds the 8 rows of A it shares: A and B each come from DRAM once, 8 + 64 MiB."""
    t = tiled_traffic(Problem(1024, 8192, 2048), 128, 128, group_m=8)
    cut = waves(t.walk, 132)
    assert [len({r for r, _ in w}) for w in cut] == [8, 8, 8, 8]
    assert max(len({c for _, c in w}) for w in cut) == 17
    assert dram_reads(t.walk, 132, L2) == 72 * MiB


def test_row_major_order_whose_wave_does_not_fit_rereads_b_every_wave():
    """The same problem row-major: a wave is 2-3 tile rows and all 64 columns, 66-67 MiB, more than the L2 keeps,
    so going the same way through K no wave finds the last one's panels: 67 + 67 + 67 + 66 MiB."""
    t = tiled_traffic(Problem(1024, 8192, 2048), 128, 128)
    assert [(len({r for r, _ in w}), len({c for _, c in w})) for w in waves(t.walk, 132)] == \
        [(3, 64), (3, 64), (3, 64), (2, 64)]
    assert dram_reads(t.walk, 132, L2) == 267 * MiB


def test_the_fp32_ladder_at_4096_cubed():
    """128×128 tiles, two CTAs per SM (264 at a time), row-major: 4 waves of 9, 9, 9, 8 rows of A and all 32
    columns of B, 2 MiB panels, 82 MiB per wave: 163 panels in all, the 342 MB Nsight Compute reads for v5-v7."""
    t = tiled_traffic(Problem(4096, 4096, 4096), 128, 128)
    assert dram_reads(t.walk, 264, L2) == 163 * 2 * MiB


def test_staggered_ctas_read_one_burst_of_sm_count_tiles_at_a_time():
    """16 tiles, 4 × 4, panels of 1 MiB, on 4 SMs of 2 CTAs each. In step a wave is 8 tiles: 2 rows of A and all 4
    columns of B, 6 MiB. Staggered, one CTA per SM sweeps K with the other SMs': bursts of 4 tiles, a row and 4
    columns, 5 MiB. Through an L2 keeping 2 MiB no wave or burst finds the last one's columns: 2 × 6 = 12 MiB in step,
    4 × 5 = 20 MiB staggered. Through one keeping 30 MiB each shared panel is found again: A and B once, 8 MiB."""
    walk = TileWalk(4, 4, MiB, MiB, 1.0)
    assert [len(w) for w in waves(walk, 4)] == [4, 4, 4, 4]
    assert dram_reads(walk, 8, 4 * MiB) == 12 * MiB
    assert staggered_reads(walk, 4, 4 * MiB, 8) == 20 * MiB
    assert dram_reads(walk, 8, L2) == staggered_reads(walk, 4, L2, 8) == 8 * MiB
    # a persistent grid's wave is its own CTAs, one per SM (cluster): nothing beside them to stagger
    persistent = TileWalk(4, 4, MiB, MiB, 1.0, wave=8)
    assert staggered_reads(persistent, 4, 4 * MiB, 8) == dram_reads(persistent, 8, 4 * MiB) == 12 * MiB


def test_staggered_never_below_the_resident_wave_in_step():
    """4 × 4 tiles, panels of 1 MiB, an L2 of 10 MiB keeping 5 MiB of shared lines (L2_SHARE 0.5). Bursts of 4 tiles
    (a row and 4 columns: 5 MiB, within the 5) each find the last one's 4 columns again: 5 + 3 × 1 = 8 MiB. Waves of 8
    tiles (2 rows and 4 columns: 6 MiB) do not: 2 × 6 = 12 MiB. Between two bursts' reads of a shared panel the
    resident wave's working set passes, so staggered is the in-step 12 MiB, not the bursts' 8."""
    walk = TileWalk(4, 4, MiB, MiB, 1.0)
    l2 = 10 * MiB
    assert dram_reads(walk, 4, l2) < dram_reads(walk, 8, l2) == 12 * MiB
    assert staggered_reads(walk, 4, l2, 8) == 12 * MiB


def test_numba_v3_tiles_at_4096_cubed_in_step_and_staggered():
    """64×64 tiles (64 × 64 of them, panels of 1 MiB), three CTAs per SM (396 at a time). In step: 11 waves of 7 rows
    of A, but 8 for the sixth (tiles 1980-2375, from column 60 of row 30 to row 37) and 3 for the last 136 tiles,
    each with all 64 columns of B, 67-72 MiB, more than the L2 keeps: 74 + 11 × 64 = 778 MiB. Staggered: 31 bursts of
    132 tiles (3 rows and 64 columns, 67 MiB), then tiles 4092-4095 (row 63 and 4 columns, 5 MiB, all shared with
    the burst before), of which the L2 keeps the part read past x = (67 - 30)/(67 - 5): 25/62 of 5 MiB."""
    walk = tiled_traffic(Problem(4096, 4096, 4096), 64, 64).walk
    in_step = waves(walk, 396)
    assert [len({r for r, _ in w}) for w in in_step] == [7, 7, 7, 7, 7, 8, 7, 7, 7, 7, 3]
    assert dram_reads(walk, 396, L2) == 778 * MiB
    assert {len({r for r, _ in w}) for w in waves(walk, 132)[:31]} == {3}
    assert staggered_reads(walk, 132, L2, 396) == pytest.approx((31 * 67 + 5 - 5 * 25 / 62) * MiB)
    # two CTAs per SM in step (cuda/v3's 54 registers): 15 waves of 5 rows, then 3 rows, all of B each time
    assert dram_reads(walk, 264, L2) == (15 * 69 + 67) * MiB


def test_reuse_fraction_between_two_waves():
    # both working sets fit: everything shared is found; both too large, going the same way: nothing
    assert reuse_fraction(20, 25, 10, 30, backwards=False) == 1.0
    assert reuse_fraction(40, 40, 20, 30, backwards=False) == 0.0
    # one fits: the reuse distance (1 - x)·40 + x·20 is under 30 for x past 1/2
    assert reuse_fraction(40, 20, 10, 30, backwards=False) == pytest.approx(0.5)
    assert reuse_fraction(20, 40, 10, 30, backwards=False) == pytest.approx(0.5)
    # the other way through K: distance (1 - x)·(40 + 40 - 20), under 30 for the last half read
    assert reuse_fraction(40, 40, 20, 30, backwards=True) == pytest.approx(0.5)
    assert reuse_fraction(10, 10, 5, 30, backwards=True) == 1.0


def test_tile_walk_orders():
    assert tile_walk(2, 3) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]  # a 2-D grid, blockIdx.x along N
    assert tile_walk(4, 2, group_m=2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    assert tile_walk(4, 2, group_m=2, snake=True)[4:] == [(2, 1), (3, 1), (2, 0), (3, 0)]


def test_ctas_per_sm():
    assert ctas_per_sm(1024) == 2  # the naive kernel's 32×32 blocks: threads
    assert ctas_per_sm(256, registers=152) == 1  # v4: 152 × 256 registers
    assert ctas_per_sm(256, registers=127) == 2  # rounded up to 128: two of 32K
    assert ctas_per_sm(512, registers=40) == 3
    assert ctas_per_sm(256, registers=95, smem=107520) == 2  # tc1 TF32: shared memory
    assert ctas_per_sm(384, registers=168, smem=230464) == 1


def test_the_tiles_at_the_edge_read_only_the_rows_and_columns_left_there():
    """100×70×50 FP32 in 32×32 tiles: 4 × 3 tiles, the last row of tiles over 4 rows of A (100 - 96), the last
    column over 6 columns of B (70 - 64). One wave holds them all: A and B come from DRAM once, 4·(100·50 + 50·70)
    bytes, not the 4·(128·50 + 50·96) of whole panels. Ten tiles at a time through an L2 that keeps nothing: the
    first wave reads every panel (A's four rows, B's three columns), the second (tiles 10, 11: row 3, columns 1 and
    2) the edge row of A and two columns of B, one of them the edge's, again."""
    walk = tiled_traffic(Problem(100, 70, 50), 32, 32).walk
    assert (walk.a_panel, walk.a_edge, walk.b_panel, walk.b_edge) == (4 * 32 * 50, 4 * 4 * 50, 4 * 50 * 32,
                                                                      4 * 50 * 6)
    assert dram_reads(walk, 12, L2) == 4 * (100 * 50 + 50 * 70)
    assert dram_reads(walk, 10, 0) == 4 * (100 * 50 + 50 * 70) + 4 * (4 * 50 + 50 * (32 + 6))
    # a dimension of whole tiles has no smaller panel at its edge
    exact = tiled_traffic(Problem(128, 64, 50), 32, 32).walk
    assert (exact.a_edge, exact.b_edge) == (exact.a_panel, exact.b_panel)
