// tc3: warp specialization. Warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec) and one of
// its threads streams k-tiles by TMA into the ring, waiting on each slot's `empty` barrier. Warpgroups 1..CW
// are consumers: they take the registers (setmaxnreg.inc), wait on `full`, issue wgmma, keep one wgmma group in
// flight (wait 1) and release the previous slot, so the tensor cores never wait for a block-wide barrier.
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_pipeline.cuh"

#define CW (BM / 64)  // consumer warpgroups

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc3_warp_specialized(const __grid_constant__ TcArgs args) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = aligned_smem(smem_raw);
  u64 *full = reinterpret_cast<u64 *>(smem + STAGES * STAGE_BYTES);
  u64 *empty = full + STAGES;
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int KT = (K + BK - 1) / BK;

  ring_init<STAGES, 1>(full, empty, CW * 4, mapA, mapB);  // one arrival per consumer warp

  if (wg == 0) {
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], (kt / STAGES - 1) & 1);
        load_stage<1>(smem + s * STAGE_BYTES, mapA, mapB, &full[s], m0, n0, kt * BK, 0);
      }
    }
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    for (int kt = 0; kt < KT; ++kt) {
      const int s = kt % STAGES;
      mbar_wait(&full[s], (kt / STAGES) & 1);
      const u32 a = smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
      const u32 b = smem_u32(smem + s * STAGE_BYTES + A_TILE_BYTES);
      wgmma_fence();
      wgmma_ktile<BN>(d, a, b, 1);
      wgmma_commit();
      wgmma_wait<1>();  // the previous k-tile's group is done: its slot can be refilled
      if (kt > 0 && tid % 32 == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
    }
    wgmma_wait<0>();
    fence_acc(d);
    store_acc<BN>(C, d, m0 + cw * 64, n0, M, N, args);
  }
}
