// The wgmma levels' epilogue: a consumer warpgroup's accumulator fragment into C, straight from registers or
// through shared-memory staging boxes and TMA stores, in FP32 or a 16-bit type (BF16, FP16).
#pragma once
#include "tc_layout.cuh"
#include "tc_ptx.cuh"

// ---- output types ---------------------------------------------------------------------------------------------
// C is FP32, BF16 (OUT_BF16=1) or FP16 (OUT_F16=1): OutT, out_value, store_pair and pack_out in tc_out.cuh.
#include "tc_out.cuh"

// ---- the fused epilogue (EPI=1, epilogue.cuh) --------------------------------------------------------------------
// 8-column group j of a warpgroup's m64nN fragment at (row0, col0) (the layout store_acc describes) turned in place
// into the epilogue's values, in the kernel's coordinates. The stores below call it for each group just before its
// values leave, inside their own unrolled loops, so a thread holds a group's addends and activations at a time, not
// a tile's (a tile's worth spills at 168 registers); in place, because the accumulators are dead past their store
// (the next tile's first wgmma overwrites them). One group per call, j a constant once the caller's loop unrolls: a
// call that took a range of groups put every group's body, each behind a test of the range, inside each of the
// caller's iterations, which then grew past the unroller's limit and stayed a loop, with the fragment indexed by a
// variable and so in local memory (gelu with a bias: a 512-byte stack). D is read for the elements inside M×N only
// (a TMA store clips the rest).
template <int TN>
__device__ __forceinline__ void epi_group(float (&d)[TN / 2], const TcArgs &args, int row0, int col0, int M, int N,
                                          int j) {
#if EPI
  const int t = threadIdx.x % 128;
  const int r = row0 + 16 * (t / 32) + (t % 32) / 4;
  // the group's values and its column pass through empty volatile asm first, its values again after: the compiler
  // keeps volatile asm in order, so it cannot start a later group's loads or arithmetic (and hold their registers)
  // before this group's are done
  int cj = col0 + 2 * (t % 4) + 8 * j;
  asm volatile("" : "+r"(cj));
#pragma unroll
  for (int i = 4 * j; i < 4 * j + 4; ++i) asm volatile("" : "+f"(d[i]));
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      const int rr = r + 8 * h, cc = cj + v;
      float &x = d[4 * j + 2 * h + v];
      x = epi_apply<C_TRANSPOSED>(args.epi, x, rr, cc, (unsigned)rr < M && cc < N);
    }
#pragma unroll
  for (int i = 4 * j; i < 4 * j + 4; ++i) asm volatile("" : "+f"(d[i]));
#endif
}

