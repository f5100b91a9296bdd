"""V10 register prefetch in numba-cuda, the fastest numba level (cuda/v10_register_prefetch: its CUDA C twin).
Changed against v7: two shared stages, tile t+1 loaded into registers while tile t's FFMAs run, one barrier per k
tile. Why: v8's ring transposes A by 4-byte copies and spills. Predicted gain: ~10% over v7. docs/numba.md (v10)
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4,
                STAGES=2)

SPECS = [level("v10_register_prefetch", 10, "v7 with two shared stages and register prefetch of the next tile",
               TILING, __doc__, launch_bounds=(256, 2),
               unmodeled="issue slots: the loop is 512 FFMA among 609 instructions")]
