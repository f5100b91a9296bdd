// The fused epilogue (gemmlab.epilogue): out = act(alpha·acc + beta·D) on an FP32 accumulator, in registers, before
// C is converted and stored. Compile-time switches, all 0 by default, so a build without them is the plain GEMM:
//   EPI=1         the kernel takes an EpiArgs (D's address and strides, alpha, beta) and applies epi_apply
//   EPI_ACT       0 none, 1 relu, 2 gelu (erf), 3 gelu (tanh), 4 silu
//   EPI_ADDEND    0 none, 1 a bias (one value per column of C, added as it is), 2 a matrix D read with beta
//   EPI_D         D's type: 0 FP32, 1 BF16, 2 FP16
// D's element (r, c) of the kernel's product is D[r·rs + c·cs] (strides in elements, 0 for a broadcast); a kernel
// that stores the transpose of its product (C_TRANSPOSED) is handed D's strides swapped, so its bias follows its rows.
// The activations take one exponential and one division each (erf by Abramowitz & Stegun, tanh and silu through
// e^x), accurate in the fragment's registers, the special-function unit's where the shared-memory pass applies them
// (epi_exp, epi_div below): a few instructions per element, against the 2·K flops each element took.
#pragma once

#ifndef EPI
#define EPI 0
#endif
#ifndef EPI_ACT
#define EPI_ACT 0
#endif
#ifndef EPI_ADDEND
#define EPI_ADDEND 0
#endif
#ifndef EPI_D
#define EPI_D 0
#endif
#ifndef C_TRANSPOSED
#define C_TRANSPOSED 0
#endif

// the host's EPI_ARGS (gemmlab.kernels.cuda.launch.kernel), field for field
struct EpiArgs {
  const void *D;
  long long rs, cs;  // D's row and column strides, in elements
  float alpha, beta;
};

// A kernel that takes its own parameter list (the FP32 ladder, the gemv levels) ends it with EPI_PARAM: EpiArgs
// where EPI=1; a helper that takes it too is called with EPI_ARG
#if EPI
#define EPI_PARAM , const EpiArgs epi
#define EPI_ARG , epi
#else
#define EPI_PARAM
#define EPI_ARG
#endif

#ifdef __CUDACC__
// e^x and a / b, accurate (expf, IEEE division) or, kSfu, the special-function unit's approximations with
// subnormals flushed (ex2.approx.ftz, a times rcp.approx.ftz of b: a few ulp here, far below a BF16 or
// TF32 result's error; flushed, each is one SFU instruction and a multiply, where __expf and __fdividef add a
// subnormal range check and a rescale apiece). The epilogues in the fragment's registers keep the accurate ones (with
// the SFU's, ptxas spills at 168 registers in tc4 and tc6), but for tc9's transposed store (C_TRANSPOSED), which
// fits; the shared-memory pass (tc_epilogue.cuh's epi_box), whose cost is its instructions per element, takes the
// SFU's.
template <bool kSfu>
__device__ __forceinline__ float epi_exp2(float y) {
  if constexpr (kSfu) {
    float r;  // below 2^-126 (y < -126) 0, far below the activations' resolution
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
    return r;
  } else {
    return exp2f(y);
  }
}
template <bool kSfu>
__device__ __forceinline__ float epi_exp(float x) {
  if constexpr (kSfu) {
    return epi_exp2<true>(x * 1.4426950408889634f);  // e^x = 2^(x·log2 e)
  } else {
    return expf(x);
  }
}
template <bool kSfu>
__device__ __forceinline__ float epi_div(float a, float b) {
  if constexpr (kSfu) {
    float r;  // 1/b, 0 for |b| past 2^126 (and inf): a·0, the activations' limits below
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    return a * r;
  } else {
    return a / b;
  }
}
template <bool kSfu = false>
__device__ __forceinline__ float epi_act(float x) {
#if EPI_ACT == 1
  return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as torch.relu keeps it
#elif EPI_ACT == 2  // x·Φ(x), erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, FP32's resolution at 1): one
  // exponential and one division, no branch; erff's two ranges cost a tile's store dozens of registers or a spill.
  // With z = |x|/√2 and s = z·√(log2 e): e^-z² = 2^-s² and t = 1 / (1 + 0.3275911·z) = 1 / (1 + 0.27273748·s), one
  // multiply fewer; 0.5·x·(1 + erf) = h + h·erf for h = x/2, one more
  const float s = fabsf(x) * 0.84932180f, t = epi_div<kSfu>(1.0f, fmaf(0.27273748f, s, 1.0f));
  const float p = t * fmaf(fmaf(fmaf(fmaf(1.061405429f, t, -1.453152027f), t, 1.421413741f), t, -0.284496736f), t,
                           0.254829592f);
  const float h = 0.5f * x;
  return fmaf(h, copysignf(1.0f - p * epi_exp2<kSfu>(-s * s), x), h);
#elif EPI_ACT == 3  // 0.5·x·(1 + tanh(u)) = x / (1 + e^-2u): one exponential, where tanhf's branches cost registers
  return epi_div<kSfu>(x, 1.0f + epi_exp<kSfu>(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
#elif EPI_ACT == 4
  return epi_div<kSfu>(x, 1.0f + epi_exp<kSfu>(-x));  // e^-x = inf below -88: x / inf = -0, silu's limit
#else
  return x;
#endif
}

__device__ __forceinline__ float epi_load(const EpiArgs &e, long long at) {
#if EPI_D == 1
  return __uint_as_float((unsigned)__ldg(reinterpret_cast<const unsigned short *>(e.D) + at) << 16);
#elif EPI_D == 2
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(__ldg(reinterpret_cast<const unsigned short *>(e.D) + at)));
  return f;
#else
  return __ldg(reinterpret_cast<const float *>(e.D) + at);
#endif
}

// epi_apply in two steps, for a caller that walks down a column of C (not C_TRANSPOSED): the column's bias, read once
// (0 without one, or for a column past C's), then each element of the column
__device__ __forceinline__ float epi_column_bias(const EpiArgs &e, int c, bool inside) {
#if EPI_ADDEND == 1
  return inside ? epi_load(e, (long long)c * e.cs) : 0.0f;
#else
  return 0.0f;
#endif
}
__device__ __forceinline__ float epi_apply_column(const EpiArgs &e, float acc, float bias, int r, int c,
                                                  bool inside) {
  float x = e.alpha * acc;
#if EPI_ADDEND == 1
  x += bias;
#elif EPI_ADDEND == 2
  if (inside) x = fmaf(e.beta, epi_load(e, (long long)r * e.rs + (long long)c * e.cs), x);
#endif
  return epi_act<true>(x);
}

// The epilogue of the kernel's element (r, c); the caller reads D only for elements inside C (`inside`), where a
// tile's edge hangs over it.
template <bool kSfu = false>
__device__ __forceinline__ float epi_apply(const EpiArgs &e, float acc, int r, int c, bool inside = true) {
  float x = e.alpha * acc;
#if EPI_ADDEND == 1  // one value per column of C: the kernel's column, or its row where it stores the transpose
  if (inside) x += epi_load(e, C_TRANSPOSED ? (long long)r * e.rs : (long long)c * e.cs);
#elif EPI_ADDEND == 2
  if (inside) x = fmaf(e.beta, epi_load(e, (long long)r * e.rs + (long long)c * e.cs), x);
#endif
  return epi_act<kSfu>(x);
}
#endif
