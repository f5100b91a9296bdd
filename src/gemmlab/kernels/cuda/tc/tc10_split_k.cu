// tc10: split-K with a deterministic parallel reduction, for problems of few output tiles and long K.
// The grid is tiles x S: CTA (tile, s) runs tc3's producer/consumer warpgroups over split s of K, k-tiles
// [split_begin(s), split_begin(s + 1)) of the tile, so S CTAs share a tile's K and the whole grid is busy where the
// tiles alone would leave most SMs idle. With S > 1 each CTA writes its FP32 partial tile to the workspace
// (args.sk_ws: tile-major, S partials a tile, in the stream-K fixup's fragment order) and takes a ticket on its
// tile (args.sk_flags, one u32 a tile): the CTA that draws the last ticket, whichever split it ran, adds the S
// partials in the fixed order 0, 1, ..., S-1 starting from zero (split_reduce), so C has the same bits whatever
// order the splits arrive in, and stores the tile through the epilogue every level uses (TileStore; EPI_TMA=1:
// through each consumer warpgroup's staging boxes after the ring, the fused epilogue applied there as tc4 applies
// it, and TMA stores, where C's rows are 16-byte aligned; else from registers). It also sets
// the ticket back to zero, so the next launch starts from zero without a memset launch. No CTA waits for another:
// the grid need not be resident at once, and a tile's reduction runs beside the other tiles' mainloops.
// SK_CLUSTER=1 (a variant; the host launches a tile's S CTAs, S <= 8, as one cluster): no workspace and no ticket;
// the S CTAs add the partials across their shared memory, each a share of the tile, in the same order
// (cluster_reduce). On the H200 fewer clusters of 4 or 8 such CTAs are resident at once than the grids split K
// into, so those grids run in two waves: measured slower, and off (docs/tensor_cores/tc10.md).
// SK_SPREAD=1 (a variant; the host launches it only where the whole grid is resident at once): the S CTAs of a tile
// share its reduction through the workspace instead of leaving it to the last (spread_reduce): each writes its
// partial and waits until all S are counted on the tile's ticket, adds its 1/S share of the tile over the S partials
// in split order from zero (the same bits) into partial 0, and counts again; the last to count stores C.
// TC_FP8=1: e4m3/e5m2 operands, both K-major, Fp8Args; the per-tensor scales multiply the summed tile (one
// rounding, as tc4's). BLOCK_SCALED=1 (fp8_block): each k-tile (128 of K, one scale block) runs from zero into
// `part` and is added, scaled by its rows' A scales and its tile's B scale, into the FP32 accumulator on the CUDA
// cores (tc8's promotion, with the scales loaded from global memory under the k-tile's wgmma); BN divides 128, so a
// tile takes one B scale a k-tile.
// TF32 (FP32 operands, TC_BF16=0 and TC_FP8=0): TF32_ROUND=0 truncates both operands (tc3's mainloop); TF32_ROUND=2
// rounds both to nearest, as cuBLAS does, without a pre-pass over either: A is wgmma's register operand, each
// consumer thread loading its m64k8 fragments from the landed K-major A tile (conflict-free 4-byte ld.shared, rows
// of the 128-byte swizzle) and rounding them there (tf32_rna_for_mma); B stays wgmma's shared-memory operand, which only a
// rewrite in shared memory can round: with ROUND_B_SMEM=1 (B handed over K-major, x @ w.t(): the plan's choice)
// the consumer threads themselves round the next k-tile's landed B tile in place (tc_round.cuh's tile_pass, an
// equal share each, no bound to check), fence it for the async proxy and meet at a named barrier before its wgmmas:
// the rounding runs under the current k-tile's wgmmas on all the consumers' warps (the producer's three idle warps,
// which did it before, could not issue its ALU work fast enough to keep up with the ring); with a row-major B the
// plan's transpose pre-pass writes Bᵀ rounded. A wgmma reads its register operand until a wait covers it, so a
// consumer retires its previous k-tile's wgmmas before it loads the next fragments (tc5 loads them a k8 step ahead
// under two groups in flight instead; here that measured slower: docs/tensor_cores/tc10.md).
#include "tc_epilogue.cuh"
#include "tc_ktile.cuh"
#include "tc_pipeline.cuh"
#include "tc_round.cuh"
#include "tc_stream_k.cuh"
#include "split_k.cuh"

