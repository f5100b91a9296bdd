// Ceiling probe: L2 -> SM read bandwidth through the copy engine the tensor-core levels load with. One thread per
// CTA streams CHUNK-byte bulk copies (cp.async.bulk, TMA without a tensor map) of a buffer that fits in L2 into a
// ring of STAGES shared-memory slots, each slot's mbarrier counting its bytes; CTA c takes chunks c, c + grid, ...
// of each of `passes` sweeps. Nothing reads the slots: only the L2 -> shared-memory path is timed.
#include "tc_pipeline.cuh"

#ifndef CHUNK
#define CHUNK 16384
#endif
#ifndef STAGES
#define STAGES 8
#endif

__device__ __forceinline__ void bulk_load(void *dst, const void *src, u64 *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(CHUNK), "r"(smem_u32(bar))
               : "memory");
}

extern "C" __global__ void __launch_bounds__(32, 1)
    probe_l2_bulk(const unsigned char *buf, unsigned long long chunks, int passes) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *ring = aligned_smem(smem_raw);
  u64 *full = reinterpret_cast<u64 *>(ring + STAGES * CHUNK);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
  fence_barrier_init();
  u32 it = 0;
  for (int p = 0; p < passes; ++p) {
    for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x, ++it) {
      const u32 s = it % STAGES;
      if (it >= STAGES) mbar_wait(&full[s], (it / STAGES - 1) & 1);  // the slot's last copy has landed
      mbar_expect_tx(&full[s], CHUNK);
      bulk_load(ring + s * CHUNK, buf + c * CHUNK, &full[s]);
    }
  }
  for (u32 j = it > STAGES ? it - STAGES : 0; j < it; ++j) mbar_wait(&full[j % STAGES], (j / STAGES) & 1);
}
