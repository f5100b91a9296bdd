"""tc7: block-scaled FP8 (DeepGEMM's recipe), the tensor cores' partial sums promoted into FP32 every 128 of K.

What changed against tc4_persistent_fp8: the scales are FP32 per 1×128 of A (a row, 128 of K) and per 128×128
block of B, not per tensor, so they change every k-tile and cannot wait for the epilogue. Each consumer warpgroup
runs a k-tile's 4 wgmma m64n128k32 from zero into a second accumulator set, waits for them, frees the ring slot and
adds them, times its two rows' A scales and the tile's B scale, into the FP32 accumulators with FFMA (64 per thread
per k-tile). The next k-tile's three scales are loaded while the current one's wgmma runs. Same producer, ring,
grouped snake order, 2-CTA clusters with B multicast and BF16 TMA-store epilogue as tc4.
Why: FP8 recipes scale finely so that one outlier does not flatten a whole tensor's resolution, and the tensor
cores' FP8 accumulation keeps about 14 bits, which over a long K loses what the fine scales bought; promoting every
128 of K bounds each FP8 sum to 128 products. The tile is 128×128 because the promotion needs two accumulator sets
of BN/2 registers per thread beside each other: at BN=256 they are 256 registers, more than the 232 a consumer
thread gets; at 192 they are 192 of 232, and a tile would straddle two 128-wide B scale blocks (a scale chosen per
column group); at 128 they are 128, and a tile is exactly one B scale block, one scale per k-tile. 6 stages of 32 KB
fill shared memory beside the staging boxes.
Predicted gain (before measuring): the promotion's FFMA and each warpgroup's wait per k-tile hide under the other
warpgroup's wgmma, but the 128-wide tile reads more shared memory per multiply-add than tc4's 256-wide one (A is
read again for every 128 columns, and both warpgroups read B): about 160 bytes per clock at the FP8 rate against
128, the rate tc4 already runs at. So 0.80-0.90x tc4_persistent_fp8's TFLOPS, and 0.85-1.0x torch's
blockwise scaled matmul (cuBLASLt), which pays the same promotion.
"""
from gemmlab.kernels.cuda.tc_common import WgmmaKernel, fp8_constraints, wgmma_constraints, wgmma_traffic

PARAMS = {"BM": 128, "BN": 128, "STAGES": 6, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "EPI_TMA": 1,
          "CM": 2, "A_E5M2": 0, "B_E5M2": 0, "OUT_BF16": 1}

SPECS = [
    WgmmaKernel(
        name="cuda/tc7_block_scaled_fp8", level=7, precision="fp8_block", kind="persistent",
        title="fp8 e4m3 with FP32 scales per 1x128 of A and 128x128 of B, wgmma m64n128k32 promoted into FP32 every "
              "128 of K, tc4's persistent clustered skeleton, BF16 C",
        source="tc7_block_scaled_fp8.cu", entry="tc7_block_scaled_fp8", params=dict(PARAMS),
        constraints=lambda p: wgmma_constraints(p, specialized=True) + fp8_constraints(p, block_scaled=True),
        traffic_model=wgmma_traffic("fp8_block", PARAMS["BM"], PARAMS["BN"], PARAMS["CM"], block_scales=True),
        doc=__doc__,
    )
]
