"""NumbaKernel: the spec of a Python kernel written with numba-cuda.

On a GPU a plan launches the compiled kernel on device arrays made from the operands' addresses (numba reads
them through the CUDA array interface, no copy) on the caller's stream; numba's own launch path costs tens of
microseconds a call, which the plan cannot remove. Without a GPU the plan runs under numba's CUDA simulator on
NumPy arrays, which executes the same Python code thread by thread: slow, so only small shapes, but the real
kernel logic.

A spec holds no compiled kernel: it holds what makes one, run on the first launch. Importing numba.cuda takes
about a second, which the commands that only read the registry (gemmlab list, roofline) do not pay.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import numpy as np

from gemmlab.kernels.geometry import Geometry
from gemmlab.kernels.plan import ROW_MAJOR, Plan
from gemmlab.kernels.spec import GPU, KernelSpec
from gemmlab.problem import Problem


@dataclass
class NumbaPlan(Plan):
    choose: Callable | None = None  # aligned -> the @cuda.jit kernel to launch
    geo: Geometry | None = None

    def launch(self, a, b, c, stream: int = 0) -> None:
        from numba import cuda

        m, n, k = (np.int32(d) for d in self.problem.shape)
        g = self.geo
        if not self.on_gpu:  # the simulator, on NumPy arrays
            self.choose(True)[g.grid, g.block, 0, g.smem](c, a, b, m, n, k)
            return
        dtype = np.dtype(self.problem.output_dtype())

        def view(ptr, shape):
            return cuda.from_cuda_array_interface({"shape": shape, "strides": None, "typestr": dtype.str,
                                                   "data": (ptr, False), "version": 3}, owner=None, sync=False)

        kernel = self.choose((a | b | c) % 16 == 0)
        kernel[g.grid, g.block, cuda.external_stream(stream) if stream else cuda.default_stream(), g.smem](
            view(c, (self.problem.m, self.problem.n)), view(a, (self.problem.m, self.problem.k)),
            view(b, (self.problem.k, self.problem.n)), m, n, k)


def numba_plan(spec: KernelSpec, problem: Problem, layout, choose: Callable) -> NumbaPlan:
    from gemmlab.device import numba_mode

    geo = spec.launch_geometry(problem)
    return NumbaPlan(spec, problem, layout, on_gpu=numba_mode() == "gpu", choose=choose, geo=geo,
                     steps=[f"numba launch: grid {geo.grid}, block {geo.block}"])


def jit_on_first_use(fn: Callable) -> Callable[[], Any]:
    """What makes ``cuda.jit(fn)``, once, when first called. ``fn`` is written with numba's ``cuda`` and ``float32``
    as globals of its module, which imports neither: they are bound there here, where numba's simulator also
    looks for ``cuda`` (it swaps the module's global for its per-thread stand-in)."""
    @cache
    def build():
        from numba import cuda, float32

        fn.__globals__.update(cuda=cuda, float32=float32)
        return cuda.jit(fn)

    return build


@dataclass(frozen=True, kw_only=True)
class NumbaKernel(KernelSpec):
    jit: Callable[[], Any] | None = None  # makes the @cuda.jit kernel taking (C, A, B, M, N, K), once
    geometry: Callable[[Problem, dict], Geometry] | None = None
    backend: str = "numba"
    device: str = GPU

    @property
    def kernel(self):
        """The numba dispatcher, made on first use (jit_on_first_use)."""
        return self.jit()

    @property
    def simulable(self) -> bool:
        return True

    def config_error(self) -> str | None:
        """A thread block of BX×BY (the naive level's, which bench --variant changes): 1 to 1024 threads."""
        bx, by = self.params.get("BX", 1), self.params.get("BY", 1)
        if bx < 1 or by < 1 or bx * by > 1024:
            return f"BX={bx}, BY={by}: a block has at least one thread along each side and 1024 at most"
        return None

    def launch_geometry(self, problem: Problem) -> Geometry:
        return self.geometry(problem, dict(self.params))

    def plan(self, problem: Problem, layout=ROW_MAJOR) -> NumbaPlan:
        return numba_plan(self, problem, layout, lambda aligned: self.kernel)
