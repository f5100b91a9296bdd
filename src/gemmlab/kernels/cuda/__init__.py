"""CUDA C++ kernels compiled by NVRTC.

- launch/: host launch machinery (NVRTC, GPU resources, the plain level's spec and plan, TMA tensor maps)
- sgemm/: the FP32 ladder v1..v11 (.py spec beside its .cu source); sgemm/common/ what those levels share
- tc/: the tensor-core levels tc1..tc10; tc/model/ their host model (constraints, budgets, stream-K, traffic, the
  wgmma spec class) and plan, tc/include/ their device headers, tc/prepass/ the pre-pass kernels their plans launch
- gemv/: decode shapes (a few rows of A against a weight): gemv1 on the CUDA cores in every precision, gemv2 on
  mma.sync (BF16, FP16, FP8 per tensor and block-scaled)
"""
FAMILIES = ("sgemm", "tc", "gemv")  # the folders whose modules are levels (gemmlab.kernels.registry)
