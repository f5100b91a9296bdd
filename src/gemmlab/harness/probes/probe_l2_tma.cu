// Ceiling probe: L2 -> SM read bandwidth through the wgmma levels' own load path. One CTA per SM runs tc4's
// producer (produce_ring, load_stage): one thread issues, per k-tile, a BM x BK box of A and BN/64 boxes of 64 rows
// of Bᵀ (cp.async.bulk.tensor.2d, 128-byte swizzle, the maps encoded as the levels encode theirs) into a ring of
// STAGES mbarrier-guarded stages; the consumer warps only wait for each stage to land and release it. The
// operands are small enough to stay in L2, so nothing but the L2 -> shared-memory path is timed.
// The walk is a GEMM's: unit u of CTA c is c + u * gridDim.x, tile (unit % tiles) in schedule()'s grouped order,
// so the CTAs in flight read the same panels of A and B at about the same k, as the levels' waves do. With
// `own`, CTA c reads only its own rows of A and of Bᵀ instead: no two SMs read the same line.
#define TC_BF16 0  // fp32 operands, both K-major: one 128-byte swizzle row is BK = 32 elements of K
#include "tc_ktile.cuh"
#include "tc_pipeline.cuh"

#define CONSUMER_WARPS 8  // the levels' two consumer warpgroups

// The kernel's one parameter, by value: the host mirrors it field for field (harness/ceilings.py, TMA_ARGS).
// begin args struct (plain C++: the tests compile it on the host against TMA_ARGS' layout)
struct ProbeTmaArgs {
  TmaMap a, b;     // A (rows of BM, K-major) and Bᵀ (rows of 64, K-major)
  int tiles_m, tiles_n, KT;
  int units;       // units of KT k-tiles the grid walks: a multiple of gridDim.x, so every CTA walks as many
  int own;         // 1: CTA c reads tile (c, c), rows no other CTA reads
};
// end args struct

extern "C" __global__ void __launch_bounds__(128 + CONSUMER_WARPS * 32, 1)
    probe_l2_tma(const __grid_constant__ ProbeTmaArgs args) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = aligned_smem(smem_raw);
  u64 *full = reinterpret_cast<u64 *>(smem + STAGES * STAGE_BYTES);
  u64 *empty = full + STAGES;
  ring_init<STAGES, 1>(full, empty, CONSUMER_WARPS, &args.a, &args.b);
  const int tiles = args.tiles_m * args.tiles_n;
  if (threadIdx.x == 0) {
    produce_ring<STAGES>(
        smem, full, empty, blockIdx.x, gridDim.x, args.units, args.KT,
        [&](int unit) {
          int tm = blockIdx.x, tn = blockIdx.x;
          if (!args.own) schedule(unit % tiles, args.tiles_m, args.tiles_n, GROUP_M, tm, tn);
          return make_int2(tm * BM, tn * BN);
        },
        [&](unsigned char *stage, u64 *bar, int m0, int n0, int k0) {
          load_stage<1>(stage, &args.a, &args.b, bar, m0, n0, k0, 0);
        });
  } else if (threadIdx.x >= 128 && threadIdx.x % 32 == 0) {
    u32 it = 0;
    for (Walk u(blockIdx.x, gridDim.x, args.units, args.KT); u.valid(); u.next())
      for (int kt = u.kb; kt < u.ke; ++kt, ++it) {
        mbar_wait(&full[it % STAGES], (it / STAGES) & 1);
        mbar_arrive(&empty[it % STAGES]);
      }
  }
}
