// V3, 1D block tiling: each thread computes TM outputs of one column of C, so a value of B read from
// shared memory is reused TM times from a register. Block tile BM×BN, THREADS = BM*BN/TM.
#include "sgemm_common.cuh"

#define THREADS (BM * BN / TM)

extern "C" __global__ void __launch_bounds__(THREADS)
v3_1d_blocktile(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[BM * BK];  // row-major BM×BK
  __shared__ float Bs[BK * BN];  // row-major BK×BN
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int col = threadIdx.x % BN, row = (threadIdx.x / BN) * TM;

  float acc[TM][1] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    sgemm::stage_scalar<BM, BK, THREADS>(As, A, M, K, m0, k0);
    sgemm::stage_scalar<BK, BN, THREADS>(Bs, B, K, N, k0, n0);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + col];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i][0] = fmaf(As[(row + i) * BK + k], b, acc[i][0]);
    }
    __syncthreads();
  }
  sgemm::store_scalar(C, M, N, m0 + row, n0 + col, acc);
}
