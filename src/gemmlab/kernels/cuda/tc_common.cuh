// Hopper primitives shared by the tc2..tc4 levels: mbarriers, TMA (cp.async.bulk.tensor), wgmma shared-memory
// descriptors, cluster helpers and the guarded FP32 epilogue. All sm_90a PTX through inline asm, so the levels
// need no CUDA headers under NVRTC.
#pragma once
#include "tc_args.cuh"
#include "tc_wgmma.cuh"

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
// already guarantees, so it needs no cluster-wide release fence.
__device__ __forceinline__ void mbar_arrive_cluster(u64 *bar, u32 rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}
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
// The same box written to the same offset of every CTA in `mask`, each CTA's barrier at `bar`'s offset counting it.
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const TmaMap *map, u64 *bar, int c0, int c1,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
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

// ---- wgmma ----------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride byte offsets in 16-byte
// units (bits 0-13, 16-29, 32-45), swizzle mode 1 = 128B in bits 62-63. Tiles are 1024-byte aligned, so the
// base-offset field (bits 49-51) stays 0.
//   K-major tile (rows of 128 bytes along K): LBO unused (1), SBO = 1024 (next group of 8 rows).
//   MN-major tile (64-element chunks along MN, each BK rows of 128 bytes): LBO = the chunk stride (next 64 MN
//   elements), SBO = 1024 (next 8 K rows).
__device__ __forceinline__ u64 wgmma_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}
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

// ---- output types ---------------------------------------------------------------------------------------------
// C is FP32, or BF16 with OUT_BF16=1 (the FP8 levels): half the bytes through the epilogue. FP32 accumulators are
// rounded to nearest even, a thread's two adjacent columns packed into one 32-bit word (cvt.rn.bf16x2).
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#if OUT_BF16
typedef unsigned short OutT;  // BF16 bits
#else
typedef float OutT;
#endif
__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
  u32 v;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(hi), "f"(lo));  // the first source goes to the high half
  return v;
}
__device__ __forceinline__ float out_value(float *, float x) { return x; }
__device__ __forceinline__ unsigned short out_value(unsigned short *, float x) {
  unsigned short v;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(x));
  return v;
}
__device__ __forceinline__ void store_pair(float *p, float x, float y) {
  *reinterpret_cast<float2 *>(p) = make_float2(x, y);
}
__device__ __forceinline__ void store_pair(unsigned short *p, float x, float y) {
  *reinterpret_cast<u32 *>(p) = pack_bf16(x, y);
}

// ---- epilogue -------------------------------------------------------------------------------------------------
// Store one warpgroup's m64nN FP32 accumulator fragment to row-major C (FP32 or BF16 bits) at (row0, col0).
// Fragment layout: thread t of the warpgroup holds, for each 8-column group j, C[row][8j + 2(t%4) + {0,1}] and the
// same 8 rows lower, row = 16(t/32) + (t%32)/4. Full tiles with an even N store pairs (float2, or one 32-bit word
// of two BF16, which needs a 4-byte aligned base); edges check every element.
template <int TN, typename T>
__device__ __forceinline__ void store_acc(T *C, const float (&d)[TN / 2], int row0, int col0, int M, int N) {
  const int t = threadIdx.x % 128;
  const int r = row0 + 16 * (t / 32) + (t % 32) / 4;
  const int c = col0 + 2 * (t % 4);
  const bool full = row0 + 64 <= M && col0 + TN <= N && (N % 2) == 0 &&
                    (sizeof(T) == 4 || (reinterpret_cast<unsigned long long>(C) & 3) == 0);
  if (full) {
    T *p0 = C + (long long)r * N + c;
    T *p1 = p0 + 8LL * N;
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
      store_pair(p0 + 8 * j, d[4 * j], d[4 * j + 1]);
      store_pair(p1 + 8 * j, d[4 * j + 2], d[4 * j + 3]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
      const int cc = c + 8 * j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rr = r + 8 * h;
        if (rr < M) {
          if (cc < N) C[(long long)rr * N + cc] = out_value(C, d[4 * j + 2 * h]);
          if (cc + 1 < N) C[(long long)rr * N + cc + 1] = out_value(C, d[4 * j + 2 * h + 1]);
        }
      }
    }
  }
}

