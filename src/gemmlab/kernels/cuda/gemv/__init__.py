"""Decode-sized products on the CUDA cores: M of 1 to 16 rows against an N×K weight handed over as ``w.t()``."""
