"""GEMM + reduce-scatter: C = Σ_r A_r @ B_r, K split across ranks, C's rows scattered, reduced as they finish.

The row-parallel layer of Megatron-style tensor parallelism with sequence parallelism, and the semantics of
PyTorch's ``torch.ops.symm_mem.fused_matmul_reduce_scatter``: rank r holds A's columns of its K slice
(M × K_r) and B's matching rows (K_r × N), any K_r (ragged allowed, 0 included), and gets C's rows
``partition.bounds(M, P, r)`` of the sum over ranks; row blocks differ by at most one row.

How it overlaps. C's rows are cut into pieces (``chunks`` per rank's block, by default about
``partition.TARGET_PIECES`` in all), in global row order. Each rank computes its partial product of a piece and
immediately issues that piece's reduction to its owner, then computes the next piece while the reduction runs.
On CUDA, a reduction issued right after its piece's GEMM was enqueued runs on the process group's NCCL stream
ordered after that GEMM and no later one, so piece i travels while piece i+1 multiplies; on gloo it is an
asynchronous host operation on a buffer the next GEMM does not touch. The owner's pieces are reduced in place
in its output; other pieces go through a staging buffer each.

Predicted: the last piece's reduction has nothing left to hide behind, so about 1/pieces of the communication
stays exposed (an eighth at the default), plus the SMs the reductions' kernels take from the GEMMs. The rest
hides while a reduction of r×N BF16 partials (2·r·N bytes) is shorter than the next piece's GEMM (2·r·N·K_r
FLOPs), i.e. above rate/K_r bytes per second: 80 GB/s at K_r = 8192 and 660 TFLOPS. The partials are reduced in
the GEMM's output dtype, the operands' (BF16 for BF16 operands, as torch's): each rank's partial is rounded to
BF16 and the reduction rounds each sum to BF16 again, where one GPU's GEMM rounds C once. Not measured yet.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from gemmlab.distributed.collective import NO_OUT, Facts, Plan, disagreement, resolve_group, solo
from gemmlab.distributed.partition import bounds, pieces_per_rank, row_pieces, split


class MatmulReduceScatter(Plan):
    op = "matmul_reduce_scatter"

    def __init__(self, a, b, *, group=None, chunks: int | None = None, kernel: str | None = None,
                 precision: str | None = None, out=None):
        group = resolve_group(group)
        chunks = chunks if chunks is not None else pieces_per_rank(group.size())
        super().__init__(a, b, out, chunks, group, kernel, precision)
        m, n = a.shape[0], b.shape[1]
        start, stop = bounds(m, self.ranks, self.rank)
        self.a, self.b = a, b
        self.pieces = row_pieces(split(m, self.ranks), chunks)
        self.out = out if out is not None else torch.empty((stop - start, n), dtype=self.out_dtype, device=b.device)
        self.partials = {p: self.out[p.local] if p.owner == self.rank else
                         torch.empty((p.rows, n), dtype=self.out_dtype, device=b.device) for p in self.pieces}

    @staticmethod
    def check(facts: list[Facts]) -> str | None:
        m, n = facts[0].a[0], facts[0].b[1]
        wrong = [r for r, f in enumerate(facts) if f.out != NO_OUT and f.out != (_rows(m, len(facts), r), n)]
        return (disagreement([f.a[0] for f in facts], "A's row count M")
                or disagreement([f.b[1] for f in facts], "B's column count N")
                or ("M or N is 0: the product is empty" if m == 0 or n == 0 else None)
                or ("every rank's K slice is empty (K = 0)" if sum(f.a[1] for f in facts) == 0 else None)
                or "; ".join(f"rank {r}: out is {facts[r].out[0]}×{facts[r].out[1]}, its rows of C are "
                             f"{_rows(m, len(facts), r)}×{n}" for r in wrong)
                or None)

    def schedule(self, communicate: bool, compute: bool):
        reductions = []
        for p in self.pieces:
            if compute:
                self.gemm(self.a[p.span], self.b, self.partials[p])
            if communicate:
                reductions.append(dist.reduce(self.partials[p], group=self.group, group_dst=p.owner, async_op=True))
        for work in reductions:
            work.wait()
        return self.out


def _rows(m: int, ranks: int, rank: int) -> int:
    start, stop = bounds(m, ranks, rank)
    return stop - start


def matmul_reduce_scatter(a, b, *, group=None, chunks: int | None = None, kernel: str | None = None,
                          precision: str | None = None, out=None):
    """This rank's rows of C = Σ over ranks of A_r @ B_r, on every rank of ``group`` (default: the world).

    ``a``: A's columns of this rank's K slice (M × K_r); ``b``: B's rows of it (K_r × N). Returns rows
    ``partition.bounds(M, P, rank)`` of C in ``out`` or a new tensor of gemmlab's output dtype. ``chunks``:
    pieces per rank's block of rows (default: about 8 pieces in all). ``kernel``, ``precision``: the local
    GEMM's, for ``gemmlab.matmul`` (None: its default). Raises DistributedError on every rank if any rank's
    operands fail (tensors requiring grad under grad mode included: there is no backward); a rank's failed GEMM is
    raised on every rank by the group's next call or ``check()``.
    """
    group = resolve_group(group)
    if group.size() == 1:
        return solo(MatmulReduceScatter, a, b, out, 1 if chunks is None else chunks, kernel, precision)
    return MatmulReduceScatter(a, b, group=group, chunks=chunks, kernel=kernel, precision=precision, out=out).run()
