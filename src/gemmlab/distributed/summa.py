"""2-D SUMMA: C = A @ B for large square problems on a q×q process grid, every matrix in q×q blocks.

Rank (i, j) (rank = i·q + j) holds A's block (i, j) (M_i × K_j), B's block (i, j) (K_i × N_j) and computes
C's block (i, j) = Σ_t A(i, t) @ B(t, j). Step t broadcasts A(i, t) from rank (i, t) along grid row i and
B(t, j) from rank (t, j) along grid column j, then every rank adds the product of the two panels to its block.
Memory and traffic per rank fall as 1/q in each dimension, which is why SUMMA is the layout for problems too big
for one GPU's share of a 1-D split. Blocks may be ragged (``partition.split`` cuts a matrix the standard way);
the ranks agree that A's block widths per grid column equal B's block heights per grid row.

How it overlaps. A panel is a whole block, so every broadcast sends a contiguous tensor as it lies (a block that
is a view of a larger matrix is copied contiguous first). All q broadcasts of a grid row and all q of a grid
column are issued at once (the row's and the column's have their own process groups, so on CUDA their own NCCL
streams, running side by side: see ``grid_groups`` for how they are made); a step's GEMM waits only for its
two panels (``Work.wait()``: a stream wait on CUDA, a host wait on gloo). Each rank starts with the step whose
panels it holds (``partition.summa_order``), so ranks on the grid's diagonal start without waiting.

Predicted costs. Without an accumulating GEMM in gemmlab (β = 1), every step after the first goes through a
temporary and an addition in C's dtype, the operands' (BF16 for BF16 operands, so each step's product is rounded
to BF16 and the sum again): 6 bytes per element of C per step (read C and the temporary, write C) against
2·K_t FLOPs per element for the step's GEMM, so it adds 3·rate/(bandwidth·K_t) of the GEMM time: 495/K_t with
cuBLAS BF16's 660 TFLOPS at 8192³ and the 4.0 TB/s copy bandwidth measured on the H200
(results/h200/fp32.json), 6% at K_t = 8192. Wide panels (one per grid column) keep that to q − 1 additions.
Off-diagonal ranks wait for their first panel before any GEMM. A rank count that is not a square is refused
with its reason (8 GPUs: use 4 of them, or the 1-D ops). Not measured yet.
"""
from __future__ import annotations

import math
import weakref

import torch
import torch.distributed as dist

from gemmlab.distributed import runtime
from gemmlab.distributed.collective import NO_OUT, Facts, Plan, _translated, disagreement, resolve_group, solo
from gemmlab.distributed.partition import grid_coords, grid_rank, grid_side, summa_order
from gemmlab.errors import DistributedError

# per group: this rank's grid-row and grid-column groups, made once (kept no longer than the group, so a process
# group made after destroy_process_group never finds a grid of the one before)
_GRIDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def grid_groups(group, q: int):
    """This rank's grid-row and grid-column process groups of ``group`` (q×q ranks).

    Made by every rank of the world, one group after another in the same order (grid rows, then grid columns),
    never by the members alone: torch names a group made by its members alone
    (``new_group(use_local_synchronization=True)``) after the number of groups the calling rank has joined, so
    members that joined different subgroups before (the bench's GPU counts) wait under different names until the
    timeout. A group every rank makes is named by the count of such calls, the same on every rank whatever groups
    it joined. So the grid of a group that spans the world is made here on first use, where every rank is in the
    call; that of a smaller group by ``new_group``, which the ranks outside it call too.
    """
    if group not in _GRIDS:
        missing = _no_grid(group)
        if missing:
            raise DistributedError(missing)
        with _translated(group, "summa", "while the ranks made the grid's row and column groups"):
            _GRIDS[group] = _make_grid(dist.get_process_group_ranks(group), q)
    return _GRIDS[group]


