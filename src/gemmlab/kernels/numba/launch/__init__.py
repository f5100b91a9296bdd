"""What every numba level launches through: NumbaKernel, the spec of a numba-cuda kernel, and its plan."""
