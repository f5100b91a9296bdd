// Ceiling probe: the tensor cores' dense rate of one SM, in FLOPs per clock, for the precision TC_BF16 selects.
// tc4's consumer mainloop without its loads: two warpgroups each run wgmma m64nBN over one k-tile (wgmma_ktile),
// one group in flight, on a shared-memory stage that never changes, so nothing but the tensor cores holds them.
// The loop is not unrolled, so its body is one iteration and the SASS test can count its HGMMA against the FLOPs
// the host counts.
#include "tc_ktile.cuh"
#include "tc_pipeline.cuh"

extern "C" __global__ void __launch_bounds__(BM / 64 * 128, 1)
    probe_wgmma(int iters, float magic, float *sink, long long *cycles) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *stage = aligned_smem(smem_raw);
  for (int i = threadIdx.x; i < STAGE_BYTES / 16; i += blockDim.x)
    reinterpret_cast<uint4 *>(stage)[i] = make_uint4(0, 0, 0, 0);
  fence_proxy_async_smem();  // the zeros, visible to wgmma's reads
  __syncthreads();
  const int cw = threadIdx.x / 128;
  const u32 a = smem_u32(stage) + cw * 64 * 128, b = smem_u32(stage + A_TILE_BYTES);
  float d[BN / 2];
  const long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
    wgmma_ktile<BN>(d, a, b, it > 0);
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  fence_acc(d);
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < BN / 2; ++j) s += d[j];
  if (s == magic) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
