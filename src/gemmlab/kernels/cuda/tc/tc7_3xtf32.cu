// tc7: FP32-accurate C = A·B on the TF32 tensor cores: 3xTF32 with the partial sums promoted to FP32 on the CUDA
// cores. tc5's swapped product (tc_swap.cuh: A is wgmma's shared-memory operand, B's fragments come from
// registers), clusters and stream-K off.
//
// Each operand is split into two TF32 parts (tc_tf32.cuh) and the tensor cores add three products per k8 step,
// small ones first: b_small·a_big, b_big·a_small, b_big·a_big (small·small, 2^-22 of the rest, is left out).
//   - B (registers): big = rna(b), small = rna(b - big), made by each consumer thread from its fragments.
//   - A (shared memory): big is A as TMA landed it, which the tensor cores read truncated; producer warps 1-3 write
//     small = rna(a - trunc(a)) beside each slot's tile (tc_round.cuh's pass), and the consumers wait on the
//     slot's `ready` barrier before their wgmma.
// The tensor cores' FP32 accumulation drops bits at every instruction, and over all of K that error, not the
// split's, would set the result's accuracy. So each run of PROMOTE k-tiles (PROMOTE·32 of K) accumulates from
// zero in the wgmma accumulator `acc`, and is then added into a second register set `sum` with FP32 adds on the
// CUDA cores: the tensor cores' error grows with the run, not with K. PROMOTE=0: one run over all of K (no
// promotion; the ablation). A consumer retires its wgmmas before every k-tile anyway (a register operand must
// not change under a running wgmma), so a promotion costs 64 FADDs per thread and no wait.
#define TC_BF16 0
#include "tc_persistent.cuh"
#include "tc_round.cuh"
#include "tc_swap.cuh"

#define SMALL_BYTES (STAGES * A_TILE_BYTES)  // A's small parts, one BM x BK tile per ring slot, after the ring

// sum += acc, once the wgmmas writing acc have been waited for.
template <int R>
__device__ __forceinline__ void promote(float (&sum)[R], float (&acc)[R]) {
  fence_acc(acc);
#pragma unroll
  for (int i = 0; i < R; ++i) sum[i] += acc[i];
}

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc7_3xtf32(const __grid_constant__ TcArgs args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, SMALL_BYTES, true> sm(smem_raw);
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  float *C = args.C;
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const PersistentGrid<1, 1> grid(M, N, K);

  sm.init<1, CW>(mapA, mapB);  // one `empty` arrival per consumer warp

  if (wg == 0) {
    produce<true>(
        grid, sm, tid,
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
          load_stage_swap(stage, mapA, mapB, bar, m0, n0, k0, 0);
        },
        [&](u32 s, int t) {
          tile_pass<A_TILE_BYTES>(sm.smem + s * STAGE_BYTES, sm.extra + s * A_TILE_BYTES, t,
                                  [](float x) { return tf32_small_of_stored(x); });
        });
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const SwapThread me(tid, wg);
    u32 it = 0;  // ring position (unsigned: % and / by STAGES are a mask and a shift)
    float acc[BM / 2], sum[BM / 2];
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next()) {
      const int2 o = grid.origin(u.tile);
      const int m0 = o.x, n0 = o.y;
#pragma unroll
      for (int i = 0; i < BM / 2; ++i) sum[i] = 0.f;
      for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
        const u32 s = it % STAGES;
        mbar_wait(&sm.full[s], (it / STAGES) & 1);   // B's fragments and A's big part have landed
        mbar_wait(&sm.ready[s], (it / STAGES) & 1);  // ... and A's small part is written
        wgmma_wait<0>();  // the previous k-tile's wgmmas: their fragments and its slot are free, acc is final
        if (kt > u.kb && tid % 32 == 0) release_slot<1>(&sm.empty[(it - 1) % STAGES]);
#if PROMOTE
        const bool fresh = (kt - u.kb) % PROMOTE == 0;  // a new run of the tensor cores' accumulation
#else
        const bool fresh = kt == u.kb;
#endif
        if (fresh && kt > u.kb) promote(sum, acc);
        const unsigned char *stage = sm.smem + s * STAGE_BYTES;
        u32 big[KSTEPS][4], sml[KSTEPS][4];
        load_b_frags(stage, me.lo, me.hi, big);
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const Tf32Split p = tf32_split(f32_from_bits(big[kk][i]));
            big[kk][i] = f32_bits(p.big);
            sml[kk][i] = f32_bits(p.small);
          }
        const u32 a_big = smem_u32(stage), a_small = smem_u32(sm.extra + s * A_TILE_BYTES);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
          wgmma_rs<BM>(acc, sml[kk], wgmma_desc(a_big + 32 * kk, 16, 1024), (fresh && kk == 0) ? 0 : 1);
          wgmma_rs<BM>(acc, big[kk], wgmma_desc(a_small + 32 * kk, 16, 1024), 1);
          wgmma_rs<BM>(acc, big[kk], wgmma_desc(a_big + 32 * kk, 16, 1024), 1);
        }
        wgmma_commit();
      }
      wgmma_wait<0>();
      if (tid % 32 == 0) release_slot<1>(&sm.empty[(it - 1) % STAGES]);  // the tile's last slot
      promote(sum, acc);
      store_acc_t(C, sum, m0, n0 + 64 * me.cw, n0 + me.col, me.t, M, N);
    }
  }
  __syncwarp();
}
