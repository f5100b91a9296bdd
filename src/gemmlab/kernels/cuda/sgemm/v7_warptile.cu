// V7, warp tiling: the block tile is cut into WM×WN warp tiles and each warp's 32 lanes cover their warp
// tile with 2×2 quads of 4×4 (quads WM/2 and WN/2 apart). A warp's shared-memory footprint per k becomes
// WM + WN floats (A: WM/8 distinct quads, B: WN/8) instead of a stripe across the whole block tile, and the
// lanes of a quarter-warp still read contiguous 128-byte runs.
#include "sgemm_common.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define LANES_N (WN / 8)  // lanes across a warp tile's columns; 32 / LANES_N down its rows

extern "C" __global__ void __launch_bounds__(THREADS)
v7_warptile(float *C, const float *A, const float *B, int M, int N, int K) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = (warp / (BN / WN)) * WM + (lane / LANES_N) * 4;
  const int col = (warp % (BN / WN)) * WN + (lane % LANES_N) * 4;
  sgemm::register_staged_gemm<BM, BN, BK, BM + 4, THREADS, 2, 2, WM / 2, WN / 2>(
      C, A, B, M, N, K, blockIdx.y * BM, blockIdx.x * BN, row, col);
}
