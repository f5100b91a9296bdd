"""The Gluon levels' device code: one @gluon.jit kernel a file (with common.py, what they share), imported only when
a level compiles, so reading the registry needs no Triton."""
