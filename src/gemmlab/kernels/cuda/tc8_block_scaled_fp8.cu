// tc8: block-scaled FP8 (DeepGEMM's recipe) on tc4's persistent, warp-specialized skeleton: the same producer
// (produce_ring, load_stage), tile order, clusters (CM, 1 as registered) and TMA-store epilogue. What differs is
// the consumers' k-tile: each k-tile (128 of K, one scale block) runs its 4 wgmma m64nBNk32 from zero into `part`,
// waits for them, gives the ring slot back and adds part · scale_a[row] · scale_b[block] into the FP32 accumulator
// `acc` on the CUDA cores. The tensor cores' own FP8 accumulation keeps about 14 bits; promoted every 128 of K, it
// never sums more than 128 products. While one warpgroup promotes, the others' wgmma keep the tensor cores busy.
// Scales (Fp8Args): scale_a is ceil(K/128) x M row-major, so a warp's 8 rows of one k-block are 32 contiguous bytes;
// scale_b is ceil(N/128) x ceil(K/128) row-major: one value per tile and k-tile where BN divides 128; a 192-wide
// tile straddles two B blocks at a 64-column boundary, and each 8-column group takes the scale of its side. Each
// thread loads a k-tile's scales SCALE_AHEAD k-tiles before it promotes it, in the producer's k order (unit_ktile).
// PER_TENSOR=1 (tc8_promoted_fp8, precision fp8): one scale per operand, the same loop with the scales' strides at
// zero: tensor scaling with FP32 accumulation, as cuBLASLt's default promotes.
// TIMELINE=1: the stamps of tc4 (Timeline in tc_timeline.cuh).
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_persistent.cuh"
#include "tc_timeline.cuh"

#ifndef PER_TENSOR
#define PER_TENSOR 0
#endif

#ifndef SCALE_AHEAD
#define SCALE_AHEAD 1
#endif

#define CW (BM / 64)
#define STRADDLE (128 % BN != 0)  // a tile's columns cover two 128-wide blocks of B's scales (BN = 192)

