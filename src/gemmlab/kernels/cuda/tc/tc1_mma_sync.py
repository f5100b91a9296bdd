"""tc1: tensor cores through warp-level mma.sync, the Ampere recipe, on Hopper.

What changed against the FP32 ladder: the inner product moves from FFMA to the tensor cores. Each warp owns a
64×32 tile and issues mma.sync m16n8k16 (bf16) or m16n8k8 (tf32, FP32 inputs with the low 13 mantissa bits
ignored) with FP32 accumulators; a 3-stage cp.async ring keeps global loads in flight; bf16 fragments come
from shared memory by ldmatrix, B's through ldmatrix.trans because B is N-major. Why: one bf16 mma.sync does
2048 multiply-adds where an FFMA does 1. Predicted gain: a few times cuBLAS FP32, well short of cuBLAS at the
same precision, because Hopper's mma.sync runs at about half of its wgmma rate and ldmatrix plus cp.async
address arithmetic cost issue slots (tc2 removes both).

Any M, N, K: edge chunks are zero-filled by cp.async; when a row stride or a base pointer is not a multiple of 16
bytes (bf16: K or N not a multiple of 8; tf32: of 4) the kernel stages tiles element by element (the ``aligned``
kernel argument, set per launch; slower). tf32 loads B directly, with no transpose pre-pass.

A batch (BATCHED=1, CudaKernel.batched): a product per gridDim.z index, each operand's matrices its batch stride
apart (past gridDim.z's 65535, a launch per 65535 products: SlicedBatchPlan). Why: it reads any row pitch, so it takes the batches the TMA levels cannot (rows or batch strides off 16
bytes: a BF16 K or N not a multiple of 8) and TF32's, which no TMA level batches; predicted at its one-product speed
on the flattened (batch·M)×N×K work.

Measured: docs/tensor_cores/tc1_tc3.md, results/h200/tensor_cores.json.
"""
from dataclasses import dataclass

from gemmlab.kernels.cuda.launch.kernel import SEED_SIGNATURE, CudaKernel, output_params
from gemmlab.kernels.cuda.tc.model.kernel import TC_PRECISIONS
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic
from gemmlab.problem import get_precision

PARAMS = {"BM": 128, "BN": 128, "BK": 32, "STAGES": 3}


def smem_bytes(p: dict, precision: str) -> int:
    elem = get_precision(precision).input_bytes
    a_ld = p["BK"] + 16 // elem  # A_LD in tc1_mma_sync.cu: A's rows padded by 16 bytes
    b_ld = p["BN"] + 8
    return p["STAGES"] * (p["BM"] * a_ld + p["BK"] * b_ld) * elem


def _constraints(precision):
    def check(p):
        e = []
        if (p["BM"], p["BN"]) != (128, 128):
            e.append("the 2x4 warp grid with 64x32 warp tiles fixes BM = BN = 128")
        if p["BK"] % 16 or not 16 <= p["BK"] <= 64:
            e.append(f"BK={p['BK']} must be 16, 32, 48 or 64 (whole k16 mma steps)")
        if p["STAGES"] < 2:
            e.append(f"STAGES={p['STAGES']}: the cp.async ring needs at least 2")
        if smem_bytes(p, precision) > 227 * 1024:
            e.append(f"{smem_bytes(p, precision)} bytes of shared memory, past 227 KiB")
        return e

    return check


@dataclass(frozen=True, kw_only=True)
class _Tc1(CudaKernel):
    signature: tuple = SEED_SIGNATURE + (("aligned", "i32"),)

    def defines(self):
        return {**self.params, **self.prec.tensor_core_defines}

    def configurations(self) -> list["_Tc1"]:
        """One build per output type its precision writes."""
        return self.output_builds([self])

    def unsupported(self, gpu):
        if tuple(gpu.cc) < (8, 0):
            return f"{self.name} uses {self.prec.tensor_core_type} mma.sync and cp.async (sm_80 and later); {gpu.name} is older"
        return None

    def fill(self, params, a, b, c):
        # 16-byte rows and bases take cp.async's 16-byte copies; else the element-by-element staging path
        vec = 16 // self.prec.input_bytes
        steps = (params.stride_a, params.stride_b) if self.params.get("BATCHED", 0) else ()
        params.aligned = int(params.K % vec == 0 and params.N % vec == 0 and (a | b) % 16 == 0
                             and all(s % vec == 0 for s in steps))


def _geometry(precision):
    def geo(problem, p):
        return Geometry(grid=(ceil_div(problem.n, p["BN"]), ceil_div(problem.m, p["BM"]), 1), block=(256, 1, 1),
                        smem=smem_bytes(p, precision))

    return geo


SPECS = [
    _Tc1(
        name=f"cuda/tc1_mma_sync_{prec}", level=1, precision=prec,
        title=f"{prec} mma.sync tensor cores, ldmatrix, 3-stage cp.async, 128x128 tile",
        source="tc1_mma_sync.cu", entry="tc1_mma_sync", params={**PARAMS, **output_params(prec)},
        geometry=_geometry(prec), constraints=_constraints(prec),
        traffic_model=lambda pr, sm_count=SM_COUNT: tiled_traffic(pr, 128, 128, warp=(64, 32)),
        doc=__doc__, batches=True, unmodeled="a pipeline the model leaves out: warp-level mma.sync fed by ldmatrix, slower on "
                               "Hopper than the wgmma rate the compute roof is, its address arithmetic in the warps",
    )
    for prec in TC_PRECISIONS
]
