"""The L2 model's arithmetic: waves of tiles in a kernel's own order against half the L2, worked out by hand."""
import pytest

from gemmlab.analysis.hierarchy import ctas_per_sm, dram_reads, reuse_fraction, waves
from gemmlab.kernels.spec import tile_walk, tiled_traffic
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
