// TF32 arithmetic shared by the kernels that round or split FP32 operands (tc_round.cuh, tc_transpose.cu, tc7):
// plain C++ apart from the device's cvt.rna, so the tests compile it with g++ and compare it with
// gemmlab.numerics bit for bit.
//
// A TF32 tensor core reads an FP32 operand's sign, exponent and top 10 mantissa bits and ignores the low 13: it
// truncates. cvt.rna.tf32.f32 rounds to nearest, ties away from zero; on sm_90 it is an integer add of 0x1000
// (half the range of the 13 dropped bits) to the bits of a finite value and a mask of those bits, Inf and NaN
// passing unchanged (ptxas emits exactly that: VIADD, FSETP, SEL, LOP3). An operand a tensor core reads next needs
// no mask (tf32_rna_for_mma).
#pragma once

// begin tf32 arithmetic (plain C++ on the host: the tests compile it with g++ against gemmlab.numerics)
#ifdef __CUDA_ARCH__
__host__ __device__ __forceinline__ unsigned f32_bits(float x) { return __float_as_uint(x); }
__host__ __device__ __forceinline__ float f32_from_bits(unsigned u) { return __uint_as_float(u); }
#else
__host__ __device__ __forceinline__ unsigned f32_bits(float x) {
  unsigned u;
  memcpy(&u, &x, 4);
  return u;
}
__host__ __device__ __forceinline__ float f32_from_bits(unsigned u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}
#endif
// x rounded to TF32, to nearest with ties away from zero: the device's cvt.rna.tf32.f32, and on the host the same
// bit operations ptxas emits for it.
__host__ __device__ __forceinline__ float tf32_rna(float x) {
#ifdef __CUDA_ARCH__
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#else
  unsigned u = f32_bits(x);
  if ((u & 0x7F800000u) != 0x7F800000u) u += 0x1000u;
  return f32_from_bits(u & 0xFFFFE000u);
#endif
}
// x for a TF32 tensor core's read, rounded to nearest: tf32_rna without its mask. The tensor core drops the low 13
// bits itself, so it reads tf32_rna(x) exactly, for one instruction less (Inf and NaN, where the add could carry
// into the exponent or the sign, pass unchanged).
__host__ __device__ __forceinline__ float tf32_rna_for_mma(float x) {
#ifdef __CUDA_ARCH__
  // a float compare (|x| < Inf: false for Inf and NaN) and a predicated add, where the bit test takes two more
  return fabsf(x) < __int_as_float(0x7F800000) ? __uint_as_float(__float_as_uint(x) + 0x1000u) : x;
#else
  unsigned u = f32_bits(x);
  if ((u & 0x7F800000u) != 0x7F800000u) u += 0x1000u;
  return f32_from_bits(u);
#endif
}
// The TF32 value a tensor core reads from an FP32 operand: its low 13 mantissa bits dropped.
__host__ __device__ __forceinline__ float tf32_trunc(float x) { return f32_from_bits(f32_bits(x) & 0xFFFFE000u); }
// The split of a register operand into big + small TF32 parts: big = x rounded, and the remainder x - big, which
// FP32 holds exactly (x and big are within half a TF32 ulp of each other: Sterbenz), rounded in turn. The two
// parts carry 22 bits of x: |x - big - small| <= 2^-22 |x|.
struct Tf32Split {
  float big, small;
};
__host__ __device__ __forceinline__ Tf32Split tf32_split(float x) {
  const float big = tf32_rna(x);
  return {big, tf32_rna(x - big)};
}
// The small part of an operand that stays in shared memory as stored (tc7's A): the tensor cores read its big
// part as trunc(x), and x - trunc(x) (the 13 dropped bits, exact in FP32) is rounded to TF32 beside it.
__host__ __device__ __forceinline__ float tf32_small_of_stored(float x) { return tf32_rna(x - tf32_trunc(x)); }
// end tf32 arithmetic