#define CW (BM / 64)  // consumer warpgroups
#define CT (CW * 128)  // consumer threads
#ifndef BLOCK_SCALED
#define BLOCK_SCALED 0
#endif
#if BLOCK_SCALED && !(TC_FP8 && 128 % BN == 0)
#error "BLOCK_SCALED: fp8 operands, and a tile inside one 128-wide block of B's scales"
#endif
#ifndef ROUND_B_SMEM
#define ROUND_B_SMEM 0
#endif
#if (TF32_ROUND && (TC_BF16 || TC_FP8)) || (TF32_ROUND != 0 && TF32_ROUND != 2) || (ROUND_B_SMEM && TF32_ROUND != 2)
#error "TF32_ROUND: 0 or 2, on the TF32 build; ROUND_B_SMEM with TF32_ROUND=2"
#endif
#define B_PASS (TF32_ROUND == 2 && ROUND_B_SMEM)  // the consumers round each landed B tile in place
#ifndef SK_CLUSTER
#define SK_CLUSTER 0
#endif
#ifndef SK_SPREAD
#define SK_SPREAD 0
#endif
#if SK_SPREAD && SK_CLUSTER
#error "SK_SPREAD and SK_CLUSTER: two ways of adding the partials; one at most"
#endif
#if SK_CLUSTER && !defined(SK_CLUSTER_MAX)
#error "SK_CLUSTER=1: SK_CLUSTER_MAX, the most splits a cluster adds (the host's split_k.CLUSTER_MAX)"
#endif

#if TC_FP8
typedef Fp8Args KernelArgs;
#else
typedef TcArgs KernelArgs;
#endif

// begin fragment arithmetic (plain C++: the tests run it on the host against the Python model of the layouts)
// TF32_ROUND=2: thread t (0..127) of a consumer warpgroup holds, for k8 step kk of a k-tile, value i (0..3) of
// wgmma's m64k8 A fragment: row 16(t / 32) + (t % 32) / 4 (+ 8 for odd i) of the warpgroup's 64, K 8kk + t % 4
// (+ 4 for i >= 2). Its byte offset in those rows of the A tile (K-major, 128 bytes a row, 128-byte swizzle: the
// 16-byte chunk c of row r at chunk c ^ (r % 8)). The 8 rows a load of a warp reads have 8 different r % 8, so each
// of its 4-byte loads covers the 32 banks once.
__host__ __device__ __forceinline__ unsigned a_frag_offset(unsigned t, int kk, int i) {
  const unsigned row = 16 * (t / 32) + t % 32 / 4 + 8 * (i % 2), k = 8 * kk + t % 4 + 4 * (i / 2);
  return row * 128 + (((k / 4) ^ (row % 8)) << 4) + k % 4 * 4;
}
// end fragment arithmetic

// The reduction's loads in flight a consumer thread: 8 float4s of each of 2 partials (64 registers), of 4 at
// BN = 64 (a thread's whole share of each: 128 registers beside its 32 accumulators), of 1 at BN = 256 (32 beside
// its 128)
#define REDUCE_U (BN <= 64 ? 4 : BN <= 128 ? 2 : 1)
#define REDUCE_J 8

// The tile's sums into the fragment, float4 j of this thread's share from load(j) (where the shared reductions left them)
template <class Load>
__device__ __forceinline__ void load_sums(float (&d)[BN / 2], Load load) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const float4 a = load(j);
    d[4 * j] = a.x;
    d[4 * j + 1] = a.y;
    d[4 * j + 2] = a.z;
    d[4 * j + 3] = a.w;
  }
}

#if SK_CLUSTER
#define CLUSTER_RJ 2  // float4s of the fragment a thread reduces at once, each over the S partials
static_assert(2 * (BN / 8) * CT * 16 <= STAGES * STAGE_BYTES, "a partial and the sums fit in the ring");

