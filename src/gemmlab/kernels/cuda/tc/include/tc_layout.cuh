// The shared-memory layout of the wgmma levels' operands: element types, the k-tile's shape, the bytes of a ring
// stage and of the epilogue's staging boxes, and the wgmma descriptors that address them. Plain C++ (the tests
// compile this header with g++ and check it against the host's model in tc_common.py).
#pragma once

// ---- operand types --------------------------------------------------------------------------------------------
// TC_BF16=1: bf16 A (M×K, K-major) and B (K×N, N-major, read through wgmma's transpose bit; K-major with B_KMAJOR);
// with TC_F16=1 the same for f16 operands (tc_wgmma.cuh's TC16_TYPE), whose layout and k-tile are bf16's.
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
// A moves in one box of A_ROWS rows (by default the tile's BM). Fewer (a tc10 variant) where the problem has fewer
// rows than a tile: the box then ends near M, and TMA fills only its own rows past M with zeros, not the tile's. The
// tile's rows past A_ROWS keep whatever the stage held; wgmma's row r of C reads only row r of A, so they reach
// only rows of C past A_ROWS, and the host runs the variant only where those lie past M (is_valid): never stored.
#ifndef A_ROWS
#define A_ROWS BM
#endif
#define A_BOX_BYTES (A_ROWS * 128)
// B moves in boxes of B_BOX_ROWS N: 64 (N) x BK rows N-major; K-major, B_BOX_ROWS rows x BK (K): 64, or for a tile
// width off the 64-column atom (K-major B only: an N-major tile is whole atoms wide) 32 or 16, so the boxes tile BN
#if !defined(BN) || BN % 64 == 0
#define B_BOX_ROWS 64
#elif BN % 32 == 0
#define B_BOX_ROWS 32
#else
#define B_BOX_ROWS 16
#endif
#define B_BOX_BYTES (B_BOX_ROWS * 128)
#define B_TILE_BYTES (BN * 128)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#define STAGE_TX (A_BOX_BYTES + B_TILE_BYTES)  // the bytes a stage's copies land
#ifndef B_MN_LBO
#define B_MN_LBO (BK * 128)  // N-major B: from one 64-column box to the next
#endif
#ifndef B_MN_SBO
#define B_MN_SBO 1024  // N-major B: from one group of 8 K rows to the next
#endif

// ---- wgmma descriptors -----------------------------------------------------------------------------------------
// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride byte offsets in 16-byte
// units (bits 0-13, 16-29, 32-45), swizzle mode 1 = 128B in bits 62-63. Tiles are 1024-byte aligned, so the
// base-offset field (bits 49-51) stays 0.
//   K-major tile (rows of 128 bytes along K): LBO unused (1), SBO = 1024 (next group of 8 rows).
//   MN-major tile (64-element chunks along MN, each BK rows of 128 bytes): LBO = the chunk stride (next 64 MN
//   elements), SBO = 1024 (next 8 K rows).
__host__ __device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}

// A descriptor split in two words, so the mainloop does 32-bit adds: the low word holds the start address >> 4
// (bits 0-13; the address within the CTA's 18-bit shared window: in a cluster launch the bits above carry the
// CTA's rank) and LBO >> 4 (bits 16-29); the high word SBO >> 4 and the 128-byte swizzle mode (bit 62 of the
// descriptor). Offsets inside a tile are multiples of 16 bytes that stay in the window, so moving the start
// address by `off` bytes adds off >> 4 to the low word without a carry out of bit 13:
// desc_of(desc_lo(addr, lbo) + off / 16, sbo) == wgmma_desc(addr + off, lbo, sbo).
__host__ __device__ __forceinline__ unsigned desc_lo(unsigned addr, unsigned lbo) {
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16);
}
__host__ __device__ __forceinline__ unsigned long long desc_of(unsigned lo, unsigned sbo) {
  return ((unsigned long long)((sbo >> 4) | (1u << 30)) << 32) | lo;
}

// ---- the epilogue's staging boxes (EPI_TMA=1, tc4 and tc8) -------------------------------------------------------
// C leaves through boxes of 64 rows of 128 bytes (32 FP32 or 64 BF16 columns, one 128-byte swizzle row each),
// EPI_BOXES per consumer warpgroup (tc_epilogue.cuh's store_acc_tma): warpgroup cw's at staging_offset(cw). Two
// alternate; as many as a warpgroup's fragment has boxes (4 for tc4 FP8's 64x256 BF16) let a tile's stores drain
// under the next tile's mainloop.
#ifndef EPI_TMA
#define EPI_TMA 0
#endif
#ifndef EPI_BOXES
#define EPI_BOXES 2
#endif
#define C_BOX_BYTES (64 * 128)
// EPI_ASYNC=1 (tc_epilogue.cuh's BoxSync): after the staging boxes, each box's two mbarriers and its origin in C
#ifndef EPI_ASYNC
#define EPI_ASYNC 0
#endif
#define C_BOX_SYNC_BYTES 24
__host__ __device__ constexpr int staging_offset(int cw) { return cw * EPI_BOXES * C_BOX_BYTES; }
__host__ __device__ constexpr int staging_bytes(int consumers) {
  return EPI_TMA ? staging_offset(consumers) + (EPI_ASYNC ? consumers * EPI_BOXES * C_BOX_SYNC_BYTES : 0) : 0;
}

// ---- the dynamic shared memory of the warp-specialized levels ------------------------------------------------------
// From its 1024-byte aligned start (aligned_smem): the ring's kStages stages of STAGE_BYTES, the level's own
// kExtraBytes (the epilogue's staging boxes, tc7's small parts of A), then kStages mbarriers each of full, empty
// and, where producer warps 1-3 pass over the landed k-tiles (kReady), ready. A launch asks for `launch_bytes`:
// 1024 more, what the alignment may cost.
template <int kStages, int kExtraBytes, bool kReady>
struct SmemLayout {
  enum : int {
    extra = kStages * STAGE_BYTES,
    full = extra + kExtraBytes,
    empty = full + 8 * kStages,
    ready = empty + 8 * kStages,
    end = ready + (kReady ? 8 * kStages : 0),
    launch_bytes = end + 1024,
  };
};
