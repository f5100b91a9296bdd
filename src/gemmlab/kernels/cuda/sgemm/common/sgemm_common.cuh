// Device helpers shared by the FP32 ladder (v3 and up). Every level computes C = A·B, row-major, for any
// M, N, K >= 1: tiles that hang over an edge are staged with zeros and stores are guarded. 128-bit paths
// are taken only where the row starts they touch are 16-byte aligned (leading dimension a multiple of 4
// and an aligned base pointer); otherwise the same tile moves one float at a time.
#include "epilogue.cuh"

namespace sgemm {

__device__ __forceinline__ bool aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// A 128-bit row access is legal everywhere in a matrix only when every row start is 16-byte aligned.
__device__ __forceinline__ bool rows_vectorizable(const void *base, int ld) {
  return (ld & 3) == 0 && aligned16(base);
}

__device__ __forceinline__ float load_or_zero(const float *p, bool ok) { return ok ? __ldg(p) : 0.0f; }

// Stage a ROWS×COLS tile of a row-major matrix (rows×cols, (r0, c0) its corner) into dst as it is, one
// float per load: consecutive threads read consecutive columns, so a warp's loads coalesce.
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void stage_scalar(float *dst, const float *src, int rows, int cols, int r0, int c0) {
  static_assert((kRows * kCols) % kThreads == 0, "tile elements must split evenly over the threads");
#pragma unroll
  for (int i = 0; i < kRows * kCols / kThreads; ++i) {
    const int e = threadIdx.x + i * kThreads, r = e / kCols, c = e % kCols;
    dst[e] = load_or_zero(src + (size_t)(r0 + r) * cols + c0 + c, r0 + r < rows && c0 + c < cols);
  }
}

// Write a TM×TN register tile whose corner is (row, col), one guarded float at a time.
template <int kTM, int kTN>
__device__ __forceinline__ void store_scalar(float *C, int M, int N, int row, int col, const float (&acc)[kTM][kTN]) {
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    if (row + i >= M) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j)
      if (col + j < N) C[(size_t)(row + i) * N + col + j] = acc[i][j];
  }
}

// Four consecutive floats of one row starting at column c (c a multiple of 4). With `vec` the row is
// 16-byte aligned and a multiple of 4 long, so the quad is either wholly inside or wholly outside.
__device__ __forceinline__ float4 load_quad(const float *row, int c, int cols, bool row_ok, bool vec) {
  if (vec) return (row_ok && c < cols) ? __ldg(reinterpret_cast<const float4 *>(row + c)) : make_float4(0, 0, 0, 0);
  return make_float4(load_or_zero(row + c, row_ok && c < cols), load_or_zero(row + c + 1, row_ok && c + 1 < cols),
                     load_or_zero(row + c + 2, row_ok && c + 2 < cols), load_or_zero(row + c + 3, row_ok && c + 3 < cols));
}

// Stage the BM×BK tile of A at (m0, k0) transposed, As[k*LDS + m], and the BK×BN tile of B at (k0, n0)
// as it is, Bs[k*LDS + n], with quads (128-bit loads where aligned). All THREADS threads take part.
template <int kBM, int kBK, int kLDS, int kThreads>
__device__ __forceinline__ void stage_a_transposed(float *As, const float *A, int M, int K, int m0, int k0, bool vec) {
  static_assert((kBM * kBK / 4) % kThreads == 0, "A tile quads must split evenly over the threads");
#pragma unroll
  for (int i = 0; i < kBM * kBK / 4 / kThreads; ++i) {
    const int q = threadIdx.x + i * kThreads;
    const int m = q / (kBK / 4), kq = (q % (kBK / 4)) * 4;
    const float4 v = load_quad(A + (size_t)(m0 + m) * K, k0 + kq, K, m0 + m < M, vec);
    As[(kq + 0) * kLDS + m] = v.x;
    As[(kq + 1) * kLDS + m] = v.y;
    As[(kq + 2) * kLDS + m] = v.z;
    As[(kq + 3) * kLDS + m] = v.w;
  }
}