// SK_CLUSTER=1, S > 1: the tile's S CTAs are one cluster (rank = split). Each writes its partial into its own ring,
// free once every consumer's wgmmas retired (in the fragment order sk_store_partial writes: float4 j of thread t
// at j * CT + t); rank r adds float4s [split_begin(r), split_begin(r + 1)) of BN / 8 of every thread's share over
// the S partials in split order starting from zero (split_reduce's order: the same bits), reading its peers' shared
// memory, and writes the sums into rank 0's ring after the partial, from where rank 0 stores C. Returns whether
// this CTA stores C.
__device__ __forceinline__ bool cluster_reduce(float (&d)[BN / 2], int splits, unsigned char *smem, int ct) {
  float4 *part = reinterpret_cast<float4 *>(smem), *sums = part + BN / 8 * CT;
  consumer_bar(CT);  // the other consumer warpgroup's wgmmas are done with the ring too
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) part[j * CT + ct] = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
  cluster_sync();  // every split's partial is in its CTA's shared memory
  const u32 rank = cluster_rank(), out = cluster_map(smem_u32(sums + ct), 0);
  u32 peer[SK_CLUSTER_MAX];
#pragma unroll
  for (int s = 0; s < SK_CLUSTER_MAX; ++s) peer[s] = cluster_map(smem_u32(part + ct), s < splits ? s : 0);
  const int jb = split_begin(rank, splits, BN / 8), je = split_begin(rank + 1, splits, BN / 8);
  for (int j0 = jb; j0 < je; j0 += CLUSTER_RJ) {
    float4 v[CLUSTER_RJ][SK_CLUSTER_MAX];
#pragma unroll
    for (int u = 0; u < CLUSTER_RJ; ++u)
#pragma unroll
      for (int s = 0; s < SK_CLUSTER_MAX; ++s)
        if (s < splits && j0 + u < je) v[u][s] = ld_cluster_f4(peer[s] + 16 * (j0 + u) * CT);
#pragma unroll
    for (int u = 0; u < CLUSTER_RJ; ++u)
      if (j0 + u < je) {
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int s = 0; s < SK_CLUSTER_MAX; ++s)
          if (s < splits) {
            a.x += v[u][s].x;
            a.y += v[u][s].y;
            a.z += v[u][s].z;
            a.w += v[u][s].w;
          }
        st_cluster_f4(out + 16 * (j0 + u) * CT, a);
      }
  }
  cluster_sync();  // the sums are in rank 0's ring, and no peer reads a partial any more: the CTAs may exit
  if (rank) return false;
  load_sums(d, [&](int j) { return sums[j * CT + ct]; });
  return true;
}
#endif

// The ticket: one consumer thread adds 1 to the tile's count and returns the count before it. Its release covers the
// partial's stores of every consumer thread, which the named barrier before it orders ahead of it (release is
// cumulative: what the barrier made visible to this thread goes with it), and its acquire, through the barrier after
// it, the reads of the other splits' partials; so no thread fences its own stores at gpu scope first (a fence.sc
// per thread, which waited for each thread's stores to reach L2 before the barrier).
__device__ __forceinline__ u32 take_ticket(u32 *ticket) {
  u32 old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(ticket) : "memory");
  return old;
}

#if SK_SPREAD
// SK_SPREAD=1, S > 1: the tile's partials in `tile_ws` (partial s at s·(BN/2)·CT floats, float4 j of consumer thread
// ct at j·CT + ct), its ticket counting to 2S. This CTA (split `split`) writes its partial, counts it, and waits
// until all S are counted; it adds float4s [split_begin(split), split_begin(split + 1)) of BN / 8 of every thread's
// share over the S partials in split order from zero (split_reduce's order: the same bits), writes the sums over
// partial 0's, which no other CTA reads, and counts again. The last of the 2S counts resets the ticket for the next
// launch and loads the sums into d. Returns whether this CTA stores C. Each CTA reads S/S = one partial's bytes
// where the ticket path's last CTA reads all S; the wait needs every CTA of the grid resident (the host's check).
__device__ __forceinline__ bool spread_reduce(float (&d)[BN / 2], float *tile_ws, u32 *ticket, int split, int splits,
                                              int ct, int &stores) {
  sk_store_partial<BN / 2, CT>(tile_ws + (long long)split * (BN / 2 * CT), d, ct);
  sk_signal<CT>(ticket, ct);
  sk_wait<CT, false>(ticket, splits, ct);  // every split's partial is in the workspace
  float4 *p = reinterpret_cast<float4 *>(tile_ws) + ct;
  const long long stride = BN / 8 * CT;  // float4s from one partial to the next
  for (int j = split_begin(split, splits, BN / 8); j < split_begin(split + 1, splits, BN / 8); ++j) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int s = 0; s < splits; ++s) {
      const float4 v = __ldcg(p + s * stride + j * CT);
      a.x += v.x;
      a.y += v.y;
      a.z += v.z;
      a.w += v.w;
    }
    __stcg(p + j * CT, a);
  }
  consumer_bar(CT);  // every consumer thread's sums are stored before the second count (take_ticket's release)
  if (ct == 0) {
    stores = take_ticket(ticket) == 2u * splits - 1;
    if (stores) *ticket = 0;  // all 2S counts are in: none touches it again
  }
  consumer_bar(CT);
  if (!stores) return false;
  load_sums(d, [&](int j) { return __ldcg(p + j * CT); });
  return true;
}
#endif

