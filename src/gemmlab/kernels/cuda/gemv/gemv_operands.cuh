// What the gemv levels share: the operand and C types their defines select, and the loads and stores of them.
// IN_FP32 / IN_BF16 / IN_FP8 select the operand type (FP8: A_E5M2 and B_E5M2 pick the formats; SCALED: 1 one FP32
// scale per operand, 2 block scales); OUT_BF16 writes BF16 C, else FP32.
#pragma once
#ifndef IN_FP32
#define IN_FP32 0
#endif
#ifndef IN_BF16
#define IN_BF16 0
#endif
#ifndef IN_FP8
#define IN_FP8 0
#endif
#ifndef A_E5M2
#define A_E5M2 0
#endif
#ifndef B_E5M2
#define B_E5M2 0
#endif
#ifndef SCALED
#define SCALED 0
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
static_assert(IN_FP32 + IN_BF16 + IN_FP8 == 1, "exactly one operand type");
static_assert(SCALED == 0 || IN_FP8, "scales belong to FP8 operands");

typedef unsigned int u32;
typedef unsigned short u16;
#if IN_FP32
typedef float InT;
#elif IN_BF16
typedef u16 InT;
#else
typedef unsigned char InT;
#endif
constexpr int VEC = 16 / sizeof(InT);  // elements per 16-byte chunk
#if OUT_BF16
typedef u16 OutT;
#else
typedef float OutT;
#endif

// The chunk of row `row` (of `cols` elements) starting at element k: one 16-byte load where rows are 16-byte
// aligned (`aligned`), else element by element with zeros past the row's end.
__device__ __forceinline__ uint4 chunk(const InT *row, int k, int cols, bool aligned) {
  if (aligned) return __ldg(reinterpret_cast<const uint4 *>(row + k));
  InT e[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) e[i] = k + i < cols ? row[k + i] : (InT)0;
  uint4 v;
  memcpy(&v, e, 16);
  return v;
}

__device__ __forceinline__ void store(float *p, float x) { *p = x; }
__device__ __forceinline__ void store(u16 *p, float x) {
  u16 v;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(x));
  *p = v;
}
