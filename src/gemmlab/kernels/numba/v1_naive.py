"""V1 naive in Python (numba-cuda): the seeds' one-thread-per-element kernel, line for line.

Same algorithm and model as cuda/v1_naive (8MNK bytes of global loads, 0.25 FLOP/byte). Written the
plain numba way (2D arrays, cuda.grid), so its generated code carries numba's costs: 64-bit index math and
array-shape loads around each access. Those are what the faster numba levels remove.

Variant (bench --variant, gemmlab chapter): BX=16,BY=16, the second seed's 16×16 block; cuda.grid follows the
launch, so the same compiled kernel runs it.

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba.launch.kernel import NumbaKernel, jit_on_first_use
from gemmlab.kernels.spec import SM_COUNT, naive_traffic

BX, BY = 32, 32


# cuda and float32 are numba's, bound in this module when the kernel is first compiled (jit_on_first_use)
def v1_naive(C, A, B, M, N, K):
    col, row = cuda.grid(2)
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def _traffic(problem, sm_count=SM_COUNT, params=None):
    return naive_traffic(problem, sm_count, params["BX"], params["BY"])


SPECS = [
    NumbaKernel(
        name="numba/v1_naive", level=1, precision="fp32", title="naive: one thread per C element",
        jit=jit_on_first_use(v1_naive), params={"BX": BX, "BY": BY},
        geometry=lambda pr, p: Geometry((ceil_div(pr.n, p["BX"]), ceil_div(pr.m, p["BY"]), 1), (p["BX"], p["BY"], 1)),
        traffic_model=_traffic, varies=("BX", "BY"), doc=__doc__,
        unmodeled="issue slots: numba's array indexing puts 64-bit index arithmetic, wraparound selects and shape "
                  "loads around each of the two loads per FFMA",
    )
]
