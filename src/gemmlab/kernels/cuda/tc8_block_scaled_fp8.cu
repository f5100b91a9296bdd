// tc8: block-scaled FP8 (DeepGEMM's recipe) on tc4's persistent, warp-specialized skeleton: the same producer
// (produce_ring, load_stage), tile order, clusters (CM, 1 as registered) and TMA-store epilogue. What differs is
// the consumers' k-tile: each k-tile (128 of K, one scale block) runs its 4 wgmma m64nBNk32 from zero into `part`,
// waits for them, gives the ring slot back and adds part · scale_a[row] · scale_b[block] into the FP32 accumulator
// `acc` on the CUDA cores. The tensor cores' own FP8 accumulation keeps about 14 bits; promoted every 128 of K, it
// never sums more than 128 products. While one warpgroup promotes, the others' wgmma keep the tensor cores busy.
// Scales (Fp8Args): scale_a is ceil(K/128) x M row-major, so a k-block's scales of a tile's rows are contiguous;
// scale_b is ceil(N/128) x ceil(K/128) row-major: one value per tile and k-tile where BN divides 128; a 192-wide
// tile straddles two B blocks at a 64-column boundary, and each 8-column group takes the scale of its side.
// SCALE_TMA=1 (registered): a k-tile's scales travel with its operands. The producer copies them with TMA through
// the 1-D maps args.sa and args.sb into the ring slot's scale area, counted on the slot's `full` barrier, and each
// consumer thread reads its three from shared memory just before it issues the k-tile's wgmma: read after the issue,
// or between the wait and the promotion, they held up the promotion as long as global loads did. A box starts on 16
// bytes, where a tile's scales need not (a k-block of A's is M floats on from the last): each box starts at the
// 4-float boundary below them and holds 4 more, and the consumers skip the difference (scale_skip). As 1-D maps,
// no layout needs padding.
// SCALE_TMA=0 (the earlier build, a variant): each consumer thread loads them from global memory (ld.global.nc)
// one k-tile before it promotes, in the producer's k order (unit_ktile).
// PER_TENSOR=1 (tc8_promoted_fp8, precision fp8): one scale per operand, read once: tensor scaling with FP32
// accumulation, as cuBLASLt's default promotes.
// TIMELINE=1: the stamps of tc4 (Timeline in tc_timeline.cuh).
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_persistent.cuh"
#include "tc_timeline.cuh"

#ifndef PER_TENSOR
#define PER_TENSOR 0
#endif

#ifndef SCALE_TMA
#define SCALE_TMA (!PER_TENSOR)
#endif

#define CW (BM / 64)
#define STRADDLE (128 % BN != 0)  // a tile's columns cover two 128-wide blocks of B's scales (BN = 192)
// A ring slot's scales (SCALE_TMA): BM + 4 of A's at 0, B's boxes of 4 at SCALE_B and SCALE_B + 128 (128-byte
// aligned, as TMA writes shared memory).
#define SCALE_A_BOX (BM + 4)
#define SCALE_B ((SCALE_A_BOX * 4 + 127) / 128 * 128)
#define SCALE_SLOT_BYTES (SCALE_B + 256)
#define SCALE_TX (SCALE_A_BOX * 4 + 16 * (1 + STRADDLE))
// begin scale arithmetic (plain C++: the tests compile it on the host)
// A box of a 1-D map of floats starts at the multiple of 4 at or below element e, which sits scale_skip(e) in; a
// tile's A scales of k-block kb start at element kb * M + m0, and m0 is a multiple of 64, so they sit
// scale_skip(kb * M) in, and a box of BM + 4 holds them all.
__host__ __device__ __forceinline__ int scale_box(int e) { return e & ~3; }
__host__ __device__ __forceinline__ int scale_skip(int e) { return e & 3; }
// end scale arithmetic

__device__ __forceinline__ float ldg_f32(const float *p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc8_block_scaled_fp8(const __grid_constant__ Fp8Args args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, staging_bytes(CW) + SCALE_TMA * STAGES * SCALE_SLOT_BYTES, false> sm(smem_raw);
  unsigned char *const scales = sm.extra + staging_bytes(CW);  // SCALE_TMA: slot s's at s * SCALE_SLOT_BYTES
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
          load_stage<CM>(stage, mapA, mapB, bar, m0, n0, k0, rank, SCALE_TMA ? SCALE_TX : 0);
#if SCALE_TMA
          unsigned char *sc = scales + (bar - sm.full) * SCALE_SLOT_BYTES;
          const int kb = k0 / BK, nb = n0 / 128;
          tma_load_1d(sc, &args.sa, bar, scale_box(kb * M + m0));
          tma_load_1d(sc + SCALE_B, &args.sb, bar, scale_box(nb * grid.KT + kb));
          if (STRADDLE)
            tma_load_1d(sc + SCALE_B + 128, &args.sb, bar, scale_box(min(nb + 1, (N - 1) / 128) * grid.KT + kb));
#endif
        },
        [](u32, int) {});
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const int row = cw * 64 + 16 * ((tid % 128) / 32) + (tid % 32) / 4;  // fragment rows row, row + 8 of the tile
    u32 it = 0, unit = 0;
    TileStore out;
    float acc[BN / 2], part[BN / 2];
