"""2-D SUMMA: C = A @ B for large square problems on a q×q process grid, every matrix in q×q blocks.

Rank (i, j) (rank = i·q + j) holds A's block (i, j) (M_i × K_j), B's block (i, j) (K_i × N_j) and computes
C's block (i, j) = Σ_t A(i, t) @ B(t, j). Step t broadcasts A(i, t) from rank (i, t) along grid row i and
B(t, j) from rank (t, j) along grid column j, then every rank adds the product of the two panels to its block.
Memory and traffic per rank fall as 1/q in each dimension, which is why SUMMA is the layout for problems too big
for one GPU's share of a 1-D split. Blocks may be ragged (``partition.split`` cuts a matrix the standard way);
the ranks agree that A's block widths per grid column equal B's block heights per grid row.

How it overlaps. A panel is a whole block, so every broadcast sends a contiguous tensor as it lies. All q
broadcasts of a grid row and all q of a grid column are issued at once (the row's and the column's have their
own process groups, so on CUDA their own NCCL streams, running side by side); a step's GEMM waits only for its
two panels (``Work.wait()``: a stream wait on CUDA, a host wait on gloo). Each rank starts with the step whose
panels it holds (``partition.summa_order``), so ranks on the grid's diagonal start without waiting.

Predicted costs. Without an accumulating GEMM in gemmlab (β = 1), every step after the first goes through a
temporary and an addition: 12 bytes per element of C per step (read C and the temporary, write C) against
2·K_t FLOPs per element for the step's GEMM, so it adds 6·rate/(bandwidth·K_t) of the GEMM time: 990/K_t with
cuBLAS BF16's 660 TFLOPS at 8192³ and the 4.0 TB/s copy bandwidth measured on the H200
(results/h200/fp32.json), 12% at K_t = 8192. Wide panels (one per grid column) keep that to q − 1 additions.
Off-diagonal ranks wait for their first panel before any GEMM. A rank count that is not a square is refused
with its reason (8 GPUs: use 4 of them, or the 1-D ops). Not measured yet.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from gemmlab.distributed import runtime
from gemmlab.distributed.collective import NO_OUT, Facts, Plan, disagreement, solo
from gemmlab.distributed.partition import grid_coords, grid_rank, grid_side, summa_order

_GRIDS: dict = {}  # (parent group name, q) -> (this rank's row group, its column group), created once


def grid_groups(group, q: int):
    """This rank's grid-row and grid-column process groups (each created once, by its members only)."""
    key = (group.group_name, q)
    if key not in _GRIDS:
        i, j = grid_coords(group.rank(), q)
        row = [dist.get_global_rank(group, grid_rank(i, c, q)) for c in range(q)]
        col = [dist.get_global_rank(group, grid_rank(r, j, q)) for r in range(q)]
        _GRIDS[key] = tuple(dist.new_group(ranks, timeout=runtime.group_timeout(), use_local_synchronization=True)
                            for ranks in (row, col))
    return _GRIDS[key]


