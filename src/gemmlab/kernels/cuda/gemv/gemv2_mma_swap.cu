// gemv2: C = A·Bᵀ for a few rows of A (M <= MAX_M), B handed over as an N×K row-major matrix (x @ w.t()), on the tensor
// cores through mma.sync with the operands swapped: 16 rows of B (16 columns of C) on the instruction's 16-row side,
// the rows of A on its 8-wide side (MAX_M / 8 instructions per k-step). A block of WARPS warps owns ROWS rows of B
// (ROWS / 16 instructions' worth) for every row of A; its warps cut K into WARPS contiguous runs of k-blocks (4 x VEC
// elements: 32 BF16 or FP16, 64 FP8). No shared memory holds an operand: each lane loads its fragments straight from
// global memory in 16-byte chunks. The fragments of mma.sync hold, per lane, two pairs (16-bit) or quads (FP8) of K
// that lie 8 (16) apart; a k-block gives lane q of each group of four the VEC elements [q·VEC, (q+1)·VEC) of its rows
// of B and of its row of A, and the chunk's four 32-bit words feed two k-steps (words x, y the first; z, w the second).
// The same permutation of K on both operands leaves each dot product's terms unchanged. UNROLL k-blocks are loaded
// before any is used. The warps' sums meet in shared memory in warp order, so every call gives the same bits.
// ROWS=16 (registered; 32 and 64 variants): every block reads all of A's rows (its slice of them with M_SLICE, which
// the host sets where the weight's rows are few), so x crosses L2 once per block, ceil(N / ROWS) times, at M = 32
// with 16 rows twice the weight's own bytes. A row of A's fragments feeds ROWS / 16
// instructions, so more rows a block cut those reads by as much, at the price of fewer blocks. Predicted faster at
// M = 32; measured slower, and behind tc10 where not (docs/gemv.md).
// IN_BF16 / IN_F16 / IN_FP8 select the operand type (FP8: A_E5M2 and B_E5M2 pick the formats; SCALED=1, one FP32 scale
// per operand; SCALED=2, DeepGEMM's blocks, laid out as gemv1 reads them: each k-block's two k-steps run from zero and
// are added into the FP32 sums times their rows' scales, since a k-block of 64 lies inside one 128 of K and a block's
// ROWS rows of B inside one 128 of N); OUT_BF16 writes BF16 C, OUT_F16 FP16 C. EPI=1 (epilogue.cuh): each sum becomes
// the fused epilogue's value before its store.
#include "epilogue.cuh"
#include "gemv_operands.cuh"
static_assert(!IN_FP32, "BF16, FP16 or FP8");
#ifndef MAX_M
#define MAX_M 8
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef ROWS
#define ROWS 16
#endif
#ifndef M_SLICE
#define M_SLICE 0  // the host's rows of A a block takes where M is more (0: all of them, M <= MAX_M)
#endif
static_assert(MAX_M % 8 == 0 && MAX_M >= 8 && MAX_M <= 32 && WARPS >= 1 && WARPS <= 16 && UNROLL >= 1, "tile");
static_assert(ROWS == 16 || ROWS == 32 || ROWS == 64, "rows of B per block: one, two or four instructions' worth");
static_assert(WARPS * MAX_M * ROWS * 4 <= 48 * 1024, "the warps' partial sums fit static shared memory");

constexpr int KB = 4 * VEC;    // a k-block: two k-steps of the instruction
constexpr int NT = MAX_M / 8;  // instructions per k-step and 16 rows of B, 8 rows of A each
constexpr int NB = ROWS / 16;  // the instruction's 16-row operands per block: blocks of 16 rows of B

// The instruction: its 16-row operand is B (the weight), its 8-wide one A, so B's type comes first.
#if IN_BF16
#define MMA_TYPES "m16n8k16.row.col.f32.bf16.bf16.f32"
#elif IN_F16
#define MMA_TYPES "m16n8k16.row.col.f32.f16.f16.f32"
#else
#if B_E5M2
#define B_TYPE "e5m2"
#else
#define B_TYPE "e4m3"
#endif
#if A_E5M2
#define A_TYPE "e5m2"
#else
#define A_TYPE "e4m3"
#endif
#define MMA_TYPES "m16n8k32.row.col.f32." B_TYPE "." A_TYPE ".f32"
#endif

// d += B-fragment (16 rows of B) x A-fragment (8 rows of A), one k-step; mma_zero: d = the product alone.
__device__ __forceinline__ void mma(float (&d)[4], u32 b0, u32 b1, u32 b2, u32 b3, u32 a0, u32 a1) {
  asm volatile("mma.sync.aligned." MMA_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(a0), "r"(a1));
}
__device__ __forceinline__ void mma_zero(float (&d)[4], u32 b0, u32 b1, u32 b2, u32 b3, u32 a0, u32 a1) {
  asm volatile("mma.sync.aligned." MMA_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(a0), "r"(a1), "f"(0.0f));
}

