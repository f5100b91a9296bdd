"""cuBLAS, the peer every GPU kernel is measured against at its own precision: one cublasGemmEx call on CuPy's
handle and the caller's stream (peers/_cublas.py), the compute type pinned per precision.

- fp32: FP32 in and out, CUBLAS_COMPUTE_32F_PEDANTIC, so no tensor cores: cuBLAS runs FP32 FFMA kernels (SGEMM).
- tf32: FP32 in and out, CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores).
- bf16: BF16 inputs, FP32 accumulation (CUBLAS_COMPUTE_32F), BF16 output (torch's rule, the precision's default).
- fp16: the same for FP16 inputs and output.

Measured: results/h200/fp32.json, results/h200/tensor_cores.json (docs/fp32_ladder.md, docs/tensor_cores/).
"""
from __future__ import annotations

from dataclasses import dataclass

from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW, ROW_MAJOR, Layout, Plan
from gemmlab.kernels.spec import GPU, SM_COUNT, KernelSpec, Traffic, tiled_traffic
from gemmlab.problem import Problem


@dataclass(frozen=True, kw_only=True)
class CublasPeer(KernelSpec):
    backend: str = "peer"
    device: str = GPU
    int32_indices: bool = False

    @property
    def layouts(self) -> frozenset:
        """Every layout of A and B in place, as torch's call takes them (a transposed operand: CUBLAS_OP_T)."""
        return frozenset(Layout(a, b) for a in (ROW, COL) for b in (ROW, COL))

    def plan(self, problem: Problem, layout=ROW_MAJOR) -> "CublasPlan":
        from gemmlab.device import require_gpu

        require_gpu(self.name)
        return CublasPlan(self, problem, layout, steps=["cublasGemmEx, row-major C as the column-major Cᵀ = Bᵀ·Aᵀ, "
                                                        f"{layout.label()} read in place"])


@dataclass
class CublasPlan(Plan):
    def launch(self, a, b, c, stream: int = 0) -> None:
        from gemmlab.kernels.peers._cublas import gemm_ptr

        gemm_ptr(a, b, c, *self.problem.shape, self.spec.precision, stream, a_col=self.layout.a == COL,
                 b_col=self.layout.b == COL)


# cuBLAS picks its kernel per shape and says nothing of its tiles; the models take the tiles named by the kernels
# Nsight Compute saw at 4096³ (results/h200/*.json, "profile"): FP32 256x128 in a 2-D grid, one CTA per SM; TF32
# 128x256 and BF16 256x128 in a persistent grid whose 2-CTA clusters (the BF16 kernel's "1x2") share one operand,
# walked like tc4 without its snake. peers/scaled_mm.py models cuBLASLt's FP8 kernels the same way.
def _sgemm_traffic(problem: Problem, sm_count: int = SM_COUNT) -> Traffic:
    return tiled_traffic(problem, 256, 128, wave=sm_count, quantized=False)


def persistent_traffic(bm: int, bn: int, cluster: tuple[int, int]):
    def model(problem: Problem, sm_count: int = SM_COUNT) -> Traffic:
        cm, cn = cluster
        tiles = ceil_div(problem.m, bm * cm) * ceil_div(problem.n, bn * cn)
        return tiled_traffic(problem, bm, bn, group_m=8, wave=max(1, min(tiles, sm_count // (cm * cn))),
                             cluster=cluster, quantized=False)

    return model


SPECS = [
    CublasPeer(name="peers/cublas_fp32", level=None, precision="fp32", title="cuBLAS SGEMM (TF32 off)",
               traffic_model=_sgemm_traffic, doc=__doc__),
    CublasPeer(name="peers/cublas_tf32", level=None, precision="tf32", title="cuBLAS with TF32 tensor cores",
               traffic_model=persistent_traffic(128, 256, (2, 1)), doc=__doc__),
    CublasPeer(name="peers/cublas_bf16", level=None, precision="bf16", title="cuBLAS BF16 in, FP32 accumulate",
               traffic_model=persistent_traffic(256, 128, (1, 2)), doc=__doc__),
    CublasPeer(name="peers/cublas_fp16", level=None, precision="fp16", title="cuBLAS FP16 in, FP32 accumulate",
               traffic_model=persistent_traffic(256, 128, (1, 2)), doc=__doc__),
]
