// V6, bank-conflict-free shared memory. Two changes against V5, both about the 32 four-byte banks:
//  - each k row of the transposed A tile is padded by 4 floats (LDA = BM + 4), so the transposing
//    stores of one warp, which write 16 consecutive m at two k four rows apart, land in 32 distinct
//    banks instead of 16 (a 2-way conflict); 4 keeps every row 16-byte aligned for 128-bit reads;
//  - a thread's 8×8 tile is four 4×4 quads half a block tile apart instead of one contiguous 8×8 run,
//    so the 8 lanes of each quarter-warp read 8 adjacent quads (128 contiguous bytes) of B instead of
//    quads 32 bytes apart, which fold onto the same banks two by two.
#include "sgemm_common.cuh"

#define THREADS (BM * BN / 64)

extern "C" __global__ void __launch_bounds__(THREADS)
v6_bank_conflict_free(float *C, const float *A, const float *B, int M, int N, int K) {
  const int row = (threadIdx.x / (BN / 8)) * 4, col = (threadIdx.x % (BN / 8)) * 4;
  sgemm::register_staged_gemm<BM, BN, BK, BM + 4, THREADS, 2, 2, BM / 2, BN / 2>(
      C, A, B, M, N, K, blockIdx.y * BM, blockIdx.x * BN, row, col);
}
