"""gluon/tc3: cuda/tc3's idea in Gluon: warp specialization, a TMA producer and wgmma consumers.

What changed against gluon/tc2: gl.warp_specialize forks a producer warp, which gives its warpgroup's registers back
(PRODUCER_REGS) and streams k-tiles into the ring, waiting on each slot's `empty` mbarrier; the two consumer
warpgroups take the registers left (CONSUMER_REGS, through the kernel's register limit), run m64n256 on a 128×256
tile, keep one wgmma group in flight and release the slot before it. Why: no CTA-wide barrier and drain per k-tile,
and a quarter fewer staged bytes per FLOP. What Gluon does that tc3 spells out: the partitions' warp ranges and
setmaxnreg, the barrier inits' fences, an arrival per partition. Predicted: about tc3's time. Side by side with tc3:
docs/gluon.md.
"""
from gemmlab.kernels.gluon.launch.kernel import GluonKernel

PARAMS = {"BM": 128, "BN": 256, "STAGES": 4, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "OUT_BF16": 1}

SPECS = [
    GluonKernel(
        name="gluon/tc3_warp_specialized_bf16", level=3, precision="bf16",
        title="bf16 Gluon producer warp (TMA) + 2 consumer warpgroups (warpgroup_mma m64n256), register split",
        source="tc3_warp_specialized", entry="tc3_warp_specialized", params=PARAMS, producer_warps=1, doc=__doc__,
        unmodeled="latency: each CTA (one tile) fills its ring and stores C with the tensor cores idle; a persistent "
                  "grid would overlap both with other tiles",
    )
]
