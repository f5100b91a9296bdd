"""gluon/tc2: cuda/tc2's idea in Gluon: Hopper wgmma fed by a TMA + mbarrier ring of shared-memory slots.

What it restates: each CTA computes one BM×BN tile of C; TMA copies A's and B's k-tiles into a STAGES-deep ring of
128-byte-swizzled slots, an mbarrier per slot says when a slot's bytes have landed, and BM/64 warpgroups each run
warpgroup_mma on their 64 rows of the slot. As in tc2, every k-tile drains its wgmma and the CTA meets at a barrier
before the slot is refilled, so the tensor cores idle once per k-tile; C leaves through shared memory and a TMA store.
What Gluon does that tc2 spells out: the accumulator's register layout and the wgmma descriptors follow from one
NVMMADistributedLayout; the swizzled shared layouts from the descriptors; the copies are issued by one elected thread;
registers are allocated by the compiler. Predicted: about tc2's time, the same schedule on the same instructions.
Side by side with tc2: docs/gluon.md.
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
