"""tc3: warp specialization.

What changed against tc2: a third warpgroup becomes the producer. It drops to 40 registers (setmaxnreg.dec) and
one of its threads streams k-tiles by TMA, waiting per slot on an `empty` mbarrier; the two consumer
warpgroups rise to 232 registers (setmaxnreg.inc), which pays for a 128×256 tile (m64n256 per warpgroup, 128
FP32 accumulators per thread), and they keep one wgmma group in flight (wait_group 1) while releasing the
previous slot. Why: tc2's per-k-tile __syncthreads and wgmma drain leave the tensor cores idle between k-tiles,
and a 128×256 tile stages (BM+BN)/(BM·BN), three quarters of 128×128's shared-memory bytes per FLOP.
Predicted gain: 1.3× over tc2, to about 0.9× cuBLAS BF16; what is left is the launch tail of one-tile-per-CTA
grids and the epilogue that no load overlaps.
Operand layouts and edges as in tc2 (TF32 B through the transpose pre-pass).

Measured: docs/tensor_cores.md, results/h200/tensor_cores.json.
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import TC_PRECISIONS, WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 128, "BN": 256, "STAGES": 4, "PRODUCER_REGS": 40, "CONSUMER_REGS": 232}

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc3_warp_specialized_{prec}", level=3, precision=prec, kind="specialized",
        title=f"{prec} producer warpgroup (TMA) + 2 consumer warpgroups (wgmma m64n256), setmaxnreg",
        source="tc3_warp_specialized.cu", entry="tc3_warp_specialized", params=dict(PARAMS),
        constraints=lambda p: wgmma_constraints(p, specialized=True),
        traffic_model=wgmma_traffic(prec, PARAMS["BM"], PARAMS["BN"]), doc=__doc__,
        unmodeled="latency: each CTA (one tile) fills its ring and stores C from registers with the tensor cores "
                  "idle; tc4's persistent grid overlaps both with other tiles",
    )
    for prec in TC_PRECISIONS
]