// ---- epilogue -------------------------------------------------------------------------------------------------
// Store one warpgroup's m64nN FP32 accumulator fragment to row-major C (FP32, or BF16 or FP16 bits) at (row0, col0).
// Fragment layout: thread t of the warpgroup holds, for each 8-column group j, C[row][8j + 2(t%4) + {0,1}] and the
// same 8 rows lower, row = 16(t/32) + (t%32)/4. Full tiles with an even N store pairs (float2, or one 32-bit word
// of two BF16) where C's base is aligned to a pair (pairs_aligned); edges check every element.
// C_TRANSPOSED=1 (tc9's swap, EPI_TMA=0): C holds the transpose of the kernel's M×N product, element (r, c) at
// C[c·M + r]; a warp's store then covers 8 consecutive elements in each of 4 columns, so every element is stored
// alone, by the edge path.
#ifndef C_TRANSPOSED
#define C_TRANSPOSED 0
#endif
// EPI=1: `args`' epilogue is applied to each group of the fragment just before its stores.
template <int TN, typename T>
__device__ __forceinline__ void store_acc(T *C, float (&d)[TN / 2], int row0, int col0, int M, int N,
                                          const TcArgs &args) {
  const int t = threadIdx.x % 128;
  const int r = row0 + 16 * (t / 32) + (t % 32) / 4;
  const int c = col0 + 2 * (t % 4);
  const bool full = !C_TRANSPOSED && row0 + 64 <= M && col0 + TN <= N && (N % 2) == 0 && pairs_aligned(C);
  // element (rr, cc) of the fragment's product: row-major C, or with C_TRANSPOSED its transpose
  auto at = [&](int rr, int cc) { return C_TRANSPOSED ? (long long)cc * M + rr : (long long)rr * N + cc; };
  if (full) {
    T *p0 = C + (long long)r * N + c;
    T *p1 = p0 + 8LL * N;
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
      epi_group<TN>(d, args, row0, col0, M, N, j);
      store_pair(p0 + 8 * j, d[4 * j], d[4 * j + 1]);
      store_pair(p1 + 8 * j, d[4 * j + 2], d[4 * j + 3]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
      epi_group<TN>(d, args, row0, col0, M, N, j);
      const int cc = c + 8 * j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rr = r + 8 * h;
        if (rr < M) {
          if (cc < N) C[at(rr, cc)] = out_value(C, d[4 * j + 2 * h]);
          if (cc + 1 < N) C[at(rr, cc + 1)] = out_value(C, d[4 * j + 2 * h + 1]);
        }
      }
    }
  }
}

// The same fragment through shared memory and TMA stores (tc4 and tc8 with EPI_TMA=1), for a C whose row stride TMA can
// take (N % 4 == 0, 16-byte aligned base). C moves in boxes of 64 rows x 32 columns (one 128-byte swizzle row of
// FP32 per tile row), in turn through the warpgroup's EPI_BOXES 8 KB staging boxes `stage`: with two, the
// warpgroup writes one while the TMA unit reads the other out, so the warpgroup is back at its wgmma as soon as its last box is
// in shared memory, and C reaches L2 in whole lines. Stored directly, each warp's float2 store touches 8 rows'
// lines. Shared memory serves a warp's 8-byte stores one half-warp (4 rows x 4 threads) at a time, and the
// 128-byte swizzle XORs those 4 rows into the low two bits of the 16-byte unit only: storing one 8-column group
// across the warp puts each half-warp on 4 units twice, two wavefronts per half. So threads 2-3 of each quad store
// the group two over (step s: group s ^ 2, unit bit 2 flipped): each half-warp fills all 8 units once, one
// wavefront, the fewest 128 bytes can, for one FSEL per value.
// TMA clips the box at M and N. Thread 0 of the warpgroup (`t` = 0) issues the stores and alone tracks their bulk
// groups. The warpgroup meets once per box, on named barrier `bar_id`: box b is written and fenced for the async
// proxy, and thread 0 has seen the store of box b + 1 - EPI_BOXES finish reading the staging box that box b + 1 is
// written to. `boxes` counts the warpgroup's boxes across tiles, so the staging boxes keep their turn even where a
// tile at the N edge stores fewer of them.
// BF16 or FP16 C (T = unsigned short: N % 8 == 0) moves in boxes of 64 rows x 64 columns, still 128 bytes a row, so the
// staging boxes are the same. A thread's pair of 8-column group s is one 32-bit word, word t % 4 of the row's
// 16-byte unit s, which the swizzle puts at unit s ^ (row % 8): a warp's 8 rows land on 8 different units and the
// 4 threads of each quad fill one, so each 32-bit store instruction hits all 32 banks once, one wavefront.
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

// begin lend arithmetic (plain C++: the tests compile it on the host)
// EPI_LEND: the bytes of a warpgroup's boxes of C past its own `boxes`, for BN columns of C of `out_bytes` each
// (64 rows x 128 bytes a box), and whether `consumers` warpgroups' of them fit in a ring stage of `stage` bytes
__host__ __device__ constexpr int lent_bytes(int bn, int out_bytes, int boxes) {
  return (bn / (128 / out_bytes) - boxes) * 64 * 128;
}
__host__ __device__ constexpr bool lends(int bn, int out_bytes, int boxes, int consumers, int stage) {
  return lent_bytes(bn, out_bytes, boxes) > 0 && consumers * lent_bytes(bn, out_bytes, boxes) <= stage;
}
// end lend arithmetic

