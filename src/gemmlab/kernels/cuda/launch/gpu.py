"""What a CUDA plan asks of the GPU while it is made: load a kernel, query its occupancy, allocate and zero
workspaces, wait for that zeroing. One object, so the plan code runs on the host under a stand-in that records
instead (the tests), and the launches themselves go through gemmlab.driver.

``Resources`` makes a call's first plan: its workspaces from CuPy's pool, zeroed and waited for. ``StreamResources``
makes the plans of one stream: workspaces from the caller's allocator on that stream, zeroed by a memset enqueued
there, no wait; the kernels and the occupancy answers of the first plan again, so nothing is loaded or queried.
Under CUDA graph capture that is all a stream may do: an allocation through cudaMalloc, a launch on another stream
or a synchronization would invalidate the capture (cudaErrorStreamCaptureInvalidated), and torch's caching
allocator hands a capturing stream memory from the graph's private pool."""
from __future__ import annotations

from typing import Callable

from gemmlab import driver
from gemmlab.kernels.geometry import Geometry

# the answers Resources gave, per context: a later plan of the same problem gets the same kernels and the same grid
_kernels: dict = {}
_occupancy: dict = {}


class Resources:
    def kernel(self, compiled, smem: int):
        """The loaded kernel (cuda.core): ``int(k.handle)`` is its CUkernel."""
        key = (compiled.entry, compiled.cubin, smem, driver.current_context())
        kernel = _kernels.get(key)
        if kernel is None:
            from gemmlab.kernels.cuda.launch.nvrtc import load_kernel

            kernel = _kernels[key] = load_kernel(compiled, smem)
        return kernel

    def buffer(self, nbytes: int, zero: bool = False):
        """Device memory of ``nbytes`` (a CuPy array: ``.data.ptr``), zeroed on CuPy's stream with ``zero``."""
        import cupy
        import numpy as np

        return (cupy.zeros if zero else cupy.empty)(max(1, nbytes), dtype=np.uint8)

    @staticmethod
    def address(buffer) -> int:
        return buffer.data.ptr

    def synchronize(self) -> None:
        import cupy

        cupy.cuda.Device().synchronize()

    def clusters(self, kernel, geo: Geometry, cluster) -> int | None:
        """How many clusters of this kernel fit on the GPU at once (None when the driver cannot say)."""
        key = ("clusters", int(kernel.handle), geo, tuple(cluster), driver.current_context())
        if key not in _occupancy:
            _occupancy[key] = self._clusters(kernel, geo, cluster)
        return _occupancy[key]

    @staticmethod
    def _clusters(kernel, geo: Geometry, cluster) -> int | None:
        try:
            import cupy
            from cuda.core import LaunchConfig

            from gemmlab.kernels.cuda.launch.nvrtc import _as_core_stream

            config = LaunchConfig(grid=(max(1, geo.grid[0] // cluster[0]), 1, 1), cluster=cluster, block=geo.block,
                                  shmem_size=geo.smem)
            count = kernel.occupancy.max_active_clusters(config,
                                                         stream=_as_core_stream(cupy.cuda.get_current_stream()))
            return int(count) if count and count > 0 else None
        except Exception:
            return None

    def blocks_per_sm(self, kernel, geo: Geometry) -> int:
        """Resident blocks per SM (1 when the driver cannot say: the launch bound and shared memory make it so)."""
        key = ("blocks", int(kernel.handle), geo, driver.current_context())
        if key not in _occupancy:
            try:
                _occupancy[key] = int(kernel.occupancy.max_active_blocks_per_multiprocessor(geo.threads, geo.smem))
            except Exception:
                _occupancy[key] = 1
        return _occupancy[key]


class StreamResources:
    """The resources of a plan for one stream: ``allocate(nbytes)`` gives (buffer, device address) from the caller's
    allocator on ``stream`` (kept alive with the plan); a workspace to zero gets a memset on ``stream``, ordered
    before the plan's launches there, so nothing waits. Kernels and occupancy come from ``base``, which made the
    call's first plan: the same binaries and the same grid, so a stream's plan computes what the first one does,
    bit for bit."""

    def __init__(self, stream: int, allocate: Callable[[int], tuple[object, int]], base=None):
        self.stream, self.allocate = stream, allocate
        self.base = RESOURCES if base is None else base

    def kernel(self, compiled, smem: int):
        return self.base.kernel(compiled, smem)

    def clusters(self, kernel, geo: Geometry, cluster) -> int | None:
        return self.base.clusters(kernel, geo, cluster)

    def blocks_per_sm(self, kernel, geo: Geometry) -> int:
        return self.base.blocks_per_sm(kernel, geo)

    def buffer(self, nbytes: int, zero: bool = False):
        buffer = self.allocate(max(1, nbytes))
        if zero:
            driver.zero_async(buffer[1], max(1, nbytes), self.stream)
        return buffer

    @staticmethod
    def address(buffer) -> int:
        return buffer[1]

    def synchronize(self) -> None:
        """Nothing to wait for: the zeroing is on the stream the plan launches on."""


RESOURCES = Resources()


def split_k_workspace(gpu, tiles: int, splits: int, bm: int, bn: int) -> tuple:
    """Split-K's buffers (tc10, v11), through ``gpu`` (a Resources or StreamResources): S FP32 partials of BM×BN a
    tile, and one u32 ticket a tile, zeroed once: the CTA that draws a tile's last ticket sets it back to zero for the
    next launch. No CTA waits for another, so unlike stream-K's fixup the grid need not be resident at once."""
    return gpu.buffer(4 * tiles * splits * bm * bn), gpu.buffer(4 * tiles, zero=True)
