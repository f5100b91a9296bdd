// tc2: Hopper wgmma from shared memory, operands staged by TMA into a STAGES-deep ring of 128-byte-swizzled
// tiles guarded by mbarriers. Two warpgroups each own 64 rows of the BM x BN tile; thread 0 issues every copy.
// No specialization yet: after each k-tile all warpgroups drain their wgmma (wait 0) and meet at __syncthreads
// before the slot is refilled, so the tensor cores idle once per k-tile.
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_pipeline.cuh"

extern "C" __global__ void __launch_bounds__(BM / 64 * 128, 1)
    tc2_wgmma_tma(const __grid_constant__ TcArgs args) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = aligned_smem(smem_raw);
  u64 *full = reinterpret_cast<u64 *>(smem + STAGES * STAGE_BYTES);
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int KT = (K + BK - 1) / BK;

  if (tid == 0) {
    tma_prefetch_map(mapA);
    tma_prefetch_map(mapB);
    for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (tid == 0)
    for (int kt = 0; kt < KT && kt < STAGES; ++kt)
      load_stage<1>(smem + kt * STAGE_BYTES, mapA, mapB, &full[kt], m0, n0, kt * BK, 0);

  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;

  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const u32 a = smem_u32(smem + s * STAGE_BYTES) + wg * 64 * 128;
    const u32 b = smem_u32(smem + s * STAGE_BYTES + A_TILE_BYTES);
    wgmma_fence();
    wgmma_ktile<BN>(d, a, b, 1);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warpgroup is done reading slot s
    if (tid == 0 && kt + STAGES < KT)
      load_stage<1>(smem + s * STAGE_BYTES, mapA, mapB, &full[s], m0, n0, (kt + STAGES) * BK, 0);
  }
  fence_acc(d);
  store_acc<BN>(C, d, m0 + wg * 64, n0, M, N, args);
}
