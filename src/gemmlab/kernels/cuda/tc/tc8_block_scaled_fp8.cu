// tc8: block-scaled FP8 (DeepGEMM's recipe) on tc4's persistent, warp-specialized skeleton: the same producer
// (produce_ring, load_stage), tile order, clusters (CM, 1 as registered) and TMA-store epilogue. What differs is
// the consumers' k-tile: each k-tile (128 of K, one scale block) runs its 4 wgmma m64nBNk32 from zero into `part`,
// waits for them, gives the ring slot back and adds part · scale_a[row] · scale_b[block] into the FP32 accumulator
// `acc` on the CUDA cores. The tensor cores' own FP8 accumulation keeps about 14 bits; promoted every 128 of K, it
// never sums more than 128 products. While one warpgroup promotes, the others' wgmma keep the tensor cores busy.
// Scales (Fp8Args): scale_a is ceil(K/128) x M row-major, so a k-block's scales of a tile's rows are contiguous;
// scale_b is ceil(N/128) x ceil(K/128) row-major: one value per tile and k-tile where BN divides 128; a 192-wide
// tile straddles two B blocks at a 64-column boundary, and each 8-column group takes the scale of its side.
// SCALE_TMA=1 (the build before, and tc6_stream_k_fp8_block's split launches): a k-tile's scales travel with its
// operands. The producer copies them with TMA through the 1-D maps args.sa and args.sb into the ring slot's scale
// area, counted on the slot's `full` barrier, and each consumer thread reads its three from shared memory just
// before it issues the k-tile's wgmma: read after the issue, or between the wait and the promotion, they held up the
// promotion as long as global loads did. A box starts on 16 bytes, where a tile's scales need not (a k-block of A's
// is M floats on from the last): each box starts at the 4-float boundary below them and holds 4 more, and the
// consumers skip the difference (scale_skip). As 1-D maps, no layout needs padding.
// SCALE_TMA=0 (the earlier build, a variant): each consumer thread loads them from global memory (ld.global.nc)
// one k-tile before it promotes, in the producer's k order (unit_ktile).
// SCALE_TMA=2 (registered): the scales ride a ring of their own, SCALE_SLOTS = 2 x STAGES deep with its own full
// and empty barriers, which producer warp 1 fills up to that many k-tiles ahead of the consumers, so their copies
// are issued about STAGES k-tiles before the operands' and the operands' barrier no longer waits for them. Why: a
// build without the scale copies (timing only) ran faster than SCALE_TMA=1 by more than tc8 is short of its bar,
// and one without the consumers' reads did not, so the copies' lateness on the operands' barrier is the suspect.
// SCALE_GATE=1 (registered, with SCALE_TMA=2): the consumers no longer wait on the scale ring; producer warp 0 waits
// for a k-tile's scales before it arms that k-tile's operand barrier, whose arrive (release, cumulative) then
// carries them to the consumers with the operands. Why: the consumers' shared-memory operations wait behind the
// wgmma's reads of shared memory, which fill it; a diagnostic build without the scale ring's wait (timing only)
// ran faster than the registered one, and warp 0 has slack where the consumers have none. Predicted: that
// build's gain, a few percent.
// PER_TENSOR=1 (tc8_promoted_fp8, precision fp8): one scale per operand, read once: tensor scaling with FP32
// accumulation, as cuBLASLt's default promotes.
// HALVES=1 (a variant, BN = 128): each k-tile's wgmma in two column halves of 64, committed apart, so a warpgroup
// always has a half of its own on the tensor cores while it promotes the other; the price is A read twice from
// shared memory (about 181 bytes per clock at the FP8 rate against 149), which the registered build does not pay.
// STREAM_K=1 (tc6_stream_k_fp8_block, clusters off, SCALE_TMA=1 or PER_TENSOR): tc6's stream-K tail (SkWalk,
// sk_fixup). The promoted accumulators are FP32 sums of scaled k-tiles, so a split tile's partials add like tc4's.
// Beside the walk's state, the other builds spill: SCALE_TMA=2 in warp 1's copy of the walk at the producer's 32
// registers, SCALE_TMA=0 and HALVES in the consumers at 160 (tc_common.fp8_constraints refuses them).
// EPI_DEFER=1 (a variant; tc_epilogue.cuh's HeldC): the last box of a warpgroup's C waits for the next tile's first
// k-tile of wgmma, which is peeled off the loop (ktile's `first`) and sets acc rather than adding to it.
// TIMELINE=1: the stamps of tc4 (Timeline in tc_timeline.cuh); with EPI_DEFER the epilogue's stamp follows the
// boxes stored at the tile's end, and the held ones count in the next tile's first k-tile.
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_persistent.cuh"
#include "tc_stream_k.cuh"
#include "tc_timeline.cuh"

