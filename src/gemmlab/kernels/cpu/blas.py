"""The CPU peer: NumPy's matmul, which calls the BLAS NumPy was built with (OpenBLAS in the wheels).

Blocked for the cache hierarchy and vectorized, it shows what a CPU can do; V0 against it is the CPU's own
gap between a textbook loop and a tuned library. Problems past 2·10¹² FLOP are refused with the reason.

Measured: results/h200/fp32.json (the H200 machine's host CPU).
"""
import numpy as np

from gemmlab.errors import SizeLimitError
from gemmlab.kernels.cpu._kernel import CpuKernel
from gemmlab.kernels.spec import compulsory_traffic


def blas(A, B, C):
    # inf and NaN as IEEE arithmetic gives them, silently, as torch.matmul does, whatever np.seterr says
    try:  # the BLAS's own buffers (a copy of a strided operand) can fail where C's allocation did not
        with np.errstate(all="ignore"):
            np.matmul(A, B, out=C)
    except MemoryError:
        raise SizeLimitError(f"{A.shape[0]}x{B.shape[1]}x{A.shape[1]}: the host BLAS ran out of memory") from None


SPECS = [
    CpuKernel(
        name="cpu/blas", level=None, precision="fp32", title="NumPy matmul (host BLAS), the CPU peer",
        function=blas, traffic_model=compulsory_traffic, max_flops=2e12, doc=__doc__,
    )
]