class Summa(Plan):
    op = "summa"
    inner = False  # A(i, j) and B(i, j) sit at the same grid position, not on the same inner dimension

    def __init__(self, a_block, b_block, *, group=None, kernel: str | None = None, out=None):
        self.q = grid_side((group or dist.group.WORLD).size())
        super().__init__(a_block, b_block, out, 1, group, kernel)
        q, (i, j) = self.q, grid_coords(self.rank, self.q)
        self.row_group, self.col_group = grid_groups(self.group, q) if q > 1 else (self.group, self.group)
        dtype, device = a_block.dtype, a_block.device
        self.a_panels = [a_block if t == j else torch.empty(_at(self.facts, q, i, t).a, dtype=dtype, device=device)
                         for t in range(q)]
        self.b_panels = [b_block if t == i else torch.empty(_at(self.facts, q, t, j).b, dtype=dtype, device=device)
                         for t in range(q)]
        self.order = summa_order(i, j, q)
        shape = (a_block.shape[0], b_block.shape[1])
        self.out = out if out is not None else torch.empty(shape, dtype=self.out_dtype, device=device)
        self.step_out = torch.empty(shape, dtype=self.out_dtype, device=device) if q > 1 else None

    @staticmethod
    def check(facts: list[Facts]) -> str | None:
        q = grid_side(len(facts))

        def at(r, c):
            return _at(facts, q, r, c)

        for line in range(q):
            reason = (disagreement([at(line, c).a[0] for c in range(q)], f"A's block height along grid row {line}")
                      or disagreement([at(r, line).b[1] for r in range(q)], f"B's block width along grid column {line}")
                      or disagreement([at(r, line).a[1] for r in range(q)], f"A's block width in grid column {line}")
                      or disagreement([at(line, c).b[0] for c in range(q)], f"B's block height in grid row {line}"))
            if reason:
                return reason
        widths, heights = [at(0, t).a[1] for t in range(q)], [at(t, 0).b[0] for t in range(q)]
        if widths != heights:
            return (f"A's block widths by grid column {widths} differ from B's block heights by grid row {heights}; "
                    "panel t of A must match panel t of B")
        if sum(widths) == 0 or sum(at(r, 0).a[0] for r in range(q)) == 0 or sum(at(0, c).b[1] for c in range(q)) == 0:
            return "M, N or K is 0: the product is empty"
        wrong = [r for r, f in enumerate(facts) if f.out != NO_OUT and f.out != (f.a[0], f.b[1])]
        return "; ".join(f"rank {r}: out is {facts[r].out[0]}×{facts[r].out[1]}, its block of C is "
                         f"{facts[r].a[0]}×{facts[r].b[1]}" for r in wrong) or None

    def schedule(self, communicate: bool, compute: bool):
        q, (i, j) = self.q, grid_coords(self.rank, self.q)
        arrivals: dict = {}
        if communicate:
            for t in range(q):  # the same order on every member of a row and of a column
                arrivals[("a", t)] = dist.broadcast(self.a_panels[t], group=self.row_group, group_src=t,
                                                    async_op=True)
                arrivals[("b", t)] = dist.broadcast(self.b_panels[t], group=self.col_group, group_src=t,
                                                    async_op=True)
        first = True
        for t in self.order:
            for side, own in (("a", t == j), ("b", t == i)):
                if not own and (side, t) in arrivals:
                    arrivals.pop((side, t)).wait()
            a, b = self.a_panels[t], self.b_panels[t]
            if not compute or a.shape[1] == 0:
                continue
            self.gemm(a, b, self.out if first else self.step_out)
            if not first and self.failure is None:
                self.out += self.step_out
            first = False
        if first and compute:  # every panel this rank met was empty
            self.out.zero_()
        for work in arrivals.values():  # our own sends
            work.wait()
        return self.out


def _at(facts: list[Facts], q: int, row: int, col: int) -> Facts:
    return facts[grid_rank(row, col, q)]


def summa(a_block, b_block, *, group=None, kernel: str | None = None, out=None):
    """This rank's block of C = A @ B on a q×q grid of the ranks of ``group`` (default: the world; q² ranks).

    ``a_block``, ``b_block``: this rank's blocks (i, j) of A and B, rank = i·q + j. Returns C's block (i, j)
    in ``out`` or a new tensor of gemmlab's output dtype. ``kernel``: the local GEMM for ``gemmlab.matmul``
    (None: its default). Raises DistributedError on every rank for a non-square rank count, blocks that do not
    fit together, or any rank's unusable operands; a rank's failed GEMM is raised on every rank by the group's next
    call or ``check()``.
    """
    if (group if group is not None else dist.group.WORLD).size() == 1:
        return solo(Summa, a_block, b_block, out, 1, kernel)
    return Summa(a_block, b_block, group=group, kernel=kernel, out=out).run()
