// The swapped product Cᵀ = Bᵀ·Aᵀ of tc5 and tc7, from FP32 A (M×K, K-major) and B (K×N, N-major) as given.
// tf32 wgmma reads shared-memory operands K-major only: A becomes wgmma's B operand (its N = the tile's BM rows
// of C), and B becomes wgmma's A operand, which may come from registers in any layout we can load: each consumer
// thread reads its m64k8 fragment from the TMA tile with ld.shared.v2. The accumulator then holds a BN×BM block
// of Cᵀ, stored to row-major C straight from registers.
//
// Warpgroup cw owns columns [64cw, 64cw + 64) of the tile (the 64 rows of its wgmma). Which column each
// fragment row stands for is ours to choose, and is chosen so that
//   - fragment rows g and g+8 of a warp (lane/4 = g) are adjacent columns c, c+1: one 8-byte load gives a
//     thread both values of a K row, and in the epilogue each thread stores C[m][c..c+1] as a float2;
//   - lanes 0-15 and lanes 16-31 each read 16 distinct 8-byte bank pairs of the 128B-swizzled B box
//     (conflict-free ld.shared.v2), see frag_col();
//   - the 8 g of a warp cover two whole 32-byte sectors of a C row, so the stores are sector-complete.
// With CN=2, clusters of 2 CTAs side by side along N need the same A tile: CTA `rank` loads half of its rows
// and multicasts them, so A crosses L2->SM once per cluster.
//
// SWAP_B_KMAJOR=1: B is handed over as the N×K matrix Bᵀ (x @ w.t()) and read in place: one TMA box of BN rows of
// Bᵀ (128 bytes of K each, 128B-swizzled) per k-tile, the layout wgmma's own A operand has. A fragment row is now
// a 128-byte row of the box, so a thread's values (row g, k t), (row g+8, k t), (g, t+4), (g+8, t+4) are four
// 4-byte loads: fragment rows g and g+8 stand for columns c and c + 8, c = 16w + g, so the 8 g of a warp sit on 8
// rows whose swizzle (row % 8 = g) puts each load of the warp on 32 distinct banks; C's stores pair c with c + 8
// (FRAG_PAIR), each warp's 8 g still covering whole 32-byte sectors of a C row.
#pragma once
#include "tc_layout.cuh"
#include "tc_out.cuh"
#include "tc_ptx.cuh"
#include "tc_wgmma.cuh"

#ifndef SWAP_B_KMAJOR
#define SWAP_B_KMAJOR 0
#endif
#ifndef C_TRANSPOSED
#define C_TRANSPOSED 0
#endif
#if C_TRANSPOSED && !SWAP_B_KMAJOR
#error "C_TRANSPOSED: the caller's A is the kernel's B, which it reads as the transpose of a K-major matrix (SWAP_B_KMAJOR)"
#endif
#define CW (BN / 64)                     // consumer warpgroups, 64 columns of C each
#define FRAG_PAIR (SWAP_B_KMAJOR ? 8 : 1)  // fragment row g + 8 is tile column col + FRAG_PAIR
#define B_BOX_COLS 32                    // B moves in boxes of 32 N (one 128-byte swizzle row) x BK K rows
#define B_BOX_TILE_BYTES (B_BOX_COLS * 4 * BK)
#define A_BOX_ROWS (BM / CN)             // each CTA of a cluster loads (and multicasts) this many rows of A

// The tile column (0..BN) of fragment rows g (and g+8 -> column + 1) for warp w of consumer warpgroup cw. Within
// a 32-column B box a warp takes 8-column blocks 0 and 2 (w even) or 1 and 3 (w odd); g picks the pair
// 2(g%2) + 4(g/4) inside a block and the block by (g/2)%2. In the swizzled box, 16-byte chunk (c/4) of K row k
// sits at chunk (c/4) ^ (k%8), and a warp's K row is t = lane%4 (or t+4): for lanes 0-15 (g = 0..3) the pairs
// c = 0, 2, 16, 18 (+8 for odd w) have distinct (chunk/4, pair within chunk), so XOR with t in 0..3 spreads
// them over all 16 bank pairs; lanes 16-31 likewise with c = 4, 6, 20, 22.
// begin fragment arithmetic (plain C++: the tests run it on the host against the Python model of the map)
// SWAP_B_KMAJOR=1: column 16w + g of the warpgroup's 64 (and g + 8 the next 8 over).
__host__ __device__ __forceinline__ int frag_col(int cw, int w, int g) {
#if SWAP_B_KMAJOR
  return 64 * cw + 16 * w + g;
#else
  return 64 * cw + 32 * (w / 2) + 8 * (w % 2) + 2 * (g % 2) + 16 * ((g / 2) % 2) + 4 * (g / 4);
#endif
}