def _no_grid(group) -> str | None:
    """Why ``group``'s grid cannot be made now, or None: the ranks outside a smaller group are not in this call."""
    world = dist.get_world_size()
    if group in _GRIDS or group.size() == world:
        return None
    return (f"summa on a group of {group.size()} of the world's {world} ranks needs the group's grid (its row and "
            "column groups), which every rank of the world makes: create the group with "
            "gemmlab.distributed.new_group(ranks) on every rank, not torch.distributed.new_group")


def _make_grid(ranks: list[int], q: int):
    """Every row's and column's group of the q×q grid over ``ranks`` (global ranks, in group-rank order), made by
    this rank as by every rank of the world; returns this rank's (row group, column group), None outside ``ranks``."""
    rows = [[ranks[grid_rank(i, c, q)] for c in range(q)] for i in range(q)]
    cols = [[ranks[grid_rank(r, j, q)] for r in range(q)] for j in range(q)]
    made = [(line, dist.new_group(line, timeout=runtime.group_timeout())) for line in rows + cols]
    return tuple(group for line, group in made if dist.get_rank() in line) or None


def new_group(ranks):
    """``torch.distributed.new_group(ranks)`` for gemmlab's ops, with ``init``'s timeout: every rank of the world
    calls it, where it makes its other groups (torch's rule), and gets the group (torch's placeholder on ranks
    outside it). For a square number of ranks it also makes the group's SUMMA grid, which ``summa`` and its peer
    need on a group smaller than the world (``grid_groups`` says why)."""
    world = resolve_group(None)
    if (not isinstance(ranks, (list, tuple, range)) or not ranks or len(set(ranks)) != len(ranks)
            or not all(isinstance(r, int) and 0 <= r < world.size() for r in ranks)):
        raise DistributedError(f"new_group takes distinct ranks of the world's {world.size()} (0 to "
                               f"{world.size() - 1}), got {ranks!r}")
    ranks = sorted(ranks)
    q = math.isqrt(len(ranks))
    with _translated(world, "new_group", "while the ranks made a process group (a rank did not call new_group, or "
                                         "called it with other ranks, within the group's timeout)"):
        group = dist.new_group(ranks, timeout=runtime.group_timeout())
        grid = _make_grid(ranks, q) if q > 1 and q * q == len(ranks) else None
    if grid is not None:
        _GRIDS[group] = grid
    return group


class Summa(Plan):
    op = "summa"
    inner = False  # A(i, j) and B(i, j) sit at the same grid position, not on the same inner dimension

    def __init__(self, a_block, b_block, *, group=None, kernel: str | None = None, precision: str | None = None,
                 out=None):
        group = resolve_group(group)
        self.q = grid_side(group.size())
        super().__init__(a_block, b_block, out, 1, group, kernel, precision)
        # both blocks are sent as they lie in memory (gloo does not check the strides): a view of a larger matrix
        # would arrive as other numbers. A contiguous block is used as it is, without a copy.
        a_block, b_block = a_block.contiguous(), b_block.contiguous()
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

    def group_reason(self) -> str | None:
        return _no_grid(self.group) if self.q > 1 else None

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


def summa(a_block, b_block, *, group=None, kernel: str | None = None, precision: str | None = None, out=None):
    """This rank's block of C = A @ B on a q×q grid of the ranks of ``group`` (default: the world; q² ranks; a
    smaller group made by ``new_group``, which makes its grid).

    ``a_block``, ``b_block``: this rank's blocks (i, j) of A and B, rank = i·q + j, each copied first if it is not
    contiguous (a block is sent as it lies in memory). Returns C's block (i, j) in ``out`` or a new tensor of
    gemmlab's output dtype (the operands'). ``kernel``, ``precision``: the local GEMM's, for ``gemmlab.matmul``
    (None: its default). Raises DistributedError on every rank for a non-square rank count, blocks that do not
    fit together, or any rank's unusable operands (tensors requiring grad under grad mode included: there is no
    backward); a rank's failed GEMM is raised on every rank by the group's next call or ``check()``.
    """
    group = resolve_group(group)
    if group.size() == 1:
        return solo(Summa, a_block, b_block, out, 1, kernel, precision)
    return Summa(a_block, b_block, group=group, kernel=kernel, precision=precision, out=out).run()