#if PER_TENSOR
    const float a0 = ldg_f32(args.scale_a), a1 = a0, b0 = ldg_f32(args.scale_b), b1 = b0;
#endif
#if TIMELINE
    Timeline<CW> tlog(args.timeline, cw);
    tlog.start();
#endif
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next(), ++unit) {
      const int2 o = grid.origin(u.tile);
      const int m0 = o.x, n0 = o.y;
      // k-tiles are the scale blocks (BK = 128). B's under the tile: columns below `lo_cols` in block n0 / 128, the
      // rest in the next
      const int lo_cols = 128 - n0 % 128;
      const int rb = n0 / 128 * grid.KT, rb_hi = min(n0 / 128 + 1, (N - 1) / 128) * grid.KT;  // B's scale rows
#if !SCALE_TMA && !PER_TENSOR
      // Rows past M read the last row's scale: TMA filled their A with zeros, and their C is never stored.
      const int ra0 = min(m0 + row, M - 1), ra1 = min(m0 + row + 8, M - 1);
      float na0 = 0.f, na1 = 0.f, nb0 = 0.f, nb1 = 0.f;  // the next k-tile's scales, in flight
      auto load_scales = [&](int kt) {
        if (kt < u.ke) {
          const int kb = unit_ktile(u, unit, kt);  // produce_ring's k order
          const float *sa = args.scale_a + (long long)kb * M;
          na0 = ldg_f32(sa + ra0);
          na1 = ldg_f32(sa + ra1);
          nb0 = ldg_f32(args.scale_b + rb + kb);
          if (STRADDLE) nb1 = ldg_f32(args.scale_b + rb_hi + kb);
        }
      };
      load_scales(u.kb);
#endif
#if SCALE_TMA
      float a0, a1, b0, b1;  // k-tile kt's scales, from ring slot s
      auto read_scales = [&](u32 s, int kt) {
        const float *sc = reinterpret_cast<const float *>(scales + s * SCALE_SLOT_BYTES);
        const int kb = unit_ktile(u, unit, kt);  // produce_ring's k order
        const float *sa = sc + scale_skip(kb * M) + row;  // m0 is a multiple of 64
        a0 = sa[0], a1 = sa[8], b0 = sc[SCALE_B / 4 + scale_skip(rb + kb)];
        b1 = STRADDLE ? sc[SCALE_B / 4 + 32 + scale_skip(rb_hi + kb)] : 0.f;
      };
#endif
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
#if SCALE_TMA
        read_scales(s, kt);  // before the wgmma: read after them, or after their wait, they delay the promotion
#endif
        wgmma_fence();
        wgmma_ktile<BN>(part, a, b, 0);  // from zero: this k-tile's 128 products alone
        wgmma_commit();
#if !SCALE_TMA && !PER_TENSOR
        const float a0 = na0, a1 = na1, b0 = nb0, b1 = nb1;
        load_scales(kt + 1);
#endif
        wgmma_wait<0>();
        fence_acc(part);
        if (tid % 32 == 0) release_slot<CM>(&sm.empty[s]);  // after the scales' reads, by its release semantics
        const float lo0 = a0 * b0, lo1 = a1 * b0, hi0 = a0 * b1, hi1 = a1 * b1;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const bool lo = !STRADDLE || 8 * j < lo_cols;  // the same for the whole warpgroup
          const float s0 = lo ? lo0 : hi0, s1 = lo ? lo1 : hi1;
          acc[4 * j] = fmaf(part[4 * j], s0, acc[4 * j]);
          acc[4 * j + 1] = fmaf(part[4 * j + 1], s0, acc[4 * j + 1]);
          acc[4 * j + 2] = fmaf(part[4 * j + 2], s1, acc[4 * j + 2]);
          acc[4 * j + 3] = fmaf(part[4 * j + 3], s1, acc[4 * j + 3]);
        }
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
