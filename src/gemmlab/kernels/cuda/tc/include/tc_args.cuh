// The one parameter of every wgmma level (tc2..tc6), passed by value as a __grid_constant__ struct: the tensor maps
// live in the kernel's parameter space, where TMA reads them, and the host changes an operand's address by
// cuTensorMapReplaceAddress on its copy of the struct before the launch, instead of encoding maps and copying them
// to global memory. The host mirrors these layouts field for field (TC_ARGS and FP8_ARGS in _tc_plan.py; the tests
// compile this header with g++ and compare the offsets).
#pragma once
#ifndef __CUDACC__
#define __align__(n) alignas(n)
#endif
#include "epilogue.cuh"

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, encoded by the host (cuTensorMapEncodeTiled).
struct __align__(64) TmaMap {
  unsigned long long opaque[16];
};

struct TcArgs {
  TmaMap a, b, c;                // A, B (or Bᵀ), and C for the TMA-store epilogue (EPI_TMA builds, c_tma = 1)
  float *C;                      // row-major M x N
  int M, N, K;
  int c_tma;                     // 1: store C through map c
  float *sk_ws;                  // STREAM_K: one BM x BN FP32 partial per CTA
  unsigned *sk_flags;            // STREAM_K: one arrival count per tile
  unsigned long long *timeline;  // TIMELINE: the clock stamps gemmlab timeline reads
#if EPI
  EpiArgs epi;                   // the fused epilogue's addend and constants (epilogue.cuh)
#endif
};

// The FP8 levels' parameter (tc4 with TC_FP8=1, tc8): TcArgs, then the scales' addresses, set per call (gemmlab.fp8
// has the layouts). Derived, so the kernels name the shared fields as in TcArgs. A POD base keeps its tail padding,
// so the scales start at sizeof(TcArgs), where the host's nested struct (FP8_ARGS) puts them. C holds the address of
// BF16 C where the kernel writes BF16 (OUT_BF16).
struct Fp8Args : TcArgs {
  const float *scale_a;  // per tensor: one float; per 1x128 (tc8): ceil(K/128) x M, row-major
  const float *scale_b;  // per tensor: one float; per 128x128 (tc8): ceil(N/128) x ceil(K/128), row-major
  TmaMap sa, sb;         // tc8 with SCALE_TMA 1 or 2: the block scales as 1-D maps (the host encodes them per plan)
};

// The batched builds' parameter (BATCHED=1, tc4): TcArgs, then the batch. A and B are rank-3 maps (the matrix the
// outermost coordinate, each operand's batch stride in its map); an operand broadcast over the batch (stride 0) keeps
// one matrix, a_batched or b_batched 0, and its coordinate stays 0. C is the contiguous (batch, M, N) array, stored as
// the (batch·M) x N matrix it is (C's map too): a product's rows start at its index times M.
struct BatchArgs : TcArgs {
  int batch;
  int a_batched, b_batched;  // 1: the operand's coordinate is the product's index; 0: broadcast
};
