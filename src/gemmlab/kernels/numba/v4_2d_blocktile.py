"""V4 2D block tiling in Python (numba-cuda): each thread computes an 8×8 block of C in registers.

What changed against v3: a 128×128 block tile (BK=8) and 256 threads that each hold TM×TN = 8×8 accumulators.
Per k step a thread loads 8 A values and 8 B values from shared memory and does 64 multiply-adds: 4 FFMA per
shared load instead of v3's 8/9 per 1, and twice the reuse of each global load (tile 128 vs 64).

How it is written, and why that matters in numba: with ``cuda.local.array`` accumulators NVVM does not fully
unroll the k loop and the accumulators live in local memory; with scalar accumulators but numba array indexing
every access carries 64-bit index arithmetic, a wraparound select and shape loads, and the template spills 1016
bytes at 128 registers. Here the kernel text is generated (numba/_codegen.py): 64 scalar accumulators, the
BK×TM×TN loops unrolled in the source, and flat-offset load/store intrinsics. ptxas then finds the adjacent
shared loads itself, issues them as LDS.128 and spills nothing. ``launch_bounds=(256, 2)`` caps the kernel at
128 registers so two blocks fit per SM. Global accesses stay 4 bytes wide, as in the CUDA C twin.

Predicted gain: about 1.5× v3, parity with CUDA C on the same algorithm (docs/numba.md has the CUDA C figure it
was predicted against).

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

# A warp covers 2 rows of 16 threads: WM=16 (2×TM), WN=128 (16×TN).
TILING = Tiling(BM=128, BN=128, BK=8, WM=16, WN=128, WMITER=1, WNITER=1, TM=8, TN=8)

SPECS = [level("v4_2d_blocktile", 4, "2D block tiling: 128×128×8 tile, 8×8 results per thread", TILING, __doc__,
               launch_bounds=(256, 2),
               unmodeled="issue slots: the main loop is 512 FFMA among 693 instructions, the rest mostly the "
                         "scalar global loads' address and guard arithmetic")]
