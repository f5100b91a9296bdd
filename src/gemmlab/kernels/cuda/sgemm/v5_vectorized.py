"""V5 vectorized: 128-bit global and shared-memory loads, with A stored transposed in shared memory.

What changed against V4: the A tile is stored k-major (As[k][m]), so the 8 values of A a thread needs at one
k sit side by side and arrive in two 128-bit shared loads, like its 8 values of B; per k step a thread issues
4 LDS.128 instead of 16 LDS.32. Global tiles move as float4 (LDG.128) where a matrix's rows are 16-byte
aligned; otherwise, and past the edges, guarded per-float loads, so every M, N, K >= 1 stays valid.
Why: in V4 the shared-load instructions compete with FFMAs for issue slots (about 20 of every 84 issued
instructions per k); cutting them to 4 frees those slots.
Predicted gain: 1.2-1.4× V4. Its 2-way bank conflicts (transposing stores, B's reads) are V6's target.

Measured: docs/fp32_ladder.md, results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.sgemm.common.sgemm import (block_tile_grid, divides, staged_quads_errors, thread_tile_warp,
                                                     traffic_of)


def _threads(p):
    return p["BM"] * p["BN"] // 64  # one 8×8 register tile per thread


def _constraints(p):
    errors = []
    divides(errors, 8, p["BM"], "BM must be a multiple of the 8-row thread tile")
    divides(errors, 8, p["BN"], "BN must be a multiple of the 8-column thread tile")
    return errors or staged_quads_errors(p, _threads(p))


PARAMS = {"BM": 128, "BN": 128, "BK": 8}
SPECS = [
    CudaKernel(
        name="cuda/v5_vectorized", level=5, precision="fp32", title="128-bit loads, A transposed in shared memory",
        source="v5_vectorized.cu", entry="v5_vectorized", params=PARAMS,
        geometry=block_tile_grid(_threads), constraints=_constraints,
        traffic_model=traffic_of(PARAMS, warp=thread_tile_warp(PARAMS, 8, 8)), doc=__doc__,
        unmodeled="bank conflicts and latency: 2-way conflicts on the transposing stores and on half of B's loads "
                  "(V6's target); every warp waits on each k tile's global loads (load, barrier, compute, barrier)",
    )
]
