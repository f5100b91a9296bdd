// V11, split-K: v10's main loop (register_prefetch.cuh) over one split of K, with a deterministic reduction (tc10's
// design on the CUDA cores). The grid is tiles x S: CTA (tile, s) runs k tiles [split_begin(s), split_begin(s + 1))
// of its BM×BN tile (blockIdx.x the tile, blockIdx.y the split, gridDim.y = S), so S CTAs share a tile's K and the
// grid fills the GPU where the tiles alone would not. With S > 1 each CTA writes its FP32 partial tile to the
// workspace (tile-major, S partials a tile, each in fragment order: float4 j of thread t at j·THREADS + t, so a
// warp's stores and loads are whole 512-byte runs) and takes a ticket on its tile (one u32 a tile): the CTA that
// draws the last ticket, whichever split it ran, adds the S partials in the order 0, 1, ..., S-1 from zero
// (split_reduce), so C has the same bits whatever order the splits arrive in, stores C through the fused epilogue
// (store_tile) and sets the ticket back to zero for the next launch, which then needs no memset. No CTA waits for
// another. S = 1: C straight from the registers, as v10 stores it.
// B_KMAJOR=1: B handed over as the N×K Bᵀ (x @ w.t()) and read in place, as v10 reads it.
#include "register_prefetch.cuh"
#include "split_k.cuh"

#define PARTIAL_QUADS (BM * BN / 4)  // float4s of one partial tile
#define ACC (16 * RM * RN)           // a thread's accumulators
#define REDUCE_U 2  // partials whose loads are in flight together in the reduction
#define REDUCE_J 4  // float4s of each: 32 registers, the main loop's loader registers being free by then

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
v11_split_k(float *C, const float *A, const float *B, int M, int N, int K, float *ws, unsigned *tickets EPI_PARAM) {
#if !EPI
  const EpiArgs epi = {};  // unread: store_tile stores the accumulators as they are
#endif
  extern __shared__ float4 smem[];  // two stages of A (transposed, padded) then two of B
  __shared__ int reduces;           // set by thread 0: this CTA drew its tile's last ticket
  float *As = reinterpret_cast<float *>(smem), *Bs = As + 2 * A_STAGE;
  int tm, tn;
  sgemm::tile_coords<GROUP_M>((M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN, tile = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int kt = (K + BK - 1) / BK, t0 = split_begin(split, splits, kt), t1 = split_begin(split + 1, splits, kt);
  int row, col;
  sgemm::lane_origin(row, col);
  float acc[4 * RM][4 * RN];
  // One uniform branch per launch, as v10's: the 128-bit loads only where every row start of A and B is aligned
  if (sgemm::rows_vectorizable(A, K) && sgemm::rows_vectorizable(B, B_KMAJOR ? K : N))
    sgemm::register_prefetch_tiles<true, true>(A, B, M, N, K, m0, n0, row, col, t0, t1, As, Bs, acc);
  else
    sgemm::register_prefetch_tiles<false, true>(A, B, M, N, K, m0, n0, row, col, t0, t1, As, Bs, acc);
  if (splits > 1) {
    float(&d)[ACC] = reinterpret_cast<float(&)[ACC]>(acc);
    float4 *mine = reinterpret_cast<float4 *>(ws) + (long long)tile * splits * PARTIAL_QUADS + threadIdx.x;
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j)  // past L1 (st.global.cg): the reducing CTA may run on another SM
      __stcg(mine + (long long)split * PARTIAL_QUADS + j * THREADS,
             make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    __threadfence();  // this thread's partial is visible to the whole GPU before its CTA's ticket
    __syncthreads();
    if (threadIdx.x == 0) {
      reduces = atomicAdd(tickets + tile, 1u) == (unsigned)splits - 1;
      if (reduces) tickets[tile] = 0;  // every split of the tile has counted: none touches it again this launch
    }
    __syncthreads();
    if (!reduces) return;
    __threadfence();  // the other splits' partials, made visible before their tickets, are read after this CTA's
    split_reduce<ACC, REDUCE_U, REDUCE_J>(
        d, splits, [&](int s, int j) { return __ldcg(mine + (long long)s * PARTIAL_QUADS + j * THREADS); });
  }
  sgemm::store_tile<RM, RN, WM / RM, WN / RN>(C, M, N, m0 + row, n0 + col, acc, epi);
}
