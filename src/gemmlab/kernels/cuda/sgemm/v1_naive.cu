// V1, the seeds' naive kernel: one thread per element of C, reading a row of A and a column of B
// straight from global memory. threadIdx.x walks N so a warp reads 32 consecutive floats of B (coalesced)
// and one broadcast float of A.
// ROWS_ON_X=1 (a variant, not the registered build) maps threadIdx.x to rows instead: a warp's lanes then read 32
// rows of A, K floats apart, at each k, the uncoalesced access the second seed attributes to this kernel.
extern "C" __global__ void v1_naive(float *C, const float *A, const float *B, int M, int N, int K) {
#if defined(ROWS_ON_X) && ROWS_ON_X
  int row = threadIdx.x + blockDim.x * blockIdx.x;
  int col = threadIdx.y + blockDim.y * blockIdx.y;
#else
  int col = threadIdx.x + blockDim.x * blockIdx.x;
  int row = threadIdx.y + blockDim.y * blockIdx.y;
#endif
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
