"""Host launch machinery of the CUDA levels: NVRTC compiles (nvrtc), the GPU resources a plan asks for (gpu), the
spec class and plan of a plain CUDA level (kernel), TMA tensor maps (tma)."""
