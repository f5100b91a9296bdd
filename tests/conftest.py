"""Tests run without a GPU: numba kernels execute under the CUDA simulator, CUDA C kernels are compiled only.

The simulator switch is read when numba.cuda is first imported, so it is set here, before any gemmlab import.
On a machine with a GPU, GEMMLAB_TEST_GPU=1 runs the same tests against the real device.
"""
import os

if os.environ.get("GEMMLAB_TEST_GPU") != "1":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
os.environ.setdefault("GEMMLAB_CACHE", os.path.join(os.path.dirname(__file__), "..", ".cache", "gemmlab"))
