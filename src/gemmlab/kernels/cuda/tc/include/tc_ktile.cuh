// One k-tile of the levels that read both operands from shared memory descriptors (tc2..tc4, tc8): the TMA copies
// that fill a ring stage, and a consumer warpgroup's wgmma over it.
#pragma once
#include "tc_layout.cuh"
#include "tc_ptx.cuh"
#include "tc_wgmma.cuh"

// The wgmma instruction of this build's operand type for an m64nN tile.
template <int N>
__device__ __forceinline__ void wgmma_tile(float (&d)[N / 2], u64 da, u64 db, int scale_d) {
#if TC_FP8
  if constexpr (N == 64) wgmma_fp8_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_fp8_n128(d, da, db, scale_d);
  else if constexpr (N == 144) wgmma_fp8_n144(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_fp8_n192(d, da, db, scale_d);
  else if constexpr (N == 224) wgmma_fp8_n224(d, da, db, scale_d);
  else wgmma_fp8_n256(d, da, db, scale_d);
#elif TC_BF16
  if constexpr (N == 64) wgmma_bf16_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_bf16_n128(d, da, db, scale_d);
  else if constexpr (N == 144) wgmma_bf16_n144(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_bf16_n192(d, da, db, scale_d);
  else if constexpr (N == 224) wgmma_bf16_n224(d, da, db, scale_d);
  else wgmma_bf16_n256(d, da, db, scale_d);
#else
  if constexpr (N == 64) wgmma_tf32_n64(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma_tf32_n128(d, da, db, scale_d);
  else if constexpr (N == 192) wgmma_tf32_n192(d, da, db, scale_d);
  else wgmma_tf32_n256(d, da, db, scale_d);
#endif
}

// One k-tile of wgmma for a warpgroup's 64 rows: KSTEPS instructions of k = WGMMA_K. Inside the 128-byte swizzle
// atom a K step is a plain start-address offset (32 bytes for every type on K-major tiles; 16 rows of 128 bytes
// on the bf16 N-major B tile).
template <int N>
__device__ __forceinline__ void wgmma_ktile(float (&d)[N / 2], u32 a_tile, u32 b_tile, int accumulate) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256 || ((TC_BF16 || TC_FP8) && (N == 144 || N == 224)),
                "the wgmma shapes used here are n64, n128, n192, n256, and n144 and n224 for 16-bit and fp8 types");
#if !B_KMAJOR
  static_assert(N % 64 == 0, "an N-major B tile is whole 64-column swizzle atoms wide");
#endif
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

// Issue the TMA copies of one k-tile (A: one A_ROWS x BK box; B: BN/B_BOX_ROWS boxes) into a stage and count them on
// `bar`, with `extra_bytes` more that the caller copies on the same barrier (tc8's scales). With a cluster of NCTA
// CTAs along M sharing the B tile, CTA `rank` loads every NCTA-th B box and multicasts it.
// BATCHED=1: the maps are 3-D, and the box is of matrix ba of A and bb of B.
#ifndef BATCHED
#define BATCHED 0
#endif
template <int NCTA>
__device__ __forceinline__ void load_stage(unsigned char *stage, const TmaMap *mapA, const TmaMap *mapB, u64 *bar,
                                           int m0, int n0, int k0, u32 rank, u32 extra_bytes = 0, int ba = 0,
                                           int bb = 0) {
  static_assert(NCTA == 1 || NCTA == 2, "clusters of 1 or 2 CTAs along M (CM)");
  static_assert(BN / B_BOX_ROWS >= NCTA, "each CTA of a cluster loads at least one of the tile's B boxes");
  static_assert(A_ROWS % 8 == 0 && 8 <= A_ROWS && A_ROWS <= BM, "A_ROWS: a multiple of 8 rows, at most the tile's");
#if !B_KMAJOR
  static_assert(BN % 64 == 0, "an N-major B tile is whole 64-column boxes wide");
#endif
  mbar_expect_tx(bar, STAGE_TX + extra_bytes);
#if BATCHED
  tma_load_3d(stage, mapA, bar, k0, m0, ba);
#else
  tma_load_2d(stage, mapA, bar, k0, m0);
#endif
  unsigned char *b = stage + A_TILE_BYTES;
#pragma unroll
  for (int j = 0; j < BN / B_BOX_ROWS; ++j) {
    if (NCTA > 1 && (u32)(j % NCTA) != rank) continue;
#if !B_KMAJOR
    const int c0 = n0 + 64 * j, c1 = k0;
#else
    const int c0 = k0, c1 = n0 + B_BOX_ROWS * j;
#endif
#if BATCHED
    if (NCTA > 1)
      tma_load_3d_multicast(b + j * B_BOX_BYTES, mapB, bar, c0, c1, bb, (unsigned short)((1u << NCTA) - 1));
    else
      tma_load_3d(b + j * B_BOX_BYTES, mapB, bar, c0, c1, bb);
#else
    if (NCTA > 1)
      tma_load_2d_multicast(b + j * B_BOX_BYTES, mapB, bar, c0, c1, (unsigned short)((1u << NCTA) - 1));
    else
      tma_load_2d(b + j * B_BOX_BYTES, mapB, bar, c0, c1);
#endif
  }
}
