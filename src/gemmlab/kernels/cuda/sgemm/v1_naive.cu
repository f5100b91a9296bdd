// V1, the seeds' naive kernel: one thread per element of C, reading a row of A and a column of B
// straight from global memory. threadIdx.x walks N so a warp reads 32 consecutive floats of B (coalesced)
// and one broadcast float of A.
extern "C" __global__ void v1_naive(float *C, const float *A, const float *B, int M, int N, int K) {
  int col = threadIdx.x + blockDim.x * blockIdx.x;
  int row = threadIdx.y + blockDim.y * blockIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
