"""What the Gluon levels' device code shares: the accumulator's register layout for a BM×BN tile."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.constexpr_function
def accumulator_layout(BM, BN, num_warps, operand_bits=16):
    """wgmma's accumulator layout for a BM×BN tile over ``num_warps`` warps: warps stacked along M, 16 rows each (a
    warpgroup owns 64 rows, as cuda/tc2's two warpgroups do), one wgmma as wide as the tile (n = BN, at most 256)
    and 32 bytes of K deep (16 BF16, 32 FP8)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, BN, 256 // operand_bits])
