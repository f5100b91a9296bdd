"""V8 cp.async pipeline in Python (numba-cuda): tiles flow global -> shared through a ring of 3 buffers.

What changed against v7: the same 128×128×8 block tile, 64×32 warp tiles and 8×8 per lane, but the tiles are
copied by ``cp.async`` (LDGSTS) into a ring of STAGES = 3 shared buffers. The copies of tile t+2 are issued
before tile t is computed and land while it runs; they bypass the registers (no staging registers, no stall
between a global load and its shared store), and one barrier per k tile replaces v7's two. A is transposed on
the way in by 4-byte copies, B moves in 16-byte copies when its rows are 16-byte aligned (4-byte copies
otherwise). Edges are zero-filled through the copies' src-size operand, so ragged shapes take the same path.

How, in numba: numba has no cp.async. ``cp4``/``cp16``/``cp_commit``/``cp_waitN`` in numba/_codegen.py are
numba intrinsics that emit the PTX instruction as inline assembly (``cp.async.ca.shared.global [dst], [src],
4, src_size``), with the shared destination cast to the shared window; ptxas turns them into LDGSTS. The
transposing copies of A cost 4 LDGSTS per thread per tile with 64-bit address selects around each (the loop is
512 FFMA in 675 instructions), and the kernel spills 12 bytes at 128 registers; v10_register_prefetch stages
through registers instead.

Why: in v7 every warp of a block waits for global memory once per k tile, and with two blocks per SM there is
little other work to hide it; the ring keeps two tiles in flight.

Predicted gain: 1.1-1.3× v7.

Measured: docs/numba.md, results/h200/fp32.json.
"""
from gemmlab.kernels.numba.codegen.level import level
from gemmlab.kernels.numba.codegen.tiling import Tiling

TILING = Tiling(BM=128, BN=128, BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, VEC=4, SVEC=True, APAD=4,
                STAGES=3, ASYNC=True)

SPECS = [level("v8_cp_async", 8, "v7 with a 3-stage cp.async ring: two k tiles in flight, one barrier per tile",
               TILING, __doc__, launch_bounds=(256, 2),
               unmodeled="issue slots: A arrives by 4-byte cp.async with 64-bit address selects, 512 FFMA among 675 "
                         "instructions, and 12 bytes spill")]
