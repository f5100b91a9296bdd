"""V8 cp.async pipeline in numba-cuda: tiles flow global -> shared through a ring of 3 buffers (inline-PTX cp.async).
Changed against v7: two tiles in flight, one barrier per k tile. Why: v7 waits for global memory once per k tile.
Predicted gain: 1.1-1.3× v7. docs/numba.md#v8_cp_async
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4,
                STAGES=3, ASYNC=True)

SPECS = [level("v8_cp_async", 8, "v7 with a 3-stage cp.async ring: two k tiles in flight, one barrier per tile",
               TILING, __doc__, launch_bounds=(256, 2),
               unmodeled="issue slots: A arrives by 4-byte cp.async with 64-bit address selects, 512 FFMA among 675 "
                         "instructions, and 12 bytes spill")]
