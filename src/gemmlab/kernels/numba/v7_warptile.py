"""V7 warp tiling in Python (numba-cuda): each warp owns a 64×32 tile; each lane 2×2 sub-tiles of 4×4.

What changed against v5 (v6, the CUDA C bank-conflict level, is folded in: its padding and strided quads are
what a warp tile gives here): the thread-to-output map and the shared layout. In v5 a warp's 32 lanes read B
at 16 addresses 32 bytes apart (each lane's 8 columns are contiguous), several shared-memory wavefronts per
16-byte load, and the transposing A stores collide 2-way. Here the block's 8 warps each own a WM×WN = 64×32
warp tile, split into WMITER×WNITER = 2×2 sub-tiles of 32×16; a lane holds 4×4 results in each sub-tile (8×8 in
all, as before), so a warp's 16-byte shared loads read 128 (A) and 64 (B) contiguous bytes, one wavefront
each; the transposed A tile's rows are padded by 4 floats so the transposing stores hit distinct banks.

Predicted gain: about 10% over v5, from relieving the shared-memory pipe.

Measured: docs/numba.md (with why it fell short of the prediction), results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4)

SPECS = [level("v7_warptile", 7, "warp tiling: 64×32 warp tiles, 2×2 sub-tiles of 4×4 per lane", TILING,
               __doc__, launch_bounds=(256, 2),
               unmodeled="latency: each k tile's global loads are waited for before its FFMAs (load, barrier, compute, "
                         "barrier)")]