#ifndef PER_TENSOR
#define PER_TENSOR 0
#endif

#ifndef SCALE_TMA
#define SCALE_TMA (!PER_TENSOR)
#endif

#ifndef HALVES
#define HALVES 0
#endif

#ifndef SCALE_GATE
#define SCALE_GATE 0
#endif
#if SCALE_GATE && SCALE_TMA != 2
#error "SCALE_GATE moves the scale ring's wait (SCALE_TMA=2) to the producer"
#endif

#if EPI_DEFER && HALVES
#error "EPI_DEFER stores C under the first k-tile's wgmma into part, which HALVES does not have"
#endif
#if EPI_DEFER && !(OUT_BF16 && EPI_TMA && !STREAM_K)
#error "EPI_DEFER holds a tile's C as BF16 words for the TMA stores, not beside stream-K"
#endif

#define CW (BM / 64)
// begin scale arithmetic (plain C++ from BM, BN, STAGES and SCALE_TMA: the tests compile it on the host)
#define STRADDLE (128 % BN != 0)  // a tile's columns cover two 128-wide blocks of B's scales (BN = 192)
// A ring slot's scales (SCALE_TMA): BM + 4 of A's at 0, B's boxes of 4 at SCALE_B and SCALE_B + 128 (128-byte
// aligned, as TMA writes shared memory).
#define SCALE_A_BOX (BM + 4)
#define SCALE_B ((SCALE_A_BOX * 4 + 127) / 128 * 128)
#define SCALE_SLOT_BYTES (SCALE_B + 256)
#define SCALE_TX (SCALE_A_BOX * 4 + 16 * (1 + STRADDLE))
// Slots of scales: one per ring stage (SCALE_TMA=1), or a ring of their own twice as deep (2) whose full and
// empty barriers follow the slots; scale_area_bytes is the kernel's shared memory for them.
#define SCALE_SLOTS (SCALE_TMA == 2 ? 2 * STAGES : SCALE_TMA ? STAGES : 0)
__host__ __device__ constexpr int scale_area_bytes() {
  return SCALE_SLOTS * SCALE_SLOT_BYTES + (SCALE_TMA == 2 ? 16 * SCALE_SLOTS : 0);
}
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

