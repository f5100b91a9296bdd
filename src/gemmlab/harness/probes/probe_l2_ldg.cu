// Ceiling probe: L2 -> SM read bandwidth through the load path. The grid sweeps a buffer that fits in L2 `passes`
// times, each thread issuing UNROLL independent 16-byte loads at a time that bypass L1 (ld.global.cg), so every
// byte comes from L2. A pass reads the buffer once: consecutive threads read consecutive 16 bytes. Over a buffer
// many times the L2, one pass, every byte comes from DRAM: the DRAM read bandwidth (roof_probes.dram_read_bandwidth).
#ifndef UNROLL
#define UNROLL 8
#endif

extern "C" __global__ void __launch_bounds__(1024)
    probe_l2_ldg(const uint4 *buf, unsigned long long n16, int passes, unsigned magic, unsigned *sink) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (int p = 0; p < passes; ++p) {
    for (unsigned long long i = first; i < n16; i += stride * UNROLL) {
      uint4 v[UNROLL];
#pragma unroll
      for (int j = 0; j < UNROLL; ++j) {
        const unsigned long long at = i + j * stride;
        v[j] = make_uint4(0, 0, 0, 0);
        if (at < n16)
          asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                       : "l"(buf + at));
      }
#pragma unroll
      for (int j = 0; j < UNROLL; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
  }
  if (acc == magic) sink[first] = acc;  // keeps the loads; the host passes a value the sum never takes
}
