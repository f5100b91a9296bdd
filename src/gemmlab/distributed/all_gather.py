"""All-gather + GEMM: C = all_gather(A) @ B, with A's row shards arriving while earlier ones multiply.

The column-parallel layer of Megatron-style tensor parallelism with sequence parallelism, and the semantics of
PyTorch's ``torch.ops.symm_mem.fused_all_gather_matmul``: each rank holds a block of A's rows (M_r × K, any
M_r, ragged allowed) and its own B (K × N_r). With B replicated every rank gets the whole C; with B sharded by
columns (the tensor-parallel case) rank r gets C's columns of its shard, M × N_r.

How it overlaps. Each rank's shard is cut into ``chunks`` pieces of rows; every piece is broadcast by its
owner, all broadcasts issued at once in global row order (the same on every rank), and a piece's product is
written straight into its rows of C. Each rank multiplies its own pieces first, which need no communication, and
then the others in arrival order, each after its broadcast has landed. On CUDA the broadcasts run on the process
group's NCCL stream, which starts them after the work already on the caller's stream; ``Work.wait()`` makes the
caller's stream, where the GEMMs run, wait for one piece's arrival event without blocking the host. On gloo the
same calls are asynchronous host operations and ``wait()`` blocks until the piece is there.

Broadcasts rather than ``all_gather``: every piece is one contiguous row range both of its owner's shard and of
the gathered A, so it is sent as it lies and its product lands in place (no repacking of C), and ragged shards
need no padding. The price: pipelined broadcasts from each owner in turn take about M·K·2/bandwidth (BF16)
where a ring all-gather takes (P−1)/P of that (2× at 2 ranks, 1.14× at 8); hidden, it costs nothing.

Predicted: a piece of r rows takes 2·r·N·K FLOPs to multiply and 2·r·K bytes (BF16) to broadcast, so the
communication hides while the broadcasts move more than rate/N bytes per second: 80 GB/s at N = 8192 and cuBLAS
BF16's 660 TFLOPS at 8192³ (README). The H200's NVLink is rated at 900 GB/s per GPU
(both directions together), so the prediction is near-full hiding, less the SMs NCCL's kernels take from the
GEMMs. Not measured yet.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from gemmlab.distributed.collective import NO_OUT, Facts, Plan, disagreement, resolve_group, solo
from gemmlab.distributed.partition import row_pieces


class AllGatherMatmul(Plan):
    op = "all_gather_matmul"

    def __init__(self, a_shard, b, *, group=None, chunks: int = 1, kernel: str | None = None,
                 precision: str | None = None, out=None):
        super().__init__(a_shard, b, out, chunks, group, kernel, precision)
        # torch.distributed sends a tensor's memory as it lies (gloo does not check the strides): a column-major
        # shard or a view would arrive as other numbers. A contiguous one is used as it is, without a copy.
        a_shard = a_shard.contiguous()
        sizes = [f.a[0] for f in self.facts]
        k, n = a_shard.shape[1], b.shape[1]
        self.b = b
        self.pieces = row_pieces(sizes, chunks)
        self.out = out if out is not None else torch.empty((sum(sizes), n), dtype=self.out_dtype, device=b.device)
        self.rows = {p: a_shard[p.local] if p.owner == self.rank else
                     torch.empty((p.rows, k), dtype=a_shard.dtype, device=a_shard.device) for p in self.pieces}
        mine = [p for p in self.pieces if p.owner == self.rank]
        self.order = mine + [p for p in self.pieces if p.owner != self.rank]

    @staticmethod
    def check(facts: list[Facts]) -> str | None:
        m = sum(f.a[0] for f in facts)
        if m == 0:
            return "every rank's A shard has 0 rows; the gathered A must have at least one"
        wrong = [(r, f.out) for r, f in enumerate(facts) if f.out != NO_OUT and f.out != (m, f.b[1])]
        return (disagreement([f.a[1] for f in facts], "A's column count K")
                or ("K is 0: A and B have no inner dimension to multiply over" if facts[0].a[1] == 0 else None)
                or "; ".join(f"rank {r}: out is {o[0]}×{o[1]}, the product is {m}×{facts[r].b[1]}" for r, o in wrong)
                or None)

    def schedule(self, communicate: bool, compute: bool):
        arrivals = {p: dist.broadcast(self.rows[p], group=self.group, group_src=p.owner, async_op=True)
                    for p in self.pieces} if communicate else {}
        for p in self.order:
            if p.owner != self.rank and communicate:
                arrivals[p].wait()
            if compute:
                self.gemm(self.rows[p], self.b, self.out[p.span])
        for p in self.pieces:  # our own sends: done before the caller may overwrite the shard
            if p.owner == self.rank and communicate:
                arrivals[p].wait()
        return self.out


def all_gather_matmul(a_shard, b, *, group=None, chunks: int = 1, kernel: str | None = None,
                      precision: str | None = None, out=None):
    """C = all_gather(A shards, by rows) @ B on every rank of ``group`` (default: the world).

    ``a_shard``: this rank's rows of A (M_r × K), copied first if it is not contiguous (it is sent as it lies in
    memory); ``b``: this rank's B (K × N_r), replicated or its column shard. Returns this rank's C (M × N_r) in
    ``out`` or a new tensor of gemmlab's output dtype (the operands' dtype: FP32, BF16 or FP16). ``chunks``: pieces
    each shard is sent in. ``kernel``, ``precision``: the local GEMM's, for ``gemmlab.matmul`` (None: its default;
    ``precision="tf32"`` for FP32 operands on a kernel that computes it). Raises DistributedError on every rank if
    any rank's operands fail (tensors requiring grad under grad mode included: there is no backward); a rank's
    failed GEMM is raised on every rank by the group's next call or ``check()``.
    """
    group = resolve_group(group)
    if group.size() == 1:
        return solo(AllGatherMatmul, a_shard, b, out, chunks, kernel, precision)
    return AllGatherMatmul(a_shard, b, group=group, chunks=chunks, kernel=kernel, precision=precision, out=out).run()
