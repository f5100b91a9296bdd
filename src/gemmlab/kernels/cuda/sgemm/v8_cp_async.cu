// V8, a STAGES-deep cp.async pipeline: V7's warp-tiled block, with the tiles copied global -> shared by
// cp.async into a ring of STAGES shared buffers. The copies for tile t + STAGES - 1 are in flight while
// tile t is computed, they bypass the registers (no staging registers, no load-to-store stall), and one
// barrier per tile replaces two. A is transposed on the way in by 4-byte copies (a 16-byte copy cannot
// scatter); B moves in 16-byte copies where its rows are 16-byte aligned, otherwise in 4-byte ones.
// Edges are zero-filled by the copies' src-size operand. Thread tile: RM×RN quads of 4×4.
// B_KMAJOR=1: B is handed over as the N×K matrix Bᵀ (x @ w.t()) and read in place, transposed on the way in
// by 4-byte copies as A is, into a tile padded like A's (LDB = BN + 4).
#include "sgemm_common.cuh"

#ifndef B_KMAJOR
#define B_KMAJOR 0
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define LANES_N (WN / (4 * RN))  // lanes across a warp tile's columns; 32 / LANES_N down its rows
#define LDA (BM + 4)              // keeps the transposing 4-byte copies of a warp on 32 distinct banks
#define LDB (B_KMAJOR ? BN + 4 : BN)  // a transposed B tile is padded as A's
#define A_STAGE (BK * LDA)
#define B_STAGE (BK * LDB)

// BATCHED=1 (v9 for a batch in one launch): product blockIdx.z of A's and B's batch, their matrices stride_a and
// stride_b elements apart (0: broadcast), into the contiguous (batch, M, N) C.
#ifndef BATCHED
#define BATCHED 0
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
v8_cp_async(float *C, const float *A, const float *B, int M, int N, int K EPI_PARAM
#if BATCHED
            , long long stride_a, long long stride_b
#endif
) {
#if !EPI
  const EpiArgs epi = {};  // unread: store_tile stores the accumulators as they are
#endif
  extern __shared__ float4 smem[];
#if BATCHED
  A += blockIdx.z * stride_a;
  B += blockIdx.z * stride_b;
  C += (long long)blockIdx.z * M * N;
#endif
  float *As = reinterpret_cast<float *>(smem), *Bs = As + STAGES * A_STAGE;
  int tm, tn;
  sgemm::tile_coords<GROUP_M>((M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = (warp / (BN / WN)) * WM + (lane / LANES_N) * 4;
  const int col = (warp % (BN / WN)) * WN + (lane % LANES_N) * 4;
  const sgemm::CpAsyncTileLoader<BM, BN, BK, LDA, LDB, THREADS, B_KMAJOR> loader(A, B, M, N, K, m0, n0);
  const int tiles = (K + BK - 1) / BK;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) loader.load(As + s * A_STAGE, Bs + s * B_STAGE, s * BK);
    sgemm::cp_async_commit();  // an empty group too, so the wait count below stays exact
  }

  float acc[4 * RM][4 * RN] = {};
  int read = 0, write = STAGES - 1;
  for (int t = 0; t < tiles; ++t) {
    sgemm::cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
    __syncthreads();  // everyone's have, and everyone is done with the stage the next copies overwrite
    if (t + STAGES - 1 < tiles) loader.load(As + write * A_STAGE, Bs + write * B_STAGE, (t + STAGES - 1) * BK);
    sgemm::cp_async_commit();
    const float *as = As + read * A_STAGE + row, *bs = Bs + read * B_STAGE + col;
#pragma unroll KUNROLL  // BK: fully unrolled; less trades loop overhead for registers
    for (int k = 0; k < BK; ++k) sgemm::outer_product<RM, RN, WM / RM, WN / RN>(as + k * LDA, bs + k * LDB, acc);
    read = read + 1 == STAGES ? 0 : read + 1;
    write = write + 1 == STAGES ? 0 : write + 1;
  }
  sgemm::store_tile<RM, RN, WM / RM, WN / RN>(C, M, N, m0 + row, n0 + col, acc, epi);
}