// Byte offset, inside a stage, of B element (K row k, tile column c): box c/32, 128-byte swizzle. SWAP_B_KMAJOR=1:
// row c of the one BN-row box of Bᵀ, whose 16-byte chunk k/4 sits at chunk (k/4) ^ (c % 8).
__host__ __device__ __forceinline__ u32 b_offset(int k, int c) {
#if SWAP_B_KMAJOR
  return A_TILE_BYTES + c * 128 + ((((k >> 2) ^ (c & 7)) << 4) | ((k & 3) * 4));
#else
  const int cc = c % B_BOX_COLS;
  return A_TILE_BYTES + (c / B_BOX_COLS) * B_BOX_TILE_BYTES +
         k * 128 + ((((cc >> 2) ^ (k & 7)) << 4) | ((cc & 3) * 4));
#endif
}

// Consumer thread `tid` of warpgroup wg (= tid / 128, as the kernel has it) in the swapped product (tc5, tc7): its
// consumer warpgroup cw, warp w and lane group g, its K row t of a k8 step, its fragment column col of the tile,
// and the offsets of its B fragments (load_b_frags).
struct SwapThread {
  int cw, w, g, t, col;
  u32 lo, hi;
  __host__ __device__ __forceinline__ SwapThread(int tid, int wg)
      : cw(wg - 1),
        w((tid / 32) % 4),
        g((tid % 32) / 4),
        t(tid % 4),
        col(frag_col(cw, w, g)),
        lo(b_offset(t, col)),
        hi(b_offset(t + 4, col)) {}
};

// SWAP_B_KMAJOR=1: the offset of (k row 8kk + t + 4h, column col + FRAG_PAIR r) from `lo` = b_offset(t, col). The
// swizzle XORs chunk 2kk + h with col % 8, and lo's chunk bits hold col % 8 alone, so the chunk is an XOR on lo;
// column col + 8 is the row 1024 bytes on, with the same swizzle.
__host__ __device__ __forceinline__ u32 kmajor_frag_offset(u32 lo, int kk, int h, int r) {
  return (lo ^ ((2 * kk + h) << 4)) + 1024 * r;
}
// end fragment arithmetic

// A consumer thread's m64k8 fragment of k8 step kk of a k-tile, from the stage: `lo` and `hi` are b_offset(t, col)
// and b_offset(t + 4, col), K rows t and t+4 of the first k8 step; the swizzle term (k & 7) is the same for every
// step, so a step is a plain 8-row (1024-byte) offset from these two.
// SWAP_B_KMAJOR=1: four 4-byte loads (kmajor_frag_offset), `hi` unused.
__device__ __forceinline__ void load_b_frag(const unsigned char *stage, u32 lo, u32 hi, int kk, u32 (&a)[4]) {
#if SWAP_B_KMAJOR
#pragma unroll
  for (int i = 0; i < 4; ++i)  // (row g, k t), (row g + 8, k t), (row g, k t + 4), (row g + 8, k t + 4)
    a[i] = *reinterpret_cast<const u32 *>(stage + kmajor_frag_offset(lo, kk, i / 2, i % 2));
#else
  const uint2 x = *reinterpret_cast<const uint2 *>(stage + lo + kk * 1024);
  const uint2 y = *reinterpret_cast<const uint2 *>(stage + hi + kk * 1024);
  a[0] = x.x;  // (row g, k t)
  a[1] = x.y;  // (row g + 8, k t)
  a[2] = y.x;  // (row g, k t + 4)
  a[3] = y.y;  // (row g + 8, k t + 4)
#endif
}

// All KSTEPS fragments of a k-tile.
__device__ __forceinline__ void load_b_frags(const unsigned char *stage, u32 lo, u32 hi, u32 (&a)[KSTEPS][4]) {
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) load_b_frag(stage, lo, hi, kk, a[kk]);
}