template <int kBK, int kBN, int kLDS, int kThreads>
__device__ __forceinline__ void stage_b(float *Bs, const float *B, int K, int N, int k0, int n0, bool vec) {
  static_assert((kBK * kBN / 4) % kThreads == 0, "B tile quads must split evenly over the threads");
#pragma unroll
  for (int i = 0; i < kBK * kBN / 4 / kThreads; ++i) {
    const int q = threadIdx.x + i * kThreads;
    const int k = q / (kBN / 4), nq = (q % (kBN / 4)) * 4;
    const float4 v = load_quad(B + (size_t)(k0 + k) * N + n0, nq, N - n0, k0 + k < K, vec);
    *reinterpret_cast<float4 *>(&Bs[k * kLDS + nq]) = v;
  }
}

// One k step of a thread's register tile: RM quads of A (rows a[0..3] + s*SA) times RN quads of B
// (columns b[0..3] + t*SB), as an outer product into acc. As_k and Bs_k point at this thread's first
// row and column in the k-th row of the (k-major) staged tiles. Splitting a tile into quads SA apart
// instead of one contiguous run keeps each quarter-warp's 128-bit reads on 32 distinct banks.
template <int kRM, int kRN, int kSA, int kSB>
__device__ __forceinline__ void outer_product(const float *As_k, const float *Bs_k, float (&acc)[4 * kRM][4 * kRN]) {
  float a[4 * kRM], b[4 * kRN];
#pragma unroll
  for (int s = 0; s < kRM; ++s) {
    const float4 v = *reinterpret_cast<const float4 *>(As_k + s * kSA);
    a[4 * s + 0] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
  }
#pragma unroll
  for (int t = 0; t < kRN; ++t) {
    const float4 v = *reinterpret_cast<const float4 *>(Bs_k + t * kSB);
    b[4 * t + 0] = v.x, b[4 * t + 1] = v.y, b[4 * t + 2] = v.z, b[4 * t + 3] = v.w;
  }
#pragma unroll
  for (int i = 0; i < 4 * kRM; ++i)
#pragma unroll
    for (int j = 0; j < 4 * kRN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Write a register tile laid out as outer_product builds it: rows row0 + s*SA + i, columns
// col0 + t*SB + j. Quads go out as one 128-bit store where C's rows are aligned; ragged edges per float.
// EPI=1 (epilogue.cuh): each quad is the fused epilogue's values, made just before its store.
template <int kRM, int kRN, int kSA, int kSB>
__device__ __forceinline__ void store_tile(float *C, int M, int N, int row0, int col0,
                                           const float (&acc)[4 * kRM][4 * kRN], const EpiArgs &epi = {}) {
  const bool vec = rows_vectorizable(C, N);
#pragma unroll
  for (int s = 0; s < kRM; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + s * kSA + i;
      if (row >= M) continue;
      float *out = C + (size_t)row * N;
#pragma unroll
      for (int t = 0; t < kRN; ++t) {
        const int col = col0 + t * kSB;
#if EPI
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = epi_apply(epi, acc[4 * s + i][4 * t + j], row, col + j, col + j < N);
#else
        const float *v = &acc[4 * s + i][4 * t];
#endif
        if (vec && col < N) {
          *reinterpret_cast<float4 *>(out + col) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (col + j < N) out[col + j] = v[j];
        }
      }
    }
}

// The main loop of the register-staged levels (v5 to v7): per BK step, every thread stages its share of
// the A tile (transposed, rows LDA floats apart) and the B tile, then runs BK outer products on its own
// register tile, whose first row and column within the block tile are (row, col). The levels differ only
// in how they place threads (row, col, the quad strides SA and SB) and in LDA.
template <int kBM, int kBN, int kBK, int kLDA, int kThreads, int kRM, int kRN, int kSA, int kSB>
__device__ __forceinline__ void register_staged_gemm(float *C, const float *A, const float *B, int M, int N, int K,
                                                     int m0, int n0, int row, int col) {
  __shared__ __align__(16) float As[kBK * kLDA];
  __shared__ __align__(16) float Bs[kBK * kBN];
  const bool vec_a = rows_vectorizable(A, K), vec_b = rows_vectorizable(B, N);
  float acc[4 * kRM][4 * kRN] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
    stage_a_transposed<kBM, kBK, kLDA, kThreads>(As, A, M, K, m0, k0, vec_a);
    stage_b<kBK, kBN, kBN, kThreads>(Bs, B, K, N, k0, n0, vec_b);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) outer_product<kRM, kRN, kSA, kSB>(As + k * kLDA + row, Bs + k * kBN + col, acc);
    __syncthreads();
  }
  store_tile<kRM, kRN, kSA, kSB>(C, M, N, m0 + row, n0 + col, acc);
}

