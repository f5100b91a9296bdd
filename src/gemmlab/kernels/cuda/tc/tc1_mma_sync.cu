// tc1: warp-level tensor cores the Ampere way. A 128x128 block tile, 8 warps in a 2x4 grid, each warp a 64x32
// tile of mma.sync (m16n8k16 bf16 or f16, or m16n8k8 tf32) with FP32 accumulators in registers. Operands stream
// through a STAGES-deep cp.async ring; 16-bit fragments come from shared memory by ldmatrix (.trans for the N-major
// B).
// Rows are padded by 16 bytes (32 for the fp32 B tile) so fragment loads hit 32 distinct banks. Any M, N, K:
// 16-byte chunks past an edge are zero-filled by cp.async, and when a row stride is not a multiple of 16 bytes
// (ALIGNED=0 at run time) the tile is staged element by element instead.
// BATCHED=1: product blockIdx.z of A's and B's batch, their matrices stride_a and stride_b elements apart (0:
// broadcast), into the contiguous (batch, M, N) C.
#ifndef TC_BF16
#define TC_BF16 1
#endif
// TC_F16=1 (with TC_BF16=1): f16 operands, the same fragments and mma.sync shape as bf16
#ifndef TC_F16
#define TC_F16 0
#endif
#if TC_F16
#define MMA16_TYPE "f16"
#else
#define MMA16_TYPE "bf16"
#endif
#ifndef BATCHED
#define BATCHED 0
#endif
#include "tc_out.cuh"
#define WARPS_M 2
#define WARPS_N 4
#define WM (BM / WARPS_M)  // 64
#define WN (BN / WARPS_N)  // 32
#define MI (WM / 16)
#define NI (WN / 8)
#define THREADS (WARPS_M * WARPS_N * 32)

#if TC_BF16
typedef unsigned short elem_t;  // bf16 or f16 bits
#define VEC 8                   // elements per 16-byte chunk
#define MMA_K 16
#define A_LD (BK + 8)
#define B_LD (BN + 8)
#else
typedef float elem_t;
#define VEC 4
#define MMA_K 8
#define A_LD (BK + 4)
#define B_LD (BN + 8)
#endif
#define A_STAGE (BM * A_LD)
#define B_STAGE (BK * B_LD)

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Stage a rows x cols tile whose top-left is (r0, c0) of a row-major matrix (R x Cn, row stride ld) into smem
// with row stride sld; zeros outside the matrix.
template <int ROWS, int COLS>
__device__ __forceinline__ void load_tile(elem_t *s, int sld, const elem_t *g, int R, int Cn, int ld, int r0,
                                          int c0, bool aligned) {
  constexpr int CHUNKS = ROWS * COLS / VEC;
#pragma unroll
  for (int i = threadIdx.x; i < CHUNKS; i += THREADS) {
    const int r = i / (COLS / VEC), c = (i % (COLS / VEC)) * VEC;
    const int gr = r0 + r, gc = c0 + c;
    elem_t *dst = s + r * sld + c;
    if (aligned) {
      const bool in = gr < R && gc < Cn;  // with ld % VEC == 0 a chunk is all in or all out
      cp_async16(dst, in ? (const void *)(g + (long long)gr * ld + gc) : (const void *)g, in ? 16 : 0);
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v)
        dst[v] = (gr < R && gc + v < Cn) ? g[(long long)gr * ld + gc + v] : (elem_t)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    tc1_mma_sync(OutT *C, const elem_t *A, const elem_t *B, int M, int N, int K, int aligned
#if BATCHED
                 , long long stride_a, long long stride_b
#endif
    ) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
#if BATCHED
  A += blockIdx.z * stride_a;
  B += blockIdx.z * stride_b;
  C += (long long)blockIdx.z * M * N;
#endif
  elem_t *As = reinterpret_cast<elem_t *>(smem_raw);
  elem_t *Bs = As + STAGES * A_STAGE;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int KT = (K + BK - 1) / BK;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) {
      load_tile<BM, BK>(As + s * A_STAGE, A_LD, A, M, K, K, m0, s * BK, aligned);
      load_tile<BK, BN>(Bs + s * B_STAGE, B_LD, B, K, N, N, s * BK, n0, aligned);
    }
    cp_async_commit();
  }

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt landed for everyone; slot (kt-1) % STAGES is free
    const int nk = kt + STAGES - 1;
    if (nk < KT) {
      const int s = nk % STAGES;
      load_tile<BM, BK>(As + s * A_STAGE, A_LD, A, M, K, K, m0, nk * BK, aligned);
      load_tile<BK, BN>(Bs + s * B_STAGE, B_LD, B, K, N, N, nk * BK, n0, aligned);
    }
    cp_async_commit();

    const elem_t *as = As + (kt % STAGES) * A_STAGE + (wm * WM) * A_LD;
    const elem_t *bs = Bs + (kt % STAGES) * B_STAGE + wn * WN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += MMA_K) {
      unsigned a[MI][4], b[NI][2];
#if TC_BF16
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const elem_t *p = as + (i * 16 + lane % 16) * A_LD + kk + (lane / 16) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        const elem_t *p = bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * B_LD + j * 8 + (lane / 16) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32." MMA16_TYPE "." MMA16_TYPE ".f32 "
              "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
#else
      const int g = lane / 4, t4 = lane % 4;
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const float *p = as + (i * 16 + g) * A_LD + kk + t4;
        a[i][0] = __float_as_uint(p[0]);
        a[i][1] = __float_as_uint(p[8 * A_LD]);
        a[i][2] = __float_as_uint(p[4]);
        a[i][3] = __float_as_uint(p[8 * A_LD + 4]);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const float *p = bs + (kk + t4) * B_LD + j * 8 + g;
        b[j][0] = __float_as_uint(p[0]);
        b[j][1] = __float_as_uint(p[4 * B_LD]);
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
              "{%8, %9}, {%0, %1, %2, %3};"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
#endif
    }
  }
  cp_async_wait<0>();

  // Accumulator fragment of m16n8: c0, c1 at (row g, cols 2*t4, 2*t4+1); c2, c3 eight rows lower. C is FP32, or
  // BF16 / FP16 (tc_out.cuh), a pair one 8-byte or 4-byte store from a base aligned to it (pairs_aligned).
  const int g = lane / 4, t4 = lane % 4;
  const bool pairs = (N % 2) == 0 && pairs_aligned(C);
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = m0 + wm * WM + i * 16 + g + 8 * h;
        const int c = n0 + wn * WN + j * 8 + 2 * t4;
        if (r < M) {
          OutT *p = C + (long long)r * N + c;
          if (c + 1 < N && pairs) {
            store_pair(p, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
          } else {
            if (c < N) p[0] = out_value(p, acc[i][j][2 * h]);
            if (c + 1 < N) p[1] = out_value(p, acc[i][j][2 * h + 1]);
          }
        }
      }
}
