"""gluon/tc4: cuda/tc4's persistent grid and grouped tile order in Gluon, without its clusters.

Against gluon/tc3: one CTA per SM walks the tiles GROUP_M rows at a time in snake order, the ring running on across
tiles so the producer loads the next tile while the consumers store this one; C leaves in two parts through a staging
tile and TMA; a 128x192 tile where it fills the last wave better (NARROW_BN, tc4's host rule, a second binary). Unlike
tc4: no 2-CTA cluster multicasting B. FP32 C's staging tile costs a ring slot.
FP8 (e4m3, B as N×K, per-tensor scales in the epilogue): tc4_persistent_fp8's idea, the same walk. Predicted: 5-10%
over gluon/tc3, short of cuda/tc4 by B's multicast; FP8 1.7× BF16. Beside tc4: docs/gluon.md.
"""
from gemmlab.kernels.gluon.launch.kernel import GluonKernel

PARAMS = {"BM": 128, "BN": 256, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "OUT_BF16": 1,
          "NARROW_BN": 192}

VARIES = ("BM", "BN", "NARROW_BN", "STAGES", "GROUP_M", "PRODUCER_REGS", "CONSUMER_REGS")

TITLES = {
    "bf16": "bf16 Gluon persistent producer warp + 2 wgmma consumer warpgroups, grouped snake tile order, TMA-store "
            "epilogue",
    "fp8": "fp8 e4m3 gluon/tc4: wgmma m64n128k32 on N×K B, per-tensor FP32 scales and BF16 C in the epilogue",
}

SPECS = [
    GluonKernel(
        name=f"gluon/tc4_persistent_{prec}", level=4, precision=prec, title=title, source="tc4_persistent",
        entry="tc4_persistent_fp8" if prec == "fp8" else "tc4_persistent", params=PARAMS, producer_warps=1,
        varies=VARIES, persistent=True, out_params={"float32": {"STAGES": 3}, "bfloat16": {"STAGES": PARAMS["STAGES"]}},
        doc=__doc__, unmodeled="latency: each tile's epilogue keeps the consumer warpgroups off the tensor cores",
    )
    for prec, title in TITLES.items()
]