// EPI_DEFER=n (tc4 and tc8, 16-bit C through TMA): a warpgroup stores its tile's boxes of C at once but for the
// last n (all, where a tile has fewer: held_boxes), which it holds packed into 16-bit words (16 registers a box) until
// the next tile's first k-tiles of wgmma are issued; stored then (TileStore::store_held_box, one box under every
// EPI_GAP-th of those k-tiles in tc4, all under the first in tc8), they leave under the tensor cores' work, and so do the waits for
// the earlier boxes' stores to read out the staging boxes they reuse, instead of between two tiles' mainloops. EPI=1:
// the words hold C before its epilogue, which the staged pass (epi_box) applies as each held box is stored, so the
// epilogue's arithmetic runs under those k-tiles too, and every box of C, held or not, takes the same pass. The words
// live across the tile boundary only: the kernels peel each tile's first k-tiles off the k loop and store the last
// tile's boxes there, never after the walk's loop (last_unit).
#ifndef EPI_DEFER
#define EPI_DEFER 0
#endif
// 16-bit word i of a fragment (BF16, or FP16 with OUT_F16): its values 2i and 2i + 1 packed (or, below, as a
// HeldC holds them packed)
template <int R>
__device__ __forceinline__ u32 bf16_word(const float (&d)[R], int i) {
  return pack_out(d[2 * i], d[2 * i + 1]);
}
__host__ __device__ constexpr int held_boxes(int tn, int defer) { return defer < tn / 64 ? defer : tn / 64; }
template <int TN, int HELD>
struct HeldC {
  static_assert(HELD >= 0 && HELD <= TN / 64, "a tile's boxes of 16-bit C are 64 columns, TN / 64 of them");
  static constexpr int COUNT = HELD;
  static constexpr int FIRST = TN / 64 - HELD;  // the first held box (64 BF16 columns, 16 words a thread)
  u32 w[HELD ? 16 * HELD : 1];
  int m0 = -1, n0 = 0;  // m0 < 0: nothing held
  __device__ __forceinline__ void hold(const float (&d)[TN / 2], int m, int n) {
#pragma unroll
    for (int i = 0; i < 16 * HELD; ++i) w[i] = bf16_word(d, 16 * FIRST + i);
    m0 = m;
    n0 = n;
  }
};
template <int TN, int HELD>
__device__ __forceinline__ u32 bf16_word(const HeldC<TN, HELD> &h, int i) {
  return h.w[i - 16 * HeldC<TN, HELD>::FIRST];
}

