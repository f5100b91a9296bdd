// TIMELINE=1: clock stamps for gemmlab timeline (tc4, tc8; harness/timeline.py reads them).
#pragma once
// Consumer warpgroup cw (warpgroup cw + 1) of block b owns row b * CW + cw of TL_SLOTS readings (CW per block): [0]
// %globaltimer (ns) and [1] clock64 at the start; for its units i < TL_UNITS, [2 + 3i] clock64 once the unit's first
// k-tile has landed, [3 + 3i] after its last wgmma retires, [4 + 3i] after its epilogue; [TL_SLOTS - 2] clock64 and
// [TL_SLOTS - 1] %globaltimer at the end. Thread 0 of the warpgroup writes; the order of the stamps is the order of
// the warpgroup's work.
#define TL_SLOTS 64
#define TL_UNITS ((TL_SLOTS - 4) / 3)
template <int CW>
struct Timeline {
  unsigned long long *tl;
  __device__ __forceinline__ explicit Timeline(unsigned long long *tl_) : tl(tl_) {}
  // the warpgroup's row from %tid.x (asm volatile: computed at each stamp, so that no register holds it across the
  // mainloop, where the consumers of tc8 and of EPI_DEFER builds have none to spare)
  __device__ __forceinline__ void write(int slot, unsigned long long v) {
    unsigned tid;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
    if (tid % 128 == 0) tl[((size_t)blockIdx.x * CW + tid / 128 - 1) * TL_SLOTS + slot] = v;
  }
  __device__ __forceinline__ void clock(int slot) { write(slot, clock64()); }
  __device__ __forceinline__ void unit(int i, int stamp) {
    if (i < TL_UNITS) clock(2 + 3 * i + stamp);
  }
  __device__ __forceinline__ void ns(int slot) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    write(slot, t);
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
