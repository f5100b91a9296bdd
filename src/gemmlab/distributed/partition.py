"""Where the rows and panels of a distributed GEMM go: pure arithmetic, no torch.

Every rank derives the pieces below from the same agreed sizes, so every rank lists the same pieces in the same
order. That order is the order the collectives are issued in, which NCCL and gloo need to be identical on all
ranks of a group; ragged sizes (rows that do not divide by the rank count) only make some pieces one row longer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gemmlab.errors import DistributedError

# Pieces per call when an op's communication can only start after a piece is computed (GEMM + reduce-scatter):
# the last piece's reduction has nothing left to hide behind, so about 1/TARGET_PIECES of the communication
# stays exposed (12.5% at 8, inside the 20% the issue allows), while each GEMM keeps at least M/8 rows.
TARGET_PIECES = 8


def split(n: int, parts: int) -> list[int]:
    """n items over ``parts`` owners, as evenly as possible, the first n % parts owners one larger."""
    if parts < 1 or n < 0:
        raise ValueError(f"cannot split {n} items over {parts} parts")
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts)]


def offsets(sizes: list[int]) -> list[int]:
    """Start of each owner's range and the total at the end: offsets([3, 2]) == [0, 3, 5]."""
    out = [0]
    for size in sizes:
        out.append(out[-1] + size)
    return out


def bounds(n: int, parts: int, index: int) -> tuple[int, int]:
    """[start, stop) of owner ``index`` when n items are split over ``parts`` owners."""
    starts = offsets(split(n, parts))
    return starts[index], starts[index + 1]


@dataclass(frozen=True)
class Piece:
    """Global rows [start, stop) of one owner's block: one collective and one local GEMM."""

    owner: int
    start: int
    stop: int
    base: int  # where the owner's block starts, so start - base indexes the owner's local shard

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def local(self) -> slice:
        """These rows inside the owner's own shard."""
        return slice(self.start - self.base, self.stop - self.base)

    @property
    def span(self) -> slice:
        return slice(self.start, self.stop)


def row_pieces(sizes: list[int], chunks: int) -> list[Piece]:
    """Each owner's rows cut into ``chunks`` near-equal pieces, in global row order; empty pieces dropped.

    A piece never straddles two owners, so it is one contiguous row range of the owner's shard and of the
    global matrix at once: it can be sent as it is and its product written in place.
    """
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    pieces = []
    for owner, (base, size) in enumerate(zip(offsets(sizes), sizes)):
        starts = offsets(split(size, chunks))
        pieces += [Piece(owner, base + a, base + b, base) for a, b in zip(starts, starts[1:]) if b > a]
    return pieces


def pieces_per_rank(ranks: int) -> int:
    """Chunks per rank's block that make about TARGET_PIECES pieces in all; one on a single rank, where no
    reduction travels and cutting the GEMM would only make it slower."""
    return 1 if ranks == 1 else max(1, math.ceil(TARGET_PIECES / ranks))


def grid_side(ranks: int) -> int:
    """q for a q×q process grid; SUMMA's block ownership needs the rank count to be a square."""
    q = math.isqrt(ranks)
    if q * q != ranks:
        squares = ", ".join(str(s * s) for s in range(1, 5))
        raise DistributedError(f"summa needs a square number of ranks for its q×q process grid; {ranks} ranks is "
                               f"not one (use {squares}, ... ranks, or all_gather_matmul / matmul_reduce_scatter, "
                               "which take any count)")
    return q


def grid_coords(rank: int, q: int) -> tuple[int, int]:
    """(grid row, grid column) of ``rank``, ranks numbered row by row."""
    return divmod(rank, q)


def grid_rank(row: int, col: int, q: int) -> int:
    return row * q + col


def summa_order(row: int, col: int, q: int) -> list[int]:
    """The order in which rank (row, col) computes SUMMA's q steps: the step it holds both panels of first
    (its diagonal), then steps with one panel of its own, then the rest; ties in step order.

    Step t multiplies A's block column t by B's block row t. Rank (row, col) owns A's panel of step ``col`` and
    B's panel of step ``row``, so those steps wait for at most one broadcast; starting there hides the first
    arrival behind work that needs none.
    """
    return sorted(range(q), key=lambda t: ((t != row) + (t != col), t))
