// V10, register prefetch into two shared stages (the numba ladder's v8_double_buffer in CUDA C++). Per k tile
// every thread first issues the global loads of tile t + 1 into registers (RegisterTileLoader::load), then
// runs the FFMAs of tile t from one shared stage, then stores the registers into the other stage (A
// transposed) and meets one barrier. One barrier per tile is enough: the stage written in iteration t was last
// read in iteration t - 1, and every thread finished those reads before the barrier that closed t - 1.
// The warp and lane layout is V8's (RM×RN quads of 4×4 per lane, WM/RM and WN/RN apart).
// B_KMAJOR=1: B is handed over as the N×K matrix Bᵀ (x @ w.t()) and read in place: its quads run along k and are
// stored transposed, as A's are, into a tile padded like A's (LDB = BN + 4).
#include "sgemm_common.cuh"

#ifndef B_KMAJOR
#define B_KMAJOR 0
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define LANES_N (WN / (4 * RN))  // lanes across a warp tile's columns; 32 / LANES_N down its rows
#define LDA (BM + 4)              // keeps the transposing stores of a warp (BK = 8) on 32 distinct banks
#define LDB (B_KMAJOR ? BN + 4 : BN)  // a transposed B tile is padded as A's
#define A_STAGE (BK * LDA)
#define B_STAGE (BK * LDB)

template <bool kVec>
__device__ __forceinline__ void register_prefetch_gemm(float *C, const float *A, const float *B, int M, int N, int K,
                                                       float *As, float *Bs, const EpiArgs &epi) {
  int tm, tn;
  sgemm::tile_coords<GROUP_M>((M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = (warp / (BN / WN)) * WM + (lane / LANES_N) * 4;
  const int col = (warp % (BN / WN)) * WN + (lane % LANES_N) * 4;
  sgemm::RegisterTileLoader<BM, BN, BK, LDA, LDB, THREADS, kVec, B_KMAJOR> tile(A, B, M, N, K, m0, n0);
  const int tiles = (K + BK - 1) / BK;

  tile.load(0);
  tile.store(As, Bs);
  __syncthreads();
  float acc[4 * RM][4 * RN] = {};
  int cur = 0;  // the stage computed on in this iteration
  for (int t = 0; t < tiles; ++t) {
    tile.load((t + 1) * BK);  // past the last tile every guard fails: no loads, zeros stored harmlessly
    const float *as = As + cur * A_STAGE + row, *bs = Bs + cur * B_STAGE + col;
#pragma unroll
    for (int k = 0; k < BK; ++k) sgemm::outer_product<RM, RN, WM / RM, WN / RN>(as + k * LDA, bs + k * LDB, acc);
    cur ^= 1;
    tile.store(As + cur * A_STAGE, Bs + cur * B_STAGE);
    __syncthreads();
  }
  sgemm::store_tile<RM, RN, WM / RM, WN / RN>(C, M, N, m0 + row, n0 + col, acc, epi);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
v10_register_prefetch(float *C, const float *A, const float *B, int M, int N, int K EPI_PARAM) {
#if !EPI
  const EpiArgs epi = {};  // unread: store_tile stores the accumulators as they are
#endif
  extern __shared__ float4 smem[];  // two stages of A (transposed, padded) then two of B
  float *As = reinterpret_cast<float *>(smem), *Bs = As + 2 * A_STAGE;
  // One uniform branch per launch: both paths are the same template, the 128-bit one only where every row
  // start of A and B is 16-byte aligned (C's stores make their own check in store_tile).
  if (sgemm::rows_vectorizable(A, K) && sgemm::rows_vectorizable(B, B_KMAJOR ? K : N))
    register_prefetch_gemm<true>(C, A, B, M, N, K, As, Bs, epi);
  else
    register_prefetch_gemm<false>(C, A, B, M, N, K, As, Bs, epi);
}
