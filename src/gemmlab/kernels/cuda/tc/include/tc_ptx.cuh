// The sm_90a instructions the tensor-core levels issue, one inline-asm wrapper each (so the levels need no CUDA
// headers under NVRTC): mbarriers, TMA loads and stores, the async-proxy fence, clusters, named barriers,
// shared-memory stores, wgmma's fences and waits, setmaxnreg. Policy (what waits on what, in which
// order) lives in the headers that use them.
#pragma once
#include "tc_args.cuh"
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u32 smem_u32(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// ---- mbarriers ------------------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64 *bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u64 *bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u64 *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `rank` of this cluster (rank may be our own).
// Default (.release.cta) semantics: the arrival only says the slot's wgmma reads are done, which wgmma.wait
// already guarantees, so it needs no cluster-wide release fence. kRelease (.release.cluster): the arrival also
// orders this thread's earlier memory operations on the slot (EPI_LEND's staging writes, which the TMA stores have
// read) before whatever a peer's producer, released by it, writes there.
#define MBAR_ARRIVE_REMOTE(SEM)                                                                    \
  asm volatile(                                                                                    \
      "{\n.reg .b32 remote;\n"                                                                     \
      "mapa.shared::cluster.u32 remote, %0, %1;\n"                                                 \
      "mbarrier.arrive" SEM ".shared::cluster.b64 _, [remote];\n}" ::"r"(smem_u32(bar)), "r"(rank) \
      : "memory")
template <bool kRelease = false>
__device__ __forceinline__ void mbar_arrive_cluster(u64 *bar, u32 rank) {
  if constexpr (kRelease)
    MBAR_ARRIVE_REMOTE(".release.cluster");
  else
    MBAR_ARRIVE_REMOTE("");
}
#undef MBAR_ARRIVE_REMOTE
__device__ __forceinline__ u32 mbar_try_wait(u32 addr, u32 parity) {
  u32 ok;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(addr), "r"(parity)
      : "memory");
  return ok;
}
// Wait until the barrier's phase with this parity has completed. A wait that spins far past any real
// latency (about 2^31 polls, each of which already blocks for a while in hardware) traps instead of hanging
// the GPU, so a protocol bug surfaces as a launch error.
__device__ __forceinline__ void mbar_wait(u64 *bar, u32 parity) {
  u32 addr = smem_u32(bar);
  u32 spins = 0;
  while (!mbar_try_wait(addr, parity)) {
    if (++spins == 0x80000000u) __trap();
  }
}

// ---- TMA ------------------------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_map(const TmaMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}
// Copy the box at element coordinates (c0 = innermost, c1) into shared memory; completion is counted on `bar`
// in bytes (out-of-bounds parts of the box are zero-filled and still counted).
__device__ __forceinline__ void tma_load_2d(void *dst, const TmaMap *map, u64 *bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::
          "r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// The box of a 1-D map from element c0 on (c0 of 4-byte elements a multiple of 4: a box starts on 16 bytes).
__device__ __forceinline__ void tma_load_1d(void *dst, const TmaMap *map, u64 *bar, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];" ::"r"(
          smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0)
      : "memory");
}
// The same box written to the same offset of every CTA in `mask`, each CTA's barrier at `bar`'s offset counting it.
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const TmaMap *map, u64 *bar, int c0, int c1,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
// The 3-D forms (BATCHED builds: a batch of matrices, c2 the matrix).
__device__ __forceinline__ void tma_load_3d(void *dst, const TmaMap *map, u64 *bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::
          "r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(void *dst, const TmaMap *map, u64 *bar, int c0, int c1, int c2,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

// ---- clusters -------------------------------------------------------------------------------------------------
__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The cluster's meeting after its barriers' set-up: fence_barrier_init already released the mbarrier.init writes at
// cluster scope, so the arrival need not release (a release arrival is a gpu-scope memory barrier in every warp).
__device__ __forceinline__ void cluster_sync_after_init() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared-memory address `addr` of this CTA mapped to the same offset in CTA `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// 16 bytes of a cluster peer's shared memory (an address from cluster_map), read and written.
__device__ __forceinline__ float4 ld_cluster_f4(u32 addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_cluster_f4(u32 addr, float4 v) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}

// ---- TMA stores, shared-memory stores, named barriers -------------------------------------------------------
__device__ __forceinline__ void tma_store_2d(const TmaMap *map, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until at most N of this thread's committed store groups are still reading shared memory. At a CTA's exit,
// N = 0 is all its shared memory needs: a kernel's global writes complete before the grid does, so a CTA need not
// wait for its TMA stores' writes (which cost it their trip to L2 and an L1 invalidation at its end). A path that
// signals another CTA to read C after storing it by TMA would need the full wait (cp.async.bulk.wait_group 0) and
// fence.proxy.async.global before its release.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Writes of the generic proxy (st.shared) made visible to the async proxy (TMA, wgmma) that reads shared memory next.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void named_bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void st_shared_f2(u32 addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 x) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(x) : "memory");
}
__device__ __forceinline__ u32 ld_shared_u32(u32 addr) {
  u32 x;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(x) : "r"(addr) : "memory");
  return x;
}

// ---- wgmma and register allocation ---------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from reading or moving accumulator registers across a wgmma wait.
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
