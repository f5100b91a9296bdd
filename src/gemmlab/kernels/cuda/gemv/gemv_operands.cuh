// What the gemv levels share: the operand and C types their defines select, the loads of them and the block's last
// step, its warps' sums added and stored.
// IN_FP32 / IN_BF16 / IN_F16 / IN_FP8 select the operand type (FP8: A_E5M2 and B_E5M2 pick the formats; SCALED: 1
// one FP32 scale per operand, 2 block scales); OUT_BF16 writes BF16 C, OUT_F16 FP16 C, else FP32.
#pragma once
// EPI_PARAM and epi_apply, for the block's last step
#include "epilogue.cuh"
#ifndef IN_FP32
#define IN_FP32 0
#endif
#ifndef IN_BF16
#define IN_BF16 0
#endif
#ifndef IN_F16
#define IN_F16 0
#endif
#ifndef IN_FP8
#define IN_FP8 0
#endif
#ifndef A_E5M2
#define A_E5M2 0
#endif
#ifndef B_E5M2
#define B_E5M2 0
#endif
#ifndef SCALED
#define SCALED 0
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#ifndef OUT_F16
#define OUT_F16 0
#endif
static_assert(IN_FP32 + IN_BF16 + IN_F16 + IN_FP8 == 1, "exactly one operand type");
static_assert(OUT_BF16 + OUT_F16 <= 1, "one output type");
static_assert(SCALED == 0 || IN_FP8, "scales belong to FP8 operands");

typedef unsigned int u32;
typedef unsigned short u16;
#if IN_FP32
typedef float InT;
#elif IN_BF16 || IN_F16
typedef u16 InT;
#else
typedef unsigned char InT;
#endif
constexpr int VEC = 16 / sizeof(InT);  // elements per 16-byte chunk
#if OUT_BF16 || OUT_F16
typedef u16 OutT;
#else
typedef float OutT;
#endif

// The chunk of row `row` (of `cols` elements) starting at element k: one 16-byte load where rows are 16-byte
// aligned (`aligned`), else element by element with zeros past the row's end.
__device__ __forceinline__ uint4 chunk(const InT *row, int k, int cols, bool aligned) {
  if (aligned) return __ldg(reinterpret_cast<const uint4 *>(row + k));
  InT e[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) e[i] = k + i < cols ? row[k + i] : (InT)0;
  uint4 v;
  memcpy(&v, e, 16);
  return v;
}

__device__ __forceinline__ void store(float *p, float x) { *p = x; }
__device__ __forceinline__ void store(u16 *p, float x) {
  u16 v;
#if OUT_F16
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v) : "f"(x));
#else
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(x));
#endif
  *p = v;
}

// A block's last step: each warp's MAX_M x ROWS partial sums in shared memory (`partial`, written before the
// barrier) added in warp order, so every call gives the same bits; then the per-tensor scales (SCALED=1), the fused
// epilogue (EPI=1, at the call's row m0 + m), and C's rows m < M at columns n0 + r < N (C and M the block's slice of
// rows from m0 on). The block's threads take the sums in turn (a one-warp block has fewer threads than sums).
template <int WARPS_, int MAX_M_, int ROWS_>
__device__ __forceinline__ void store_block_sums(OutT *__restrict__ C, const float (&partial)[WARPS_][MAX_M_][ROWS_],
                                                 int M, int N, int n0, int m0, const float *__restrict__ scale_a,
                                                 const float *__restrict__ scale_b EPI_PARAM) {
  __syncthreads();
  for (int i = threadIdx.x; i < MAX_M_ * ROWS_; i += WARPS_ * 32) {
    const int m = i / ROWS_, r = i % ROWS_;
    if (m < M && n0 + r < N) {
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < WARPS_; ++w) v += partial[w][m][r];
#if SCALED == 1
      v *= scale_a[0] * scale_b[0];
#endif
#if EPI
      v = epi_apply(epi, v, m0 + m, n0 + r);
#endif
      store(C + (long long)m * N + n0 + r, v);
    }
  }
}