// EPI=1 on the TMA-store path: the epilogue applied to a staged box of C in shared memory (64 rows x 128 bytes, the
// 128-byte swizzle: 16-byte unit u of row r at unit u ^ (r % 8)) whose first element is C's (row0, col0), after the
// warpgroup has written it and met, before it is fenced and stored. Thread t of the warpgroup takes 32-bit word
// t % 32 of rows t / 32, t / 32 + 4, ...: one column pair (one FP32 column) for the whole box, so its bias is one
// load, and a warp's 32 words are one row, 32 banks, and one line of a matrix addend. Why here and not in registers as
// each group leaves: applied in the fragment's registers the epilogue is a copy of its code for each of a tile's 128
// values in each store path, a tile's worth of instructions that do not fit the instruction cache; here it is one
// box column's (16 rows). BF16 or FP16 C is staged rounded, so the epilogue reads C's values as C holds them (what a
// separate activation after the GEMM reads).
// A thread's 16 rows are loaded before any is computed, then stored: the rows' addresses are two registers and
// constant offsets, so the compiler overlaps their loads, their 32 (BF16) independent activations and their stores.
// Two warps of a consumer warpgroup share each scheduler, too few to hide a row at a time: a loop over the rows at
// addresses it computed (which ptxas cannot tell apart, so no load moves above an earlier row's store) left the
// shared-memory latency and the activation's dependent chain (the SFU's among it) exposed on every row.
template <typename T>
__device__ __forceinline__ void epi_box(const TcArgs &args, u32 box, int row0, int col0, int M, int N, u32 t) {
#if EPI
  constexpr int PER = 4 / sizeof(T);  // C's values in a 32-bit word
  const u32 w = t % 32, r0 = t / 32;
  const int c = col0 + PER * (int)w;
  float bias[PER];
#pragma unroll
  for (int v = 0; v < PER; ++v) bias[v] = epi_column_bias(args.epi, c + v, c + v < N);
  // row r0 + 4i has the swizzle row r0 + 4(i % 2): even rows 1024 bytes apart from `even`, odd ones from `odd`
  const u32 even = box + r0 * 128 + (((w / 4) ^ r0) << 4) + 4 * (w % 4);
  const u32 odd = box + (r0 + 4) * 128 + (((w / 4) ^ (r0 + 4)) << 4) + 4 * (w % 4);
  auto at = [&](int i) { return (i % 2 ? odd : even) + 1024 * (i / 2); };
  // a matrix addend's loads and 64-bit addresses, unrolled over the 16 rows, spill (tc6): 4 rows at a time, in a loop
  constexpr int ROWS = EPI_ADDEND == 2 ? 4 : 16;
#pragma unroll(EPI_ADDEND == 2 ? 1 : 16)
  for (int i0 = 0; i0 < 16; i0 += ROWS) {
    u32 word[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) word[i] = ld_shared_u32(at(i0 + i));
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const int rr = row0 + (int)r0 + 4 * (i0 + i);
      if constexpr (PER == 2) {
        float2 x = unpack_out(word[i]);
        x.x = epi_apply_column(args.epi, x.x, bias[0], rr, c, rr < M && c < N);
        x.y = epi_apply_column(args.epi, x.y, bias[PER - 1], rr, c + 1, rr < M && c + 1 < N);
        word[i] = pack_out(x.x, x.y);
      } else {
        word[i] = __float_as_uint(epi_apply_column(args.epi, __uint_as_float(word[i]), bias[0], rr, c,
                                                   rr < M && c < N));
      }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) st_shared_u32(at(i0 + i), word[i]);
  }
