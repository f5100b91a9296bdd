"""The suite's grid of shapes, and which kernels ``gemmlab bench --suite-grid PRECISION`` times at each of them: the
measurements kernel="auto" ranks from (gemmlab.dispatch; ``gemmlab dispatch --build`` makes the table of them).

The grid: M from 1 to 8192 in powers of two against four (N, K) of LLM layers, squares from 256 to 8192, and four
long-K problems of few output tiles. The candidates of a precision are the kernels "auto" may run at that
precision (a truncating TF32 build or tc7, which "auto" passes over, is not timed). At each shape a candidate is
skipped where the dispatch table shipped with gemmlab predicts it more than HOPELESS times slower per call than the
fastest candidate there (dispatch.rank: measured times scaled by the model), so that each precision's grid fits a
few minutes of an H200; the record says so. A candidate the shipped table never measured (a new level) has no
prediction there, so it is timed at every shape its constraints take; the run's estimate counts it at the slowest
candidate's prediction there. At the long-K shapes, whose few tiles are the model's case for
splitting K, every candidate is timed. The shipped table, not this machine's, so a run's choice of what to time
depends only on the code.
"""
from __future__ import annotations

from functools import lru_cache

M_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
LAYERS = ((4096, 4096), (14336, 4096), (4096, 14336), (1024, 8192))  # (N, K)
SQUARES = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192)
LONG_K = ((256, 256, 16384), (512, 512, 16384), (1024, 1024, 16384), (256, 256, 65536))
SHAPES = tuple([(m, n, k) for n, k in LAYERS for m in M_SWEEP] + [(s, s, s) for s in SQUARES] + list(LONG_K))

# The kernels "auto" may run, per precision (gemmlab.dispatch passes over the others). The Gluon levels where they read
# the grid's layout (x @ w.t(), B the transpose of an N×K weight) in place: the FP8 ones, which read B only so. The
# BF16 Gluon levels read B row-major (K×N) only: in this layout each call would copy w first, and "auto" takes a
# kernel that reads the layout in place (cuda/tc2 to tc10 do) before any that copies, so their records here could
# never be picked and would cost the grid about 69 × 0.35 s a level.
CANDIDATES = {
    "fp32": "cuda/gemv1_warp_dot_fp32,cuda/v3_1d_blocktile,cuda/v8_cp_async,cuda/v9_autotuned,cuda/v11_split_k,"
            "cuda/v10_register_prefetch",
    "tf32": "cuda/gemv1_warp_dot_tf32,cuda/tc5_swap_ab_tf32,cuda/tc6_stream_k_tf32,cuda/tc10_split_k_tf32",
    "bf16": "cuda/gemv1_warp_dot_bf16,cuda/gemv2_mma_swap_bf16,cuda/tc1_mma_sync_bf16,cuda/tc2_wgmma_tma_bf16,"
            "cuda/tc3_warp_specialized_bf16,cuda/tc4_persistent_bf16,cuda/tc6_stream_k_bf16,cuda/tc9_narrow_swap_bf16,"
            "cuda/tc10_split_k_bf16",
    "fp8": "cuda/gemv1_warp_dot_fp8,cuda/gemv2_mma_swap_fp8,cuda/tc4_persistent_fp8,cuda/tc8_promoted_fp8,"
           "cuda/tc9_narrow_swap_fp8,cuda/tc10_split_k_fp8,gluon/tc4_persistent_fp8",
    "fp8_block": "cuda/gemv1_warp_dot_fp8_block,cuda/gemv2_mma_swap_fp8_block,cuda/tc8_block_scaled_fp8,"
                 "cuda/tc8_cluster_fp8_block,cuda/tc6_stream_k_fp8_block,cuda/tc10_split_k_fp8_block,"
                 "gluon/tc8_block_scaled_fp8",
}
HOPELESS = 3.0  # predicted GPU time, against the fastest candidate's prediction at the shape
SECONDS_PER_RUN = 0.35  # an estimate: the warm-up alone takes 0.1 s, verification and the host-time calls the rest
TIMED_LAUNCHES = 30  # warm-up, verification, probe and timed launches of one kernel at one shape


@lru_cache(maxsize=1)
def shipped_table() -> dict:
    from gemmlab.cache import read_json
    from gemmlab.dispatch import SHIPPED

    return read_json(SHIPPED)


def pruner(layout, gpu):
    """``skip(spec, problem)`` for BenchOptions: why not to time ``spec`` at ``problem`` ("" to time it)."""
    from gemmlab.dispatch import rank

    @lru_cache(maxsize=4)
    def ranked_at(problem):
        return {c.spec.name: c for c in rank(problem, layout, gpu, shipped_table())}

    def skip(spec, problem) -> str:
        if problem.shape in LONG_K:  # where the model's case for splitting K rests: every candidate measured
            return ""
        ranked = ranked_at(problem)
        mine = ranked.get(spec.name)
        if mine is None or not ranked:
            return ""
        best = min(c.ms for c in ranked.values())
        if mine.ms <= HOPELESS * best:
            return ""
        return (f"not timed in the grid: the shipped dispatch table predicts {mine.ms:.4g} ms on the GPU, "
                f"{mine.ms / best:.1f}× the fastest candidate's {best:.4g} ms (past {HOPELESS:g}×)")

    return skip


def plan(precision: str, layout, gpu) -> tuple[list, float]:
    """[(shape, kernels timed, kernels skipped)] of a precision's grid run, and its estimated seconds on ``gpu``:
    per kernel timed, SECONDS_PER_RUN of warm-up, verification and host overhead and TIMED_LAUNCHES launches at its
    predicted time (the shipped table's); a kernel without a prediction there (one the table never measured) at the
    slowest prediction of the shape, so that a new level is not counted as free."""
    from gemmlab.dispatch import rank
    from gemmlab.kernels.registry import select
    from gemmlab.problem import Problem

    specs = select(CANDIDATES[precision])
    skip = pruner(layout, gpu)
    rows, seconds = [], 0.0
    for shape in SHAPES:
        problem = Problem(*shape, precision)
        predicted = {c.spec.name: c.ms for c in rank(problem, layout, gpu, shipped_table())}
        timed = [s.name for s in specs if not s.is_valid(problem) and not skip(s, problem)]
        rows.append((shape, timed, [s.name for s in specs if s.name not in timed]))
        slowest = max(predicted.values(), default=0.0)
        seconds += sum(SECONDS_PER_RUN + TIMED_LAUNCHES * predicted.get(name, slowest) / 1e3 for name in timed)
    return rows, seconds
