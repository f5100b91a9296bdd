"""tc2: Hopper wgmma with TMA-fed shared memory.

What changed against tc1: TMA loads a 4-deep ring of 128-byte-swizzled tiles guarded by mbarriers; one warpgroup-wide
wgmma m64n128 reads both operands from shared memory (TF32 B through the transpose pre-pass). Why: Hopper's mma.sync
runs at about half the wgmma rate and ldmatrix spends issue slots. Predicted gain: 1.5-2× tc1, still below cuBLAS
(every k-tile drains its wgmma at __syncthreads). Design and edges: docs/tensor_cores/tc1_tc3.md.
"""
from gemmlab.kernels.cuda.launch.kernel import output_params
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import TC_PRECISIONS, WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 128, "BN": 128, "STAGES": 4}

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc2_wgmma_tma_{prec}", level=2, precision=prec, kind="plain",
        title=f"{prec} wgmma m64n128 from TMA-loaded 128B-swizzled smem, 4-stage mbarrier ring",
        source="tc2_wgmma_tma.cu", entry="tc2_wgmma_tma", params={**PARAMS, **output_params(prec)},
        constraints=lambda p: wgmma_constraints(p, specialized=False),
        traffic_model=wgmma_traffic(prec, PARAMS["BM"], PARAMS["BN"]), doc=__doc__,
        unmodeled="latency: every k-tile drains its wgmma and meets at __syncthreads, and each CTA (one tile) fills "
                  "its ring and stores C with the tensor cores idle",
    )
    for prec in TC_PRECISIONS
]
