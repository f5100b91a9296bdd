// TIMELINE=1: clock stamps for gemmlab timeline (tc4, tc8; harness/timeline.py reads them).
#pragma once
// Warpgroup `cw` of block b owns row b * CW + cw of TL_SLOTS readings (CW consumer warpgroups per block): [0]
// %globaltimer (ns) and [1] clock64 at the start; for its units i < TL_UNITS, [2 + 3i] clock64 once the unit's first
// k-tile has landed, [3 + 3i] after its last wgmma retires, [4 + 3i] after its epilogue; [TL_SLOTS - 2] clock64 and
// [TL_SLOTS - 1] %globaltimer at the end. Thread 0 of the warpgroup writes; the order of the stamps is the order of
// the warpgroup's work.
#define TL_SLOTS 64
#define TL_UNITS ((TL_SLOTS - 4) / 3)
template <int CW>
struct Timeline {
  unsigned long long *row;
  bool writer;
  __device__ __forceinline__ Timeline(unsigned long long *tl, int cw)
      : row(tl + ((size_t)blockIdx.x * CW + cw) * TL_SLOTS), writer(threadIdx.x % 128 == 0) {}
  __device__ __forceinline__ void clock(int slot) {
    if (writer) row[slot] = clock64();
  }
  __device__ __forceinline__ void unit(int i, int stamp) {
    if (i < TL_UNITS) clock(2 + 3 * i + stamp);
  }
  __device__ __forceinline__ void ns(int slot) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (writer) row[slot] = t;
  }
  __device__ __forceinline__ void start() {
    ns(0);
    clock(1);
  }
  __device__ __forceinline__ void end() {
    clock(TL_SLOTS - 2);
    ns(TL_SLOTS - 1);
  }
};
