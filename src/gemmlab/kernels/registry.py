"""Kernel discovery: every module under kernels/<backend>/ exports ``SPECS``; lookup by name or glob."""
from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from functools import lru_cache

from gemmlab.errors import UnknownKernelError
from gemmlab.kernels.spec import KernelSpec

BACKENDS = ("cpu", "numba", "cuda", "peers")
_ORDER = {"cpu": 0, "numba": 1, "cuda": 2, "peer": 3}


@lru_cache(maxsize=1)
def _all() -> tuple[KernelSpec, ...]:
    from gemmlab.harness.device import configure_numba

    configure_numba()  # the simulator switch must be set before any numba kernel module imports numba
    specs: list[KernelSpec] = []
    for backend in BACKENDS:
        package = importlib.import_module(f"gemmlab.kernels.{backend}")
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            specs.extend(getattr(module, "SPECS", ()))
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RuntimeError(f"kernel names registered twice: {sorted(dupes)}")
    precision_order = {"fp32": 0, "tf32": 1, "bf16": 2}
    return tuple(sorted(specs, key=lambda s: (precision_order.get(s.precision, 9), _ORDER[s.backend],
                                              s.level if s.level is not None else 99, s.name)))


def list_kernels(pattern: str | None = None) -> list[KernelSpec]:
    """Every registered kernel, or those whose name matches a glob ("cuda/*", "*/v2_*"); comma-separated
    patterns are unions."""
    specs = _all()
    if not pattern:
        return list(specs)
    patterns = [p.strip() for p in pattern.split(",") if p.strip()]
    return [s for s in specs if any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]


def get_kernel(name: str) -> KernelSpec:
    for spec in _all():
        if spec.name == name:
            return spec
    close = [s.name for s in _all() if name.split("/")[-1] in s.name]
    hint = f"; did you mean {', '.join(close[:4])}?" if close else "; `gemmlab list` shows them all"
    raise UnknownKernelError(f"no kernel named {name!r}{hint}")


def select(pattern: str) -> list[KernelSpec]:
    specs = list_kernels(pattern)
    if not specs:
        raise UnknownKernelError(f"no kernel matches {pattern!r}; `gemmlab list` shows them all")
    return specs
