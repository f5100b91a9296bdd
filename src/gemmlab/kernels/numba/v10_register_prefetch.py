"""V10 register prefetch in Python (numba-cuda): the fastest numba level.

What changed against v7 (and instead of v8's cp.async ring): two shared-memory stages. Each iteration first
issues the 16-byte global loads of tile t+1 into registers (two ``ld.global.nc.v4.f32`` per thread), then runs
the 512 FFMA of tile t from one stage, then stores the prefetched registers into the other stage (B as one
16-byte store, A transposed as four 4-byte stores) and meets one barrier. The load latency hides behind the
math, and there is one barrier per k tile instead of v7's two. Same tiles as v7 and v8_cp_async: 128×128×8,
64×32 warp tiles, 8×8 per lane.

Like v8_cp_async it keeps the next tile in flight while the current one is computed, but it stages through
registers instead of cp.async; cuda/v10_register_prefetch is its CUDA C twin. Why registers: the loop is 512
FFMA in 609 SASS instructions with no spills, while the cp.async ring needs 4-byte copies to transpose A (4
LDGSTS with their 64-bit address selects per thread per tile) and spills 12 bytes at 128 registers.

Predicted gain: about 10% over v7.

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4,
                STAGES=2)

SPECS = [level("v10_register_prefetch", 10, "v7 with two shared stages and register prefetch of the next tile",
               TILING, __doc__, launch_bounds=(256, 2),
               unmodeled="issue slots: the loop is 512 FFMA among 609 instructions")]
