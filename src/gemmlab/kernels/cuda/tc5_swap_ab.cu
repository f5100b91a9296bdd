// tc5 (TF32 only): tc4's persistent producer/consumer kernel computing the transposed product, Cᵀ = Bᵀ·Aᵀ, so
// that no operand needs a transpose pre-pass. tf32 wgmma reads shared-memory operands K-major only; A (M×K) is
// K-major as given and becomes wgmma's B operand (its N = this tile's BM rows of C). B (K×N, N-major as given)
// becomes wgmma's A operand, which may come from registers in any layout we can load: each consumer thread
// reads its m64k8 fragment from the TMA tile with ld.shared.v2. The accumulator then holds a BN×BM block of Cᵀ,
// stored to row-major C straight from registers.
//
// Warpgroup cw owns columns [64cw, 64cw + 64) of the tile (the 64 rows of its wgmma). Which column each
// fragment row stands for is ours to choose, and is chosen so that
//   - fragment rows g and g+8 of a warp (lane/4 = g) are adjacent columns c, c+1: one 8-byte load gives a
//     thread both values of a K row, and in the epilogue each thread stores C[m][c..c+1] as a float2;
//   - lanes 0-15 and lanes 16-31 each read 16 distinct 8-byte bank pairs of the 128B-swizzled B box
//     (conflict-free ld.shared.v2), see frag_col();
//   - the 8 g of a warp cover two whole 32-byte sectors of a C row, so the stores are sector-complete.
// With CN=2, clusters of 2 CTAs side by side along N need the same A tile: CTA `rank` loads half of its rows
// and multicasts them, so A crosses L2->SM once per cluster (measured within noise of CN=1, the default).
// STREAM_K=1 (tc6, clusters off): the walk ends in a stream-K tail (SkWalk, sk_fixup in tc_common.cuh) and the
// kernel takes two more arguments, the partials' workspace and one flag per tile.
#define TC_BF16 0
#include "tc_common.cuh"

#define CW (BN / 64)                     // consumer warpgroups, 64 columns of C each
#define B_BOX_COLS 32                    // B moves in boxes of 32 N (one 128-byte swizzle row) x BK K rows
#define B_BOX_TILE_BYTES (B_BOX_COLS * 4 * BK)
#define A_BOX_ROWS (BM / CN)             // each CTA of a cluster loads (and multicasts) this many rows of A

template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const u32 (&a)[4], u64 db, int scale_d) {
  if constexpr (N == 64) wgmma_tf32_rs_n64(d, a, db, scale_d);
  else if constexpr (N == 128) wgmma_tf32_rs_n128(d, a, db, scale_d);
  else wgmma_tf32_rs_n256(d, a, db, scale_d);
}

// The tile column (0..BN) of fragment rows g (and g+8 -> column + 1) for warp w of consumer warpgroup cw. Within
// a 32-column B box a warp takes 8-column blocks 0 and 2 (w even) or 1 and 3 (w odd); g picks the pair
// 2(g%2) + 4(g/4) inside a block and the block by (g/2)%2. In the swizzled box, 16-byte chunk (c/4) of K row k
// sits at chunk (c/4) ^ (k%8), and a warp's K row is t = lane%4 (or t+4): for lanes 0-15 (g = 0..3) the pairs
// c = 0, 2, 16, 18 (+8 for odd w) have distinct (chunk/4, pair within chunk), so XOR with t in 0..3 spreads
// them over all 16 bank pairs; lanes 16-31 likewise with c = 4, 6, 20, 22.
__device__ __forceinline__ int frag_col(int cw, int w, int g) {
  return 64 * cw + 32 * (w / 2) + 8 * (w % 2) + 2 * (g % 2) + 16 * ((g / 2) % 2) + 4 * (g / 4);
}

// Byte offset, inside a stage, of B element (K row k, tile column c): box c/32, 128-byte swizzle.
__device__ __forceinline__ u32 b_offset(int k, int c) {
  const int cc = c % B_BOX_COLS;
  return A_TILE_BYTES + (c / B_BOX_COLS) * B_BOX_TILE_BYTES +
         k * 128 + ((((cc >> 2) ^ (k & 7)) << 4) | ((cc & 3) * 4));
}

// One k-tile's TMA copies: A (BM rows; with a cluster, this CTA's A_BOX_ROWS of them, multicast) and BN/32 B
// boxes, counted on `bar` (STAGE_BYTES in all: with CN=2 the peer's multicast half lands here too).
__device__ __forceinline__ void load_stage_swap(unsigned char *stage, const TmaMap *mapA, const TmaMap *mapB,
                                                u64 *bar, int m0, int n0, int k0, u32 rank) {
  mbar_expect_tx(bar, STAGE_BYTES);
  if (CN > 1)
    tma_load_2d_multicast(stage + rank * A_BOX_ROWS * 128, mapA, bar, k0, m0 + rank * A_BOX_ROWS,
                          (unsigned short)((1u << CN) - 1));
  else
    tma_load_2d(stage, mapA, bar, k0, m0);
#pragma unroll
  for (int j = 0; j < BN / B_BOX_COLS; ++j)
    tma_load_2d(stage + A_TILE_BYTES + j * B_BOX_TILE_BYTES, mapB, bar, n0 + B_BOX_COLS * j, k0);
}