// ---- cp.async (sm_80+): global -> shared without a register round trip -------------------------------
// The src-size operand zero-fills what lies past an edge: a copy with src_bytes = 0 reads nothing.
__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// One of two operand types, chosen at compile time (std::conditional, which NVRTC has no header for).
template <bool kFirst, class T, class F>
struct pick { using type = T; };
template <class T, class F>
struct pick<false, T, F> { using type = F; };

// cp.async copies of one k step of a K-major operand (rows×K, row-major: A, or B handed over as the N×K Bᵀ)
// into a shared tile transposed, S[k*LD + r] for the kRows rows from r0. Everything that does not change along
// K (source pointer, which rows are inside) is worked out once. 4-byte copies (a 16-byte copy cannot
// transpose): a warp copies 8 consecutive k of 4 consecutive rows, so each copy instruction touches 4 32-byte
// sectors of global memory (few L1 wavefronts; 16 rows × 2 quads per warp measured 5-10% slower for A) and,
// with LD ≡ 4 (mod 32), 32 distinct banks.
template <int kRows, int kBK, int kLD, int kThreads>
struct TransposingCopies {
  static constexpr int kRowsPass = kThreads / 8;  // rows one pass of the block covers
  static constexpr int kPasses = kRows / kRowsPass;  // passes down the rows of the tile
  static_assert(kThreads % 8 == 0 && kRows % kRowsPass == 0 && kBK % 8 == 0, "copy passes must tile rows×BK");
  static_assert(kPasses <= 32, "row masks hold 32 passes");

  const float *src;  // this thread's element (r0 + tid/8, tid%8)
  int K, dst, k;
  unsigned rows_ok;  // bit p: row r0 + tid/8 + p*kRowsPass is inside the operand

  __device__ __forceinline__ TransposingCopies(const float *X, int rows, int K_, int r0) : K(K_) {
    const int tid = threadIdx.x, r = tid / 8;
    k = tid % 8;
    src = X + (size_t)(r0 + r) * K + k;
    dst = k * kLD + r;
    rows_ok = 0;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) rows_ok |= (r0 + r + p * kRowsPass < rows ? 1u : 0u) << p;
  }

  // Copies that fall outside the operand get src-size 0: nothing is read and the stage holds zeros.
  __device__ __forceinline__ void load(float *S, int k0) const {
    const int k_left = K - k0;  // k0 + kk < K  <=>  kk < k_left
#pragma unroll
    for (int g = 0; g < kBK / 8; ++g)
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
        cp_async4(S + dst + g * 8 * kLD + p * kRowsPass, src + (size_t)p * kRowsPass * K + k0 + g * 8,
                  ((rows_ok >> p) & 1u) && k + g * 8 < k_left);
  }
};

// cp.async copies of one k step of a row-major K×N B into Bs[k*BN + n] as it is: 16-byte copies where its rows
// are 16-byte aligned, else 4-byte ones.
template <int kBK, int kBN, int kThreads>
struct RowCopies {
  static constexpr int kQuads = kBN / 4;             // 16-byte chunks in a row of the tile
  static constexpr int kRowsPass = kThreads / kQuads;  // rows of B one pass of 16-byte copies covers
  static_assert(kThreads % kQuads == 0 && kBK % kRowsPass == 0 && (kBK * kBN) % kThreads == 0,
                "B copy passes must tile BK×BN");

  const float *src;  // B at column n0
  int N, K, n0, k, n;
  bool vec;

  __device__ __forceinline__ RowCopies(const float *B, int N_, int K_, int n0_)
      : src(B + n0_), N(N_), K(K_), n0(n0_), k(threadIdx.x / kQuads), n((threadIdx.x % kQuads) * 4),
        vec(rows_vectorizable(B, N_)) {}

