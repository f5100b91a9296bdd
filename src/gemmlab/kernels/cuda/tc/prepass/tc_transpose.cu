// The TF32 pre-pass: Bᵀ (N×K, row stride LDT >= K) from row-major B (K×N), because tf32 wgmma reads both
// operands K-major. 32×32 tiles through shared memory (padded one column against bank conflicts), so both the
// reads of B and the writes of Bᵀ are coalesced. ROUND=1 (TF32_ROUND=2 levels) writes Bᵀ rounded to TF32 to
// nearest, for a few ALU operations on a copy it makes anyway.
#include "tc_tf32.cuh"
#ifndef ROUND
#define ROUND 0
#endif
extern "C" __global__ void tc_transpose(const float *B, float *BT, int K, int N, int LDT) {
  __shared__ float tile[32][33];
  const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int k = k0 + i, n = n0 + threadIdx.x;
    if (k < K && n < N) tile[i][threadIdx.x] = B[(long long)k * N + n];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int n = n0 + i, k = k0 + threadIdx.x;
    if (n < N && k < K) BT[(long long)n * LDT + k] = ROUND ? tf32_rna(tile[threadIdx.x][i]) : tile[threadIdx.x][i];
  }
}
