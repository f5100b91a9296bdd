"""gluon/tc8: cuda/tc8's block-scaled FP8 in Gluon: each k-tile's wgmma promoted into FP32 with its scales.

Against gluon/tc4_persistent_fp8: FP32 scales per 1×128 of A and 128×128 of B change every k-tile, so a consumer
warpgroup runs a k-tile's wgmma m64n128k32 from zero (use_acc=False), waits, gives the slot back and adds the
products times scale_a[row]·scale_b[block] into its FP32 accumulator; tc8's 192×128 tile (one B scale a k-tile) and
three consumer warpgroups at 160 registers, each a partition of its own so that one promotes while another's wgmma
run. Unlike tc8: scales loaded from global memory a k-tile ahead, not a TMA ring. Why: per-block scales keep FP8's
error at BF16 rounding's. Predicted: 0.9-1.0x cuda/tc8's TFLOPS (the scales' loads, two partition barriers a k-tile),
so under cuBLASLt's blockwise FP8 by tc8's gap at 4096^3 and 8192^3, or a few percent more. Beside tc8: docs/gluon.md.
"""
from gemmlab.kernels.cuda.tc.tc8_block_scaled_fp8 import SHORT_TILE
from gemmlab.kernels.gluon.launch.kernel import GluonKernel

# cuda/tc8's tile, ring, tile order and register split; BN divides 128 (GluonKernel.config_error)
PARAMS = {"BM": 192, "BN": 128, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 32, "CONSUMER_REGS": 160, "OUT_BF16": 1}

VARIES = ("BM", "BN", "STAGES", "GROUP_M", "PRODUCER_REGS", "CONSUMER_REGS")

SPECS = [
    GluonKernel(
        name="gluon/tc8_block_scaled_fp8", level=8, precision="fp8_block",
        title="fp8 e4m3 with FP32 scales per 1x128 of A and 128x128 of B, Gluon wgmma m64n128k32 promoted into FP32 "
              "every 128 of K, three consumer warpgroup partitions on 192x128 tiles, gluon/tc4's walk, BF16 C",
        source="tc8_block_scaled_fp8", entry="tc8_block_scaled_fp8", params=PARAMS, producer_warps=1,
        varies=VARIES, persistent=True, warpgroup_partitions=True,
        # FP32 C's 192x128 staging tile takes a ring slot's bytes
        out_params={"float32": {"STAGES": 3}, "bfloat16": {"STAGES": PARAMS["STAGES"]}}, doc=__doc__,
        short_tile=SHORT_TILE,
        unmodeled="latency: each k-tile waits for its wgmma and promotes on the CUDA cores, and each tile's epilogue "
                  "keeps its warpgroup off the tensor cores",
    )
]