__device__ __forceinline__ float ldg_f32(const float *p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc8_block_scaled_fp8(const __grid_constant__ Fp8Args args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, staging_bytes(CW), false> sm(smem_raw);
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const PersistentGrid<CM, 1> grid(M, N, K);
  const u32 rank = grid.rank;

  sm.init<CM, CW>(mapA, mapB);

  if (wg == 0) {
    produce<false>(
        grid, sm, tid,
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
          load_stage<CM>(stage, mapA, mapB, bar, m0, n0, k0, rank);
        },
        [](u32, int) {});
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const int row = cw * 64 + 16 * ((tid % 128) / 32) + (tid % 32) / 4;  // fragment rows row, row + 8 of the tile
    const int KB = grid.KT;  // k-tiles are the scale blocks: BK = 128
    u32 it = 0, unit = 0;
    TileStore out;
    float acc[BN / 2], part[BN / 2];
#if TIMELINE
    Timeline<CW> tlog(args.timeline, cw);
    tlog.start();
#endif
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next(), ++unit) {
      const int2 o = grid.origin(u.tile);
      const int m0 = o.x, n0 = o.y;
      // Rows past M read the last row's scale: TMA filled their A with zeros, and their C is never stored.
      const int ra0 = PER_TENSOR ? 0 : min(m0 + row, M - 1), ra1 = PER_TENSOR ? 0 : min(m0 + row + 8, M - 1);
      // B's scale blocks under the tile: columns below `lo_cols` in block n0 / 128, the rest in the next
      const int nb = n0 / 128, lo_cols = 128 - n0 % 128;
      const int rb = PER_TENSOR ? 0 : nb * KB, rb_hi = PER_TENSOR ? 0 : min(nb + 1, (N - 1) / 128) * KB;
      const int sa_k = PER_TENSOR ? 0 : M, sb_k = PER_TENSOR ? 0 : 1;  // from one k-block to the next
      // The scales of k-tiles kt .. kt + SCALE_AHEAD, slot 0 the current one: each is loaded SCALE_AHEAD k-tiles
      // before its promotion, since one k-tile's wgmma is shorter than an L2 load under the TMA's traffic.
      float a0[SCALE_AHEAD + 1], a1[SCALE_AHEAD + 1], b0[SCALE_AHEAD + 1], b1[SCALE_AHEAD + 1];
      auto load_scales = [&](int kt, int slot) {
        const int kb = unit_ktile(u, unit, kt);  // produce_ring's k order
        a0[slot] = a1[slot] = b0[slot] = b1[slot] = 0.f;
        if (kt < u.ke) {
          const float *sa = args.scale_a + (long long)kb * sa_k;
          a0[slot] = ldg_f32(sa + ra0);
          a1[slot] = ldg_f32(sa + ra1);
          b0[slot] = ldg_f32(args.scale_b + (rb + kb * sb_k));
          if (STRADDLE) b1[slot] = ldg_f32(args.scale_b + (rb_hi + kb * sb_k));
        }
      };
#pragma unroll
      for (int i = 0; i < SCALE_AHEAD; ++i) load_scales(u.kb + i, i);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
#if TIMELINE
      mbar_wait(&sm.full[it % STAGES], (it / STAGES) & 1);
      tlog.unit(unit, 0);
#endif
      for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
        const u32 s = it % STAGES;
        mbar_wait(&sm.full[s], (it / STAGES) & 1);
        const u32 a = smem_u32(sm.smem + s * STAGE_BYTES) + cw * 64 * 128;
        const u32 b = smem_u32(sm.smem + s * STAGE_BYTES + A_TILE_BYTES);
        wgmma_fence();
        wgmma_ktile<BN>(part, a, b, 0);  // from zero: this k-tile's 128 products alone
        wgmma_commit();
        load_scales(kt + SCALE_AHEAD, SCALE_AHEAD);
        wgmma_wait<0>();
        fence_acc(part);
        if (tid % 32 == 0) release_slot<CM>(&sm.empty[s]);
        const float lo0 = a0[0] * b0[0], lo1 = a1[0] * b0[0], hi0 = a0[0] * b1[0], hi1 = a1[0] * b1[0];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const bool lo = !STRADDLE || 8 * j < lo_cols;  // the same for the whole warpgroup
          const float s0 = lo ? lo0 : hi0, s1 = lo ? lo1 : hi1;
          acc[4 * j] = fmaf(part[4 * j], s0, acc[4 * j]);
          acc[4 * j + 1] = fmaf(part[4 * j + 1], s0, acc[4 * j + 1]);
          acc[4 * j + 2] = fmaf(part[4 * j + 2], s1, acc[4 * j + 2]);
          acc[4 * j + 3] = fmaf(part[4 * j + 3], s1, acc[4 * j + 3]);
        }
#pragma unroll
        for (int i = 0; i < SCALE_AHEAD; ++i)
          a0[i] = a0[i + 1], a1[i] = a1[i + 1], b0[i] = b0[i + 1], b1[i] = b1[i + 1];
      }
#if TIMELINE
      tlog.unit(unit, 1);
#endif
      out.store<BN>(args, C, acc, sm.extra, m0, n0, cw, M, N);
#if TIMELINE
      tlog.unit(unit, 2);
#endif
    }
  }
#if TIMELINE
  // the end stamp outside the consumers' branch (before the stores drain, where tc4 stamps it): inside, it costs a
  // consumer of three warpgroups registers its mainloop has none of to spare, and the spills would be what the
  // stamps measure
  if (wg > 0) Timeline<CW>(args.timeline, wg - 1).end();
#endif
#if EPI_TMA
  tma_store_wait_all();
#endif
  __syncwarp();
  if (CM > 1) cluster_sync();
}