// The tile's first row and column, from a fresh read of %ctaid.x: C's store takes them after the mainloop and the
// reduction, through which a 128x256 tile's accumulators and loads leave no register to hold them (ptxas spilled
// one to local memory), and an asm volatile read cannot be merged with the one before the mainloop.
__device__ __forceinline__ int2 tile_origin(int tiles_n) {
  unsigned t;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(t));
  return make_int2((int)t / tiles_n * BM, (int)t % tiles_n * BN);
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1) tc10_split_k(const __grid_constant__ KernelArgs args) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ int reduces;  // set by the ticket's thread: this CTA drew its tile's last ticket (SK_SPREAD: its last count)
  unsigned char *smem = aligned_smem(smem_raw);
  unsigned char *staging = smem + STAGES * STAGE_BYTES;  // EPI_TMA: the consumers' staging boxes of C
  u64 *full = reinterpret_cast<u64 *>(staging + staging_bytes(CW));
  u64 *empty = full + STAGES;
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  OutT *C = reinterpret_cast<OutT *>(args.C);
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_n = (N + BN - 1) / BN, tile = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int m0 = tile / tiles_n * BM, n0 = tile % tiles_n * BN;
  const int KT = (K + BK - 1) / BK;
  const int kb = split_begin(split, splits, KT), ke = split_begin(split + 1, splits, KT);

  ring_init<STAGES, 1>(full, empty, CW * 4, mapA, mapB);  // one arrival per consumer warp

  if (wg == 0) {
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0)
      for (int kt = kb, i = 0; kt < ke; ++kt, ++i) {
        const int s = i % STAGES;
        if (i >= STAGES) mbar_wait(&empty[s], (i / STAGES - 1) & 1);
        load_stage<1>(smem + s * STAGE_BYTES, mapA, mapB, &full[s], m0, n0, kt * BK, 0);
      }
    return;
  }
  setmaxnreg_inc<CONSUMER_REGS>();
#if TC_FP8 && !BLOCK_SCALED
  // the per-tensor scales, loaded under the mainloop: read after it, their first read from DRAM (a cold L2) was
  // the last thing a CTA waited for
  const float scale = *args.scale_a * *args.scale_b;
#endif
  const int cw = wg - 1, ct = tid - 128;
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
#if BLOCK_SCALED
  float part[BN / 2];
  // this thread's two rows of the fragment (clamped: rows past M are never stored) and the tile's block of B
  const int r0 = min(m0 + cw * 64 + 16 * (ct % 128 / 32) + ct % 32 / 4, M - 1), r1 = min(r0 + 8, M - 1);
  const float *sb = args.scale_b + (long long)(n0 / 128) * ((K + 127) / 128);
#endif
#if B_PASS
  // k-tile i's B tile, once landed, rounded in place: this thread's equal share, then fenced for the wgmmas' reads
  const auto round_b = [&](int i) {
    mbar_wait(&full[i % STAGES], (i / STAGES) & 1);
    unsigned char *b = smem + i % STAGES * STAGE_BYTES + A_TILE_BYTES;
    tile_pass<B_TILE_BYTES, CT, B_TILE_BYTES / 16 / CT>(b, b, ct, [](float x) { return tf32_rna_for_mma(x); });
    fence_proxy_async_smem();
  };
  round_b(0);
