// v10's main loop, register prefetch into two shared stages (the numba ladder's v8_double_buffer in CUDA C++), shared
// by v10 (over all of K) and v11 (over one split of K). Per k tile every thread first issues the global loads of tile
// t + 1 into registers (RegisterTileLoader::load), then runs the FFMAs of tile t from one shared stage, then stores
// the registers into the other stage (A transposed) and meets one barrier. One barrier per tile is enough: the stage
// written in iteration t was last read in iteration t - 1, and every thread finished those reads before the barrier
// that closed t - 1. The warp and lane layout is V8's (RM×RN quads of 4×4 per lane, WM/RM and WN/RN apart).
// B_KMAJOR=1: B is handed over as the N×K matrix Bᵀ (x @ w.t()) and read in place: its quads run along k and are
// stored transposed, as A's are, into a tile padded like A's (LDB = BN + 4).
#pragma once
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

namespace sgemm {

// This thread's first row and column in the BM×BN tile (outer_product's and store_tile's row0, col0)
__device__ __forceinline__ void lane_origin(int &row, int &col) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  row = (warp / (BN / WN)) * WM + (lane / LANES_N) * 4;
  col = (warp % (BN / WN)) * WN + (lane % LANES_N) * 4;
}

// The product of the k tiles [t0, t1) of the BM×BN tile at (m0, n0) into acc, this thread's register tile at (row, col);
// As and Bs hold two stages each. kPartK: the range may end before K does (a split of K, v11), so the tile after its
// last is not loaded; over the whole of K (v10) the load past the last tile finds every guard off and loads nothing.
template <bool kVec, bool kPartK = false>
__device__ __forceinline__ void register_prefetch_tiles(const float *A, const float *B, int M, int N, int K, int m0,
                                                        int n0, int row, int col, int t0, int t1, float *As,
                                                        float *Bs, float (&acc)[4 * RM][4 * RN]) {
  RegisterTileLoader<BM, BN, BK, LDA, LDB, THREADS, kVec, B_KMAJOR> tile(A, B, M, N, K, m0, n0);
  tile.load(t0 * BK);
  tile.store(As, Bs);
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4 * RM; ++i)
#pragma unroll
    for (int j = 0; j < 4 * RN; ++j) acc[i][j] = 0.0f;
  int cur = 0;  // the stage computed on in this iteration
  for (int t = t0; t < t1; ++t) {
    if (!kPartK || t + 1 < t1) tile.load((t + 1) * BK);  // else the old tile is stored, into a stage never read
    const float *as = As + cur * A_STAGE + row, *bs = Bs + cur * B_STAGE + col;
#pragma unroll
    for (int k = 0; k < BK; ++k) outer_product<RM, RN, WM / RM, WN / RN>(as + k * LDA, bs + k * LDB, acc);
    cur ^= 1;
    tile.store(As + cur * A_STAGE, Bs + cur * B_STAGE);
    __syncthreads();
  }
}

}  // namespace sgemm
