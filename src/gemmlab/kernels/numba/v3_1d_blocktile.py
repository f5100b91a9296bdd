"""V3 1D block tiling in numba-cuda. Changed against v2: 64×64×8 tile, 8 results per thread (one shared load of B per
8 FFMA), generated kernel text. Why: v2 is shared-load bound. Predicted gain: 2-3× v2. docs/numba.md#v3_1d_blocktile
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

# 64×64 block tile, BK=8; a warp is one row of 32 threads (WM=TM=8 rows, WN=32 columns), 16 warps.
TILING = Tiling(BM=64, BN=64, BK=8, WM=8, WN=32, WMITER=1, WNITER=1, TM=8, TN=1)

SPECS = [level("v3_1d_blocktile", 3, "1D block tiling: 64×64×8 tile, 8 results per thread", TILING, __doc__,
               unmodeled="issue slots: nine shared loads for every eight FFMA")]