// acc's 8-column groups j0, j0 + 1, ... += p · the k-tile's scales (with `set`, a constant where it is inlined: =):
// a0, a1 of the thread's rows row and row + 8, b0, b1 of B's blocks below and from column lo_cols (STRADDLE)
template <int R, int P>
__device__ __forceinline__ void promote_groups(bool set, float (&acc)[R], const float (&p)[P], int j0, int lo_cols,
                                               float a0, float a1, float b0, float b1) {
  const float lo0 = a0 * b0, lo1 = a1 * b0, hi0 = a0 * b1, hi1 = a1 * b1;
#pragma unroll
  for (int j = 0; j < P / 4; ++j) {
    const bool lo = !STRADDLE || 8 * (j0 + j) < lo_cols;  // the same for the whole warpgroup
    const float s0 = lo ? lo0 : hi0, s1 = lo ? lo1 : hi1;
    float *d = acc + 4 * (j0 + j);
    d[0] = set ? p[4 * j] * s0 : fmaf(p[4 * j], s0, d[0]);
    d[1] = set ? p[4 * j + 1] * s0 : fmaf(p[4 * j + 1], s0, d[1]);
    d[2] = set ? p[4 * j + 2] * s1 : fmaf(p[4 * j + 2], s1, d[2]);
    d[3] = set ? p[4 * j + 3] * s1 : fmaf(p[4 * j + 3], s1, d[3]);
  }
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc8_block_scaled_fp8(const __grid_constant__ Fp8Args args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, staging_bytes(CW) + scale_area_bytes(), false> sm(smem_raw);
  unsigned char *const scales = sm.extra + staging_bytes(CW);  // SCALE_TMA: slot s's at s * SCALE_SLOT_BYTES
#if SCALE_TMA == 2
  // the scale ring's barriers, after its slots
  u64 *const sfull = reinterpret_cast<u64 *>(scales + SCALE_SLOTS * SCALE_SLOT_BYTES);
  u64 *const sempty = sfull + SCALE_SLOTS;
#endif
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const PersistentGrid<CM, 1> grid(M, N, K);
  const u32 rank = grid.rank;

  // one k-tile's scales into `sc`, counted on `bar`
  auto copy_scales = [&](unsigned char *sc, u64 *bar, int m0, int n0, int kb) {
    const int nb = n0 / 128;
    tma_load_1d(sc, &args.sa, bar, scale_box(kb * M + m0));
    tma_load_1d(sc + SCALE_B, &args.sb, bar, scale_box(nb * grid.KT + kb));
    if (STRADDLE) tma_load_1d(sc + SCALE_B + 128, &args.sb, bar, scale_box(min(nb + 1, (N - 1) / 128) * grid.KT + kb));
  };
#if SCALE_TMA == 2
  if (tid == 0) {  // before sm.init's fence and meeting, which cover them
    for (int r = 0; r < SCALE_SLOTS; ++r) {
      mbar_init(&sfull[r], 1);
      mbar_init(&sempty[r], CW * 4);  // every consumer warp of this CTA (the scales are not multicast)
    }
  }
#endif
  sm.init<CM, CW>(mapA, mapB);

  if (wg == 0) {
#if SCALE_GATE
    u32 gated = 0;  // k-tiles whose scales warp 0 has waited for: the scale ring's position
#endif
    produce<false>(
        grid, sm, tid,
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
#if SCALE_GATE
          // the k-tile's scales have landed before load_stage arms its barrier (produce_ring's k order is warp 1's)
          mbar_wait(&sfull[gated % SCALE_SLOTS], (gated / SCALE_SLOTS) & 1);
          ++gated;
#endif
          load_stage<CM>(stage, mapA, mapB, bar, m0, n0, k0, rank, SCALE_TMA == 1 ? SCALE_TX : 0);
          if (SCALE_TMA == 1) copy_scales(scales + (bar - sm.full) * SCALE_SLOT_BYTES, bar, m0, n0, k0 / BK);
        },
        [](u32, int) {});
#if SCALE_TMA == 2
    if (tid == 32) {  // producer warp 1: the scale ring, in produce_ring's walk and k order
      const PersistentGrid<CM, 1> g1(args.M, args.N, args.K);
      u32 j = 0, unit = 0;
      for (Walk u(g1.cluster, g1.clusters, g1.tiles, g1.KT); u.valid(); u.next(), ++unit) {
        const int2 o = g1.origin(u.tile);
        for (int kt = u.kb; kt < u.ke; ++kt, ++j) {
          const u32 r = j % SCALE_SLOTS;
          if (j >= (u32)SCALE_SLOTS) mbar_wait(&sempty[r], (j / SCALE_SLOTS - 1) & 1);
          mbar_expect_tx(&sfull[r], SCALE_TX);
          copy_scales(scales + r * SCALE_SLOT_BYTES, &sfull[r], o.x, o.y, unit_ktile(u, unit, kt));
        }
      }
    }
#endif
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const int row = cw * 64 + 16 * ((tid % 128) / 32) + (tid % 32) / 4;  // fragment rows row, row + 8 of the tile
    u32 it = 0, unit = 0;
    TileStore out;
    float acc[BN / 2];
    HeldC<BN, held_boxes(BN, EPI_DEFER)> held;  // EPI_DEFER: the last tile's held box of C
#if !HALVES
    float part[BN / 2];
#endif
#if PER_TENSOR
    const float a0 = ldg_f32(args.scale_a), a1 = a0, b0 = ldg_f32(args.scale_b), b1 = b0;
#endif
#if TIMELINE
    Timeline<CW> tlog(args.timeline);
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
      float a0, a1, b0, b1;  // k-tile kt's scales, from the slot of ring position `pos` (it)
      auto read_scales = [&](u32 pos, int kt) {
#if SCALE_TMA == 2
        const u32 r = pos % SCALE_SLOTS;
        if (!SCALE_GATE) mbar_wait(&sfull[r], (pos / SCALE_SLOTS) & 1);  // else the operands' barrier covers it
#else
        const u32 r = pos % STAGES;  // the k-tile's own ring slot, whose `full` the caller has waited for
#endif
        const float *sc = reinterpret_cast<const float *>(scales + r * SCALE_SLOT_BYTES);
        const int kb = unit_ktile(u, unit, kt);  // produce_ring's k order
        const float *sa = sc + scale_skip(kb * M) + row;  // m0 is a multiple of 64
        a0 = sa[0], a1 = sa[8], b0 = sc[SCALE_B / 4 + scale_skip(rb + kb)];
        b1 = STRADDLE ? sc[SCALE_B / 4 + 32 + scale_skip(rb_hi + kb)] : 0.f;
      };
#endif
      // the scale slot of ring position `pos` given back, once its k-tile's wgmma are done (SCALE_TMA=2; else it
      // goes back with the operands' slot)
      auto release_scales = [&](u32 pos) {
#if SCALE_TMA == 2
        if (tid % 32 == 0) mbar_arrive(&sempty[pos % SCALE_SLOTS]);
#endif
      };
      if (!EPI_DEFER) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      }
#if TIMELINE
      mbar_wait(&sm.full[it % STAGES], (it / STAGES) & 1);
      tlog.unit(unit, 0);
#endif
#if HALVES
      static_assert(SCALE_TMA == 1 || PER_TENSOR, "HALVES: the scales' loads or ring beside both halves spill");
      // Each k-tile's wgmma in two column halves of BN/2, committed apart: the warpgroup promotes one half while
      // the other is on the tensor cores (k-tile kt's right half, then kt + 1's left), so it always has wgmma of
      // its own in flight. The halves read A twice from shared memory.
      auto issue = [&](float (&p)[BN / 4], u32 s, int half) {
        const u32 a = smem_u32(sm.smem + s * STAGE_BYTES) + cw * 64 * 128;
        const u32 b = smem_u32(sm.smem + s * STAGE_BYTES + A_TILE_BYTES) + half * (BN / 2) * 128;
        wgmma_fence();
        wgmma_ktile<BN / 2>(p, a, b, 0);
        wgmma_commit();
      };
      float pl[BN / 4], pr[BN / 4];
      mbar_wait(&sm.full[it % STAGES], (it / STAGES) & 1);
#if SCALE_TMA
      read_scales(it, u.kb);
#endif
      issue(pl, it % STAGES, 0);
      issue(pr, it % STAGES, 1);
      // The last k-tile is peeled off the loop: with the next one's issue under a condition, ptxas cannot tell
      // which group each wait retires, and serializes every wgmma.
      for (int kt = u.kb;; ++kt, ++it) {
        const u32 s = it % STAGES;
        const float c0 = a0, c1 = a1, d0 = b0, d1 = b1;  // kt's (read_scales below moves to kt + 1's)
        wgmma_wait<1>();
        fence_acc(pl);
        promote_groups(false, acc, pl, 0, lo_cols, c0, c1, d0, d1);
        if (kt + 1 == u.ke) {
          wgmma_wait<0>();
          fence_acc(pr);
          if (tid % 32 == 0) release_slot<CM>(&sm.empty[s]);
          release_scales(it);
          promote_groups(false, acc, pr, BN / 16, lo_cols, c0, c1, d0, d1);
          ++it;
          break;
        }
        const u32 s1 = (it + 1) % STAGES;
        mbar_wait(&sm.full[s1], ((it + 1) / STAGES) & 1);
#if SCALE_TMA
        read_scales(it + 1, kt + 1);
#endif
        issue(pl, s1, 0);
        wgmma_wait<1>();
        fence_acc(pr);
        if (tid % 32 == 0) release_slot<CM>(&sm.empty[s]);
        release_scales(it);
        promote_groups(false, acc, pr, BN / 16, lo_cols, c0, c1, d0, d1);
        issue(pr, s1, 1);
      }
#else
      // k-tile kt at ring position it; `first` (EPI_DEFER: the tile's first k-tile, peeled off the loop) stores the
      // last tile's C under the wgmma and sets acc rather than adding to it, so neither acc nor that C's words are
      // live beside anything but this k-tile's wgmma
      auto ktile = [&](int kt, bool first) {
        const u32 s = it % STAGES;
        mbar_wait(&sm.full[s], (it / STAGES) & 1);
        const u32 a = smem_u32(sm.smem + s * STAGE_BYTES) + cw * 64 * 128;
        const u32 b = smem_u32(sm.smem + s * STAGE_BYTES + A_TILE_BYTES);
#if SCALE_TMA
        read_scales(it, kt);  // before the wgmma: read after them, or after their wait, they delay the promotion
#endif
        wgmma_fence();
        wgmma_ktile<BN>(part, a, b, 0);  // from zero: this k-tile's 128 products alone
        wgmma_commit();
        if (first) out.store_held<BN>(args, held, sm.extra, cw, M, N);
#if !SCALE_TMA && !PER_TENSOR
        const float c0 = na0, c1 = na1, d0 = nb0, d1 = nb1;
        load_scales(kt + 1);
#else
        const float c0 = a0, c1 = a1, d0 = b0, d1 = b1;
#endif
        wgmma_wait<0>();
        fence_acc(part);
        if (tid % 32 == 0) release_slot<CM>(&sm.empty[s]);  // after the scales' reads, by its release semantics
        release_scales(it);
        promote_groups(first, acc, part, 0, lo_cols, c0, c1, d0, d1);
      };
      int kt = u.kb;
      if (EPI_DEFER) ktile(kt++, true), ++it;
      for (; kt < u.ke; ++kt, ++it) ktile(kt, false);
#endif
#if TIMELINE
      tlog.unit(unit, 1);
#endif
#if STREAM_K
      const bool stores = sk_fixup<BN / 2, CW * 128>(u, acc, args.sk_ws, args.sk_flags, tid - 128);
#else
      constexpr bool stores = true;
#endif
      if (EPI_DEFER) {  // never beside stream-K: every tile stores
        out.hold<BN>(args, C, held, acc, sm.extra, m0, n0, cw, M, N);
        if (last_unit(u)) out.store_held<BN>(args, held, sm.extra, cw, M, N);  // no next tile to store it under
      } else if (stores) {
        out.store<BN>(args, C, acc, sm.extra, m0, n0, cw, M, N);
      }
#if TIMELINE
      tlog.unit(unit, 2);
#endif
    }
  }
#if TIMELINE
  // the end stamp outside the consumers' branch (before the stores drain, where tc4 stamps it): inside, it costs a
  // consumer of three warpgroups registers its mainloop has none of to spare, and the spills would be what the
  // stamps measure
  if (wg > 0) Timeline<CW>(args.timeline).end();
#endif
#if EPI_TMA
  tma_store_wait_read<0>();
#endif
  __syncwarp();
  if (CM > 1) cluster_sync();
}