#endif
  for (int kt = kb, i = 0; kt < ke; ++kt, ++i) {
    const int s = i % STAGES;
    mbar_wait(&full[s], (i / STAGES) & 1);
    const u32 a = smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
    const u32 b = smem_u32(smem + s * STAGE_BYTES + A_TILE_BYTES);
#if BLOCK_SCALED
    wgmma_fence();
    wgmma_ktile<BN>(part, a, b, 0);
    wgmma_commit();
    const float *sa = args.scale_a + (long long)kt * M;
    const float b_scale = __ldg(sb + kt), s0 = __ldg(sa + r0) * b_scale, s1 = __ldg(sa + r1) * b_scale;
    wgmma_wait<0>();
    fence_acc(part);
    if (tid % 32 == 0) mbar_arrive(&empty[s]);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      d[4 * j] += part[4 * j] * s0;
      d[4 * j + 1] += part[4 * j + 1] * s0;
      d[4 * j + 2] += part[4 * j + 2] * s1;
      d[4 * j + 3] += part[4 * j + 3] * s1;
    }
#elif TF32_ROUND
    wgmma_wait<0>();  // the previous k-tile's wgmmas are done with their fragments and their slot
    if (i > 0 && tid % 32 == 0) mbar_arrive(&empty[(i - 1) % STAGES]);
#if B_PASS
    consumer_bar(CT);  // this slot's B tile rounded and fenced by every consumer thread
#endif
    u32 f[KSTEPS][4];
    const unsigned char *rows = smem + s * STAGE_BYTES + cw * 64 * 128;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        f[kk][j] = f32_bits(tf32_rna_for_mma(*reinterpret_cast<const float *>(rows + a_frag_offset(ct % 128, kk, j))));
    const u32 b_lo = desc_lo(b, 16);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) wgmma_rs<BN>(d, f[kk], desc_of(b_lo + 32 * kk / 16, 1024), 1);
    wgmma_commit();
#if B_PASS
    if (kt + 1 < ke) round_b(i + 1);  // under this k-tile's wgmmas
#endif
#else
    wgmma_fence();
    wgmma_ktile<BN>(d, a, b, 1);
    wgmma_commit();
    wgmma_wait<1>();  // the previous k-tile's group is done: its slot can be refilled
    if (i > 0 && tid % 32 == 0) mbar_arrive(&empty[(i - 1) % STAGES]);
#endif
  }
  wgmma_wait<0>();
  fence_acc(d);
  if (splits > 1) {
#if SK_CLUSTER
    if (!cluster_reduce(d, splits, smem, ct)) return;
#elif SK_SPREAD
    if (!spread_reduce(d, args.sk_ws + (long long)tile * splits * (BN / 2 * CT), args.sk_flags + tile, split, splits,
                       ct, reduces))
      return;
#else
    float *tile_ws = args.sk_ws + (long long)tile * splits * (BN / 2 * CT);
    sk_store_partial<BN / 2, CT>(tile_ws + (long long)split * (BN / 2 * CT), d, ct);
    consumer_bar(CT);  // every consumer thread's part of the partial is stored before the ticket (take_ticket)
    if (ct == 0) {
      reduces = take_ticket(args.sk_flags + tile) == (u32)splits - 1;
      if (reduces) args.sk_flags[tile] = 0;  // every split of the tile has counted: none touches it again
    }
    consumer_bar(CT);
    if (!reduces) return;
    const float4 *p = reinterpret_cast<const float4 *>(tile_ws) + ct;
    split_reduce<BN / 2, REDUCE_U, REDUCE_J>(
        d, splits, [&](int s, int j) { return __ldcg(p + (long long)s * (BN / 8 * CT) + j * CT); });
#endif
  }
#if TC_FP8 && !BLOCK_SCALED
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] *= scale;
#endif
  TileStore out;
  const int2 origin = tile_origin((N + BN - 1) / BN);
  out.store<BN>(args, C, d, staging, origin.x, origin.y, cw, M, N);
  tma_store_wait_read<0>();  // the CTA's shared memory outlives its TMA stores (a no-op for threads that issued none)
}
