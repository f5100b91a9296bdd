// The warp-specialized levels' mbarrier ring (tc3..tc8): its set-up, the consumers' release of a slot, and the
// producer thread's loop that refills the slots as the consumers free them, k-tile by k-tile along the CTA's walk.
#pragma once
#include "tc_layout.cuh"
#include "tc_ptx.cuh"
#include "tc_scheduler.cuh"

// A consumer warp's release of ring slot `s` (its wgmma reads are done): on its own CTA's `empty` barrier, or,
// when NCTA CTAs of a cluster share the slot's multicast operand, on every one of theirs, since each producer
// must know that all readers of the bytes it multicast are done before it overwrites them.
// kRelease: with release semantics at cluster scope (mbar_arrive_cluster's), for a slot the releasing thread wrote.
template <int NCTA, bool kRelease = false>
__device__ __forceinline__ void release_slot(u64 *empty) {
  if (NCTA > 1)
    for (u32 r = 0; r < NCTA; ++r) mbar_arrive_cluster<kRelease>(empty, r);
  else
    mbar_arrive(empty);
}

// The warp-specialized levels' start (tc3 up): thread 0 prefetches the two tensor maps and sets up the ring,
// `full[s]` completing on the producer's one arrival plus the TMA bytes, `empty[s]` on `readers` consumer-warp
// arrivals. Then the block, or with NCTA > 1 the whole cluster, meets, so no barrier is signalled (by a peer's
// multicast or remote arrival, too) before it exists.
// With NCTA > 1 the cluster's arrival is relaxed: only thread 0's mbarrier.init writes, which its
// fence.mbarrier_init releases, may precede it; a shared-memory store a caller added before ring_init would need the
// releasing cluster_sync() again.
template <int kStages, int NCTA>
__device__ __forceinline__ void ring_init(u64 *full, u64 *empty, u32 readers, const TmaMap *mapA,
                                          const TmaMap *mapB) {
  if (threadIdx.x == 0) {
    tma_prefetch_map(mapA);
    tma_prefetch_map(mapB);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], readers);
    }
    fence_barrier_init();
  }
  if (NCTA > 1) cluster_sync_after_init();
  else __syncthreads();
}

// Dynamic shared memory rounded up to the 1024-byte alignment the 128-byte swizzle needs.
__device__ __forceinline__ unsigned char *aligned_smem(unsigned char *raw) {
  const u32 pad = (1024u - (smem_u32(raw) & 1023u)) & 1023u;
  return raw + pad;
}

// The producer thread's loop (tc4 up: tc4, tc5, tc7, tc8, and tc6 through tc4 and tc5): for every unit of this
// CTA's walk, the tile's origin (origin(tile) -> int2 {m0, n0}), then for each of its k-tiles, wait until the
// ring slot is free (its readers' arrivals on `empty`, from the second lap of the ring on) and issue the k-tile's
// TMA copies into it through load(stage, full barrier, m0, n0, k0). The consumers walk the same units and slots;
// they only add, so the order of a unit's k-tiles is the producer's choice: every other unit runs its k-tiles last
// to first (unit_ktile).
// All CTAs start their n-th unit at about the same time, so a unit begins with the k-tiles the whole grid read
// last, which are still in L2: the next unit of the same grouped rows (or, after schedule()'s turn at a group's
// end, of the same columns) rereads them from L2 rather than DRAM.
// begin producer ring arithmetic (the tests run it on the host, its waits and loads recorded)
template <int kStages, class Origin, class Load>
__device__ __forceinline__ void produce_ring(unsigned char *smem, u64 *full, u64 *empty, int cta, int ctas, int tiles,
                                             int KT, Origin origin, Load load) {
  u32 it = 0;  // ring position (unsigned: % and / by kStages are a mask and a shift)
  u32 unit = 0;
  for (Walk u(cta, ctas, tiles, KT); u.valid(); u.next(), ++unit) {
    const int2 o = origin(u.tile);
    for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
      const u32 s = it % kStages;
      if (it >= (u32)kStages) mbar_wait(&empty[s], (it / kStages - 1) & 1);
      load(smem + s * STAGE_BYTES, &full[s], o.x, o.y, unit_ktile(u, unit, kt) * BK);
    }
  }
}
// end producer ring arithmetic

// ---- the producer warps' pass over landed k-tiles (tc_round.cuh's tile_pass) -------------------------------------
#define PASS_THREADS 96  // producer warps 1-3; warp 0's lane 0 issues the TMA copies

// The pass threads' loop: the walk the producer and the consumers take (the same k-tiles in the same ring slots),
// and for each k-tile: wait until its copies have landed, apply pass(slot), fence the writes for the async proxy
// and arrive on ready[slot] (PASS_THREADS arrivals complete it). A slot cannot come round again before its
// consumers, who wait on `ready`, release it, so the pass never falls a phase behind.
template <int kStages, class Pass>
__device__ __forceinline__ void pass_ring(u64 *full, u64 *ready, int cta, int ctas, int tiles, int KT, Pass pass) {
  u32 it = 0;
  for (Walk u(cta, ctas, tiles, KT); u.valid(); u.next())
    for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
      const u32 s = it % kStages;
      mbar_wait(&full[s], (it / kStages) & 1);
      pass(s);
      fence_proxy_async_smem();
      mbar_arrive(&ready[s]);
    }
}

// The `ready` barriers, set up by thread 0 before ring_init's fence and block-wide meeting cover them.
template <int kStages>
__device__ __forceinline__ void ready_init(u64 *ready) {
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) mbar_init(&ready[s], PASS_THREADS);
}
