"""V0: the seeds' CPU triple loop, compiled by numba's JIT.

Loop order i, j, k with a float32 accumulator, exactly as the seeds' `multi_cpu`: the inner loop walks B down
a column (stride N), so it misses cache on every step once a column of B outgrows L1. O(MNK) time: problems
past 4 GFLOP are refused with the reason (the seed shape would run for minutes). It is the seeds' baseline, not
a reference (the reference is float64); the GPU levels are measured against cuBLAS.

Not in results/ (the timed shapes are past its limit); docs/seeds.md.
"""
from functools import cache

import numpy as np

from gemmlab.kernels.cpu._kernel import CpuKernel
from gemmlab.kernels.spec import naive_traffic


def _triple_loop(A, B, C):
    M, K = A.shape
    N = B.shape[1]
    for i in range(M):
        for j in range(N):
            acc = np.float32(0.0)
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@cache
def _compiled():
    """The loop through numba's JIT, made on the first call: importing numba takes half a second, which the
    commands that only list the kernels do not pay."""
    from numba import njit

    return njit(cache=True, nogil=True)(_triple_loop)


def v0_naive(A, B, C):
    _compiled()(A, B, C)


SPECS = [
    CpuKernel(
        name="cpu/v0_naive", level=0, precision="fp32", title="CPU triple loop (numba JIT), float32 accumulate",
        function=v0_naive, traffic_model=naive_traffic, max_flops=4e9, doc=__doc__,
    )
]
