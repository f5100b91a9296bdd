"""gluon/tc3: cuda/tc3's idea in Gluon: warp specialization, a TMA producer and wgmma consumers.

Against gluon/tc2: a producer warp (PRODUCER_REGS) fills the ring, waiting on each slot's `empty` mbarrier; two
consumer warpgroups (CONSUMER_REGS) run m64n256 on a 128×256 tile, one wgmma in flight, releasing the slot before it.
Why: no CTA-wide drain per k-tile. Predicted: about tc3's time, 1.3× gluon/tc2. Beside tc3: docs/gluon.md.
"""
from gemmlab.kernels.gluon.launch.kernel import GluonKernel

PARAMS = {"BM": 128, "BN": 256, "STAGES": 4, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "OUT_BF16": 1}

VARIES = ("BM", "BN", "STAGES", "PRODUCER_REGS", "CONSUMER_REGS")

SPECS = [
    GluonKernel(
        name="gluon/tc3_warp_specialized_bf16", level=3, precision="bf16",
        title="bf16 Gluon producer warp (TMA) + 2 consumer warpgroups (warpgroup_mma m64n256), register split",
        source="tc3_warp_specialized", entry="tc3_warp_specialized", params=PARAMS, producer_warps=1, varies=VARIES,
        doc=__doc__,
        unmodeled="latency: each CTA (one tile) fills its ring and stores C with the tensor cores idle; a persistent "
                  "grid would overlap both with other tiles",
    )
]
