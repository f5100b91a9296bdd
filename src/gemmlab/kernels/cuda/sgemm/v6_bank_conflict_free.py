"""V6 bank-conflict-free shared memory: a padded transposed A tile and a strided thread tile.

What changed against V5: the transposed A tile's k rows hold BM + 4 floats (no 2-way conflict on the staging
stores), and a thread's 8×8 tile is 2×2 quads of 4×4, half a block tile apart (a quarter-warp reads 128 contiguous
bytes of B). Why: V5's 2-way conflicts double the shared-memory cycles of its staging stores and half its loads.
Predicted gain: 1.05-1.15× V5. Details and counters: docs/fp32_ladder.md ("v6"), results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.sgemm.common.sgemm import block_tile_grid, thread_tile_warp, traffic_of
from gemmlab.kernels.cuda.sgemm.v5_vectorized import _constraints, _threads

PARAMS = {"BM": 128, "BN": 128, "BK": 8}
SPECS = [
    CudaKernel(
        name="cuda/v6_bank_conflict_free", level=6, precision="fp32",
        title="padded transposed A, 2×2 quads per thread: no bank conflicts",
        source="v6_bank_conflict_free.cu", entry="v6_bank_conflict_free", params=PARAMS,
        geometry=block_tile_grid(_threads), constraints=_constraints,
        traffic_model=traffic_of(PARAMS, warp=thread_tile_warp(PARAMS, 8, 8)), doc=__doc__,
        unmodeled="latency: every warp waits on each k tile's global loads (load, barrier, compute, barrier), with "
                  "two CTAs per SM to cover them (V8's target)",
    )
]