// The same fragment through shared memory and TMA stores (tc4 with EPI_TMA=1), for a C whose row stride TMA can
// take (N % 4 == 0, 16-byte aligned base). C moves in boxes of 64 rows x 32 columns (one 128-byte swizzle row of
// FP32 per tile row), alternating between the warpgroup's two 8 KB staging boxes `stage`: the warpgroup writes
// one while the TMA unit reads the other out, so the warpgroup is back at its wgmma as soon as its last box is
// in shared memory, and C reaches L2 in whole lines. Stored directly, each warp's float2 store touches 8 rows'
// lines. Shared memory serves a warp's 8-byte stores one half-warp (4 rows x 4 threads) at a time, and the
// 128-byte swizzle XORs those 4 rows into the low two bits of the 16-byte unit only: storing one 8-column group
// across the warp puts each half-warp on 4 units twice, two wavefronts per half. So threads 2-3 of each quad store
// the group two over (step s: group s ^ 2, unit bit 2 flipped): each half-warp fills all 8 units once, one
// wavefront, the fewest 128 bytes can, for one FSEL per value.
// TMA clips the box at M and N. Thread 0 of the warpgroup (`t` = 0) issues the stores and alone tracks their bulk
// groups. The warpgroup meets once per box, on named barrier `bar_id`: box b is written and fenced for the async
// proxy, and thread 0 has seen box b - 1's store finish reading the staging box that box b + 1 is written to.
// `boxes` counts the warpgroup's boxes across tiles, so the staging boxes alternate even where a tile at the N
// edge stores an odd number of them.
// BF16 C (T = unsigned short: N % 8 == 0) moves in boxes of 64 rows x 64 columns, still 128 bytes a row, so the
// staging boxes are the same. A thread's pair of 8-column group s is one 32-bit word, word t % 4 of the row's
// 16-byte unit s, which the swizzle puts at unit s ^ (row % 8): a warp's 8 rows land on 8 different units and the
// 4 threads of each quad fill one, so each 32-bit store instruction hits all 32 banks once, one wavefront.
#define C_BOX_COLS (128 / 4)
#define C_BOX_BYTES (64 * 128)
__device__ __forceinline__ void named_bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const TmaMap *map, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Wait until at most N of this thread's committed store groups are still reading shared memory.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// ... and until they are complete (before the CTA exits and its shared memory goes away).
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void st_shared_f2(u32 addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
}
// begin staging arithmetic (plain C++: the tests compile it on the host)
// At step s of a box, thread t of a warpgroup stores its float2 of 8-column group c_stage_group(t, s): fragment row
// r = 16(t / 32) + (t % 32) / 4, box columns 8g + 2q and +1 (q = t % 4), bytes 32g + 8q of the row, 16-byte unit
// 2s ^ 5h with h = q / 2. In a staging box (64 rows of 128 bytes, 1024-byte aligned, laid out as TMA's 128-byte
// swizzle expects: unit u of row r sits at unit u ^ (r % 8)) only bits 5-6 of the offset depend on s:
// c_stage_lane(t) once, then XOR s into them. Row r + 8 has the same swizzle, 1024 bytes on.
__host__ __device__ __forceinline__ unsigned c_stage_group(unsigned t, int s) { return s ^ (t % 4 / 2 * 2); }
__host__ __device__ __forceinline__ unsigned c_stage_lane(unsigned t) {
  const unsigned row = 16 * (t / 32) + (t % 32) / 4, q = t % 4;
  return row * 128 + (((5 * (q / 2)) ^ (row % 8)) << 4) + 8 * (q % 2);
}
__host__ __device__ __forceinline__ unsigned c_stage_offset(unsigned lane, int s) { return lane ^ (s << 5); }
// BF16: thread t's word of group s sits at c_stage_offset_bf16(c_stage_lane_bf16(t), s); row r + 8 1024 bytes on.
__host__ __device__ __forceinline__ unsigned c_stage_lane_bf16(unsigned t) {
  const unsigned row = 16 * (t / 32) + (t % 32) / 4;
  return row * 128 + ((row % 8) << 4) + 4 * (t % 4);
}
__host__ __device__ __forceinline__ unsigned c_stage_offset_bf16(unsigned lane, int s) { return lane ^ (s << 4); }
// end staging arithmetic
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 x) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(x) : "memory");
}

