// TF32 rounding in shared memory (tc4..tc7): the producer warps' pass over the k-tiles that TMA lands.
//
// Truncation (tc_tf32.cuh) errs toward zero by half a TF32 ulp on average, and over a dot product that bias adds
// up coherently: for N(0,1) operands the relative Frobenius error of C is about 0.79·2^-10 truncated (a bias of
// 0.72 and a spread of 0.32) against 0.30·2^-10 rounded to nearest (cuBLAS TF32's). An operand that passes through registers (tc5's B fragments) is
// rounded there, for a few ALU operations per value. The operand wgmma reads from shared memory can only be
// rounded in shared memory: the producer warpgroup's warps 1-3, idle while one thread of warp 0 issues the TMA
// copies, wait for each k-tile to land, rewrite it (rounded, or for tc7 its small part beside it), fence the
// writes for the async proxy the tensor cores read through, and arrive on the slot's `ready` barrier, which the
// consumers wait on after `full`. The cost is shared-memory bandwidth: a read and a write of every byte rewritten.
#pragma once
#include "tc_pipeline.cuh"
#include "tc_tf32.cuh"

#ifndef TF32_ROUND
// 0: operands truncated by the tensor cores; 1: register operands rounded; 2: and the shared-memory ones, by the
// pass below; 3 (tc5): as 1 in the kernel, A rounded before it by the plan's pre-pass (tc_round_copy.cu)
#define TF32_ROUND 0
#endif

// ---- a pass over landed k-tiles: the producer warps' (pass_ring in tc_pipeline.cuh), or tc10's consumers' -----------
// dst[i] = f(src[i]) over BYTES of FP32 (a multiple of 16), thread t of THREADS taking every THREADS-th 16-byte
// chunk: a warp's ld/st.shared.v4 covers 512 contiguous bytes, 4 wavefronts without a bank conflict. The
// transform is elementwise, so the tiles' 128-byte swizzle does not matter, and dst may be src. Each thread
// loads BATCH chunks before it stores any: the compiler cannot move a load above a store that may alias it,
// and one chunk at a time would wait out a shared-memory round trip per 16 bytes. Four chunks in flight spill
// under the producer's 40 registers (ptxas, tc4-tc6); three do not (PASS_BATCH). Where THREADS x BATCH chunks
// divide the tile, no chunk's bound is checked.
#define PASS_BATCH 3
template <int BYTES, int THREADS = PASS_THREADS, int BATCH = PASS_BATCH, class F>
__device__ __forceinline__ void tile_pass(const unsigned char *src, unsigned char *dst, int t, F f) {
  constexpr int CHUNKS = BYTES / 16, ROUNDS = (CHUNKS + BATCH * THREADS - 1) / (BATCH * THREADS);
  constexpr bool exact = CHUNKS % (THREADS * BATCH) == 0;
  static_assert(BATCH >= 1, "a thread passes at least one 16-byte chunk a round");
  for (int r = 0; r < ROUNDS; ++r) {
    const int i = t + r * BATCH * THREADS;
    if (!exact && i >= CHUNKS) break;
    float4 v[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (exact || i + j * THREADS < CHUNKS) v[j] = *reinterpret_cast<const float4 *>(src + 16 * (i + j * THREADS));
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (exact || i + j * THREADS < CHUNKS)
        *reinterpret_cast<float4 *>(dst + 16 * (i + j * THREADS)) =
            make_float4(f(v[j].x), f(v[j].y), f(v[j].z), f(v[j].w));
  }
}
