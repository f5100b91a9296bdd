"""Decode-sized products: a few rows of A against an N×K weight handed over as ``w.t()``, gemv1 on the CUDA cores
(M of 1 to 16), gemv2 on the tensor cores through mma.sync (M of 1 to 32)."""
