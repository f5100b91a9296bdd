"""The Gluon levels' host side: their spec, compile and plan (kernel.py)."""
