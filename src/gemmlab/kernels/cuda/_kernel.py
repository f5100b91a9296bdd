"""CudaKernel: the spec of a CUDA C++ kernel compiled by NVRTC and launched on CuPy arrays.

A level's .py file declares its source, entry point, tile parameters (passed to NVRTC as -D defines),
the constraints between them and its launch geometry; this class compiles, loads and launches it.
The kernel signature is the seeds': ``kernel(float *C, const float *A, const float *B, int M, int N, int K)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gemmlab.kernels.cuda._nvrtc import DEFAULT_ARCH, Compiled, compile_cuda, launch, load_kernel
from gemmlab.kernels.geometry import Geometry
from gemmlab.kernels.spec import GPU, KernelSpec
from gemmlab.problem import Problem

@dataclass(frozen=True, kw_only=True)
class CudaKernel(KernelSpec):
    source: str = ""  # file under kernels/cuda/
    entry: str = ""  # extern "C" kernel name
    geometry: Callable[[Problem, dict], Geometry] | None = None
    constraints: Callable[[dict], list[str]] = field(default=lambda params: [])
    backend: str = "cuda"
    device: str = GPU

    def config_error(self) -> str | None:
        broken = self.constraints(dict(self.params))
        return "; ".join(broken) if broken else None

    def defines(self) -> dict:
        return dict(self.params)

    def compile(self, arch: str = DEFAULT_ARCH) -> Compiled:
        return compile_cuda(self.source, self.entry, self.defines(), arch)

    def launch_geometry(self, problem: Problem) -> Geometry:
        return self.geometry(problem, dict(self.params))

    def kernel_args(self, problem: Problem, a, b, c) -> tuple:
        m, n, k = problem.shape
        return (c.data.ptr, a.data.ptr, b.data.ptr, np.int32(m), np.int32(n), np.int32(k))

    def build(self, problem: Problem):
        from gemmlab.device import require_gpu

        info = require_gpu(self.name)
        compiled = self.compile(info.arch)
        geo = self.launch_geometry(problem)
        kernel = load_kernel(compiled, geo.smem)

        def run(a, b, c):
            launch(kernel, geo.grid, geo.block, self.kernel_args(problem, a, b, c), geo.smem)

        return run
