// The TF32_ROUND=3 pre-pass (tc5, tc6): A rounded to TF32 to nearest into a workspace whose rows are pitched to 16
// bytes, which the kernel's TMA map then reads; the kernel rounds B's fragments in registers. The alternative to the
// producer warps' pass over A in shared memory (TF32_ROUND=2): it moves 8·M·K bytes through DRAM instead of 8 bytes
// of shared memory per A element per tile. Block (x, y) of THREADS threads rounds 16-byte chunks
// x·THREADS + threadIdx.x of rows y, y + gridDim.y, ...; `vec` (A's base and row pitch 16-byte aligned) lets whole
// chunks move as float4.
#include "tc_tf32.cuh"

extern "C" __global__ void __launch_bounds__(THREADS) tc_round_copy(const float *src, float *dst, int rows, int cols, int ld_src, int ld_dst,
                                         int vec) {
  const int c = 4 * (blockIdx.x * THREADS + threadIdx.x);
  if (c >= cols) return;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const float *s = src + (long long)r * ld_src + c;
    float *d = dst + (long long)r * ld_dst + c;
    if (vec && c + 4 <= cols) {
      const float4 v = *reinterpret_cast<const float4 *>(s);
      *reinterpret_cast<float4 *>(d) = make_float4(tf32_rna(v.x), tf32_rna(v.y), tf32_rna(v.z), tf32_rna(v.w));
    } else {
      for (int e = 0; e < 4 && c + e < cols; ++e) d[e] = tf32_rna(s[e]);
    }
  }
}
