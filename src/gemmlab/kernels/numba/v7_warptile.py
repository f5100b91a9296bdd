"""V7 warp tiling in numba-cuda: each warp owns a 64×32 tile; each lane 2×2 sub-tiles of 4×4 (v6 folded in).
Changed against v5: the thread-to-output map and a padded A tile. Why: v5's B reads and A stores conflict in shared
memory. Predicted gain: about 10% over v5. docs/numba.md#v7_warptile
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4)

SPECS = [level("v7_warptile", 7, "warp tiling: 64×32 warp tiles, 2×2 sub-tiles of 4×4 per lane", TILING,
               __doc__, launch_bounds=(256, 2),
               unmodeled="latency: each k tile's global loads are waited for before its FFMAs (load, barrier, compute, "
                         "barrier)")]
