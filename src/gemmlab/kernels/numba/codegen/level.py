"""The spec of a generated level: the kernel at its tiling and its 4-byte twin, one of them picked per problem, each
generated and compiled on first use (numba is imported then, not when the registry lists the level)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

from gemmlab.device import numba_mode
from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba.codegen.template import gemm_source, make_kernel
from gemmlab.kernels.numba.codegen.tiling import Tiling
from gemmlab.kernels.numba.launch.kernel import NumbaKernel, numba_plan
from gemmlab.kernels.plan import ROW_MAJOR
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic
from gemmlab.problem import Problem


def vector_ok(problem: Problem) -> bool:
    """16-byte global accesses stay aligned when every row of A, B and C starts on a 16-byte boundary."""
    return problem.k % 4 == 0 and problem.n % 4 == 0


@cache
def _compiled(name: str, tiling: Tiling, jit_options: tuple):
    """The dispatcher of one generated kernel, made once per process; on the GPU its launch bounds default to the
    tiling's threads."""
    options = dict(jit_options)
    if numba_mode() == "gpu":
        options.setdefault("launch_bounds", tiling.threads)
    return make_kernel(name, tiling, **options)[0]


@dataclass(frozen=True, kw_only=True)
class GeneratedKernel(NumbaKernel):
    """A numba level generated from a Tiling. ``scalar`` is the same tiling with 4-byte global accesses, used
    when a problem's rows are not 16-byte aligned (K or N not a multiple of 4) or an operand is misaligned."""

    tiling: Tiling | None = None
    jit_options: dict = field(default_factory=dict)

    @property
    def kernel(self):
        return _compiled(self.short, self.tiling, tuple(sorted(self.jit_options.items())))

    @property
    def scalar(self):
        """The VEC=1 twin's dispatcher, or None when ``kernel`` already is VEC=1."""
        if self.tiling.VEC != 4:
            return None
        return _compiled(f"{self.short}_any", replace(self.tiling, VEC=1), tuple(sorted(self.jit_options.items())))

    @property
    def source(self) -> str:
        """The generated text of ``kernel``."""
        return gemm_source(self.short, self.tiling)

    def config_error(self) -> str | None:
        broken = self.tiling.errors() if self.tiling else ["no tiling"]
        return "; ".join(broken) if broken else None

    def variant(self, problem: Problem, aligned: bool = True):
        if self.scalar is not None and not (vector_ok(problem) and aligned):
            return self.scalar
        return self.kernel

    def plan(self, problem: Problem, layout=ROW_MAJOR):
        return numba_plan(self, problem, layout, lambda aligned: self.variant(problem, aligned))


def tiled_geometry(problem: Problem, params: dict) -> Geometry:
    threads = (params["BM"] // params["WM"]) * (params["BN"] // params["WN"]) * 32
    return Geometry((ceil_div(problem.n, params["BN"]), ceil_div(problem.m, params["BM"]), 1), (threads, 1, 1))


def level(name: str, level: int, title: str, tiling: Tiling, doc: str, unmodeled: str = "",
          **jit_options) -> GeneratedKernel:
    """The spec of one generated level: the kernel at ``tiling`` and, when it uses 16-byte global accesses,
    its 4-byte twin for unaligned problems, both compiled on first use. ``unmodeled``: see KernelSpec."""
    errors = tiling.errors()
    if errors:
        from gemmlab.errors import InvalidConfigError

        raise InvalidConfigError(f"numba/{name}: {'; '.join(errors)}")
    params = {f: getattr(tiling, f) for f in tiling.__dataclass_fields__}
    return GeneratedKernel(
        name=f"numba/{name}", level=level, precision="fp32", title=title, tiling=tiling, jit_options=jit_options,
        params=params, geometry=tiled_geometry, unmodeled=unmodeled,
        traffic_model=lambda pr, sm_count=SM_COUNT: tiled_traffic(pr, tiling.BM, tiling.BN,
                                                                  warp=(tiling.WM, tiling.WN)), doc=doc,
    )
