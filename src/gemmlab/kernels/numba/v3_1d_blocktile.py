"""V3 1D block tiling in Python (numba-cuda): each thread computes a column of TM=8 results.

What changed against v2: a 64×64 block tile stepping K by BK=8, 512 threads, and each thread keeps TM=8
accumulators for 8 rows of one column. Per k step a thread loads one B value from shared memory and reuses it
for 8 multiply-adds (v2 spent two shared loads per multiply-add), so the kernel leaves the shared-memory-bound
regime of v2.

How it is written: the kernel text is generated (numba/_codegen.py) with the tile sizes as literals, the 8
accumulators as scalar locals and the BK and TM loops unrolled in the source, and every access is a
flat-offset load or store intrinsic, not numba array indexing (no wraparound selects, no shape loads, no
64-bit index math in the inner loop). Global accesses are 4 bytes wide, as in the CUDA C twin.

Predicted gain: about 2-3× v2 at 4096³ (siboehm's ladder gained 2.8× at this step on A100), 15-20 TFLOPS.

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

# 64×64 block tile, BK=8; a warp is one row of 32 threads (WM=TM=8 rows, WN=32 columns), 16 warps.
TILING = Tiling(BM=64, BN=64, BK=8, WM=8, WN=32, WMITER=1, WNITER=1, TM=8, TN=1)

SPECS = [level("v3_1d_blocktile", 3, "1D block tiling: 64×64×8 tile, 8 results per thread", TILING, __doc__,
               unmodeled="issue slots: nine shared loads for every eight FFMA")]
