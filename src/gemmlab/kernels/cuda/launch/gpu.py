"""What a CUDA plan asks of the GPU while it is made: load a kernel, query its occupancy, allocate and zero
workspaces, wait for that zeroing. One object, so the plan code runs on the host under a stand-in that records
instead (the tests), and the launches themselves go through gemmlab.driver."""
from __future__ import annotations

from gemmlab.kernels.geometry import Geometry


class Resources:
    def kernel(self, compiled, smem: int):
        """The loaded kernel (cuda.core): ``int(k.handle)`` is its CUkernel."""
        from gemmlab.kernels.cuda.launch.nvrtc import load_kernel

        return load_kernel(compiled, smem)

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
        try:
            return int(kernel.occupancy.max_active_blocks_per_multiprocessor(geo.threads, geo.smem))
        except Exception:
            return 1


RESOURCES = Resources()
