"""NumbaKernel: the spec of a Python kernel written with numba-cuda.

On a GPU the harness hands it CuPy arrays (numba reads them through the CUDA array interface, no copy) and
it runs on CuPy's current stream. Without a GPU it runs under numba's CUDA simulator on NumPy arrays, which
executes the same Python code thread by thread: slow, so only small shapes, but the real kernel logic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from gemmlab.kernels.geometry import Geometry
from gemmlab.kernels.spec import GPU, KernelSpec
from gemmlab.problem import Problem


@dataclass(frozen=True, kw_only=True)
class NumbaKernel(KernelSpec):
    kernel: Callable | None = None  # a @cuda.jit function taking (C, A, B, M, N, K)
    geometry: Callable[[Problem, dict], Geometry] | None = None
    backend: str = "numba"
    device: str = GPU

    @property
    def simulable(self) -> bool:
        return True

    def launch_geometry(self, problem: Problem) -> Geometry:
        return self.geometry(problem, dict(self.params))

    def build(self, problem: Problem):
        from numba import cuda

        from gemmlab.device import numba_mode

        geo = self.launch_geometry(problem)
        m, n, k = (np.int32(d) for d in problem.shape)
        simulated = numba_mode() == "simulator"

        def run(a, b, c):
            if simulated:
                self.kernel[geo.grid, geo.block, 0, geo.smem](c, a, b, m, n, k)
                return
            import cupy

            stream = cuda.external_stream(cupy.cuda.get_current_stream().ptr)
            self.kernel[geo.grid, geo.block, stream, geo.smem](c, a, b, m, n, k)

        return run
