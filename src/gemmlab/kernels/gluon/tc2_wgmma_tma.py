"""gluon/tc2: cuda/tc2's idea in Gluon: warpgroup_mma fed by a TMA + mbarrier ring of shared-memory slots.

Each CTA computes one BM×BN tile; TMA fills a STAGES-deep ring of swizzled A and B k-tiles, an mbarrier per slot says
when its bytes have landed, and BM/64 warpgroups run m64n128 on their rows; as in tc2, each k-tile's wgmma is drained
and the CTA meets at a barrier before the slot is refilled. Predicted: about tc2's time. Beside tc2: docs/gluon.md.
"""
from gemmlab.kernels.gluon.launch.kernel import GluonKernel

PARAMS = {"BM": 128, "BN": 128, "STAGES": 4, "OUT_BF16": 1}

SPECS = [
    GluonKernel(
        name="gluon/tc2_wgmma_tma_bf16", level=2, precision="bf16",
        title="bf16 Gluon warpgroup_mma m64n128 from a 4-stage TMA + mbarrier ring (cuda/tc2's schedule)",
        source="tc2_wgmma_tma", entry="tc2_wgmma_tma", params=PARAMS, doc=__doc__,
        unmodeled="latency: every k-tile drains its wgmma and meets at a CTA barrier, and each CTA (one tile) fills "
                  "its ring and stores C with the tensor cores idle",
    )
]
