"""CUDA C++ through NVRTC (cuda.core): compile, read the ptxas report, cache the cubin, load and launch.

NVRTC compiles without a GPU, so CI builds every kernel for sm_90a and asserts on the ptxas report.
Cubins are cached on disk per (source, defines, arch, NVRTC version) under ``$GEMMLAB_CACHE``
(default ``~/.cache/gemmlab``).
"""
from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from gemmlab.cache import cache_root
from gemmlab.errors import CompileError

_KERNELS = Path(__file__).parents[1]  # kernels/cuda
# Where sources and headers are found, by file name alone (a spec's ``source``, an ``#include "x.cuh"``): a name
# lives in one folder only, so where a file sits never changes the text NVRTC compiles. The last folder holds the
# ceiling probes (harness/roof_probes.py), which include the tc levels' headers; include/ what every family shares
# (the fused epilogue).
SOURCE_DIRS = (_KERNELS / "sgemm", _KERNELS / "sgemm" / "common", _KERNELS / "tc", _KERNELS / "tc" / "include",
               _KERNELS / "tc" / "prepass", _KERNELS / "gemv", _KERNELS / "include",
               _KERNELS.parents[1] / "harness" / "probes")
DEFAULT_ARCH = "sm_90a"


def source_path(name: str) -> Path:
    """The file ``name`` (a .cu source or a .cuh header) in the first folder of SOURCE_DIRS that holds it."""
    for folder in SOURCE_DIRS:
        if (folder / name).is_file():
            return folder / name
    raise CompileError(f"no CUDA source {name!r} under {', '.join(str(d) for d in SOURCE_DIRS)}")


@dataclass(frozen=True)
class PtxasReport:
    """Resources ptxas assigned to one kernel entry."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    smem_bytes: int  # static shared memory
    barriers: int
    source: str = "ptxas -v"

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


_FUNC_RE = re.compile(r"Function properties for (\S+)\s*\n\s*ptxas\s+\.\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Compiling entry function '(\S+)'.*?Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?", re.S)


def parse_ptxas(log: str, entry: str) -> PtxasReport | None:
    """Pull one entry's registers, spills, stack and static shared memory out of a ``ptxas -v`` log
    (None when the log has no report for it)."""
    stack = stores = loads = 0
    for match in _FUNC_RE.finditer(log):
        if match.group(1) == entry:
            stack, stores, loads = (int(match.group(i)) for i in (2, 3, 4))
    regs = barriers = smem = None
    for block in log.split("Compiling entry function")[1:]:
        if not block.startswith(f" '{entry}'"):
            continue
        used = re.search(r"Used (\d+) registers", block)
        bar = re.search(r"used (\d+) barriers", block)
        sm = re.search(r"(\d+) bytes smem", block)
        regs = int(used.group(1)) if used else None
        barriers = int(bar.group(1)) if bar else 0
        smem = int(sm.group(1)) if sm else 0
    if regs is None:
        return None
    return PtxasReport(regs, stores, loads, stack, smem, barriers)


def report_from_cubin(cubin: bytes, entry: str) -> PtxasReport:
    """The same resources read back from the loaded cubin through the driver, for NVRTC builds whose log
    carries no ptxas report (seen with NVRTC 13.0). Local memory holds both stack and spills; the driver
    does not separate them, so all of it is counted as spill."""
    try:
        kernel = _load(cubin, entry)
        attrs = kernel.attributes
    except Exception as exc:
        raise CompileError(f"NVRTC gave no ptxas report for {entry!r} and the cubin could not be loaded to read "
                           f"its resources ({type(exc).__name__}: {exc})") from None
    local = int(attrs.local_size_bytes)
    return PtxasReport(int(attrs.num_regs), local, local, local, int(attrs.shared_size_bytes), 0,
                       source="driver attributes")


@dataclass(frozen=True)
class Compiled:
    entry: str
    arch: str
    cubin: bytes
    log: str
    report: PtxasReport


def _nvrtc_version() -> str:
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}"
    except Exception:
        return "unknown"


def _cache_dir() -> Path:
    return cache_root() / "cubin"


def _read_source(source: str, seen: set[str] | None = None) -> str:
    """Source text with local ``#include "x.cuh"`` lines inlined, so the hash covers headers too. Each header is
    inlined once, where it is first included, as its ``#pragma once`` asks: NVRTC then compiles one text."""
    seen = set() if seen is None else seen
    text = source_path(source).read_text()

    def inline(match: re.Match) -> str:
        header = match.group(1)
        if header in seen:
            return ""
        seen.add(header)
        return _read_source(header, seen)

    return re.sub(r'^#include "([\w.]+)"\s*$', inline, text, flags=re.M)


