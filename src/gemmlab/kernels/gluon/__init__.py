"""Tensor-core levels written in Triton's Gluon (triton.experimental.gluon): the Hopper ladder of kernels/cuda/tc/
restated in Python, each level named and numbered as the CUDA C level whose idea it takes (docs/gluon.md sets them
side by side).

- launch/: the levels' spec (GluonKernel), the Triton version they are written for, compiling and launching
- source/: their device code, one level's @gluon.jit kernels a file (imported only when a level compiles)
"""
