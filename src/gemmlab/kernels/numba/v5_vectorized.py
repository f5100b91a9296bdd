"""V5 vectorized memory access in Python (numba-cuda): 16-byte global loads and stores, 16-byte shared loads.

What changed against v4: each thread loads its part of the A and B tiles as one float4 each
(``ld.global.nc.v4.f32``), stores the B float4 to shared memory in one 16-byte store, transposes the A float4
into a column-major A tile with four 4-byte stores, reads its 8 A and 8 B values as 16-byte shared loads, and
writes C as float4. The shared layout is v4's (no padding: v6 is the bank-conflict level). numba has no float4
type and its array indexing cannot emit a vector load; the loads and stores are numba intrinsics in
numba/_codegen.py that emit the PTX vector instructions. Problems with K or N not a multiple of 4 (rows not
16-byte aligned) run the same template with 4-byte global accesses.

Why: v4's main loop spent most of its 181 non-FFMA instructions on the 8 scalar global loads' 64-bit address
and guard arithmetic; with two vector loads the loop is 512 FFMA in 596 instructions (86%).

Predicted gain: 10-20% over v4 (the instruction count of the loop falls 14%).

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=16, WN=128, WMITER=1, WNITER=1, TM=8, TN=8, VEC=4, SVEC=True, APAD=0)

SPECS = [level("v5_vectorized", 5, "v4 with 16-byte global and shared accesses", TILING, __doc__,
               launch_bounds=(256, 2),
               unmodeled="bank conflicts and latency: no padding, so B's reads and A's transposing stores "
                         "conflict (v7's target), and each k tile's global loads are waited for")]
