"""V2 shared-memory tiling: the seeds' second kernel, with its out-of-bounds store fixed.

What changed against V1: each 32×32 block loads a 32×32 tile of A and of B into shared memory once per K step,
and all 1024 threads reuse each staged value 32 times. Global loads drop by the tile size: A is read N/32
times and B M/32 times instead of N and M times, so the modeled intensity rises from 0.25 to
2·32·32·32 / ((32+32)·32·4) = 8 FLOP/byte (the seeds' formula). Predicted gain: well above V1, yet each
FFMA still needs two shared-memory loads, so shared-memory bandwidth, not DRAM, becomes the limit.

The seeds' version stores when `row < M || col < N` and so writes past the end of C when M or N is not a
multiple of 32; this one stores only when both hold, and stages zeros for out-of-range elements.

Variant (bench --variant, gemmlab chapter): TILE=16, 16×16 tiles in 16×16 blocks: a quarter of the threads per
block and half the reuse (intensity 4 FLOP/byte in the seeds' count).

Measured: docs/fp32_ladder.md (timings, counters), docs/seeds.md; results/h200/fp32.json.
"""
from gemmlab.kernels.cuda.launch.kernel import CudaKernel
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic


def _geometry(problem, p):
    t = p["TILE"]
    return Geometry(grid=(ceil_div(problem.n, t), ceil_div(problem.m, t), 1), block=(t, t, 1))


def _constraints(p):
    t = p["TILE"]
    if t < 1:
        return [f"TILE={t}: a tile is at least 1×1"]
    errors = []
    if t * t > 1024:
        errors.append(f"TILE={t} needs {t * t} threads per block, past the 1024 limit")
    if 2 * t * t * 4 > 48 * 1024:
        errors.append(f"TILE={t} needs {2 * t * t * 4} bytes of static shared memory, past 48 KiB")
    return errors


def _traffic(problem, sm_count=SM_COUNT, params=None):
    t = params["TILE"]
    return tiled_traffic(problem, t, t, warp=(max(1, 32 // t), t))  # a warp: 32 // TILE rows of the tile


SPECS = [
    CudaKernel(
        name="cuda/v2_smem", level=2, precision="fp32", title="shared-memory tiling, 32×32 tiles",
        source="v2_smem.cu", entry="v2_smem", params={"TILE": 32},
        geometry=_geometry, constraints=_constraints,
        traffic_model=_traffic, varies=("TILE",),
        doc=__doc__, unmodeled="issue slots and barriers: two shared loads per FFMA, two barriers per 32-wide k tile",
    )
]