// Store a warpgroup's 64 (C columns from n_wg) x BM (C rows from m0) block of Cᵀ: d[4j + v] and d[4j + 2 + v]
// are C[m][col] and C[m][col + 1] for m = m0 + 8j + 2t + v (the m64nN fragment's columns are C's rows here).
// Whole blocks with an even N store float2; edges check every element.
__device__ __forceinline__ void store_acc_t(float *C, const float (&d)[BM / 2], int m0, int n_wg, int col, int t,
                                            int M, int N) {
  const int r = m0 + 2 * t;
  if (m0 + BM <= M && n_wg + 64 <= N && (N % 2) == 0) {
    float *p = C + (long long)r * N + col;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int v = 0; v < 2; ++v)
        *reinterpret_cast<float2 *>(p + (8LL * j + v) * N) = make_float2(d[4 * j + v], d[4 * j + 2 + v]);
  } else {
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int m = r + 8 * j + v;
        if (m < M) {
          if (col < N) C[(long long)m * N + col] = d[4 * j + v];
          if (col + 1 < N) C[(long long)m * N + col + 1] = d[4 * j + 2 + v];
        }
      }
  }
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc5_swap_ab(const __grid_constant__ TcArgs args) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = aligned_smem(smem_raw);
  u64 *full = reinterpret_cast<u64 *>(smem + STAGES * STAGE_BYTES);
  u64 *empty = full + STAGES;
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  float *C = args.C;
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const PersistentGrid<CN, BM, CN * BN> grid(M, N, K);
  const u32 rank = grid.rank;

  // every consumer warp of every CTA that reads the multicast A arrives on `empty`
  ring_init<STAGES, CN>(full, empty, CW * 4 * CN, mapA, mapB);

  if (wg == 0) {
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0)
      produce_ring<STAGES>(
          smem, full, empty, grid.cluster, grid.clusters, grid.tiles, grid.KT,
          [&](int tile) {
            int tm, tn;
            schedule(tile, grid.tiles_m, grid.tiles_n, GROUP_M, tm, tn);
            return make_int2(tm * BM, (tn * CN + rank) * BN);
          },
          [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
            load_stage_swap(stage, mapA, mapB, bar, m0, n0, k0, rank);
          });
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1, w = (tid / 32) % 4, g = (tid % 32) / 4, t = tid % 4;
    const int col = frag_col(cw, w, g);
    // K rows t and t+4 of each k8 step: the swizzle term (k & 7) is the same for every step, so a step is a
    // plain 8-row (1024-byte) offset from these two.
    const u32 lo = b_offset(t, col), hi = b_offset(t + 4, col);
    u32 it = 0;  // ring position (unsigned: % and / by STAGES are a mask and a shift)
    float d[BM / 2];
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next()) {
      int tm, tn;
      schedule(u.tile, grid.tiles_m, grid.tiles_n, GROUP_M, tm, tn);
      const int m0 = tm * BM, n0 = (tn * CN + rank) * BN;
      for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
        const u32 s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);  // while the previous k-tile's wgmmas run
        // A wgmma reads its register operand until it completes (PTX: the fragment must not change before a
        // wait_group covers it), and the compiler would put the next fragments in the same registers: so retire
        // the previous k-tile before loading. The other consumer warpgroup's queued wgmmas keep the tensor
        // cores busy through this warpgroup's few-dozen-cycle gap.
        wgmma_wait<0>();
        if (kt > u.kb && tid % 32 == 0) release_slot<CN>(&empty[(it - 1) % STAGES]);
        const unsigned char *stage = smem + s * STAGE_BYTES;
        u32 a[KSTEPS][4];
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
          const uint2 x = *reinterpret_cast<const uint2 *>(stage + lo + kk * 1024);
          const uint2 y = *reinterpret_cast<const uint2 *>(stage + hi + kk * 1024);
          a[kk][0] = x.x;  // (row g, k t)
          a[kk][1] = x.y;  // (row g + 8, k t)
          a[kk][2] = y.x;  // (row g, k t + 4)
          a[kk][3] = y.y;  // (row g + 8, k t + 4)
        }
        const u32 at = smem_u32(stage);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk)
          wgmma_rs<BM>(d, a[kk], wgmma_desc(at + 32 * kk, 16, 1024), (kt > u.kb || kk > 0) ? 1 : 0);
        wgmma_commit();
      }
      wgmma_wait<0>();
      if (tid % 32 == 0) release_slot<CN>(&empty[(it - 1) % STAGES]);  // the tile's last slot
      fence_acc(d);
#if STREAM_K
      if (!sk_fixup<BM / 2, CW * 128>(u, d, args.sk_ws, args.sk_flags, tid - 128)) continue;
#endif
      if (n0 < N) store_acc_t(C, d, m0, n0 + 64 * cw, n0 + col, t, M, N);
    }
  }
  __syncwarp();
  if (CN > 1) cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers or multicast into it
}
