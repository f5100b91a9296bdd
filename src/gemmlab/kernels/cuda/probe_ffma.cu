// Ceiling probe: FP32 FFMA rate of one SM, in FLOPs per clock. 32 warps each run CHAINS independent FFMA chains
// (enough to cover the pipe's latency), the loop unrolled so that its own instructions are a small fraction;
// clock64 around the loop gives the SM's cycles.
#ifndef CHAINS
#define CHAINS 16
#endif
#define THREADS 1024

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    probe_ffma(int iters, float x, float y, float magic, float *sink, long long *cycles) {
  float a[CHAINS];
#pragma unroll
  for (int j = 0; j < CHAINS; ++j) a[j] = threadIdx.x + j;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int j = 0; j < CHAINS; ++j) a[j] = fmaf(a[j], x, y);
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < CHAINS; ++j) s += a[j];
  if (s == magic) sink[blockIdx.x * THREADS + threadIdx.x] = s;
}