#if SCALED == 2 && MAX_M == 32
// one block an SM is enough: ptxas would otherwise hold the 32-row build for few blocks at 128 registers and spill
// (the other builds keep their registers, and their blocks an SM)
#define BOUNDS __launch_bounds__(WARPS * 32, 1)
#else
#define BOUNDS __launch_bounds__(WARPS * 32)
#endif
extern "C" __global__ void BOUNDS
gemv2_mma_swap(OutT *__restrict__ C, const InT *__restrict__ A, const InT *__restrict__ B, int M, int N, int K,
               int aligned, const float *__restrict__ scale_a, const float *__restrict__ scale_b EPI_PARAM) {
  __shared__ float partial[WARPS][MAX_M][ROWS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, q = lane % 4;  // the instruction's row group and the lane in it
#if SCALED == 2
  // A's scales are (ceil(K/128), M) for the call's M; B's row of scales is the block's one 128 of N
  const int kscales = (K + 127) / 128, a_scale_rows = M;
  static_assert(KB == 64 && 128 % ROWS == 0, "a k-block inside one scale block of K, a block's rows inside one of N");
#endif
#if M_SLICE
  // M past MAX_M (a build for M_SLICE rows of A, fewer than the call's): ceil(M / MAX_M) blocks share each ROWS rows
  // of B, one slice of MAX_M rows of A each, next to each other in launch order so that the weight's second read
  // finds its rows in L2
  const int slices = (M + MAX_M - 1) / MAX_M, m0 = blockIdx.x % slices * MAX_M;
  const int n0 = blockIdx.x / slices * ROWS;
  A += (long long)m0 * K;
  C += (long long)m0 * N;
  M -= m0;
#if SCALED == 2
  scale_a += m0;
#endif
#else
  // one block on each ROWS rows of B, all of A's rows: the slicing's arithmetic, compiled in, would cost every
  // build registers and the 32-row one blocks a SM (docs/gemv.md)
  constexpr int m0 = 0;
  const int n0 = blockIdx.x * ROWS;
#endif
  const int kblocks = (K + KB - 1) / KB;
  const int per_warp = (kblocks + WARPS - 1) / WARPS;
  const int kb_begin = warp * per_warp, kb_end = min(kblocks, kb_begin + per_warp);
  const bool vec = aligned != 0;
  const InT *b_lo[NB], *b_hi[NB];  // rows past N: read row N-1, never stored
#pragma unroll
  for (int f = 0; f < NB; ++f) {
    b_lo[f] = B + (long long)min(n0 + 16 * f + g, N - 1) * K;
    b_hi[f] = B + (long long)min(n0 + 16 * f + g + 8, N - 1) * K;
  }
  const InT *a_row[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) a_row[t] = A + (long long)min(8 * t + g, M - 1) * K;
#if SCALED == 2
  const float *b_scales = scale_b + (long long)(n0 / 128) * kscales;
#endif

  float acc[NB][NT][4];
#pragma unroll
  for (int f = 0; f < NB; ++f)
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[f][t][i] = 0.0f;

  for (int kb0 = kb_begin; kb0 < kb_end; kb0 += UNROLL) {
    uint4 lo[UNROLL][NB], hi[UNROLL][NB], a[UNROLL][NT];
#if SCALED == 2
    float sab[UNROLL][NT][2];  // a k-block's scale of B times A's of the lane's two rows 8t + 2q + j of A
#endif
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int k = (kb0 + u) * KB + q * VEC;
      // a k-block is four chunks: where K is not a multiple of KB, the last one's chunks past K read nothing (a
      // 16-byte load there would read the next row); a chunk that K cuts is read element by element (not aligned)
      const bool live = kb0 + u < kb_end && k < K;
      const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int f = 0; f < NB; ++f) {
        lo[u][f] = live ? chunk(b_lo[f], k, K, vec) : zero;
        hi[u][f] = live ? chunk(b_hi[f], k, K, vec) : zero;
      }
#pragma unroll
      for (int t = 0; t < NT; ++t) a[u][t] = live && 8 * t + g < M ? chunk(a_row[t], k, K, vec) : zero;
#if SCALED == 2
      // one instruction sums all four lanes' chunks of the k-block: its scales go by the k-block, not by whether
      // this lane's chunk lies inside K
      const bool block_live = kb0 + u < kb_end;
      const int ks = (kb0 + u) * KB / 128;
      const float sb = block_live ? b_scales[ks] : 0.0f;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int m = 8 * t + 2 * q + j;
          sab[u][t][j] = block_live && m < M ? scale_a[(long long)ks * a_scale_rows + m] * sb : 0.0f;
        }
#endif
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int f = 0; f < NB; ++f)
#pragma unroll
        for (int t = 0; t < NT; ++t) {
#if SCALED == 2
          float d[4];
          mma_zero(d, lo[u][f].x, hi[u][f].x, lo[u][f].y, hi[u][f].y, a[u][t].x, a[u][t].y);
          mma(d, lo[u][f].z, hi[u][f].z, lo[u][f].w, hi[u][f].w, a[u][t].z, a[u][t].w);
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[f][t][i] = fmaf(d[i], sab[u][t][i & 1], acc[f][t][i]);
#else
          mma(acc[f][t], lo[u][f].x, hi[u][f].x, lo[u][f].y, hi[u][f].y, a[u][t].x, a[u][t].y);
          mma(acc[f][t], lo[u][f].z, hi[u][f].z, lo[u][f].w, hi[u][f].w, a[u][t].z, a[u][t].w);
#endif
        }
  }

  // acc[f][t]: rows 16f + g and 16f + g + 8 of the block's B (columns of C), rows 8t + 2q and 8t + 2q + 1 of A
#pragma unroll
  for (int f = 0; f < NB; ++f)
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) partial[warp][8 * t + 2 * q + (i & 1)][16 * f + g + 8 * (i >> 1)] = acc[f][t][i];
  store_block_sums(C, partial, M, N, n0, m0, scale_a, scale_b EPI_ARG);
}
