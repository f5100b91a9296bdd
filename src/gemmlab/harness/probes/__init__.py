"""Probe kernels: the ceiling probes' CUDA sources (probe_*.cu, which harness/roof_probes.py compiles and times), and
ws_racecheck, which runs Triton's warp_specialize protocol and copies of it under compute-sanitizer racecheck."""
