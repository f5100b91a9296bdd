"""CUDA C++ kernels compiled by NVRTC.

- launch/: host launch machinery (NVRTC, GPU resources, the plain level's spec and plan, TMA tensor maps)
- sgemm/: the FP32 ladder v1..v10 (.py spec beside its .cu source); sgemm/common/ what those levels share
"""
FAMILIES = ("sgemm",)  # the folders whose modules are levels (gemmlab.kernels.registry)
