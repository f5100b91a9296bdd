"""V4 2D block tiling in Python (numba-cuda): each thread computes an 8×8 block of C in registers.

What changed against v3: a 128×128 block tile (BK=8) and 256 threads that each hold TM×TN = 8×8 accumulators.
Per k step a thread loads 8 A values and 8 B values from shared memory and does 64 multiply-adds: 4 FFMA per
shared load instead of v3's 8/9 per 1, and twice the reuse of each global load (tile 128 vs 64).

How it is written, and why that matters in numba: the same algorithm written with ``cuda.local.array``
accumulators compiled to a k loop that was not unrolled (7 TFLOPS, DEVICE.md); written with scalar accumulators
but numba array indexing it reached 19.9 TFLOPS, with 64-bit index arithmetic, wraparound selects and shape
loads around the accesses. Here the kernel text is generated (numba/_codegen.py): 64 scalar accumulators, the
BK×TM×TN loops unrolled in the source, and flat-offset load/store intrinsics. ptxas then finds the adjacent
shared loads itself and issues them as LDS.128; the main loop is 512 FFMA in 693 instructions (74%), 0 spills.
Global accesses stay 4 bytes wide, as in the CUDA C twin.

Predicted gain: parity with the CUDA C twin of this level (29.7 TFLOPS measured for the same algorithm), about
1.5× v3. Measured (results/h200/fp32.json, 4096³, cold L2): 28.4 TFLOPS, 1.66× v3, 0.56× cuBLAS FP32; the CUDA C
twin 20.5. The same template with numba array indexing instead of the intrinsics spills 1016 bytes at 128 registers.
"""
from gemmlab.kernels.numba._codegen import Tiling, level

# A warp covers 2 rows of 16 threads: WM=16 (2×TM), WN=128 (16×TN).
TILING = Tiling(BM=128, BN=128, BK=8, WM=16, WN=128, WMITER=1, WNITER=1, TM=8, TN=8)

SPECS = [level("v4_2d_blocktile", 4, "2D block tiling: 128×128×8 tile, 8×8 results per thread", TILING, __doc__,
               launch_bounds=(256, 2),
               unmodeled="issue slots: the main loop is 512 FFMA among 693 instructions, the rest mostly the "
                         "scalar global loads' address and guard arithmetic")]