  __device__ __forceinline__ void load(float *Bs, int k0) const {
    const int k_left = K - k0;
    const float *tile = src + (size_t)k0 * N;
    if (vec) {
#pragma unroll
      for (int p = 0; p < kBK / kRowsPass; ++p) {
        const int kk = k + p * kRowsPass;
        cp_async16(Bs + kk * kBN + n, tile + (size_t)kk * N + n, kk < k_left && n0 + n < N);
      }
    } else {
#pragma unroll
      for (int p = 0; p < kBK * kBN / kThreads; ++p) {
        const int e = threadIdx.x + p * kThreads, kk = e / kBN, nn = e % kBN;
        cp_async4(Bs + e, tile + (size_t)kk * N + nn, kk < k_left && n0 + nn < N);
      }
    }
  }
};

// Copies the BM×BK tile of A (transposed into As[k*LDA + m]) and the BK×BN tile of B of one k step into a
// shared-memory stage with cp.async: B as it is (Bs[k*BN + n]), or, with kBKMajor (B handed over as the N×K
// matrix Bᵀ, x @ w.t()), transposed like A (Bs[k*LDB + n]). The caller commits the group.
template <int kBM, int kBN, int kBK, int kLDA, int kLDB, int kThreads, bool kBKMajor>
struct CpAsyncTileLoader {
  TransposingCopies<kBM, kBK, kLDA, kThreads> a;
  typename pick<kBKMajor, TransposingCopies<kBN, kBK, kLDB, kThreads>, RowCopies<kBK, kBN, kThreads>>::type b;

  __device__ __forceinline__ CpAsyncTileLoader(const float *A, const float *B, int M, int N, int K, int m0, int n0)
      : a(A, M, K, m0), b(B, N, K, n0) {}

  __device__ __forceinline__ void load(float *As, float *Bs, int k0) const {
    a.load(As, k0);
    b.load(Bs, k0);
  }
};

// Block index -> (tile row, tile column). GROUP_M > 1 walks GROUP_M tile rows column by column, so the
// blocks resident at one time share B panels as well as A panels in L2 (Triton's grouped ordering).
template <int kGroupM>
__device__ __forceinline__ void tile_coords(int tiles_m, int tiles_n, int &tm, int &tn) {
  const int pid = blockIdx.x;
  if (kGroupM <= 1) {
    tm = pid / tiles_n, tn = pid % tiles_n;
    return;
  }
  const int per_group = kGroupM * tiles_n;
  const int first_m = (pid / per_group) * kGroupM;
  const int rows = min(tiles_m - first_m, kGroupM);
  const int in_group = pid % per_group;
  tm = first_m + in_group % rows, tn = in_group / rows;
}

// ---- Register prefetch (v10): global -> registers -> shared, two shared stages ---------------------------
// One thread's share of a k tile of one operand, cut into quads (4 floats along a row), handed out so that
// consecutive threads take consecutive quads of a row (a warp's loads cover whole 32-byte sectors). load()
// issues the loads of the tile whose first k is k0 into registers and does not wait for them; store() puts them
// into a shared stage. Between the two the thread computes on the other stage, so the global latency hides
// behind the FFMAs. Quads outside the operand are zeros (load_quad's guards), so a tile past K loads nothing and
// stores zeros. kVec: every row start is 16-byte aligned, so a quad is one 128-bit read-only load; otherwise
// four guarded 4-byte loads.
//
// A K-major operand (rows×K row-major: A, or B handed over as the N×K Bᵀ): the kRows×BK tile at row r0, quads
// along k, stored transposed (S[k*LD + r], four 4-byte stores per quad).
template <int kRows, int kBK, int kLD, int kThreads, bool kVec>
struct TransposedQuads {
  static constexpr int kQuads = kRows * kBK / 4 / kThreads;  // quads per thread and tile
  static_assert(kBK % 4 == 0 && kQuads * 4 * kThreads == kRows * kBK, "the tile's quads must split evenly");

