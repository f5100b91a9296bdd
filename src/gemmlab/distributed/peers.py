"""The peers the distributed ops are timed against in the same run, on the same shards.

Non-overlapped: the textbook sequence a user writes first, one collective for the whole operand and then one
``torch.mm`` (cuBLAS on the GPU), so communication and computation add up. Ragged shards are padded to the
largest for the collective (``all_gather``/``reduce_scatter`` take equal sizes) and cut back after. Outputs
have gemmlab's output dtype (``torch.mm(..., out_dtype=)`` where C's dtype is not the operands'), so both sides do
the same work.

Fused: PyTorch's ``torch.ops.symm_mem.fused_all_gather_matmul`` / ``fused_matmul_reduce_scatter`` (async tensor
parallelism: symmetric memory, copy engines, micro-pipelined cuBLAS), where they run: CUDA tensors, an NCCL
group, equal shards. They return the operands' dtype (BF16 out). ``return_A=True`` keeps the all-gather off its
multimem (NVLink multicast) path, which symmetric memory would otherwise pick for small M; multicast is off
anyway (``runtime.MULTICAST_OFF``).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from gemmlab.distributed.collective import all_gather_flat, gather_rows
from gemmlab.distributed.partition import grid_side, offsets, split
from gemmlab.distributed.summa import grid_groups

reduce_scatter_flat = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor  # renamed in 2.13


def _mm(a, b):
    """torch's product, C in the operands' dtype, as gemmlab's local GEMM writes it (collective.output_dtype)."""
    return torch.mm(a, b)


def _gather(x, sizes: list[int], group) -> list:
    """Every rank's ``x`` (sizes[r] rows each, equal columns), padded for the all-gather and cut back."""
    rows = max(sizes)
    padded = x if x.shape[0] == rows else torch.cat([x, x.new_zeros((rows - x.shape[0], x.shape[1]))])
    flat = torch.empty((len(sizes) * rows, x.shape[1]), dtype=x.dtype, device=x.device)
    all_gather_flat(flat, padded.contiguous(), group=group)
    return [flat[r * rows: r * rows + size] for r, size in enumerate(sizes)]


def _sizes(n: int, group) -> list[int]:
    return [row[0] for row in gather_rows([n], group)]


def all_gather_then_mm(a_shard, b, group):
    """C = all_gather(A shards) @ B: one all-gather, then one GEMM."""
    return _mm(torch.cat(_gather(a_shard, _sizes(a_shard.shape[0], group), group)), b)


def mm_then_reduce_scatter(a, b, group):
    """This rank's rows of Σ_r A_r @ B_r: one GEMM, then one reduce-scatter of the whole partial product."""
    ranks, rank = group.size(), group.rank()
    partial = _mm(a, b)
    sizes = split(a.shape[0], ranks)
    rows = max(sizes)
    if min(sizes) == rows:
        blocks = partial
    else:
        blocks = partial.new_zeros((ranks * rows, partial.shape[1]))
        for r, (start, size) in enumerate(zip(offsets(sizes), sizes)):
            blocks[r * rows: r * rows + size] = partial[start:start + size]
    out = partial.new_empty((rows, partial.shape[1]))
    reduce_scatter_flat(out, blocks, group=group)
    return out[:sizes[rank]]


def gather_blocks_then_mm(a_block, b_block, group):
    """SUMMA's block layout without SUMMA: all-gather A's blocks along the grid row and B's along the grid
    column, then one GEMM over the whole K. A's blocks side by side are Aᵀ's blocks stacked, so they are
    gathered transposed and multiplied as a transposed view (cuBLAS reads either layout). The grid's groups are
    SUMMA's (``summa.grid_groups``: on a group smaller than the world, one made by ``summa.new_group``)."""
    q = grid_side(group.size())
    if q == 1:
        return _mm(a_block, b_block)
    row_group, col_group = grid_groups(group, q)
    a_row = _gather(a_block.t().contiguous(), _sizes(a_block.shape[1], row_group), row_group)
    b_col = _gather(b_block, _sizes(b_block.shape[0], col_group), col_group)
    return _mm(torch.cat(a_row).t(), torch.cat(b_col))


def fused_reason(a, group) -> str | None:
    """Why PyTorch's fused symmetric-memory ops cannot run here, or None."""
    if a.device.type != "cuda":
        return "needs CUDA tensors (symmetric memory)"
    if "nccl" not in dist.get_backend_config(group):
        return "needs an NCCL process group"
    try:
        import torch.distributed._symmetric_memory  # noqa: F401  registers torch.ops.symm_mem
    except ImportError as exc:
        return f"this torch has no symmetric memory ({exc})"
    return None


def _symmetric_memory(group) -> str:
    """The group's name, with symmetric memory enabled for it (needed before torch 2.13, deprecated since)."""
    import warnings

    from torch.distributed import _symmetric_memory as symm

    if not symm.is_symm_mem_enabled_for_group(group.group_name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            symm.enable_symm_mem_for_group(group.group_name)
    return group.group_name


def fused_all_gather_mm(a_shard, b, group):
    _, (c,) = torch.ops.symm_mem.fused_all_gather_matmul(a_shard, [b], 0, _symmetric_memory(group), return_A=True)
    return c


def fused_mm_reduce_scatter(a, b, group):
    return torch.ops.symm_mem.fused_matmul_reduce_scatter(a, b, "sum", 0, _symmetric_memory(group))
