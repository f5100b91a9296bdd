"""Shared code generation for the fast numba levels (v3 onwards): the memory-access primitives (primitives.py), the
tile configuration (tiling.py), the kernel template (template.py) and the spec of a generated level (level.py).

numba compiles what the Python source says, and the plain numba way of writing a register-tiled GEMM says too
much and too little: array indexing carries 64-bit index math, a negative-index wraparound select and loads of
the array's shape; ``cuda.local.array`` accumulators indexed in a ``for`` loop that NVVM does not fully unroll
go to local memory; and Python has no float4. This package removes those costs at the source:

* **Templates.** Each level's kernel is Python source generated here from its tile constants (BM, BN, BK, the
  warp tile WM×WN split WMITER×WNITER times, TM×TN per thread) and exec'd, so every tile size is a literal,
  every per-thread accumulator is a scalar local (``c_3_5``) and every loop over BK, TM and TN is unrolled in
  the text itself. NVVM sees straight-line code, as nvcc sees CUDA C with ``#pragma unroll``.
* **Memory intrinsics.** ``ldg/ldg4/stg/stg4`` (global) and ``lds/lds4/sts/sts4`` (shared) are numba
  ``@intrinsic``\\ s that emit one load or store from the array's data pointer plus a flat element offset: no
  wraparound, no shape loads, and the ``.v4`` forms are single 16-byte instructions (``ld.global.nc.v4.f32``,
  ``ld.shared.v4.f32``) that numba's indexing cannot express. Shared accesses are cast to the shared address
  space so they compile to ``ld.shared``/``st.shared`` with immediate offsets instead of generic loads.
  ``cp4/cp16/cp_commit/cp_waitN`` emit cp.async as inline PTX, which numba lacks. ``gemm_source(...,
  access="index")`` writes the same template with numba array indexing, as a baseline.
* **Variants per problem.** 16-byte global accesses need K % 4 == 0, N % 4 == 0 and 16-byte aligned operands;
  otherwise the same template, emitted with 4-byte global accesses, runs instead (``GeneratedKernel.variant``
  picks per launch), so every M, N, K >= 1 stays valid.

Under numba's CUDA simulator (CI without a GPU) the same generated source runs with the intrinsics replaced by
plain Python element accesses on flattened NumPy views, so the tests execute the real kernel text.
"""
