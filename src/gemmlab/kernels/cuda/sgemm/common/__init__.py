"""What the FP32 ladder's levels share: configuration checks and traffic models (sgemm.py), device helpers
(sgemm_common.cuh)."""
