// tc4: tc3's producer/consumer warpgroups in a persistent grid (one CTA per SM) that walks the output tiles in
// grouped snake order (schedule, produce_ring), in clusters of CM CTAs stacked along M that share each B tile: CTA `rank` loads every CM-th B
// box once and TMA multicasts it to the whole cluster, so B crosses L2->SM once per cluster instead of once per
// CTA. The ring's phases run on across tiles, so the producer prefetches the next tile's k-tiles while the
// consumers store the last one.
// STREAM_K=1 (tc6, clusters off): the walk ends in a stream-K tail (SkWalk in tc_scheduler.cuh, sk_fixup in
// tc_stream_k.cuh), with the partials' workspace and one flag per tile in args.sk_ws and args.sk_flags.
// EPI_TMA=1: the consumers store C through shared-memory staging boxes and TMA (store_acc_tma) whenever the host
// says C's layout allows it (args.c_tma; args.c is then C's tensor map), else directly.
// TF32_ROUND=2 (TF32): producer warps 1-3 round each landed A tile to nearest in place (tc_round.cuh), and the B
// tile too where B is handed over K-major (ROUND_B_SMEM=1; else the transpose pre-pass writes Bᵀ rounded); the
// consumers wait on the slot's `ready` barrier.
// TIMELINE=1 (gemmlab timeline; whole tiles only): args.timeline holds TL_SLOTS clock readings per consumer
// warpgroup (Timeline in tc_timeline.cuh), stamped where each warpgroup's cycles go.
// EPI_LEND=1 (a variant; BF16 C): each warpgroup stages its boxes of C past its own EPI_BOXES in the tile's last ring
// slot, which its warp 0 releases only once the TMA stores have read it (at the next tile's first k-tile), so no
// box waits for another's store and the warpgroup fences and meets once per tile rather than once per box. The
// consumer warpgroups meet once before they write there: each one's boxes overlay bytes the other's wgmma read.
// EPI_DEFER=n (tc_epilogue.cuh's HeldC): the last n boxes of a warpgroup's 16-bit C wait for the next tile's first
// n·EPI_GAP k-tiles of wgmma (peeled off the loop: ktile's `box`), one box under every EPI_GAP-th, a fused bias or
// addend (EPI=1) applied there (an activation's build holds none: WgmmaKernel.defines); with TIMELINE=1 they count
// in those k-tiles.
// EPI_ASYNC=1 (a fused bias or alpha through TMA; tc_epilogue.cuh's BoxSync): producer warps 1 .. CW apply the
// fused epilogue's pass to the consumers' staged boxes of C and store them, so the consumers only write each box and
// go back to wgmma; EPI_GAP: the k-tiles between two held boxes (EPI_DEFER), room for a producer warp's pass.
// BATCHED=1 (a batch in one launch; BF16, FP16): the parameter is BatchArgs, A and B are 3-D maps, and the walk takes
// batch x tiles (PersistentGrid): each unit's product from its row, A's and B's matrix from it (0 where one is
// broadcast), and C's rows at the product's index times M in the (batch·M) x N matrix C is.
// TC_FP8=1 (tc4_persistent_fp8): fp8 operands, the parameter is Fp8Args, and each consumer thread multiplies its
// accumulators by the two per-tensor scales (read once, at its start) before storing C, in BF16 with OUT_BF16.
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_persistent.cuh"
#include "tc_round.cuh"
#include "tc_stream_k.cuh"
#include "tc_timeline.cuh"

#define CW (BM / 64)
#if TF32_ROUND && TC_BF16
#error "TF32_ROUND applies to the TF32 builds"
#endif
#ifndef ROUND_B_SMEM
#define ROUND_B_SMEM 0
#endif
#define ROUND_BYTES (ROUND_B_SMEM ? STAGE_BYTES : A_TILE_BYTES)  // the stage's leading bytes the pass rounds

