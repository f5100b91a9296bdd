// V5, vectorized: V4's 8×8 register tile, with the tiles staged through 128-bit global loads and A stored
// transposed in shared memory (As[k][m]), so a thread reads its 8 values of A and 8 of B at one k as two
// 128-bit shared loads each instead of sixteen 32-bit ones. Unaligned or ragged operands fall back to
// per-float loads inside the same staging code.
#include "sgemm_common.cuh"

#define THREADS (BM * BN / 64)

extern "C" __global__ void __launch_bounds__(THREADS)
v5_vectorized(float *C, const float *A, const float *B, int M, int N, int K) {
  const int row = (threadIdx.x / (BN / 8)) * 8, col = (threadIdx.x % (BN / 8)) * 8;
  // an 8×8 tile as 2×2 quads four floats apart: one contiguous 8×8 block
  sgemm::register_staged_gemm<BM, BN, BK, BM, THREADS, 2, 2, 4, 4>(C, A, B, M, N, K, blockIdx.y * BM, blockIdx.x * BN,
                                                                  row, col);
}
