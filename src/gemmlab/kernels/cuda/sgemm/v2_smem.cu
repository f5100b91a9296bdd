// V2, the seeds' shared-memory tiling: a TILE×TILE block stages a TILE×TILE tile of A and of B in shared
// memory per step along K, and every thread reuses each staged value TILE times from shared memory.
// Out-of-range elements are staged as zeros so partial tiles add nothing. The seeds' version guards its
// store with `row < M || col < N` and so writes past C on ragged shapes; this one stores only when both hold.
#ifndef TILE
#define TILE 32
#endif

extern "C" __global__ void v2_smem(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * TILE + tx;
  int row = blockIdx.y * TILE + ty;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
