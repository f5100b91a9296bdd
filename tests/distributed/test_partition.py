"""The arithmetic every rank repeats identically: splits, pieces, SUMMA's grid, and the bench's formulas."""
import pytest

from gemmlab.distributed.partition import (TARGET_PIECES, bounds, grid_coords, grid_rank, grid_side, offsets,
                                           pieces_per_rank, row_pieces, split, summa_order)
from gemmlab.distributed.scaling import efficiency, global_problem, hidden_fraction, tflops
from gemmlab.errors import DistributedError


def test_split_is_as_even_as_possible_larger_first():
    assert split(37, 4) == [10, 9, 9, 9]
    assert split(29, 4) == [8, 7, 7, 7]
    assert split(3, 4) == [1, 1, 1, 0]
    assert split(8, 4) == [2, 2, 2, 2]
    for n in range(0, 40):
        for parts in range(1, 9):
            sizes = split(n, parts)
            assert sum(sizes) == n and max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
    with pytest.raises(ValueError):
        split(5, 0)


def test_offsets_and_bounds():
    assert offsets([3, 2]) == [0, 3, 5]
    assert [bounds(37, 4, r) for r in range(4)] == [(0, 10), (10, 19), (19, 28), (28, 37)]
    assert bounds(3, 4, 3) == (3, 3)  # an owner with nothing


def test_row_pieces_cover_every_row_once_without_straddling_owners():
    sizes = split(37, 4)
    pieces = row_pieces(sizes, 3)
    assert [(p.owner, p.start, p.stop) for p in pieces[:4]] == [(0, 0, 4), (0, 4, 7), (0, 7, 10), (1, 10, 13)]
    assert [p.rows for p in pieces] == [4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    covered = [row for p in pieces for row in range(p.start, p.stop)]
    assert covered == list(range(37))  # in global row order: the order the collectives are issued in
    starts = offsets(sizes)
    for p in pieces:
        assert starts[p.owner] <= p.start < p.stop <= starts[p.owner + 1]
        assert p.local == slice(p.start - starts[p.owner], p.stop - starts[p.owner])  # rows of the owner's shard


def test_row_pieces_drop_empty_pieces():
    pieces = row_pieces([1, 1, 1, 0], 2)  # 3 rows over 4 owners, 2 chunks each
    assert [(p.owner, p.start, p.stop) for p in pieces] == [(0, 0, 1), (1, 1, 2), (2, 2, 3)]
    with pytest.raises(ValueError):
        row_pieces([3], 0)


def test_pieces_per_rank_reach_the_target_count():
    assert [pieces_per_rank(p) for p in (1, 2, 3, 4, 8, 16)] == [1, 4, 3, 2, 1, 1]  # one rank: nothing to hide
    for ranks in range(2, 9):
        assert ranks * pieces_per_rank(ranks) >= TARGET_PIECES


def test_grid_side_accepts_squares_and_names_the_problem_otherwise():
    assert [grid_side(p) for p in (1, 4, 9, 16)] == [1, 2, 3, 4]
    for ranks in (2, 3, 8):
        with pytest.raises(DistributedError, match=f"square number of ranks.*{ranks} ranks is not one"):
            grid_side(ranks)


def test_grid_coordinates_number_ranks_row_by_row():
    assert [grid_coords(r, 2) for r in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(grid_rank(*grid_coords(r, 3), 3) == r for r in range(9))


def test_summa_order_starts_where_the_rank_holds_its_panels():
    # rank (i, j) owns A's panel of step j and B's panel of step i
    assert summa_order(1, 1, 2) == [1, 0]  # diagonal: step 1 needs nothing from anyone
    assert summa_order(0, 1, 2) == [0, 1]  # one own panel in each step: step order
    assert summa_order(2, 0, 3) == [0, 2, 1]  # own A at step 0, own B at step 2, nothing of its own at step 1
    for i in range(3):
        for j in range(3):
            assert sorted(summa_order(i, j, 3)) == [0, 1, 2]


@pytest.mark.parametrize("op, gpus, weak, strong", [
    ("all_gather_matmul", 4, (8192, 4 * 8192, 8192), (16384, 16384, 16384)),  # each rank owns N/P columns
    ("matmul_reduce_scatter", 8, (8192, 8192, 8 * 8192), (16384, 16384, 16384)),  # each rank owns K/P
    ("summa", 4, (2 * 8192, 2 * 8192, 8192), (16384, 16384, 16384)),  # a 2×2 grid of 8192² blocks
])
def test_weak_scaling_keeps_the_per_rank_gemm_fixed(op, gpus, weak, strong):
    assert global_problem(op, (8192, 8192, 8192), gpus, "weak") == weak
    assert global_problem(op, (16384, 16384, 16384), gpus, "strong") == strong
    m, n, k = weak
    per_rank = {"all_gather_matmul": m * (n // gpus) * k, "matmul_reduce_scatter": m * n * (k // gpus),
                "summa": (m // 2) * (n // 2) * k}[op]
    assert per_rank == 8192 ** 3


def test_global_problem_refuses_what_it_cannot_place():
    with pytest.raises(DistributedError, match="square"):
        global_problem("summa", (64, 64, 64), 8, "weak")
    with pytest.raises(ValueError, match="weak or strong"):
        global_problem("summa", (64, 64, 64), 4, "both")


def test_efficiency_formulas():
    assert efficiency(10.0, 10.5, 8, "weak") == pytest.approx(10.0 / 10.5)  # t(1) / t(P)
    assert efficiency(80.0, 12.5, 8, "strong") == pytest.approx(0.8)  # t(1) / (P t(P))
    assert tflops(8192, 8192, 8192, 2.0) == pytest.approx(2 * 8192 ** 3 / 2e-3 / 1e12)


def test_hidden_fraction_is_what_overlap_saved_over_communication_clipped():
    assert hidden_fraction(comm_ms=2.0, compute_ms=10.0, together_ms=10.4) == pytest.approx(0.8)
    assert hidden_fraction(2.0, 10.0, 12.0) == 0.0  # nothing hidden: the sum
    assert hidden_fraction(2.0, 10.0, 13.0) == 0.0  # slower than the sum: clipped, not negative
    assert hidden_fraction(2.0, 10.0, 9.9) == 1.0  # faster than compute alone (noise): clipped at 1
    assert hidden_fraction(0.0, 10.0, 10.0) is None  # no communication to hide
