// What the persistent, warp-specialized levels (tc4, tc5, tc7, tc8; tc6 is tc4's and tc5's with STREAM_K=1) share:
// the grid (one CTA per SM, in clusters of CM x CN CTAs, each walking its share of the output tiles in schedule()'s
// order; the producer and the consumers of a CTA ask it for a unit's origin, so they agree on it by construction),
// the carving of shared memory with its barriers' set-up, and the producer warpgroup. Each level keeps its own
// consumer warpgroups: their accumulators and mainloops differ, and so does the code the compiler makes of them.
#pragma once
#include "tc_pipeline.cuh"

// The persistent grid: clusters of CM x CN CTAs (one of them 1; 1 x 1: clusters off), each cluster taking output
// tiles of CM·BM x CN·BN elements in schedule()'s order, K in k-tiles of BK. CTA `rank` of a cluster computes the
// rank-th BM rows (CM > 1) or BN columns (CN > 1) of its cluster's tile.
// begin grid arithmetic (plain C++ but for blockIdx and cluster_rank: the tests run it on the host)
// BATCHED=1 (a batch of `batch` products): the walk's rows of cluster tiles are every product's in turn, so the
// grid walks batch x tiles in one schedule, and origin's row m is row m % mpad of product m / mpad (product()).
#ifndef BATCHED
#define BATCHED 0
#endif
template <int CM_, int CN_>
struct PersistentGrid {
  static_assert(CM_ == 1 || CN_ == 1, "a cluster shares one operand: it stacks its CTAs along M or along N");
  enum : int { NCTA = CM_ * CN_ };
  u32 rank;  // this CTA's place in its cluster
  int cluster, clusters, tiles_m, tiles_n, tiles, KT;
#if BATCHED
  int mpad;  // a product's rows, rounded up to whole cluster tiles
  __device__ __forceinline__ PersistentGrid(int M, int N, int K, int batch)
      : rank(NCTA > 1 ? cluster_rank() : 0),
        cluster(blockIdx.x / NCTA),
        clusters(gridDim.x / NCTA),
        tiles_m(batch * ((M + CM_ * BM - 1) / (CM_ * BM))),
        tiles_n((N + CN_ * BN - 1) / (CN_ * BN)),
        tiles(tiles_m * tiles_n),
        KT((K + BK - 1) / BK),
        mpad((M + CM_ * BM - 1) / (CM_ * BM) * (CM_ * BM)) {}
  // the product that origin's row m lies in; m becomes its row there
  __device__ __forceinline__ int product(int &m) const {
    const int b = m / mpad;
    m -= b * mpad;
    return b;
  }
#else
  __device__ __forceinline__ PersistentGrid(int M, int N, int K)
      : rank(NCTA > 1 ? cluster_rank() : 0),
        cluster(blockIdx.x / NCTA),
        clusters(gridDim.x / NCTA),
        tiles_m((M + CM_ * BM - 1) / (CM_ * BM)),
        tiles_n((N + CN_ * BN - 1) / (CN_ * BN)),
        tiles(tiles_m * tiles_n),
        KT((K + BK - 1) / BK) {}
#endif
  // The first row and column of this CTA's part of tile `tile`.
  __device__ __forceinline__ int2 origin(int tile) const {
    int tm, tn;
    schedule(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
    if constexpr (CN_ > 1) return make_int2(tm * BM, (tn * CN_ + rank) * BN);
    else return make_int2((tm * CM_ + rank) * BM, tn * BN);
  }
};
// end grid arithmetic

// A persistent CTA's dynamic shared memory, carved as SmemLayout says from its 1024-byte aligned start: the ring's
// stages at `smem`, the level's own kExtraBytes at `extra`, the barriers. init() sets the barriers up, `ready`
// first where producer warps pass over the landed k-tiles (kReady), so that ring_init's fence covers it.
template <int kStages, int kExtraBytes, bool kReady>
struct PersistentSmem {
  typedef SmemLayout<kStages, kExtraBytes, kReady> Layout;
  // tc_common.wgmma_constraints refuses these on the host; the compiler refuses them again in the build itself
  static_assert(kStages >= 2, "the ring needs at least 2 slots to overlap loads with math");
  static_assert(Layout::launch_bytes <= 227 * 1024, "the ring and the level's bytes exceed 227 KB of shared memory");
  unsigned char *smem, *extra;
  u64 *full, *empty, *ready;
  __device__ __forceinline__ explicit PersistentSmem(unsigned char *raw)
      : smem(aligned_smem(raw)),
        extra(smem + Layout::extra),
        full(reinterpret_cast<u64 *>(smem + Layout::full)),
        empty(reinterpret_cast<u64 *>(smem + Layout::empty)),
        ready(reinterpret_cast<u64 *>(smem + Layout::ready)) {}
  // kConsumers warpgroups per CTA, each of whose 4 warps arrives on a slot's `empty` in every CTA of the NCTA that
  // read the slot (multicast included). Their registers (setmaxnreg) must fit what the block holds at launch, or
  // setmaxnreg.inc waits forever: the pool of tc_common.launch_registers.
  template <int NCTA, int kConsumers>
  __device__ __forceinline__ void init(const TmaMap *mapA, const TmaMap *mapB) const {
    enum : int { threads = (kConsumers + 1) * 128, per_thread = 65536 / threads / 8 * 8 };
    static_assert(kConsumers >= 1 && kConsumers <= 4, "64 rows (or columns) per consumer warpgroup, 256 at most");
    static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 && 24 <= PRODUCER_REGS &&
                      PRODUCER_REGS <= CONSUMER_REGS && CONSUMER_REGS <= 256,
                  "setmaxnreg counts are multiples of 8 in 24..256, the producer's at most the consumers'");
    static_assert(CONSUMER_REGS * 128 * kConsumers + PRODUCER_REGS * 128 <=
                      threads * (per_thread < 256 ? per_thread : 256),
                  "the warpgroups' setmaxnreg counts exceed the registers the block holds at launch");
    if (kReady) ready_init<kStages>(ready);
    ring_init<kStages, NCTA>(full, empty, kConsumers * 4 * NCTA, mapA, mapB);
  }
};

// The producer warpgroup of a persistent CTA, which gives its registers to the consumers: thread 0 streams the
// k-tiles of the CTA's walk into the ring (load(stage, bar, m0, n0, k0) issues one k-tile's copies) and, with
// kPass, warps 1-3 apply pass(slot, t) to each landed k-tile before the consumers, who wait on `ready`, read it
// (tc_round.cuh's tile_pass; pass thread t of PASS_THREADS).
template <bool kPass, class Grid, class Smem, class Load, class Pass>
__device__ __forceinline__ void produce(const Grid &grid, const Smem &sm, int tid, Load load, Pass pass) {
  setmaxnreg_dec<PRODUCER_REGS>();
  if (tid == 0)
    produce_ring<STAGES>(sm.smem, sm.full, sm.empty, grid.cluster, grid.clusters, grid.tiles, grid.KT,
                         [&](int tile) { return grid.origin(tile); }, load);
  else if constexpr (kPass) {
    if (tid >= 32)
      pass_ring<STAGES>(sm.full, sm.ready, grid.cluster, grid.clusters, grid.tiles, grid.KT,
                        [&](u32 s) { pass(s, tid - 32); });
  }
}