#ifndef EPI_LEND
#define EPI_LEND 0
#endif
#if (EPI_TMA || EPI_DEFER || BATCHED) && BN % 64 != 0
#error "a tile width off the 64-column atom stores C from registers (EPI_TMA=0, EPI_DEFER=0), and no batch runs it"
#endif
#if EPI_DEFER && !((OUT_BF16 || OUT_F16) && EPI_TMA && !EPI_LEND && !STREAM_K)
#error "EPI_DEFER holds a tile's C as 16-bit words for the TMA stores, beside neither EPI_LEND's lent slot nor stream-K"
#endif
// EPI_LEND: a warpgroup's C boxes past its own EPI_BOXES, staged in the tile's last ring slot; it lends them only
// where the slot holds both warpgroups' (BF16 C: 2 of 4 boxes each at 128x256), else the build stores as without
constexpr int LENT_BYTES = lent_bytes(BN, sizeof(OutT), EPI_BOXES);
constexpr bool kLend = EPI_LEND && EPI_TMA && lends(BN, sizeof(OutT), EPI_BOXES, CW, STAGE_BYTES);

#ifndef EPI_GAP
#define EPI_GAP 1
#endif
#if EPI_ASYNC && !(EPI && EPI_TMA && !EPI_LEND && !STREAM_K && !BATCHED && !TF32_ROUND && CW <= 3)
#error "EPI_ASYNC: a fused epilogue through TMA, tc4's own walk, and producer warps 1 .. CW free for the pass"
#endif
#if BATCHED && (TC_FP8 || STREAM_K || EPI_DEFER || EPI_LEND || TIMELINE)
#error "a batch runs on tc4's own 16-bit build: whole tiles, C stored by tile"
#endif
#if TC_FP8
typedef Fp8Args KernelArgs;
#elif BATCHED
typedef BatchArgs KernelArgs;
#else
typedef TcArgs KernelArgs;
#endif

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc4_persistent(const __grid_constant__ KernelArgs args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, staging_bytes(CW), TF32_ROUND == 2> sm(smem_raw);
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
#if BATCHED
  const PersistentGrid<CM, 1> grid(M, N, K, args.batch);
#else
  const PersistentGrid<CM, 1> grid(M, N, K);
#endif
  const u32 rank = grid.rank;

  // every consumer warp of every CTA that reads the multicast B arrives on `empty`
  if (EPI_ASYNC && tid == 0) box_sync_init<CW>(sm.extra);  // fenced and met with the ring's barriers
  sm.init<CM, CW>(mapA, mapB);

  if (wg == 0) {
    produce<TF32_ROUND == 2>(
        grid, sm, tid,
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
#if BATCHED
          const int b = grid.product(m0);
          load_stage<CM>(stage, mapA, mapB, bar, m0, n0, k0, rank, 0, b * args.a_batched, b * args.b_batched);
#else
          load_stage<CM>(stage, mapA, mapB, bar, m0, n0, k0, rank);
#endif
        },
        [&](u32 s, int t) {
          unsigned char *stage = sm.smem + s * STAGE_BYTES;
          tile_pass<ROUND_BYTES>(stage, stage, t, [](float x) { return tf32_rna(x); });
        });
#if EPI_ASYNC
    if (tid / 32 >= 1 && tid / 32 <= CW) epi_async_boxes<CW, OutT>(args, sm.extra, tid / 32 - 1, tid % 32);
#endif
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    u32 it = 0;  // ring position; unsigned, so % and / by STAGES (a power of two here) are a mask and a shift
    TileStore out;
    float d[BN / 2];
    HeldC<BN, held_boxes(BN, EPI_DEFER)> held;  // EPI_DEFER: the last tile's held boxes of C
    int owed = -1;  // kLend: the ring slot warp 0 has yet to release, once the last tile's stores have read it
#if TC_FP8
    const float scale = *args.scale_a * *args.scale_b;  // loaded under the first tile's mainloop
#endif
#if TIMELINE
    Timeline<CW> tlog(args.timeline);
    tlog.start();
    int unit = 0;
#endif
    if (!Walk(grid.cluster, grid.clusters, grid.tiles, grid.KT).valid()) out.finish(sm.extra, cw);  // no unit
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next()) {
      const int2 o = grid.origin(u.tile);
#if BATCHED
      int m0 = o.x;
      const int n0 = o.y;
      const int rows = grid.product(m0) * M;  // the product's first row of C
#else
      const int m0 = o.x, n0 = o.y;
#endif
#if TIMELINE
      mbar_wait(&sm.full[it % STAGES], (it / STAGES) & 1);  // the loop's first wait, early: it returns at once again
      tlog.unit(unit, 0);
#endif
      // k-tile kt at ring position it; `box` i >= 0 (EPI_DEFER: one of the tile's first k-tiles, peeled off the
      // loop) stores the last tile's held box i under its wgmma, so that box's words are live beside no later k-tile
      // and its epilogue's pass runs while the tensor cores have the k-tile; -1: none
      auto ktile = [&](int kt, int box) {
        const u32 s = it % STAGES;
        mbar_wait(&sm.full[s], (it / STAGES) & 1);
#if TF32_ROUND == 2
        mbar_wait(&sm.ready[s], (it / STAGES) & 1);
#endif
        const u32 a = smem_u32(sm.smem + s * STAGE_BYTES) + cw * 64 * 128;
        const u32 b = smem_u32(sm.smem + s * STAGE_BYTES + A_TILE_BYTES);
        wgmma_fence();
        wgmma_ktile<BN>(d, a, b, kt > u.kb);  // a unit starts from zero (scale-d = 0)
        wgmma_commit();
        out.store_held_box<BN>(box, args, held, sm.extra, cw, M, N);
        if (kLend && owed >= 0) {  // the same for the whole warpgroup; the tensor cores have this k-tile meanwhile
          if (tid % 128 == 0) {
            tma_store_wait_read<0>();
            release_slot<CM, true>(&sm.empty[owed]);
          }
          owed = -1;
        }
        wgmma_wait<1>();
        if (kt > u.kb && tid % 32 == 0) release_slot<CM>(&sm.empty[(it - 1) % STAGES]);
      };
      int kt = u.kb;
      // a held box every EPI_GAP k-tiles; a unit of fewer k-tiles stores the rest before its own C
#pragma unroll
      for (int box = 0; box < decltype(held)::COUNT; ++box) {
#pragma unroll
        for (int g = 0; g < EPI_GAP; ++g) {
          const bool stores = g == EPI_GAP - 1;
          if (kt < u.ke) {
            ktile(kt++, stores ? box : -1);
            ++it;
          } else if (stores) {
            out.store_held_box<BN>(box, args, held, sm.extra, cw, M, N);
          }
        }
      }
      held.m0 = -1;
      for (; kt < u.ke; ++kt, ++it) ktile(kt, -1);
      wgmma_wait<0>();
      const u32 last = (it - 1) % STAGES;
      const bool lend = kLend && args.c_tma;  // warp 0 then owes the tile's last slot until its stores read it
      if (tid % 32 == 0 && !(lend && tid % 128 == 0)) release_slot<CM>(&sm.empty[last]);
      if (lend) {
        owed = last;
        // each warpgroup's lent boxes overlay bytes the other's wgmma read (its A rows, B): all wgmma on the slot
        // are done before either writes there (named barrier 2 + CW: the epilogue's are 2 + cw, stream-K's 1)
        named_bar(2 + CW, CW * 128);
      }
      fence_acc(d);
#if TIMELINE
      tlog.unit(unit, 1);
#endif
#if STREAM_K
      if (!sk_fixup<BN / 2, CW * 128>(u, d, args.sk_ws, args.sk_flags, tid - 128)) continue;
#endif
#if TC_FP8
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) d[i] *= scale;
#endif
      if (EPI_DEFER) {
        out.hold<BN>(args, C, held, d, sm.extra, m0, n0, cw, M, N);
        if (last_unit(u)) out.store_held<BN>(args, held, sm.extra, cw, M, N);  // no next tile to store it under
      } else {
#if BATCHED
        // the product's rows of the (batch·M) x N matrix C: its first row at `rows`, its last before rows + M
        out.store<BN>(args, C, d, sm.extra, rows + m0, n0, cw, rows + M, N);
#else
        out.store<BN, kLend>(args, C, d, sm.extra, m0, n0, cw, M, N, sm.smem + last * STAGE_BYTES + cw * LENT_BYTES);
#endif
      }
      // EPI_ASYNC: the walk's end, told at its last unit (as last_unit's stores: code past the loop spills)
      if (last_unit(u)) out.finish(sm.extra, cw);
#if TIMELINE
      tlog.unit(unit++, 2);
#endif
    }
  }
#if TIMELINE
  // the end stamp outside the consumers' branch, as tc8's: consumer code past the walk's loop gets the launch's
  // registers, not setmaxnreg's, and the held boxes (EPI_DEFER) spill there
  if (wg > 0) Timeline<CW>(args.timeline).end();
#endif
#if EPI_TMA
  tma_store_wait_read<0>();  // the CTA's shared memory outlives its TMA stores (a no-op for threads that issued none)
#endif
  __syncwarp();
  if (CM > 1) cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers or multicast into it
}
