"""V4 2D block tiling: each thread computes an 8×8 register tile as an outer product per k step.

What changed against V3: the block tile grows to 128×128 (BK = 8, 256 threads) and each thread keeps TM×TN =
8×8 accumulators. Per k it reads 8 values of A and 8 of B from shared memory for 64 FFMAs: 0.25 loads per FFMA
instead of V3's 1.1. Global traffic halves again (intensity 32 FLOP/byte in the model).
Why: V3 is still limited by shared-memory loads; a square register tile reuses each loaded value 8 times.
Predicted gain: about 2× V3 (toward 25-30 TFLOPS at 4096³). A's 8 scalar reads down a column are V5's target.

Measured: docs/fp32_ladder.md, results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.sgemm.common.sgemm import block_tile_grid, scalar_staging_errors, thread_tile_warp, traffic_of


def _threads(p):
    return p["BM"] * p["BN"] // (p["TM"] * p["TN"])


def _constraints(p):
    return scalar_staging_errors(p, _threads, [("TM", "BM"), ("TN", "BN")])


PARAMS = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}
SPECS = [
    CudaKernel(
        name="cuda/v4_2d_blocktile", level=4, precision="fp32", title="2D block tiling: 8×8 register tile",
        source="v4_2d_blocktile.cu", entry="v4_2d_blocktile", params=PARAMS,
        geometry=block_tile_grid(_threads), constraints=_constraints,
        traffic_model=traffic_of(PARAMS, warp=thread_tile_warp(PARAMS, PARAMS["TM"], PARAMS["TN"])), doc=__doc__,
        unmodeled="issue slots and occupancy: 16 scalar shared loads per 64 FFMA take FFMA issue slots, and its "
                  "registers leave one CTA of 8 warps per SM to hide shared and global latency",
    )
]
