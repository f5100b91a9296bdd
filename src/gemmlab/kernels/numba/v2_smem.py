"""V2 shared-memory tiling in Python (numba-cuda): the seeds' second kernel, store guard fixed.

Same algorithm and model as cuda/v2_smem: 32×32 tiles of A and B staged in cuda.shared.array, each value
reused 32 times, modeled intensity 8 FLOP/byte. Out-of-range elements are staged as zeros; C is written
only where both row < M and col < N.

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba.launch.kernel import NumbaKernel, jit_on_first_use
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic

TILE = 32


# cuda and float32 are numba's, bound in this module when the kernel is first compiled (jit_on_first_use)
def v2_smem(C, A, B, M, N, K):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    acc = float32(0.0)
    for k0 in range(0, K, TILE):
        As[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        Bs[ty, tx] = B[k0 + ty, col] if col < N and k0 + ty < K else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


SPECS = [
    NumbaKernel(
        name="numba/v2_smem", level=2, precision="fp32", title="shared-memory tiling, 32×32 tiles",
        jit=jit_on_first_use(v2_smem), params={"TILE": TILE},
        geometry=lambda pr, p: Geometry((ceil_div(pr.n, p["TILE"]), ceil_div(pr.m, p["TILE"]), 1), (p["TILE"], p["TILE"], 1)),
        traffic_model=lambda pr, sm_count=SM_COUNT: tiled_traffic(pr, TILE, TILE, warp=(1, TILE)),
        doc=__doc__, unmodeled="issue slots and barriers: two shared loads per FFMA through numba's array indexing, "
                               "two barriers per 32-wide k tile",
    )
]
