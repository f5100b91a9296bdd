// gemv1: C = A·Bᵀ for a few rows of A (M <= MAX_M), B handed over as an N×K row-major matrix (x @ w.t()), on the
// CUDA cores. A block of WARPS warps owns ROWS consecutive rows of B (ROWS columns of C) for every row of A: the
// warps cut K into WARPS contiguous segments, each lane walks its segment in 16-byte chunks (VEC elements) of the
// ROWS rows of B and the M rows of A, and FMAs them into MAX_M x ROWS FP32 accumulators. The partial sums meet in a
// fixed order (a butterfly over the lanes, then the warps in index order in shared memory), so every call gives the
// same bits. Each element of B is read once from DRAM; A's few rows come from L1/L2.
// IN_FP32 / IN_BF16 / IN_F16 / IN_FP8 select the operand type (FP8: A_E5M2 and B_E5M2 pick the formats); SCALED: 1
// one FP32 scale per operand, 2 DeepGEMM's blocks (A per 1x128 stored (ceil(K/128), M), B per 128x128 stored
// (ceil(N/128), ceil(K/128)), as gemmlab.fp8 lays them out); OUT_BF16 writes BF16 C, OUT_F16 FP16 C. EPI=1
// (epilogue.cuh): each sum becomes the fused epilogue's value before its store.
#include "epilogue.cuh"
#include "gemv_operands.cuh"
#ifndef MAX_M
#define MAX_M 8
#endif
#ifndef ROWS
#define ROWS 4
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
static_assert(MAX_M >= 1 && MAX_M <= 16 && ROWS >= 1 && ROWS <= 8 && WARPS >= 1 && WARPS <= 32 && UNROLL >= 1,
              "tile");

// A 16-byte chunk's VEC values as FP32.
__device__ __forceinline__ void widen(const uint4 &v, float (&x)[VEC], bool e5m2) {
  const u32 w[4] = {v.x, v.y, v.z, v.w};
#if IN_FP32
#pragma unroll
  for (int i = 0; i < 4; ++i) x[i] = __uint_as_float(w[i]);
#elif IN_BF16
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = __uint_as_float(w[i] << 16);
    x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
#elif IN_F16
#pragma unroll
  for (int i = 0; i < 4; ++i)
    asm("{.reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}"
        : "=f"(x[2 * i]), "=f"(x[2 * i + 1]) : "r"(w[i]));
#else
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const u16 pair = (u16)(w[i] >> (16 * h));
      u32 half2;
      if (e5m2)
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(half2) : "h"(pair));
      else
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(half2) : "h"(pair));
      float lo, hi;
      asm("{.reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}"
          : "=f"(lo), "=f"(hi) : "r"(half2));
      x[4 * i + 2 * h] = lo;
      x[4 * i + 2 * h + 1] = hi;
    }
  }
#endif
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
gemv1_warp_dot(OutT *__restrict__ C, const InT *__restrict__ A, const InT *__restrict__ B, int M, int N, int K,
               int aligned, const float *__restrict__ scale_a, const float *__restrict__ scale_b EPI_PARAM) {
  __shared__ float partial[WARPS][MAX_M][ROWS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n0 = blockIdx.x * ROWS;
  const int chunks = (K + VEC - 1) / VEC;
  const int per_warp = (chunks + WARPS - 1) / WARPS;
  const int c_end = min(chunks, (warp + 1) * per_warp);
  const bool vec = aligned != 0;
  const InT *brow[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) brow[r] = B + (long long)min(n0 + r, N - 1) * K;  // rows past N: read row N-1

  float acc[MAX_M][ROWS];
#pragma unroll
  for (int m = 0; m < MAX_M; ++m)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[m][r] = 0.0f;

  // UNROLL chunks a lane apart are loaded, of the ROWS rows of B and of the M rows of A, before any is used: each
  // lane keeps UNROLL x (ROWS + M) 16-byte loads in flight, one round trip a round. At K = 4096 a lane's whole share
  // is one round, so an A row loaded after the previous row's FMAs would add an L2 round trip per row of A.
  for (int c0 = warp * per_warp + lane; c0 < c_end; c0 += 32 * UNROLL) {
    uint4 raw[UNROLL][ROWS], araw[UNROLL][MAX_M];
#if SCALED == 2
    float sab[UNROLL][MAX_M];  // A's block scale times B's, per row of A
#endif
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + 32 * u;
      const bool live = c < c_end;
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        raw[u][r] = live ? chunk(brow[r], c * VEC, K, vec) : make_uint4(0, 0, 0, 0);
#if SCALED == 2
      const int kb = c * VEC / 128, kblocks = (K + 127) / 128;
      const float sb = live ? scale_b[(long long)(n0 / 128) * kblocks + kb] : 0.0f;  // ROWS divides 128: one block
#endif
#pragma unroll
      for (int m = 0; m < MAX_M; ++m) {
        araw[u][m] = live && m < M ? chunk(A + (long long)m * K, c * VEC, K, vec) : make_uint4(0, 0, 0, 0);
#if SCALED == 2
        sab[u][m] = live && m < M ? scale_a[(long long)kb * M + m] * sb : 0.0f;
#endif
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + 32 * u;
      if (c < c_end) {
        float b[ROWS][VEC];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) widen(raw[u][r], b[r], B_E5M2);
#pragma unroll
        for (int m = 0; m < MAX_M; ++m) {
          if (m < M) {
            float a[VEC];
            widen(araw[u][m], a, A_E5M2);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
              float dot = 0.0f;
#pragma unroll
              for (int i = 0; i < VEC; ++i) dot = fmaf(a[i], b[r][i], dot);
#if SCALED == 2
              acc[m][r] = fmaf(dot, sab[u][m], acc[m][r]);
#else
              acc[m][r] += dot;
#endif
            }
          }
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < MAX_M; ++m)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float v = acc[m][r];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
      if (lane == 0) partial[warp][m][r] = v;
    }
  store_block_sums(C, partial, M, N, n0, 0, scale_a, scale_b EPI_ARG);
}
