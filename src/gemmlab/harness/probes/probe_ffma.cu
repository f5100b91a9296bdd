// Ceiling probe: FP32 FFMA rate of one SM, in FLOPs per clock. 32 warps each run CHAINS independent FFMA chains
// (enough to cover the pipe's latency), REPEAT steps of each per iteration; clock64 around the loop gives the
// SM's cycles. An FFMA takes one of the SM's four issue slots per clock, and so does each of the loop's own
// instructions (its counter, compare and branch): REPEAT makes them a small fraction. The loop is not unrolled,
// so its body is one iteration and the SASS test can count its FFMA against the FLOPs the host counts.
#ifndef CHAINS
#define CHAINS 16
#endif
#ifndef REPEAT
#define REPEAT 32
#endif
#define THREADS 1024

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    probe_ffma(int iters, float x, float y, float magic, float *sink, long long *cycles) {
  float a[CHAINS];
#pragma unroll
  for (int j = 0; j < CHAINS; ++j) a[j] = threadIdx.x + j;
  __syncthreads();
  const long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < REPEAT; ++u)
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