#endif
}
// ---- EPI_ASYNC: the fused epilogue's pass in producer warps -----------------------------------------------------
// EPI_ASYNC=1 (tc4 through TMA, EPI=1 without an activation: WgmmaKernel._passes_async): a consumer warpgroup writes
// each box of C into a staging box and hands it over (the box's `staged` barrier, its origin in C beside it);
// producer warp 1 + cw applies the pass (epi_box) to warpgroup cw's boxes, stores them by TMA and gives the staging
// box back (`freed`) once its store has read it. The consumers go back to wgmma as soon as their boxes are written,
// without meeting: the pass's instructions issue beside the next tile's mainloop instead of between the
// warpgroup's k-tiles. With EPI_DEFER the held boxes are written under the next tile's k-tiles EPI_GAP apart, so
// that each finds its staging box given back.
struct BoxSync {
  u64 staged, freed;  // each thread arrives: the warpgroup's 128 on `staged`, the storing warp's 32 on `freed`
  int row0, col0;     // the box's origin in C; row0 < 0: the warpgroup's walk is over
};
static_assert(sizeof(BoxSync) == C_BOX_SYNC_BYTES, "tc_layout.cuh's C_BOX_SYNC_BYTES is a BoxSync's size");
// warpgroup cw's EPI_BOXES of them, after all the consumers' staging boxes at `staging`
template <int kConsumers>
__device__ __forceinline__ BoxSync *box_sync(unsigned char *staging, int cw) {
  return reinterpret_cast<BoxSync *>(staging + staging_offset(kConsumers)) + cw * EPI_BOXES;
}
// thread 0, before the ring's set-up fences its barriers for the block
template <int kConsumers>
__device__ __forceinline__ void box_sync_init(unsigned char *staging) {
  for (int i = 0; i < kConsumers * EPI_BOXES; ++i) {
    mbar_init(&box_sync<kConsumers>(staging, 0)[i].staged, 128);
    mbar_init(&box_sync<kConsumers>(staging, 0)[i].freed, 32);
  }
}
// Producer warp 1 + cw's loop over warpgroup cw's boxes, in the order the warpgroup stages them (box n in staging box
// n % EPI_BOXES), until the warpgroup's last one; lane 0 issues the stores. The pass covers the box's 64 rows in four
// of epi_box's 16-row quarters, as a warpgroup's four warps would. Every lane of the warp arrives on `freed` once
// lane 0 has seen the store read the box: each lane's own writes are then ordered before the consumers' next ones,
// not through lane 0 alone.
template <int kConsumers, typename T>
__device__ __forceinline__ void epi_async_boxes(const TcArgs &args, unsigned char *staging, int cw, u32 lane) {
  BoxSync *sync = box_sync<kConsumers>(staging, cw);
  const u32 base = smem_u32(staging + staging_offset(cw));
  for (u32 n = 0;; ++n) {
    BoxSync *bs = sync + n % EPI_BOXES;
    mbar_wait(&bs->staged, (n / EPI_BOXES) & 1);
    const int row0 = *(volatile int *)&bs->row0, col0 = *(volatile int *)&bs->col0;
    if (row0 < 0) break;
    const u32 box = base + (n % EPI_BOXES) * C_BOX_BYTES;
#pragma unroll 1
    for (u32 q = 0; q < 4; ++q) epi_box<T>(args, box, row0, col0, args.M, args.N, lane + 32 * q);
    fence_proxy_async_smem();  // each lane's writes, seen by the TMA store that reads the box
    __syncwarp();
    if (lane == 0) {
      tma_store_2d(&args.c, box, col0, row0);
      tma_store_commit();
      tma_store_wait_read<0>();
    }
    __syncwarp();
    mbar_arrive(&bs->freed);
  }
}

// Boxes B0 .. B1 - 1 of the fragment F: the FP32 accumulators (float[TN / 2]), or for BF16 C a HeldC's boxes.
// kLent (EPI_LEND): the boxes past the warpgroup's own EPI_BOXES go to `lent`, every box its own, so none waits for
// another's store, and one fence and one meeting cover them all.
// EPI=1: `args`' epilogue is applied to each staged box in shared memory (epi_box): an accumulator fragment's and a
// HeldC's alike, whose words hold C before its epilogue.
template <int TN, typename T = float, bool kLent = false, int B0 = 0, int B1 = TN / (128 / sizeof(T)), typename F>
__device__ __forceinline__ void store_acc_tma(const TcArgs &args, F &d, unsigned char *stage, int row0, int col0,
                                              int M, int N, int cw, u32 &boxes, unsigned char *lent = nullptr) {
  const TmaMap *mapC = &args.c;
  const int bar_id = 2 + cw;  // the warpgroup's own named barrier
  constexpr int COLS = 128 / sizeof(T);  // C columns per box
  static_assert(!kLent || B0 == 0, "lent boxes count from the tile's first");
  // %tid.x through asm volatile: the address is computed here, per epilogue, not hoisted out of the tile loop
  // into a register that would stay live across the mainloop.
  u32 tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  const u32 t = tid % 128, lane = sizeof(T) == 4 ? c_stage_lane(t) : c_stage_lane_bf16(t), base = smem_u32(stage);
  const bool swapped = c_stage_group(t, 0) != 0;
  auto lent_box = [&](int b) {
    return b < EPI_BOXES ? base + b * C_BOX_BYTES : smem_u32(lent) + (b - EPI_BOXES) * C_BOX_BYTES;
  };
  int written = 0;
#pragma unroll
  for (int b = B0; b < B1; ++b) {
    if (col0 + COLS * b >= N) break;  // the same for the whole warpgroup
#if EPI_ASYNC
    static_assert(!kLent, "EPI_ASYNC stages every box in the warpgroup's own staging boxes");
    const u32 n = boxes++;
    BoxSync *bs = box_sync<BM / 64>(stage - staging_offset(cw), cw) + n % EPI_BOXES;
    if (n >= EPI_BOXES) mbar_wait(&bs->freed, (n / EPI_BOXES - 1) & 1);  // its store has read the staging box
    const u32 box = base + (n % EPI_BOXES) * C_BOX_BYTES;
#else
    const u32 box = kLent ? lent_box(b) : base + (boxes++ % EPI_BOXES) * C_BOX_BYTES;
#endif
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
        st_shared_u32(at, bf16_word(d, 2 * j));
        st_shared_u32(at + 8 * 128, bf16_word(d, 2 * j + 1));
      }
    }
    ++written;
    if (kLent) continue;
