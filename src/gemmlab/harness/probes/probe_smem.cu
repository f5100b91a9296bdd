// Ceiling probe: shared-memory read bandwidth of one SM, in bytes per clock. 32 warps each read 16 bytes per lane
// per ld.shared.v4, the lanes of a warp on 512 consecutive bytes (four 128-byte wavefronts, no bank conflict),
// UNROLL loads in flight; clock64 around the loop gives the SM's cycles.
// Every iteration reads the same addresses, so the loads are volatile: asm volatile only keeps the C++ compiler
// from dropping them, while ptxas sees plain loads of unchanged memory and keeps one of each per 16 iterations.
// The loop is not unrolled, so its body is one iteration and the SASS test can count its LDS against the bytes
// the host counts.
#ifndef UNROLL
#define UNROLL 8
#endif
#define THREADS 1024
#define WORDS (THREADS * UNROLL)  // 16-byte words: 128 KB, each thread reads its own UNROLL of them

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    probe_smem(int iters, unsigned magic, unsigned *sink, long long *cycles) {
  extern __shared__ uint4 words[];
  for (int i = threadIdx.x; i < WORDS; i += THREADS) words[i] = make_uint4(i, i + 1, i + 2, i + 3);
  __syncthreads();
  const unsigned base = (unsigned)__cvta_generic_to_shared(words + threadIdx.x);
  unsigned acc = 0;
  const long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      unsigned x, y, z, w;
      asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                   : "r"(base + j * THREADS * 16));
      acc ^= x ^ y ^ z ^ w;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
  if (acc == magic) sink[blockIdx.x * THREADS + threadIdx.x] = acc;
}