template <int TN, typename T = float>
__device__ __forceinline__ void store_acc_tma(const TmaMap *mapC, const float (&d)[TN / 2], unsigned char *stage,
                                              int row0, int col0, int N, int bar_id, u32 &boxes) {
  constexpr int COLS = 128 / sizeof(T);  // C columns per box
  // %tid.x through asm volatile: the address is computed here, per epilogue, not hoisted out of the tile loop
  // into a register that would stay live across the mainloop.
  u32 tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  const u32 t = tid % 128, lane = sizeof(T) == 4 ? c_stage_lane(t) : c_stage_lane_bf16(t), base = smem_u32(stage);
  const bool swapped = c_stage_group(t, 0) != 0;
#pragma unroll
  for (int b = 0; b < TN / COLS; ++b) {
    if (col0 + COLS * b >= N) break;  // the same for the whole warpgroup
    const u32 box = base + (boxes++ % 2) * C_BOX_BYTES;
#pragma unroll
    for (int s = 0; s < COLS / 8; ++s) {
      const int j = b * (COLS / 8) + s;
      if constexpr (sizeof(T) == 4) {
        const int jx = b * (COLS / 8) + (s ^ 2);  // c_stage_group's two cases
        const u32 at = box + c_stage_offset(lane, s);
        st_shared_f2(at, swapped ? d[4 * jx] : d[4 * j], swapped ? d[4 * jx + 1] : d[4 * j + 1]);
        st_shared_f2(at + 8 * 128, swapped ? d[4 * jx + 2] : d[4 * j + 2], swapped ? d[4 * jx + 3] : d[4 * j + 3]);
      } else {
        const u32 at = box + c_stage_offset_bf16(lane, s);
        st_shared_u32(at, pack_bf16(d[4 * j], d[4 * j + 1]));
        st_shared_u32(at + 8 * 128, pack_bf16(d[4 * j + 2], d[4 * j + 3]));
      }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy writes, seen by TMA
    // Box b - 1's store had the writing of box b to read the other staging box, the one box b + 1 goes to.
    if (t == 0) tma_store_wait_read<0>();
    named_bar(bar_id, 128);
    if (t == 0) {
      tma_store_2d(mapC, box, col0 + COLS * b, row0);
      tma_store_commit();
    }
  }
}

// ---- operand types --------------------------------------------------------------------------------------------
// TC_BF16=1: bf16 A (M×K, K-major) and B (K×N, N-major, read through wgmma's transpose bit; K-major with B_KMAJOR).
// TC_BF16=0: tf32 from fp32 A (M×K, K-major) and Bᵀ (N×K, K-major: written by the transpose pre-pass, or handed
// over as such), because tf32 wgmma takes K-major operands only.
// TC_FP8=1 (with TC_BF16=0): fp8 A (M×K) and Bᵀ (N×K), both K-major, as fp8 wgmma reads them; e4m3 unless A_E5M2 /
// B_E5M2 (tc_wgmma.cuh). Either way one shared-memory row is 128 bytes of K (A, K-major B) or of N (N-major B), the
// 128-byte swizzle atom, and one k-tile is BK = 128 / ELEM_BYTES deep: 64 bf16, 32 tf32, 128 fp8.
#ifndef TC_BF16
#define TC_BF16 1
#endif
#ifndef TC_FP8
#define TC_FP8 0
#endif
// B_KMAJOR=1: B is K-major in global and shared memory (the TF32 levels' Bᵀ; for BF16, a B handed over as the
// transpose of an N×K row-major matrix, as x @ w.T hands its w over), read in 64-row boxes of 128 bytes of K like
// A, and by bf16 wgmma without its transpose bit (BF16_TNSP_B in tc_wgmma.cuh).
#ifndef B_KMAJOR
#define B_KMAJOR (!TC_BF16)
#endif
#if TC_FP8
#define ELEM_BYTES 1
#define WGMMA_K 32
#elif TC_BF16
#define ELEM_BYTES 2
#define WGMMA_K 16
#else
#define ELEM_BYTES 4
#define WGMMA_K 8
#endif
#define BK (128 / ELEM_BYTES)
#define KSTEPS (BK / WGMMA_K)  // wgmma instructions per k-tile: 4 for every type
#define A_TILE_BYTES (BM * 128)
#define B_BOX_BYTES (64 * 128)  // B moves in boxes of 64 N: 64 (N) x BK rows N-major, 64 rows x BK (K) K-major
#define B_TILE_BYTES (BN * 128)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#ifndef B_MN_LBO
#define B_MN_LBO (BK * 128)  // N-major B: from one 64-column box to the next
#endif
#ifndef B_MN_SBO
#define B_MN_SBO 1024  // N-major B: from one group of 8 K rows to the next
#endif

template <int N>
__device__ __forceinline__ void wgmma_tile(float (&d)[N / 2], u64 da, u64 db, int scale_d) {
#if TC_FP8
  if constexpr (N == 128) wgmma_fp8_n128(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_fp8_n192(d, da, db, scale_d);
  else wgmma_fp8_n256(d, da, db, scale_d);
#elif TC_BF16
  if constexpr (N == 64) wgmma_bf16_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_bf16_n128(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_bf16_n192(d, da, db, scale_d);
  else wgmma_bf16_n256(d, da, db, scale_d);
#else
  if constexpr (N == 64) wgmma_tf32_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_tf32_n128(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_tf32_n192(d, da, db, scale_d);
  else wgmma_tf32_n256(d, da, db, scale_d);
#endif
}

// A descriptor split in two words, so the mainloop does 32-bit adds: the low word holds the start address >> 4
// (bits 0-13; the address within the CTA's 18-bit shared window: in a cluster launch the bits above carry the
// CTA's rank) and LBO >> 4 (bits 16-29); the high word SBO >> 4 and the 128-byte swizzle mode (bit 62 of the
// descriptor). Offsets inside a tile are multiples of 16 bytes that stay in the window, so moving the start
// address by `off` bytes adds off >> 4 to the low word without a carry out of bit 13:
// desc_of(desc_lo(addr, lbo) + off / 16, sbo) == wgmma_desc(addr + off, lbo, sbo).
__device__ __forceinline__ u32 desc_lo(u32 addr, u32 lbo) { return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16); }
__device__ __forceinline__ u64 desc_of(u32 lo, u32 sbo) { return ((u64)((sbo >> 4) | (1u << 30)) << 32) | lo; }

// One k-tile of wgmma for a warpgroup's 64 rows: KSTEPS instructions of k = WGMMA_K. Inside the 128-byte swizzle
// atom a K step is a plain start-address offset (32 bytes for every type on K-major tiles; 16 rows of 128 bytes
// on the bf16 N-major B tile).
template <int N>
__device__ __forceinline__ void wgmma_ktile(float (&d)[N / 2], u32 a_tile, u32 b_tile, int accumulate) {
  const u32 a_lo = desc_lo(a_tile, 16);
#if !B_KMAJOR
  const u32 b_lo = desc_lo(b_tile, B_MN_LBO);
#else
  const u32 b_lo = desc_lo(b_tile, 16);
#endif
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) {
    const u64 da = desc_of(a_lo + 32 * kk / 16, 1024);
#if !B_KMAJOR
    const u64 db = desc_of(b_lo + kk * WGMMA_K * 128 / 16, B_MN_SBO);
#else
    const u64 db = desc_of(b_lo + 32 * kk / 16, 1024);
#endif
    wgmma_tile<N>(d, da, db, (accumulate || kk > 0) ? 1 : 0);
  }
}

// Issue the TMA copies of one k-tile (A: one BM x BK box; B: BN/64 boxes) into a stage and count them on `bar`.
// With a cluster of NCTA CTAs along M sharing the B tile, CTA `rank` loads every NCTA-th B box and multicasts it.
template <int NCTA>
__device__ __forceinline__ void load_stage(unsigned char *stage, const TmaMap *mapA, const TmaMap *mapB, u64 *bar,
                                           int m0, int n0, int k0, u32 rank) {
  mbar_expect_tx(bar, STAGE_BYTES);
  tma_load_2d(stage, mapA, bar, k0, m0);
  unsigned char *b = stage + A_TILE_BYTES;
#pragma unroll
  for (int j = 0; j < BN / 64; ++j) {
    if (NCTA > 1 && (u32)(j % NCTA) != rank) continue;
#if !B_KMAJOR
    const int c0 = n0 + 64 * j, c1 = k0;
#else
    const int c0 = k0, c1 = n0 + 64 * j;
#endif
    if (NCTA > 1)
      tma_load_2d_multicast(b + j * B_BOX_BYTES, mapB, bar, c0, c1, (unsigned short)((1u << NCTA) - 1));
    else
      tma_load_2d(b + j * B_BOX_BYTES, mapB, bar, c0, c1);
  }
}

// Tile t of a grid of tiles_m x tiles_n cluster tiles in grouped order: GROUP_M cluster-rows at a time, column
// by column, so the CTAs working at one moment share A rows and B columns in L2 (tc4, tc5). Odd groups walk their
// columns right to left, so the tiles after a group's last ones need the B columns just read (and produce_ring's
// k order alternates to match).
// begin schedule arithmetic (plain C++: the tests compile it on the host against tile_order in tc_common.py)
__host__ __device__ __forceinline__ void schedule(int t, int tiles_m, int tiles_n, int group_m, int &tm, int &tn) {
  const int group = group_m * tiles_n;
  const int first = (t / group) * group_m;
  const int rows = min(tiles_m - first, group_m);
  const int r = t % group;
  tm = first + r % rows;
  tn = r / rows;
  if ((t / group) % 2) tn = tiles_n - 1 - tn;
}
// end schedule arithmetic

// The persistent levels' grid (tc4..tc6): clusters of NCTA CTAs (1: clusters off), each cluster taking output
// tiles of TILE_M x TILE_N elements (tc4 stacks its CTAs along M, tc5 along N), K in k-tiles of BK.
template <int NCTA, int TILE_M, int TILE_N>
struct PersistentGrid {
  u32 rank;  // this CTA's place in its cluster
  int cluster, clusters, tiles_m, tiles_n, tiles, KT;
  __device__ __forceinline__ PersistentGrid(int M, int N, int K)
      : rank(NCTA > 1 ? cluster_rank() : 0),
        cluster(blockIdx.x / NCTA),
        clusters(gridDim.x / NCTA),
        tiles_m((M + TILE_M - 1) / TILE_M),
        tiles_n((N + TILE_N - 1) / TILE_N),
        tiles(tiles_m * tiles_n),
        KT((K + BK - 1) / BK) {}
};

// A consumer warp's release of ring slot `s` (its wgmma reads are done): on its own CTA's `empty` barrier, or,
// when NCTA CTAs of a cluster share the slot's multicast operand, on every one of theirs, since each producer
// must know that all readers of the bytes it multicast are done before it overwrites them.
template <int NCTA>
__device__ __forceinline__ void release_slot(u64 *empty) {
  if (NCTA > 1)
    for (u32 r = 0; r < NCTA; ++r) mbar_arrive_cluster(empty, r);
  else
    mbar_arrive(empty);
}

// The warp-specialized levels' start (tc3..tc6): thread 0 prefetches the two tensor maps and sets up the ring,
// `full[s]` completing on the producer's one arrival plus the TMA bytes, `empty[s]` on `readers` consumer-warp
// arrivals. Then the block, or with NCTA > 1 the whole cluster, meets, so no barrier is signalled (by a peer's
// multicast or remote arrival, too) before it exists.
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
  if (NCTA > 1) cluster_sync();
  else __syncthreads();
}

// Dynamic shared memory rounded up to the 1024-byte alignment the 128-byte swizzle needs.
__device__ __forceinline__ unsigned char *aligned_smem(unsigned char *raw) {
  const u32 pad = (1024u - (smem_u32(raw) & 1023u)) & 1023u;
  return raw + pad;
}

// ---- work walk: data-parallel tiles, then (STREAM_K=1, tc6) a stream-K tail ---------------------------------
// Both walks hand out units (tile, k-tiles [kb, ke)); `tile` is an index into schedule()'s order. The producer
// and the consumers of a CTA construct the same walk and so see the same units.
#ifndef STREAM_K
#define STREAM_K 0
#endif

// tc4/tc5: CTA (cluster) `first` takes tiles first, first + step, ... whole.
struct DpWalk {
  int tile, kb, ke, step, tiles;
  __device__ __forceinline__ DpWalk(int first, int step_, int tiles_, int KT)
      : tile(first), kb(0), ke(KT), step(step_), tiles(tiles_) {}
  __device__ __forceinline__ bool valid() const { return tile < tiles; }
  __device__ __forceinline__ void next() { tile += step; }
};

// begin stream-K arithmetic (plain C++: the tests compile this block on the host against the Python model)
// Grid G, T tiles of KT k-tiles, R = T % G tiles in the last, partial wave. All tiles are data-parallel (CTA c
// takes c, c + G, ... whole) when R = 0 or R fills at least SK_SKIP_FILL % of a wave: then stream-K would save
// less than the fixup costs. Else the stream-K region is the last R tiles when they fill at least SK_FILL % of a
// wave (or make the only wave), and the last G + R tiles when fewer, so that every CTA's range holds at least a
// tile and the CTAs that finish a tile's k-range for its owner run their share first. The region's S·KT (tile,
// k-tile) iterations, in schedule order, split evenly into G contiguous ranges, CTA c taking
// [sk_begin(c), sk_begin(c + 1)) after its whole tiles.
#ifndef SK_FILL
#define SK_FILL 50
#endif
#ifndef SK_SKIP_FILL
#define SK_SKIP_FILL 70
#endif
__host__ __device__ __forceinline__ int sk_dp_tiles(int tiles, int grid) {
  const int waves = tiles / grid, rest = tiles % grid;
  if (rest == 0 || (waves > 0 && rest * 100 >= SK_SKIP_FILL * grid)) return tiles;
  if (waves == 0 || rest * 100 >= SK_FILL * grid) return waves * grid;
  return (waves - 1) * grid;
}
// The first iteration of CTA c's range, floor(c · iters / G), without the 64-bit product overflowing and with one
// 32-bit division: iters = q·G + r, so it is c·q + floor(c·r / G), and c·r < G² fits an int.
__host__ __device__ __forceinline__ long long sk_begin(int c, int grid, long long q, int r) {
  return (long long)c * q + (c * r) / grid;
}
struct SkWalk {
  int tile, kb, ke;  // the current unit
  int cta, grid, tiles, KT, dp_tiles;
  bool dp;
  int r;                // the stream-K region's iterations are q·G + r
  long long q, i, end;  // this CTA's next iteration and its range's end
  __host__ __device__ __forceinline__ SkWalk(int cta_, int grid_, int tiles_, int KT_)
      : tile(cta_), kb(0), ke(KT_), cta(cta_), grid(grid_), tiles(tiles_), KT(KT_) {
    dp_tiles = sk_dp_tiles(tiles, grid);
    const long long iters = (long long)(tiles - dp_tiles) * KT;
    q = iters / grid;
    r = (int)(iters % grid);
    i = sk_begin(cta, grid, q, r);
    end = sk_begin(cta + 1, grid, q, r);
    dp = tile < dp_tiles;
    if (!dp) load();
  }
  __host__ __device__ __forceinline__ bool valid() const { return tile < tiles; }
  __host__ __device__ __forceinline__ void next() {
    if (dp) {
      tile += grid;
      if (tile < dp_tiles) return;
      dp = false;
    } else {
      i += ke - kb;
    }
    load();
  }
  // A range cuts into units at tile boundaries: only the first can start mid-tile, only the last end mid-tile.
  __host__ __device__ __forceinline__ void load() {
    if (i >= end) {
      tile = tiles;
      return;
    }
    tile = dp_tiles + (int)(i / KT);
    kb = (int)(i % KT);
    const long long left = end - i;
    ke = left < (long long)(KT - kb) ? kb + (int)left : KT;
  }
  // A unit that starts mid-tile leaves a partial for the tile's owner; one that starts at k = 0 and stops short of
  // KT is the owner of a split tile and adds the partials of the CTAs after it (the last unit of its range).
  __host__ __device__ __forceinline__ bool partial() const { return kb > 0; }
  __host__ __device__ __forceinline__ bool owner_of_split() const { return kb == 0 && ke < KT; }
  // The CTAs after this one that hold the rest of the current tile, in k order: c = first_peer(), next_peer(c)
  // while c >= 0. CTAs with empty ranges (fewer iterations than CTAs) are skipped.
  __host__ __device__ __forceinline__ int next_peer(int c) const {
    const long long tile_end = (long long)(tile - dp_tiles + 1) * KT;
    for (++c; c < grid; ++c) {
      const long long b = sk_begin(c, grid, q, r);
      if (b >= tile_end) return -1;
      if (sk_begin(c + 1, grid, q, r) > b) return c;
    }
    return -1;
  }
  __host__ __device__ __forceinline__ int first_peer() const { return next_peer(cta); }
};
// end stream-K arithmetic

#if STREAM_K
typedef SkWalk Walk;
#else
typedef DpWalk Walk;
#endif

// The producer thread's loop (tc4..tc6): for every unit of this CTA's walk, the tile's origin (origin(tile) ->
// int2 {m0, n0}), then for each of its k-tiles, wait until the ring slot is free (its readers' arrivals on
// `empty`, from the second lap of the ring on) and issue the k-tile's TMA copies into it through
// load(stage, full barrier, m0, n0, k0). The consumers walk the same units and slots; they only add, so the
// order of a unit's k-tiles is the producer's choice: every other unit runs its k-tiles last to first.
// All CTAs start their n-th unit at about the same time, so a unit begins with the k-tiles the whole grid read
// last, which are still in L2: the next unit of the same grouped rows (or, after schedule()'s turn at a group's
// end, of the same columns) rereads them from L2 rather than DRAM.
template <int kStages, class Origin, class Load>
__device__ __forceinline__ void produce_ring(unsigned char *smem, u64 *full, u64 *empty, int cta, int ctas, int tiles,
                                             int KT, Origin origin, Load load) {
  u32 it = 0;  // ring position (unsigned: % and / by kStages are a mask and a shift)
  u32 unit = 0;
  for (Walk u(cta, ctas, tiles, KT); u.valid(); u.next(), ++unit) {
    const int2 o = origin(u.tile);
    const bool down = unit % 2;
    for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
      const u32 s = it % kStages;
      if (it >= (u32)kStages) mbar_wait(&empty[s], (it / kStages - 1) & 1);
      load(smem + s * STAGE_BYTES, &full[s], o.x, o.y, (down ? u.kb + u.ke - 1 - kt : kt) * BK);
    }
  }
}

// ---- TIMELINE=1: clock stamps for gemmlab timeline (tc4, tc8) ---------------------------------------------------
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
};

// ---- stream-K fixup -------------------------------------------------------------------------------------------
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
// After the partial's stores: every thread fences them at gpu scope, the consumers meet, one thread counts the
// partial on the tile's flag with release semantics.
template <int CT>
__device__ __forceinline__ void sk_signal(u32 *flag, int ct) {
  __threadfence();
  consumer_bar(CT);
  if (ct == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(flag) : "memory");
}
// The owner: one thread waits (acquire) until `count` partials are counted, resets the flag for the next launch
// (no one else touches it in this one), and the consumers meet. Like mbar_wait, a wait far past any real one
// traps instead of hanging the GPU: 2^26 polls of an L2 round trip each (about a minute; a real wait is a few
// partials' time, microseconds).
template <int CT>
__device__ __forceinline__ void sk_wait(u32 *flag, u32 count, int ct) {
  if (ct == 0) {
    u32 spins = 0, v;
    while (true) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
      if (v >= count) break;
      if (++spins == (1u << 26)) __trap();
    }
    *flag = 0;
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
