// C's element type, for every tensor-core level (tc1's mma.sync and the wgmma levels' epilogue): FP32, BF16 with
// OUT_BF16=1 or FP16 with OUT_F16=1, the 16-bit types half the bytes through the epilogue. FP32 accumulators are
// rounded to nearest even, a thread's two adjacent columns packed into one 32-bit word (cvt.rn.bf16x2 / f16x2).
// Plain PTX of sm_80 and later, so tc1 includes it without the sm_90a headers.
#pragma once

#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#ifndef OUT_F16
#define OUT_F16 0
#endif
static_assert(!(OUT_BF16 && OUT_F16), "C is BF16 or FP16, not both");
#if OUT_BF16 || OUT_F16
typedef unsigned short OutT;  // BF16 or FP16 bits
#else
typedef float OutT;
#endif

// Two FP32 values rounded to nearest even into one word of two of C's 16-bit values, `lo` in the low half.
__device__ __forceinline__ unsigned pack_out(float lo, float hi) {
  unsigned v;
#if OUT_F16
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(hi), "f"(lo));  // the first source goes to the high half
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(hi), "f"(lo));
#endif
  return v;
}
// pack_out's inverse: a word of two 16-bit values of C as FP32 (exact), the low half first
__device__ __forceinline__ float2 unpack_out(unsigned w) {
#if OUT_F16
  float lo, hi;
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"((unsigned short)(w & 0xffff)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"((unsigned short)(w >> 16)));
  return make_float2(lo, hi);
#else
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
#endif
}
__device__ __forceinline__ float out_value(float *, float x) { return x; }
__device__ __forceinline__ unsigned short out_value(unsigned short *, float x) {
  unsigned short v;
#if OUT_F16
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v) : "f"(x));
#else
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(x));
#endif
  return v;
}
// begin pairs arithmetic (plain C++: the tests run it on the host)
// Whether store_pair may write at C (and at every even element from it): a pair is one 8-byte store of FP32 or one
// 4-byte word of 16-bit values, which needs a base aligned to it. A C that is a view off that (an out= a float
// into its buffer) is stored element by element.
template <typename T>
__device__ __forceinline__ bool pairs_aligned(const T *C) {
  return (reinterpret_cast<unsigned long long>(C) & (2 * sizeof(T) - 1)) == 0;
}
__device__ __forceinline__ void store_pair(float *p, float x, float y) {
  *reinterpret_cast<float2 *>(p) = make_float2(x, y);
}
// end pairs arithmetic
__device__ __forceinline__ void store_pair(unsigned short *p, float x, float y) {
  *reinterpret_cast<unsigned *>(p) = pack_out(x, y);
}