// One k-tile's TMA copies: A (BM rows; with a cluster, this CTA's A_BOX_ROWS of them, multicast) and BN/32 B
// boxes (SWAP_B_KMAJOR=1: one box of BN rows of Bᵀ), counted on `bar` (STAGE_BYTES in all: with CN=2 the peer's
// multicast half lands here too).
__device__ __forceinline__ void load_stage_swap(unsigned char *stage, const TmaMap *mapA, const TmaMap *mapB,
                                                u64 *bar, int m0, int n0, int k0, u32 rank) {
  static_assert(CN == 1 || CN == 2, "clusters of 1 or 2 CTAs along N (CN)");
  mbar_expect_tx(bar, STAGE_BYTES);
  if (CN > 1)
    tma_load_2d_multicast(stage + rank * A_BOX_ROWS * 128, mapA, bar, k0, m0 + rank * A_BOX_ROWS,
                          (unsigned short)((1u << CN) - 1));
  else
    tma_load_2d(stage, mapA, bar, k0, m0);
#if SWAP_B_KMAJOR
  tma_load_2d(stage + A_TILE_BYTES, mapB, bar, k0, n0);
#else
#pragma unroll
  for (int j = 0; j < BN / B_BOX_COLS; ++j)
    tma_load_2d(stage + A_TILE_BYTES + j * B_BOX_TILE_BYTES, mapB, bar, n0 + B_BOX_COLS * j, k0);
#endif
}

// begin store arithmetic (plain C++ but for store_pair's float2: the tests run it on the host)
// Store a warpgroup's 64 (C columns from n_wg) x BM (C rows from m0) block of Cᵀ: d[4j + v] and d[4j + 2 + v]
// are C[m][col] and C[m][col + FRAG_PAIR] for m = m0 + 8j + 2t + v (the m64nN fragment's columns are C's rows
// here). Whole blocks with an even N and an 8-byte aligned C store float2 (FRAG_PAIR = 1; two floats 8 apart
// otherwise); edges check every element.
// C_TRANSPOSED=1 (the host's A_IN_REGS): the host hands the operands over exchanged (A's map over the caller's Bᵀ,
// B's over the caller's A, M and N exchanged), so that the caller's A reaches the tensor cores through registers and
// its B through shared memory (and TF32_ROUND=3's pre-pass). C holds the transpose of the kernel's M×N product,
// element (m, c) at C[c·M + m]: v = 0 and 1 are two consecutive floats of the caller's row col (or col + FRAG_PAIR),
// one float2 store where M is even and C 8-byte aligned, and a warp's store covers 8 such rows (its g) by 32 bytes
// (its t): whole 32-byte sectors where M is a multiple of 8 and C 32-byte aligned.
__device__ __forceinline__ void store_acc_t(float *C, const float (&d)[BM / 2], int m0, int n_wg, int col, int t,
                                            int M, int N) {
  const int r = m0 + 2 * t;
  const bool whole = m0 + BM <= M && n_wg + 64 <= N, pairs = pairs_aligned(C);
  if (C_TRANSPOSED && whole && pairs && (M % 2) == 0) {
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)  // columns col and col + FRAG_PAIR
        store_pair(C + (long long)(col + FRAG_PAIR * h) * M + r + 8 * j, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
  } else if (!C_TRANSPOSED && FRAG_PAIR > 1 && whole) {
    float *p = C + (long long)r * N + col;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        p[(8LL * j + v) * N] = d[4 * j + v];
        p[(8LL * j + v) * N + FRAG_PAIR] = d[4 * j + 2 + v];
      }
  } else if (!C_TRANSPOSED && FRAG_PAIR == 1 && whole && pairs && (N % 2) == 0) {
    float *p = C + (long long)r * N + col;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int v = 0; v < 2; ++v)
        store_pair(p + (8LL * j + v) * N, d[4 * j + v], d[4 * j + 2 + v]);
  } else {
    const auto at = [&](int m, int c) { return C_TRANSPOSED ? (long long)c * M + m : (long long)m * N + c; };
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int m = r + 8 * j + v;
        if (m < M) {
          if (col < N) C[at(m, col)] = d[4 * j + v];
          if (col + FRAG_PAIR < N) C[at(m, col + FRAG_PAIR)] = d[4 * j + 2 + v];
        }
      }
  }
}
// end store arithmetic