#if EPI_ASYNC
    if (t == 0) {
      bs->row0 = row0;
      bs->col0 = col0 + COLS * b;
    }
    mbar_arrive(&bs->staged);  // each thread's part of the box (and thread 0's origin), released to the storing warp
    continue;
#endif
    if constexpr (EPI) {  // the box written by the whole warpgroup, then its epilogue in place
      named_bar(bar_id, 128);
      epi_box<T>(args, box, row0, col0 + COLS * b, M, N, t);
    }
    fence_proxy_async_smem();  // the box's writes, seen by the TMA store that reads it
    // The store of box b + 1 - EPI_BOXES read the staging box that box b + 1 goes to: with two boxes, box b - 1's
    // had the writing of box b to read it out.
    if (t == 0) tma_store_wait_read<EPI_BOXES - 2>();
    named_bar(bar_id, 128);
    if (t == 0) {
      tma_store_2d(mapC, box, col0 + COLS * b, row0);
      tma_store_commit();
    }
  }
  if constexpr (kLent) {
    if constexpr (EPI) {
      named_bar(bar_id, 128);
      for (int b = 0; b < written; ++b) epi_box<T>(args, lent_box(b), row0, col0 + COLS * b, M, N, t);
    }
    fence_proxy_async_smem();
    named_bar(bar_id, 128);
    if (t == 0) {
      for (int b = 0; b < written; ++b) tma_store_2d(mapC, lent_box(b), col0 + COLS * b, row0);
      tma_store_commit();
    }
  }
}

