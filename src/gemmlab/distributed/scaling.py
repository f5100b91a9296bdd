"""The bench's arithmetic: which problem each op solves on P GPUs, and the three numbers it reports.

Weak scaling keeps every rank's GEMM at the per-rank shape m×n×k, so one GPU doing m×n×k alone is the ideal
time and ``efficiency = t(1 GPU) / t(P GPUs)``: the all-gather op gathers all M = m rows and owns n of P·n
columns, the reduce-scatter op owns k of P·k inner columns, SUMMA's blocks are m×n over a K = k on a √P×√P grid.
Strong scaling solves one fixed M×N×K on every count: ``efficiency = t(1) / (P · t(P))``.

Hidden communication: time the op's communication alone (its collectives, no GEMMs), its computation alone
(its GEMMs, no collectives) and both together; what the overlap saved, as a share of the communication, is
``(comm + compute − together) / comm``, clipped to [0, 1] (noise can push it a little past either end).
"""
from __future__ import annotations

from gemmlab.distributed.partition import grid_side

OPS = ("all_gather_matmul", "matmul_reduce_scatter", "summa")  # also the op codes the ranks exchange
SCALINGS = ("weak", "strong")


def global_problem(op: str, shape: tuple[int, int, int], gpus: int, scaling: str) -> tuple[int, int, int]:
    """M×N×K the op computes on ``gpus`` ranks: ``shape`` per rank (weak) or in all (strong)."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling is weak or strong, got {scaling!r}")
    m, n, k = shape
    if scaling == "strong":
        return shape
    if op == "all_gather_matmul":
        return m, n * gpus, k
    if op == "matmul_reduce_scatter":
        return m, n, k * gpus
    if op == "summa":
        q = grid_side(gpus)
        return m * q, n * q, k
    raise ValueError(f"unknown op {op!r}; the ops are {', '.join(OPS)}")


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def efficiency(one_gpu_ms: float, ms: float, gpus: int, scaling: str) -> float:
    """t(1)/t(P) for weak scaling, t(1)/(P·t(P)) for strong; 1.0 is perfect scaling."""
    return one_gpu_ms / ms if scaling == "weak" else one_gpu_ms / (gpus * ms)


def hidden_fraction(comm_ms: float, compute_ms: float, together_ms: float) -> float | None:
    """Share of the communication the overlap hid, in [0, 1]; None when there was no communication to hide."""
    if comm_ms <= 0:
        return None
    return min(1.0, max(0.0, (comm_ms + compute_ms - together_ms) / comm_ms))
