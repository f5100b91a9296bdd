"""V5 vectorized in numba-cuda: 16-byte global and shared accesses through PTX intrinsics, A transposed.
Changed against v4: float4 loads and stores. Why: v4's loop spent most of its non-FFMA instructions on the scalar
loads' address arithmetic. Predicted gain: 10-20% over v4. docs/numba.md#v5_vectorized
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=16, WN=128, WMITER=1, WNITER=1, TM=8, TN=8, VEC=4, SVEC=True, APAD=0)

SPECS = [level("v5_vectorized", 5, "v4 with 16-byte global and shared accesses", TILING, __doc__,
               launch_bounds=(256, 2),
               unmodeled="bank conflicts and latency: no padding, so B's reads and A's transposing stores "
                         "conflict (v7's target), and each k tile's global loads are waited for")]
