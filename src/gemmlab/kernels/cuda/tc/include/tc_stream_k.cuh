// The stream-K fixup (STREAM_K=1, tc6): the CTAs that end a split tile's k-range hand their partial accumulators
// to the tile's owner through a workspace in L2, one flag per tile counting them. The walk that splits the tiles
// is SkWalk (tc_scheduler.cuh).
#pragma once
#include "tc_ptx.cuh"
#include "tc_scheduler.cuh"

// The CT consumer threads (ct = 0..CT-1) of a CTA hold a tile's accumulator as R registers each. A partial goes to
// the writing CTA's workspace slot in fragment order, register quad j of thread ct at float4 j·CT + ct, so every
// warp store is 512 contiguous bytes. L2 only (st/ld .cg): the reader runs on another SM.
__device__ __forceinline__ void consumer_bar(int threads) { named_bar(1, threads); }
template <int R, int CT>
__device__ __forceinline__ void sk_store_partial(float *slot, const float (&d)[R], int ct) {
  float4 *p = reinterpret_cast<float4 *>(slot) + ct;
#pragma unroll
  for (int j = 0; j < R / 4; ++j) __stcg(p + j * CT, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
}
template <int R, int CT>
__device__ __forceinline__ void sk_add_partial(float (&d)[R], const float *slot, int ct) {
  const float4 *p = reinterpret_cast<const float4 *>(slot) + ct;
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const float4 v = __ldcg(p + j * CT);
    d[4 * j] += v.x;
    d[4 * j + 1] += v.y;
    d[4 * j + 2] += v.z;
    d[4 * j + 3] += v.w;
  }
}
// After the partial's stores: the consumers meet, and one thread counts the partial on the tile's flag with release
// semantics, which cover every consumer thread's stores that the barrier ordered before it (release is cumulative);
// no thread fences its own stores at gpu scope first (a fence.sc each, which waited for them to reach L2).
template <int CT>
__device__ __forceinline__ void sk_signal(u32 *flag, int ct) {
  consumer_bar(CT);
  if (ct == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(flag) : "memory");
}
// The owner: one thread waits (acquire) until `count` partials are counted, resets the flag for the next launch
// (no one else touches it in this one; kReset = false: tc10's SK_SPREAD counts on after the wait), and the consumers
// meet. Like mbar_wait, a wait far past any real one traps instead of hanging the GPU: 2^26 polls of an L2 round trip
// each (about a minute; a real wait is a few partials' time, microseconds).
template <int CT, bool kReset = true>
__device__ __forceinline__ void sk_wait(u32 *flag, u32 count, int ct) {
  if (ct == 0) {
    u32 spins = 0, v;
    while (true) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
      if (v >= count) break;
      if (++spins == (1u << 26)) __trap();
    }
    if (kReset) *flag = 0;
  }
  consumer_bar(CT);
}
// A consumer's end of a unit under STREAM_K: returns whether d now holds the whole tile (store C), after writing a
// partial (no) or adding the peers' partials in k order (owner of a split tile; bitwise reproducible).
template <int R, int CT>
__device__ __forceinline__ bool sk_fixup(const SkWalk &u, float (&d)[R], float *ws, u32 *flags, int ct) {
  if (u.partial()) {
    sk_store_partial<R, CT>(ws + (long long)u.cta * (R * CT), d, ct);
    sk_signal<CT>(flags + u.tile, ct);
    return false;
  }
  if (u.owner_of_split()) {
    u32 count = 0;
    for (int c = u.first_peer(); c >= 0; c = u.next_peer(c)) ++count;
    sk_wait<CT>(flags + u.tile, count, ct);
    for (int c = u.first_peer(); c >= 0; c = u.next_peer(c)) sk_add_partial<R, CT>(d, ws + (long long)c * (R * CT), ct);
  }
  return true;
}
