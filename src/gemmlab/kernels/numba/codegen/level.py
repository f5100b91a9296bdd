"""The spec of a generated level: the kernel at its tiling and its 4-byte twin, one of them picked per problem."""
from __future__ import annotations

from dataclasses import dataclass, field

from gemmlab.kernels.geometry import Geometry, ceil_div
from gemmlab.kernels.numba.codegen.primitives import SIMULATED
from gemmlab.kernels.numba.codegen.template import make_kernel
from gemmlab.kernels.numba.codegen.tiling import Tiling
from gemmlab.kernels.numba.launch.kernel import NumbaKernel, numba_plan
from gemmlab.kernels.plan import ROW_MAJOR
from gemmlab.kernels.spec import SM_COUNT, tiled_traffic
from gemmlab.problem import Problem


def vector_ok(problem: Problem) -> bool:
    """16-byte global accesses stay aligned when every row of A, B and C starts on a 16-byte boundary."""
    return problem.k % 4 == 0 and problem.n % 4 == 0


@dataclass(frozen=True, kw_only=True)
class GeneratedKernel(NumbaKernel):
    """A numba level generated from a Tiling. ``scalar`` is the same tiling with 4-byte global accesses, used
    when a problem's rows are not 16-byte aligned (K or N not a multiple of 4) or an operand is misaligned."""

    tiling: Tiling | None = None
    scalar: Any = None  # dispatcher of the VEC=1 variant, or None when ``kernel`` already is VEC=1
    source: str = ""
    jit_options: dict = field(default_factory=dict)

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
    its 4-byte twin for unaligned problems. ``unmodeled``: see KernelSpec."""
    errors = tiling.errors()
    if errors:
        from gemmlab.errors import InvalidConfigError

        raise InvalidConfigError(f"numba/{name}: {'; '.join(errors)}")
    if not SIMULATED:
        jit_options.setdefault("launch_bounds", tiling.threads)
    kernel, src = make_kernel(name, tiling, **jit_options)
    scalar = None
    if tiling.VEC == 4:
        scalar, _ = make_kernel(f"{name}_any", _replace(tiling, VEC=1), **jit_options)
    params = {f: getattr(tiling, f) for f in tiling.__dataclass_fields__}
    return GeneratedKernel(
        name=f"numba/{name}", level=level, precision="fp32", title=title, kernel=kernel, scalar=scalar,
        tiling=tiling, source=src, jit_options=jit_options, params=params, geometry=tiled_geometry, unmodeled=unmodeled,
        traffic_model=lambda pr, sm_count=SM_COUNT: tiled_traffic(pr, tiling.BM, tiling.BN,
                                                                  warp=(tiling.WM, tiling.WN)), doc=doc,
    )


def _replace(t: Tiling, **changes) -> Tiling:
    from dataclasses import replace

    return replace(t, **changes)
