"""V3 1D block tiling: each thread computes TM = 8 outputs down one column of C.

What changed against V2: the block tile is BM×BN = 64×64 with BK = 8, staged in shared memory, and each of the
512 threads accumulates TM = 8 rows of one column in registers. Per k step a thread reads one value of B from
shared memory and reuses it 8 times, so shared-memory loads per FFMA fall from 2 to 9/8. Global traffic
halves against V2's 32×32 tiles (A read N/64 times, B M/64 times: intensity 16 FLOP/byte in the model).
Why: V2 is bound by shared-memory bandwidth (two loads per FFMA); register reuse is the way out.
Predicted gain: about 2.5× V2 (13-15 TFLOPS at 4096³). Edge tiles are staged as zeros, stores guarded.

Measured: docs/fp32_ladder.md, results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.cuda.sgemm.common.sgemm import block_tile_grid, scalar_staging_errors, thread_tile_warp, traffic_of


def _threads(p):
    return p["BM"] * p["BN"] // p["TM"]


def _constraints(p):
    return scalar_staging_errors(p, _threads, [("TM", "BM")])


PARAMS = {"BM": 64, "BN": 64, "BK": 8, "TM": 8}
SPECS = [
    CudaKernel(
        name="cuda/v3_1d_blocktile", level=3, precision="fp32", title="1D block tiling: 8 outputs per thread",
        source="v3_1d_blocktile.cu", entry="v3_1d_blocktile", params=PARAMS,
        geometry=block_tile_grid(_threads), constraints=_constraints,
        traffic_model=traffic_of(PARAMS, warp=thread_tile_warp(PARAMS, PARAMS["TM"], 1)), doc=__doc__,
        unmodeled="issue slots: nine shared loads for every eight FFMA",
    )
]
