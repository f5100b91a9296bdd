"""tc3: warp specialization.

What changed against tc2: a producer warpgroup (setmaxnreg.dec 40) streams k-tiles by TMA; two consumer warpgroups
(setmaxnreg.inc 232) run m64n256 on a 128×256 tile, one wgmma group in flight. Why: no block-wide barrier and drain
per k-tile, and a quarter fewer staged bytes per FLOP. Predicted gain: 1.3× tc2, about 0.9× cuBLAS BF16.
Design: docs/tensor_cores/tc1_tc3.md.
"""
from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import TC_PRECISIONS, WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 128, "BN": 256, "STAGES": 4, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232}

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc3_warp_specialized_{prec}", level=3, precision=prec, kind="specialized",
        title=f"{prec} producer warpgroup (TMA) + 2 consumer warpgroups (wgmma m64n256), setmaxnreg",
        source="tc3_warp_specialized.cu", entry="tc3_warp_specialized", params={**PARAMS, **output_params(prec)},
        constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic(prec, PARAMS["BM"], PARAMS["BN"]), doc=__doc__,
        unmodeled="latency: each CTA (one tile) fills its ring and stores C from registers with the tensor cores "
                  "idle; tc4's persistent grid overlaps both with other tiles",
    )
    for prec in TC_PRECISIONS
]
