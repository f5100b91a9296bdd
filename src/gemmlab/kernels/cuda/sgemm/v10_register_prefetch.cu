// V10, register prefetch into two shared stages (the numba ladder's v8_double_buffer in CUDA C++): the main loop of
// register_prefetch.cuh over all of K, one CTA per output tile, C stored from registers (with B_KMAJOR=1, B read in
// place as the N×K Bᵀ of x @ w.t()).
#include "register_prefetch.cuh"

template <bool kVec>
__device__ __forceinline__ void register_prefetch_gemm(float *C, const float *A, const float *B, int M, int N, int K,
                                                       float *As, float *Bs, const EpiArgs &epi) {
  int tm, tn;
  sgemm::tile_coords<GROUP_M>((M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  int row, col;
  sgemm::lane_origin(row, col);
  float acc[4 * RM][4 * RN];
  sgemm::register_prefetch_tiles<kVec>(A, B, M, N, K, m0, n0, row, col, 0, (K + BK - 1) / BK, As, Bs, acc);
  sgemm::store_tile<RM, RN, WM / RM, WN / RN>(C, M, N, m0 + row, n0 + col, acc, epi);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
v10_register_prefetch(float *C, const float *A, const float *B, int M, int N, int K EPI_PARAM) {
#if !EPI
  const EpiArgs epi = {};  // unread: store_tile stores the accumulators as they are
#endif
  extern __shared__ float4 smem[];  // two stages of A (transposed, padded) then two of B
  float *As = reinterpret_cast<float *>(smem), *Bs = As + 2 * A_STAGE;
  // One uniform branch per launch: both paths are the same template, the 128-bit one only where every row
  // start of A and B is 16-byte aligned (C's stores make their own check in store_tile).
  if (sgemm::rows_vectorizable(A, K) && sgemm::rows_vectorizable(B, B_KMAJOR ? K : N))
    register_prefetch_gemm<true>(C, A, B, M, N, K, As, Bs, epi);
  else
    register_prefetch_gemm<false>(C, A, B, M, N, K, As, Bs, epi);
}
