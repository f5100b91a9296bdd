"""tc2: Hopper wgmma with TMA-fed shared memory.

What changed against tc1: operands arrive by TMA (cp.async.bulk.tensor: one instruction per box, issued by one
thread, no address arithmetic in the other 255) into a 4-deep ring of 128-byte-swizzled tiles, each slot
guarded by an mbarrier that counts the bytes landed; the math is wgmma, one warpgroup-wide m64n128k16 (bf16) or
m64n128k8 (tf32) instruction reading both operands straight from shared memory, instead of 8 warps of
mma.sync fed by ldmatrix. Why: mma.sync on Hopper runs at about half the wgmma rate, and ldmatrix spends
issue slots and registers the tensor cores should have. Predicted gain: about 1.5-2× over tc1; still below
cuBLAS, since all warpgroups drain their wgmma and meet at __syncthreads every k-tile.

tf32 wgmma reads K-major shared-memory operands only, so TF32 B goes through a transpose pre-pass
(tc_transpose.cu) first. TMA zero-fills boxes past the edges; an operand whose rows are not 16-byte aligned goes
through a padded copy first (docs/tensor_cores.md, "Operand layouts").

Measured: docs/tensor_cores.md, results/h200/tensor_cores.json.
"""
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import TC_PRECISIONS, WgmmaKernel
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic

PARAMS = {"BM": 128, "BN": 128, "STAGES": 4}

SPECS = [
    WgmmaKernel(
        name=f"cuda/tc2_wgmma_tma_{prec}", level=2, precision=prec, kind="plain",
        title=f"{prec} wgmma m64n128 from TMA-loaded 128B-swizzled smem, 4-stage mbarrier ring",
        source="tc2_wgmma_tma.cu", entry="tc2_wgmma_tma", params=dict(PARAMS),
        constraints=lambda p: wgmma_constraints(p, specialized=False),
        traffic_model=wgmma_traffic(prec, PARAMS["BM"], PARAMS["BN"]), doc=__doc__,
        unmodeled="latency: every k-tile drains its wgmma and meets at __syncthreads, and each CTA (one tile) fills "
                  "its ring and stores C with the tensor cores idle",
    )
    for prec in TC_PRECISIONS
]
