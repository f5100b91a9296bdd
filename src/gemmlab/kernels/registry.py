"""Kernel discovery: the levels of a backend are the plain modules directly in its folder (kernels/<backend>/) and in
each family folder its package names in ``FAMILIES`` (kernels/cuda/sgemm/, kernels/cuda/tc/); each exports ``SPECS``.
Helpers live in sub-packages of those folders (kernels/cuda/launch/, kernels/cuda/tc/model/), which discovery does
not walk. Lookup by name or glob.

A backend's modules are imported the first time a kernel of that backend is asked for, so ``get_kernel("cpu/blas")``
never imports numba's CUDA target, and the numba backend makes its simulator decision (kernels/numba/__init__.py)
only when its kernels are wanted. Listing the levels imports no numba at all: they compile their kernels on first use.
"""
from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from functools import lru_cache

from gemmlab.errors import UnknownKernelError
from gemmlab.kernels.spec import KernelSpec

BACKENDS = ("cpu", "numba", "cuda", "gluon", "peers")
_ORDER = {"cpu": 0, "numba": 1, "cuda": 2, "gluon": 3, "peer": 4}


@lru_cache(maxsize=None)
def _backend(backend: str) -> tuple[KernelSpec, ...]:
    package = importlib.import_module(f"gemmlab.kernels.{backend}")
    folders = [package] + [importlib.import_module(f"{package.__name__}.{family}")
                           for family in getattr(package, "FAMILIES", ())]
    specs: list[KernelSpec] = []
    for folder in folders:
        for info in pkgutil.iter_modules(folder.__path__):
            if info.ispkg or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{folder.__name__}.{info.name}")
            if not hasattr(module, "SPECS"):
                raise RuntimeError(f"{module.__name__} sits among the levels but exports no SPECS; a helper belongs "
                                   "in a sub-package")
            specs.extend(module.SPECS)
    return tuple(specs)


@lru_cache(maxsize=1)
def _all() -> tuple[KernelSpec, ...]:
    from gemmlab.problem import get_precision

    specs = [s for backend in BACKENDS for s in _backend(backend)]
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RuntimeError(f"kernel names registered twice: {sorted(dupes)}")
    return tuple(sorted(specs, key=lambda s: (get_precision(s.precision).order, _ORDER[s.backend],
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
    if not isinstance(name, str):
        raise UnknownKernelError(f"a kernel is named by a string such as 'cuda/v2_smem' (or 'auto'), got "
                                 f"{type(name).__name__} {name!r}")
    backend = name.split("/", 1)[0]
    for spec in _backend(backend) if backend in BACKENDS else _all():
        if spec.name == name:
            return spec
    close = [s.name for s in _all() if name.split("/")[-1] and name.split("/")[-1] in s.name]
    hint = f"; did you mean {', '.join(close[:4])}?" if close else "; `gemmlab list` shows them all"
    raise UnknownKernelError(f"no kernel named {name!r}{hint}")


def select(pattern: str) -> list[KernelSpec]:
    """list_kernels, where each comma-separated pattern must match a kernel: a misspelt one among others is named,
    not dropped."""
    specs = list_kernels(pattern)
    if not specs:
        raise UnknownKernelError(f"no kernel matches {pattern!r}; `gemmlab list` shows them all")
    unmatched = [p.strip() for p in pattern.split(",")
                 if p.strip() and not any(fnmatch.fnmatchcase(s.name, p.strip()) for s in specs)]
    if unmatched:
        raise UnknownKernelError(f"no kernel matches {', '.join(map(repr, unmatched))} (in {pattern!r}); `gemmlab "
                                 "list` shows them all")
    return specs
