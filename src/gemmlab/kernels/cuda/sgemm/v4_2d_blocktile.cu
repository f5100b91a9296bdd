// V4, 2D block tiling: each thread computes a TM×TN register tile as an outer product per k step, so
// per k it reads TM + TN values from shared memory for TM*TN FFMAs. THREADS = BM*BN/(TM*TN).
#include "sgemm_common.cuh"

#define THREADS (BM * BN / (TM * TN))

extern "C" __global__ void __launch_bounds__(THREADS)
v4_2d_blocktile(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[BM * BK];  // row-major BM×BK
  __shared__ float Bs[BK * BN];  // row-major BK×BN
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int row = (threadIdx.x / (BN / TN)) * TM, col = (threadIdx.x % (BN / TN)) * TN;

  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    sgemm::stage_scalar<BM, BK, THREADS>(As, A, M, K, m0, k0);
    sgemm::stage_scalar<BK, BN, THREADS>(Bs, B, K, N, k0, n0);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[(row + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + col + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  sgemm::store_scalar(C, M, N, m0 + row, n0 + col, acc);
}
