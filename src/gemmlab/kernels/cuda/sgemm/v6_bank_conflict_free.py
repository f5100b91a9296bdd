"""V6 bank-conflict-free shared memory: a padded transposed A tile and a strided thread tile.

What changed against V5 (same tiles, same loads, a different layout):
- Padding: each k row of the transposed A tile holds BM + 4 floats. V5's transposing stores put 16
  consecutive m of two k rows 4 apart into 16 banks (a 2-way conflict on every staging store); with the
  pad the second k row is shifted by 16 banks. 4 floats, not 1, keep the rows 16-byte aligned for LDS.128.
- Strided thread tile: a thread's 8×8 tile is 2×2 quads of 4×4, half a block tile apart, instead of one
  contiguous 8×8 block. Neighbouring lanes then read adjacent 16-byte quads of B (a quarter-warp reads 128
  contiguous bytes, one pass of the 32 banks) instead of quads 32 bytes apart (two passes).
Why: a 2-way conflict doubles the shared-memory cycles of those accesses; V5 has them on both the staging
stores and on half of the compute loop's loads.
Predicted gain: 1.05-1.15× V5.

Measured: docs/fp32_ladder.md (with V5's and V6's bank-conflict counters), results/h200/fp32.json.
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
