"""GPU detection and properties, and the CPU-only fallback (numba's CUDA simulator).

Detection never raises: on a machine without a driver or GPU every query answers "no GPU" with the reason,
which the CLI prints so the user knows what was not run.
"""
from __future__ import annotations

import ctypes
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from gemmlab.errors import NoGPUError


@dataclass(frozen=True)
class GPUInfo:
    name: str
    sm_count: int
    cc: tuple[int, int]
    l2_bytes: int
    smem_per_block_optin: int
    max_sm_clock_mhz: float
    total_mem_bytes: int
    driver: str
    runtime: str
    # the memory's peak bandwidth in GB/s as the driver reports the board: its maximum memory clock, two transfers a
    # clock, over its bus width (0 where neither NVML nor the runtime reports them); the roof of a board that
    # gemmlab.analysis.roofline.DEVICES has no datasheet entry for
    memory_gbs: float = 0.0

    @property
    def arch(self) -> str:
        major, minor = self.cc
        # wgmma and setmaxnreg exist only on the "a" variant of sm_90
        return f"sm_{major}{minor}a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


@lru_cache(maxsize=1)
def probe() -> tuple[GPUInfo | None, str]:
    """(info of GPU 0, "") when a CUDA GPU is usable, else (None, why not); the caller's current device stays as it
    is. Without a driver the answer needs no CuPy, whose import costs seconds."""
    missing = _cupy_missing()
    if missing:
        return None, f"CuPy is not importable ({missing}); for GPU runs: python3 -m pip install 'gemmlab[cupy]'"
    if not _driver_loads():
        return None, _no_gpu_reason(None)
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime
    except Exception as exc:  # the cupy extra is not installed (or is broken)
        return None, f"CuPy is not importable ({exc}); for GPU runs: python3 -m pip install 'gemmlab[cupy]'"
    try:
        count = runtime.getDeviceCount()
    except Exception as exc:
        return None, _no_gpu_reason(exc)
    if count < 1:
        return None, _no_gpu_reason(None)
    try:
        return gpu_info(0), ""
    except Exception as exc:
        return None, f"the GPU could not be queried ({type(exc).__name__}: {exc})"


