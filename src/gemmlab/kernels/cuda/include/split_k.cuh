// Split-K's arithmetic, shared by tc10 (wgmma) and v11 (the FP32 ladder): which k-tiles a split takes, and the
// deterministic reduction that the CTA drawing a tile's last ticket runs over the tile's S FP32 partials.
#pragma once

// begin split arithmetic (plain C++: the tests compile it on the host against tc/model/split_k.py)
// Split s of S takes k-tiles [split_begin(s), split_begin(s + 1)) of KT: KT / S or one more each, none empty
// where S <= KT (the host's choice).
__host__ __device__ __forceinline__ int split_begin(int s, int splits, int kt) {
  return (int)((long long)s * kt / splits);
}
// The reduction of a tile's S partials: d = ((0 + p_0) + p_1) + ... + p_{S-1}, element by element, in this order
// whatever split draws the last ticket. load(s, j) returns float4 j of this thread's share of partial s. The loads of
// U partials' J float4s are issued before their adds (more L2 reads in flight, 4·U·J registers), which leaves each
// element's adds in split order.
template <int R, int U, int J, class Load>
__host__ __device__ __forceinline__ void split_reduce(float (&d)[R], int splits, Load load) {
  static_assert(R % (4 * J) == 0, "the fragment's float4s in whole chunks of J");
#pragma unroll
  for (int i = 0; i < R; ++i) d[i] = 0.f;
  auto add = [&](int s, int n) {  // partials s .. s + n - 1 (n <= U)
#pragma unroll
    for (int j0 = 0; j0 < R / 4; j0 += J) {
      float4 v[U][J];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < J; ++j)
          if (u < n) v[u][j] = load(s + u, j0 + j);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < J; ++j)
          if (u < n) {
            float *x = d + 4 * (j0 + j);
            x[0] += v[u][j].x;
            x[1] += v[u][j].y;
            x[2] += v[u][j].z;
            x[3] += v[u][j].w;
          }
    }
  };
  int s = 0;
  for (; s + U <= splits; s += U) add(s, U);
  if (s < splits) add(s, splits - s);
}
// end split arithmetic