  const float *X;
  int rows, K, r0;
  // Element offsets of each quad's row start, computed once. 32-bit unsigned: offsets that are read are below
  // 2^31 (the spec rejects larger operands); those of rows past the edge may wrap, harmlessly, since their
  // loads are guarded off. Half the registers of 64-bit row pointers.
  unsigned off[kQuads];
  float4 v[kQuads];

  __device__ __forceinline__ static int row(int i) { return (threadIdx.x + i * kThreads) / (kBK / 4); }
  __device__ __forceinline__ static int col(int i) { return ((threadIdx.x + i * kThreads) % (kBK / 4)) * 4; }

  __device__ __forceinline__ TransposedQuads(const float *X_, int rows_, int K_, int r0_)
      : X(X_), rows(rows_), K(K_), r0(r0_) {
#pragma unroll
    for (int i = 0; i < kQuads; ++i) off[i] = unsigned(r0 + row(i)) * unsigned(K);
  }

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int i = 0; i < kQuads; ++i) v[i] = load_quad(X + off[i], k0 + col(i), K, r0 + row(i) < rows, kVec);
  }

  __device__ __forceinline__ void store(float *S) const {
#pragma unroll
    for (int i = 0; i < kQuads; ++i) {
      float *dst = S + col(i) * kLD + row(i);
      dst[0 * kLD] = v[i].x;
      dst[1 * kLD] = v[i].y;
      dst[2 * kLD] = v[i].z;
      dst[3 * kLD] = v[i].w;
    }
  }
};

// A row-major K×N B: the BK×BN tile at column n0, quads along n, stored as it is (Bs[k*BN + n], one 16-byte
// store per quad).
template <int kBK, int kBN, int kThreads, bool kVec>
struct RowQuads {
  static constexpr int kQuads = kBK * kBN / 4 / kThreads;
  static_assert(kBN % 4 == 0 && kQuads * 4 * kThreads == kBK * kBN, "the tile's quads must split evenly");

  const float *B;
  int N, K, n0;
  unsigned off[kQuads];  // of each quad's (row, n0), as TransposedQuads's
  float4 v[kQuads];

  __device__ __forceinline__ static int row(int i) { return (threadIdx.x + i * kThreads) / (kBN / 4); }
  __device__ __forceinline__ static int col(int i) { return ((threadIdx.x + i * kThreads) % (kBN / 4)) * 4; }

  __device__ __forceinline__ RowQuads(const float *B_, int N_, int K_, int n0_) : B(B_), N(N_), K(K_), n0(n0_) {
#pragma unroll
    for (int i = 0; i < kQuads; ++i) off[i] = unsigned(row(i)) * unsigned(N) + unsigned(n0);
  }

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int i = 0; i < kQuads; ++i)
      v[i] = load_quad(B + (off[i] + unsigned(k0) * unsigned(N)), col(i), N - n0, k0 + row(i) < K, kVec);
  }

  __device__ __forceinline__ void store(float *Bs) const {
#pragma unroll
    for (int i = 0; i < kQuads; ++i) *reinterpret_cast<float4 *>(Bs + row(i) * kBN + col(i)) = v[i];
  }
};

// Both operands' shares of a k tile: A transposed into As[k*LDA + m]; B as it is (Bs[k*BN + n]), or, with
// kBKMajor (B handed over as the N×K Bᵀ, x @ w.t()), transposed like A into Bs[k*LDB + n].
template <int kBM, int kBN, int kBK, int kLDA, int kLDB, int kThreads, bool kVec, bool kBKMajor>
struct RegisterTileLoader {
  TransposedQuads<kBM, kBK, kLDA, kThreads, kVec> a;
  typename pick<kBKMajor, TransposedQuads<kBN, kBK, kLDB, kThreads, kVec>, RowQuads<kBK, kBN, kThreads, kVec>>::type b;

  __device__ __forceinline__ RegisterTileLoader(const float *A, const float *B, int M, int N, int K, int m0, int n0)
      : a(A, M, K, m0), b(B, N, K, n0) {}

  __device__ __forceinline__ void load(int k0) {
    a.load(k0);
    b.load(k0);
  }

  __device__ __forceinline__ void store(float *As, float *Bs) const {
    a.store(As);
    b.store(Bs);
  }
};

}  // namespace sgemm
