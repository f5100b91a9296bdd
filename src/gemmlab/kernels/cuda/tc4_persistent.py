"""tc4: persistent grid, tile scheduler, clusters with TMA multicast.

What changed against tc3: one CTA per SM loops over the output tiles in grouped order (GROUP_M cluster-rows at
a time, column by column, so the tiles in flight share A rows and B columns in L2), and the mbarrier ring runs
on across tiles: the producer loads the next tile's k-tiles while the consumers store the last one, and no
launch tail is paid per tile. With CM=2, CTAs come in clusters of 2 stacked along M that need the same B tile;
each loads half of B's boxes and multicasts them to both (consumers release a slot on both CTAs' `empty`
barriers), so B crosses L2->SM once per cluster. The grid is as many clusters as the occupancy query says fit
at once, never a partial second wave. Why: tc3 pays a launch tail and an un-overlapped epilogue per tile and
reads every B tile once per CTA. Predicted gain: 5-10% over tc3, to about 1.0× cuBLAS at the same precision.

The cluster size is set per precision (CLUSTER): BF16 runs CM=1 and TF32 CM=2, the faster setting of each in a
comparison outside results/h200. Measured (results/h200/tensor_cores.json, cold L2, ratios to cuBLAS at the same
precision from interleaved launches): BF16 0.98× at 4096³ and 1.02× at 8192³; TF32 0.91× and 0.96×, its Bᵀ pre-pass
included. A sweep of GROUP_M (4, 16), CM=2, 3 stages and a 256×128 tile, outside results/, stayed within the
spread of these defaults or below.
"""
from gemmlab.kernels.cuda.tc_common import WgmmaKernel, wgmma_constraints, wgmma_traffic

BASE = {"BM": 128, "BN": 256, "STAGES": 4, "GROUP_M": 8, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232, "EPI_TMA": 1}
CLUSTER = {"bf16": 1, "tf32": 2}  # chosen by measurement, see above

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc4_persistent_{prec}", level=4, precision=prec, kind="persistent",
        title=f"{prec} persistent warp-specialized wgmma m64n256, grouped tile order"
              + (", 2-CTA clusters with B multicast" if CLUSTER[prec] > 1 else ", clusters off (CM=1 measured faster)"),
        source="tc4_persistent.cu", entry="tc4_persistent", params={**BASE, "CM": CLUSTER[prec]},
        constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic(prec, BASE["BM"], BASE["BN"], CLUSTER[prec]), doc=__doc__,
    )
    for prec in ("bf16", "tf32")
]
