"""The Gluon levels' device code: one level's @gluon.jit kernels a file (with common.py, what they share), imported only when
a level compiles, so reading the registry needs no Triton."""
