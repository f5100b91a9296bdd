// tc5 (TF32 only): tc4's persistent producer/consumer kernel computing the transposed product, Cᵀ = Bᵀ·Aᵀ, so
// that no operand needs a transpose pre-pass (tc_swap.cuh: A is wgmma's shared-memory operand, B's fragments
// come from registers).
// STREAM_K=1 (tc6, clusters off): the walk ends in a stream-K tail (SkWalk in tc_scheduler.cuh, sk_fixup in
// tc_stream_k.cuh), with the partials' workspace and one flag per tile in args.sk_ws and args.sk_flags.
// TF32_ROUND (tc_round.cuh): 0 leaves both operands to the tensor cores' truncation; 1 rounds B's fragments to
// nearest in registers; 2 also has producer warps 1-3 round each landed A tile in place, the consumers waiting
// on its `ready` barrier; 3 is 1 here, A being rounded before the kernel by the plan's pre-pass.
// C_TRANSPOSED=1 (the host's A_IN_REGS, tc_swap.cuh): the host exchanges the operands, so that the caller's A is the
// register operand, and C holds the transpose of the kernel's product (store_acc_t).
#define TC_BF16 0
#include "tc_persistent.cuh"
#include "tc_round.cuh"
#include "tc_stream_k.cuh"
#include "tc_swap.cuh"

extern "C" __global__ void __launch_bounds__((CW + 1) * 128, 1)
    tc5_swap_ab(const __grid_constant__ TcArgs args) {
  extern __shared__ unsigned char smem_raw[];
  const PersistentSmem<STAGES, 0, TF32_ROUND == 2> sm(smem_raw);  // `ready`: TF32_ROUND=2, A rounded in place
  const TmaMap *mapA = &args.a, *mapB = &args.b;
  float *C = args.C;
  const int M = args.M, N = args.N, K = args.K;
  const int tid = threadIdx.x, wg = tid / 128;
  const PersistentGrid<1, CN> grid(M, N, K);
  const u32 rank = grid.rank;

  // every consumer warp of every CTA that reads the multicast A arrives on `empty`
  sm.init<CN, CW>(mapA, mapB);

  if (wg == 0) {
    produce<TF32_ROUND == 2>(
        grid, sm, tid,
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
          load_stage_swap(stage, mapA, mapB, bar, m0, n0, k0, rank);
        },
        [&](u32 s, int t) {
          unsigned char *a = sm.smem + s * STAGE_BYTES;
          tile_pass<A_TILE_BYTES>(a, a, t, [](float x) { return tf32_rna(x); });
        });
  } else {
    setmaxnreg_inc<CONSUMER_REGS>();
    const SwapThread me(tid, wg);
    u32 it = 0;  // ring position (unsigned: % and / by STAGES are a mask and a shift)
    float d[BM / 2];
    u32 a[KSTEPS][4];  // B's fragments, one set a k8 step
    static_assert(KSTEPS > 3, "a fragment set is reloaded KSTEPS groups after its wgmma, two groups in flight");
    for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next()) {
      const int2 o = grid.origin(u.tile);
      const int m0 = o.x, n0 = o.y;
      // One commit group a k8 step, two in flight (wgmma_wait<2>): step kk's fragments load and round while steps
      // kk - 1 and kk - 2 run, into a[kk], whose last reader (the same step a k-tile earlier, KSTEPS > 3 groups back)
      // is retired; once a k-tile's last step is issued, the next k-tile's first fragments load under it.
      const auto landed = [&](u32 at) {
        mbar_wait(&sm.full[at % STAGES], (at / STAGES) & 1);
#if TF32_ROUND == 2
        mbar_wait(&sm.ready[at % STAGES], (at / STAGES) & 1);  // ... and A has been rounded
#endif
      };
      const auto load = [&](int kk, u32 at) {
        load_b_frag(sm.smem + at % STAGES * STAGE_BYTES, me.lo, me.hi, kk, a[kk]);
#if TF32_ROUND >= 1
#pragma unroll
        for (int i = 0; i < 4; ++i) a[kk][i] = f32_bits(tf32_rna_for_mma(f32_from_bits(a[kk][i])));
#endif
      };
      const int n = u.ke - u.kb;
      landed(it);
      load(0, it);
      for (int i = 0; i < n; ++i, ++it) {
        const u32 at = smem_u32(sm.smem + it % STAGES * STAGE_BYTES);
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
          if (kk + 1 < KSTEPS) load(kk + 1, it);
          wgmma_fence();
          wgmma_rs<BM>(d, a[kk], wgmma_desc(at + 32 * kk, 16, 1024), (i > 0 || kk > 0) ? 1 : 0);
          wgmma_commit();
          wgmma_wait<2>();
          if (kk == 1 && i > 0 && tid % 32 == 0) release_slot<CN>(&sm.empty[(it - 1) % STAGES]);
          if (kk + 1 == KSTEPS && i + 1 < n) {  // the k-tile's last step issued: wait for the next one, step 0's
            landed(it + 1);                     // reader retired
            load(0, it + 1);
          }
        }
      }
      wgmma_wait<0>();
      if (tid % 32 == 0) release_slot<CN>(&sm.empty[(it - 1) % STAGES]);  // the tile's last slot
      fence_acc(d);
#if STREAM_K
      if (!sk_fixup<BM / 2, CW * 128>(u, d, args.sk_ws, args.sk_flags, tid - 128)) continue;
#endif
      if (n0 < N) store_acc_t(C, d, m0, n0 + 64 * me.cw, n0 + me.col, me.t, M, N);
    }
  }
  __syncwarp();
  if (CN > 1) cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers or multicast into it
}