// A consumer warpgroup's stores of its tiles in the levels with the TMA-store epilogue (tc4, tc8): with EPI_TMA,
// through its two staging boxes (at staging_offset(cw) of `staging`) and TMA wherever the host found that TMA can
// address C (args.c_tma; args.c is then C's map), else from registers. `boxes` runs on across the tiles.
struct TileStore {
  u32 boxes = 0;
  template <int TN, bool kLent = false, typename T>
  __device__ __forceinline__ void store(const TcArgs &args, T *C, float (&d)[TN / 2], unsigned char *staging,
                                        int m0, int n0, int cw, int M, int N, unsigned char *lent = nullptr) {
    if constexpr (EPI_TMA) {  // an EPI_TMA=0 build has no staging boxes, so not even dead code may address them
      if (args.c_tma) {
        if (m0 + cw * 64 < M)
          store_acc_tma<TN, T, kLent>(args, d, staging + staging_offset(cw), m0 + cw * 64, n0, M, N, cw, boxes,
                                        lent);
        return;
      }
    }
    if (m0 < M) store_acc<TN>(C, d, m0 + cw * 64, n0, M, N, args);
  }
  // EPI_DEFER: the tile's C (origin m0 < 0: none) stored but for the boxes `held` keeps, to be stored under the next
  // tile's first k-tiles (store_held_box); where TMA cannot address C, stored now from registers. Packed either way:
  // a path that left the words alone would keep an earlier tile's live across the mainloop, where they spill. The
  // held words are C before the epilogue (EPI=1), which store_held_box's staged pass applies.
  template <int TN, typename T, typename H>
  __device__ __forceinline__ void hold(const TcArgs &args, T *C, H &held, float (&d)[TN / 2],
                                       unsigned char *staging, int m0, int n0, int cw, int M, int N) {
    static_assert(!EPI_DEFER || (EPI_TMA && sizeof(T) == 2), "held boxes are 16-bit C's, stored by TMA");
    held.hold(d, args.c_tma ? m0 : -1, n0);
    if (m0 < 0) return;
    if (!args.c_tma) {
      if (m0 < M) store_acc<TN>(C, d, m0 + cw * 64, n0, M, N, args);
    } else if constexpr (EPI_TMA && H::FIRST > 0) {
      if (m0 + cw * 64 < M)
        store_acc_tma<TN, T, false, 0, H::FIRST>(args, d, staging + staging_offset(cw), m0 + cw * 64, n0, M, N, cw,
                                                boxes);
    }
  }
  // held box I (0 .. H::COUNT - 1, box H::FIRST + I of its tile) through the staging boxes and TMA, where one is held
  template <int TN, int I, typename H>
  __device__ __forceinline__ void store_held_box(const TcArgs &args, const H &held, unsigned char *staging, int cw,
                                                 int M, int N) {
    if constexpr (EPI_TMA && sizeof(OutT) == 2) {
      if (held.m0 >= 0 && held.m0 + cw * 64 < M)
        store_acc_tma<TN, unsigned short, false, H::FIRST + I, H::FIRST + I + 1>(
            args, held, staging + staging_offset(cw), held.m0 + cw * 64, held.n0, M, N, cw, boxes);
    }
  }
  // held box i, for an i the caller's unrolled loop makes a constant (each box's words are registers only where
  // their index is known at compile time); none for i outside 0 .. H::COUNT - 1
  template <int TN, int I = 0, typename H>
  __device__ __forceinline__ void store_held_box(int i, const TcArgs &args, const H &held, unsigned char *staging,
                                                 int cw, int M, int N) {
    if constexpr (I < H::COUNT) {
      if (i == I) store_held_box<TN, I>(args, held, staging, cw, M, N);
      else store_held_box<TN, I + 1>(i, args, held, staging, cw, M, N);
    }
  }
  // EPI_ASYNC: the warpgroup's walk is over, which its producer warp reads at the next staging box's turn
  __device__ __forceinline__ void finish(unsigned char *staging, int cw) {
#if EPI_ASYNC
    u32 tid;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
    BoxSync *bs = box_sync<BM / 64>(staging, cw) + boxes % EPI_BOXES;
    // as for a box: no arrival counts towards a phase of `staged` before the producer warp has passed the last one
    if (boxes >= EPI_BOXES) mbar_wait(&bs->freed, (boxes / EPI_BOXES - 1) & 1);
    if (tid % 128 == 0) bs->row0 = -1;
    mbar_arrive(&bs->staged);
#endif
  }
  // every box `held` holds, and nothing held after them
  template <int TN, typename H>
  __device__ __forceinline__ void store_held(const TcArgs &args, H &held, unsigned char *staging, int cw, int M,
                                             int N) {
#pragma unroll
    for (int i = 0; i < H::COUNT; ++i) store_held_box<TN>(i, args, held, staging, cw, M, N);
    held.m0 = -1;
  }
};