@lru_cache(maxsize=None)
def _compile_cached(source: str, entry: str, defines: tuple[tuple[str, str], ...], arch: str) -> Compiled:
    text = _read_source(source)
    key = hashlib.sha256(json.dumps([text, entry, defines, arch, _nvrtc_version()]).encode()).hexdigest()[:24]
    cache = _cache_dir()
    cubin_path, meta_path = cache / f"{key}.cubin", cache / f"{key}.json"
    if cubin_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        return Compiled(entry, arch, cubin_path.read_bytes(), meta["log"], PtxasReport(**meta["report"]))

    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(arch=arch, std="c++17", ptxas_options=["-v"], define_macro=list(defines),
                             name=source)
    log = io.StringIO()
    try:
        program = Program(text, "c++", options=options)
        obj = program.compile("cubin", logs=log)
    except Exception as exc:
        raise CompileError(f"NVRTC could not compile {source} ({entry}, {arch}, {dict(defines)}):\n"
                           f"{exc}\n{log.getvalue()}") from None
    text_log = log.getvalue().replace("\x00", "")
    cubin = bytes(obj.code)
    report = parse_ptxas(text_log, entry) or report_from_cubin(cubin, entry)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        cubin_path.write_bytes(cubin)
        meta_path.write_text(json.dumps({"log": text_log, "report": report.__dict__}))
    except OSError:
        pass  # a read-only home only costs a recompile next time
    return Compiled(entry, arch, cubin, text_log, report)


def compile_cuda(source: str, entry: str, defines: Mapping[str, object] | None = None,
                 arch: str = DEFAULT_ARCH) -> Compiled:
    """Compile ``source`` (a file name found through SOURCE_DIRS) and return the cubin with its ptxas report for ``entry``."""
    defs = tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items()))
    return _compile_cached(source, entry, defs, arch)


@lru_cache(maxsize=None)
def _load(cubin: bytes, entry: str):
    """The kernel of a loaded cubin: a library kernel (CUkernel), usable in every device's context."""
    import cupy
    from cuda.core import Device, ObjectCode

    Device(cupy.cuda.runtime.getDevice()).set_current()
    return ObjectCode.from_cubin(cubin).get_kernel(entry)


def load_kernel(compiled: Compiled, dynamic_smem: int = 0):
    """The cuda.core Kernel for a compiled entry, with its dynamic shared-memory limit raised if needed."""
    kernel = _load(compiled.cubin, compiled.entry)
    if dynamic_smem > 48 * 1024:
        _raise_smem_limit(kernel, dynamic_smem)
    return kernel


def _raise_smem_limit(kernel, nbytes: int) -> None:
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    handle = kernel.handle
    if isinstance(handle, driver.CUkernel):
        err, dev = driver.cuCtxGetDevice()
        (err,) = driver.cuKernelSetAttribute(attr, nbytes, handle, dev)
    else:
        (err,) = driver.cuFuncSetAttribute(handle, attr, nbytes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise CompileError(f"could not allow {nbytes} bytes of dynamic shared memory for {kernel!r}: {err}")


def launch(kernel, grid: tuple[int, ...], block: tuple[int, ...], args: tuple, smem: int = 0, stream=None,
           cluster: tuple[int, ...] | None = None) -> None:
    """Enqueue one launch on ``stream`` (default: CuPy's current stream)."""
    from cuda.core import LaunchConfig
    from cuda.core import launch as core_launch

    if stream is None:
        import cupy

        stream = cupy.cuda.get_current_stream()
    config = LaunchConfig(grid=grid, block=block, shmem_size=smem, **({"cluster": cluster} if cluster else {}))
    core_launch(_as_core_stream(stream), config, kernel, *args)


@lru_cache(maxsize=64)
def _wrap_stream(ptr: int, device: int):
    from cuda.core import Device

    class _Handle:
        def __cuda_stream__(self):
            return (0, ptr)

    return Device(device).create_stream(_Handle())


def _as_core_stream(stream):
    """cuda.core wants a Stream; CuPy streams speak the __cuda_stream__ protocol, the null stream does not."""
    import cupy

    return _wrap_stream(int(stream.ptr), cupy.cuda.runtime.getDevice())