@lru_cache(maxsize=None)
def gpu_info(index: int) -> GPUInfo:
    """The properties of CUDA device ``index`` (raises if there is no such device)."""
    from cupy.cuda import runtime

    props = runtime.getDeviceProperties(index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    driver = runtime.driverGetVersion()
    rt = runtime.runtimeGetVersion()
    return GPUInfo(
        name=name,
        sm_count=int(props["multiProcessorCount"]),
        cc=(int(props["major"]), int(props["minor"])),
        l2_bytes=int(props["l2CacheSize"]),
        smem_per_block_optin=int(props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"])),
        max_sm_clock_mhz=_max_sm_clock(props),
        total_mem_bytes=int(props["totalGlobalMem"]),
        driver=_cuda_version(driver),
        runtime=_cuda_version(rt),
        memory_gbs=_memory_gbs(props),
    )


@contextmanager
def using(index: int):
    """Device ``index`` current for CuPy, the runtime and the driver on this thread (its primary context) while a
    plan for it is made; the caller's current device (which torch reads too) is restored after."""
    import cupy
    from cuda.core import Device

    before = cupy.cuda.runtime.getDevice()
    cupy.cuda.Device(index).use()
    Device(index).set_current()
    try:
        yield
    finally:
        if before != index:
            cupy.cuda.Device(before).use()
            Device(before).set_current()


# The library the CUDA runtime loads to reach the driver; without it there is no driver at all.
DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _cupy_missing() -> str | None:
    """Why CuPy cannot be imported, found without importing it (a module blocked or not installed), else None."""
    if "cupy" in sys.modules:
        return None if sys.modules["cupy"] is not None else "import of cupy halted; None in sys.modules"
    import importlib.util

    return None if importlib.util.find_spec("cupy") is not None else "No module named 'cupy'"


def _driver_loads() -> bool:
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError:
        return False
    return True


def _no_gpu_reason(exc: Exception | None) -> str:
    """Why CUDA has no GPU to offer: no driver installed, a driver older than the runtime, or a driver that sees no
    GPU. The runtime's own message says "driver version is insufficient" in the first case too."""
    if not _driver_loads():
        return f"no CUDA driver installed ({DRIVER_LIBRARY} not found)"
    status = getattr(exc, "status", None)
    if status == 35:  # cudaErrorInsufficientDriver, with a driver present
        try:
            from cupy.cuda import runtime

            versions = (f" (the driver supports CUDA {_cuda_version(runtime.driverGetVersion())}, the runtime is "
                        f"CUDA {_cuda_version(runtime.runtimeGetVersion())})")
        except Exception:
            versions = ""
        return "the CUDA driver is too old for this CUDA runtime" + versions
    if exc is None or status == 100:  # no device; cudaErrorNoDevice
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return "a CUDA driver is installed but it sees no GPU" + (
            f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else "")
    return f"CUDA did not start ({type(exc).__name__}: {exc})"


def pci_bus_id(props) -> str:
    """The PCI bus id of a CUDA device from its properties, as NVML names a device ("00000000:19:00.0"): NVML counts
    every GPU of the host, CUDA only those CUDA_VISIBLE_DEVICES leaves, in its own order, so a CUDA index is no NVML
    index."""
    return f"{int(props.get('pciDomainID', 0)):08X}:{int(props['pciBusID']):02X}:{int(props['pciDeviceID']):02X}.0"


def nvml_handle(pynvml, props=None):
    """The NVML handle of the CUDA device of ``props`` (default: the current CuPy device's), found by its PCI bus
    id."""
    if props is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    pynvml.nvmlInit()
    return pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id(props))


def _max_sm_clock(props) -> float:
    try:
        import pynvml

        return float(pynvml.nvmlDeviceGetMaxClockInfo(nvml_handle(pynvml, props), pynvml.NVML_CLOCK_SM))
    except Exception:
        return float(props.get("clockRate", 0)) / 1000.0


def memory_gbs(clock_mhz: float, bus_bits: int) -> float:
    """Peak bandwidth in GB/s of a memory at ``clock_mhz`` over ``bus_bits``: two transfers a clock, as NVML and the
    runtime report the clock of HBM and of GDDR alike (an H100 SXM's 2,619 MHz over 5,120 bits: 3,352 GB/s; an RTX
    4090's 10,501 MHz over 384 bits: 1,008 GB/s)."""
    return 2 * clock_mhz * 1e6 * bus_bits / 8 / 1e9


def _memory_gbs(props) -> float:
    try:
        import pynvml

        handle = nvml_handle(pynvml, props)
        return memory_gbs(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                          pynvml.nvmlDeviceGetMemoryBusWidth(handle))
    except Exception:  # no NVML: the runtime's figures, which CUDA 13's properties no longer carry
        return memory_gbs(props.get("memoryClockRate", 0) / 1000.0, props.get("memoryBusWidth", 0))


def gpu() -> GPUInfo | None:
    return probe()[0]


def same_chip(info: GPUInfo, name: str, sm_count: int, cc: tuple[int, int]) -> bool:
    """Whether ``info`` is the GPU called ``name`` or one of its chip: the same compute capability and SM count (an H100
    SXM and an H200), on which every kernel runs the same tiles, waves, rings and clusters; only their memory differs,
    which a model prices with each one's roofs."""
    return info.name == name or (info.sm_count == sm_count and tuple(info.cc) == tuple(cc))


# The GPU gemmlab's shipped tables were measured on (the dispatch table, tc10's splits, the FP32 levels' tiles)
SHIPPED_GPU = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")


def shipped_name_for(name: str, info: GPUInfo | None = None) -> str:
    """The GPU whose rows of a shipped table a GPU called ``name`` reads where the table has none of its own: the
    shipped tables' GPU where that GPU is of its chip (same_chip: an H100 SXM reads the H200's), else ``name``.
    ``info``: that GPU's properties; default this machine's GPU, where it is the one called ``name``."""
    if info is None:
        info = gpu()
        if info is None or info.name != name:
            return name
    s = SHIPPED_GPU
    return s.name if same_chip(info, s.name, s.sm_count, s.cc) else name


def require_gpu(what: str) -> GPUInfo:
    """The properties of the current device (where a plan is made: ``using`` sets it), or a NoGPUError naming
    ``what`` needs one."""
    info, why = probe()
    if info is None:
        raise NoGPUError(f"{what} needs a CUDA GPU, and this machine has none usable: {why}")
    from cupy.cuda import runtime

    index = runtime.getDevice()
    return info if index == 0 else gpu_info(index)


def configure_numba() -> str:
    """Choose how numba kernels run: on the GPU, or under the CUDA simulator when there is none.

    numba reads NUMBA_ENABLE_CUDASIM into numba.config when numba is imported, and numba.cuda decides from
    numba.config when it is imported, so this runs before any numba kernel module loads; where numba itself is
    already imported (the CPU levels use its JIT), the switch is set in numba.config too. Returns "gpu" or
    "simulator".
    """
    # small verification grids trip numba's occupancy warning on every launch; the harness reports what matters
    os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "simulator"
    if "numba.cuda" in sys.modules:
        from numba import config

        return "simulator" if config.ENABLE_CUDASIM else "gpu"
    if not _gpu_for_numba():
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        if "numba" in sys.modules:
            sys.modules["numba"].config.ENABLE_CUDASIM = 1
        return "simulator"
    return "gpu"


def _gpu_for_numba() -> bool:
    """Whether numba's kernels run on a GPU: the probe's answer where it has run (commands that run kernels probe
    first); else the driver's own count of devices, through ctypes, so that a command that only reads the registry
    (gemmlab list) imports no CuPy: a machine without a driver answers at once."""
    cache = getattr(probe, "cache_info", None)  # a probe without a cache (a stand-in) is asked
    if cache is None or cache().currsize:
        return gpu() is not None
    try:
        lib = ctypes.CDLL(DRIVER_LIBRARY)
        count = ctypes.c_int()
        if lib.cuInit(0) or lib.cuDeviceGetCount(ctypes.byref(count)):
            return False
    except (OSError, AttributeError):
        return False
    return count.value > 0


def numba_mode() -> str:
    from numba import config

    return "simulator" if config.ENABLE_CUDASIM else "gpu"
