// Triton 3.6's warp_specialize start and exit, as it compiles them for sm_90a (ConvertWarpSpecializeToLLVM), with
// nothing of a GEMM around them: what compute-sanitizer racecheck makes of the protocol alone. ws_racecheck.py
// builds it with each part switched on or off by the defines below and says what each variant tests.
//
// The protocol, for warps 0..DEFAULT_WARPS-1 (the default partition) and WORKER_WARPS worker warps after them:
//   default: setmaxnreg.inc REG_DEFAULT; [own barrier and mbarrier init]; store one state byte per worker warp
//            (its partition) in shared memory at STATE; barrier.sync 1 (start); setmaxnreg.dec REG_DEFAULT_PART;
//            barrier.sync 1; its partition; barrier.sync 1 (end); setmaxnreg.inc REG_DEFAULT; [own barrier,
//            mbarrier inval]; store the exit state (PARTS) in every byte; barrier.sync 1; return.
//   worker:  loop { setmaxnreg.dec REG_LOW; barrier.sync 1; load its state byte; no partition's: barrier.sync 1
//            twice; exit state: return; partition p: setmaxnreg to its count; barrier.sync 1; its body;
//            barrier.sync 1; setmaxnreg back to REG_LOW }
// Each partition's entry and exit barriers are their own instructions (Triton splices each partition's region into
// the switch loop), so the workers reach barrier 1 from as many PCs as there are partitions.
//
// Defines: REGS (setmaxnreg at Triton's places, or none), WIDE (the state bytes stored as 32-bit words, as LLVM
// merges Triton's byte stores, or one byte each), OWN_BAR (the default partition's own barrier, bar.sync OWN_BAR_ID
// over its threads, where Triton lowers its thread barriers: after the mbarrier init, in the partition, before the
// exit), MBAR (an mbarrier before the state: the default arrives on it in its partition, partition 0 waits on it),
// STATES (each worker warp's partition, of PARTS), PART_REGS (each partition's registers), WORKER_BAR (the workers
// meet a barrier of their own, bar.sync 3 over their threads, as often as the default partition meets its own
// between the same barrier.sync 1: at the loop head and in the partition; one partition only). ENTRY names the
// kernel, so that racecheck's report names the variant.
#ifndef ENTRY
#define ENTRY ws_protocol
#endif
#ifndef DEFAULT_WARPS
#define DEFAULT_WARPS 8
#endif
#ifndef WORKER_WARPS
#define WORKER_WARPS 4
#endif
#ifndef PARTS
#define PARTS 3
#endif
#ifndef STATES
#define STATES 1, 1, 0, 2
#endif
#ifndef PART_REGS
#define PART_REGS 40, 40, 40
#endif
#ifndef STATE
#define STATE 196784
#endif
#ifndef REGS
#define REGS 1
#endif
#ifndef REG_DEFAULT
#define REG_DEFAULT 240
#endif
#ifndef REG_DEFAULT_PART
#define REG_DEFAULT_PART 232
#endif
#ifndef REG_LOW
#define REG_LOW 24
#endif
#ifndef WIDE
#define WIDE 1
#endif
#ifndef OWN_BAR
#define OWN_BAR 1
#endif
#ifndef OWN_BAR_ID
#define OWN_BAR_ID 0
#endif
#ifndef MBAR
#define MBAR 1
#endif
#ifndef WORKER_BAR
#define WORKER_BAR 0
#endif

#define DEFAULT_THREADS (DEFAULT_WARPS * 32)
#define EXIT_STATE PARTS
#define MBAR_AT (STATE - 8)  // Triton's state bytes follow the level's mbarriers

static_assert(WORKER_WARPS % 4 == 0, "registers are handed out a warpgroup at a time");
static_assert(PARTS >= 1 && PARTS <= 5, "the switch below has five partitions");
static_assert(!WORKER_BAR || PARTS == 1, "the workers' own barrier counts every worker thread");

static_assert(STATE % 16 == 0 && (!MBAR || STATE >= 8), "the state bytes (and the mbarrier before them)");

template <class... T> __host__ __device__ constexpr int count_of(T...) { return sizeof...(T); }
static_assert(count_of(STATES) == WORKER_WARPS && count_of(PART_REGS) == PARTS,
              "a state a worker warp, registers a partition");
constexpr int kPartRegs[] = {PART_REGS};

// a worker warp's partition, as Triton's start states say (a constant wherever the stores use it)
__host__ __device__ constexpr unsigned state_of(int w) {
  constexpr unsigned char states[] = {STATES};
  return states[w];
}

extern __shared__ __align__(16) unsigned char smem[];

__device__ __forceinline__ unsigned smem_at(unsigned offset) {
  return static_cast<unsigned>(__cvta_generic_to_shared(smem)) + offset;
}

// barrier.sync 1 with no count: every thread of the CTA (Triton's barrier.cta.sync.all 1)
__device__ __forceinline__ void switch_bar() { asm volatile("barrier.sync 1;" ::: "memory"); }

__device__ __forceinline__ void own_bar() {
#if OWN_BAR
  asm volatile("bar.sync %0, %1;" ::"n"(OWN_BAR_ID), "n"(DEFAULT_THREADS) : "memory");
#endif
}

__device__ __forceinline__ void worker_bar() {
#if WORKER_BAR
  asm volatile("bar.sync 3, %0;" ::"n"(WORKER_WARPS * 32) : "memory");
#endif
}

// setmaxnreg from FROM registers to TO, as Triton's createRegRealloc: fewer is a dec, else an inc
template <int FROM, int TO> __device__ __forceinline__ void regs_set() {
#if REGS
  if (TO < FROM) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(TO));
  else asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(TO));
#endif
}

template <int N> __device__ __forceinline__ void regs_inc() {
#if REGS
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

template <int N> __device__ __forceinline__ void regs_dec() {
#if REGS
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

__device__ __forceinline__ void mbar_init() {
#if MBAR
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_at(MBAR_AT)) : "memory");
#endif
}

__device__ __forceinline__ void mbar_arrive() {
#if MBAR
  if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_at(MBAR_AT)) : "memory");
#endif
}

__device__ __forceinline__ void mbar_wait() {
#if MBAR
  asm volatile(
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra.uni wait;\n}" ::"r"(smem_at(MBAR_AT))
      : "memory");
#endif
}

__device__ __forceinline__ void mbar_inval() {
#if MBAR
  if (threadIdx.x == 0) asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_at(MBAR_AT)) : "memory");
#endif
}

// every thread of the default partition stores the states, as Triton's lowering does (no thread is singled out)
template <bool EXIT> __device__ __forceinline__ void store_states() {
#if WIDE
#pragma unroll
  for (int i = 0; i < WORKER_WARPS; i += 4) {
    unsigned word = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) word |= (EXIT ? EXIT_STATE : state_of(i + b)) << (8 * b);
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(smem_at(STATE + i)), "r"(word) : "memory");
  }
#else
#pragma unroll
  for (int i = 0; i < WORKER_WARPS; ++i) {
    const unsigned short state = EXIT ? EXIT_STATE : state_of(i);
    asm volatile("st.shared.u8 [%0], %1;" ::"r"(smem_at(STATE + i)), "h"(state) : "memory");
  }
#endif
}

// a worker partition: its own entry and exit barriers; partition 0 waits on the default partition's mbarrier, and
// each writes its id where the host reads which partition every warp ran
template <int P> __device__ __forceinline__ void partition(int *ran, unsigned w) {
  constexpr int regs = kPartRegs[P < PARTS ? P : 0];
  regs_set<REG_LOW, regs>();
  switch_bar();
  if (P == 0) mbar_wait();
  worker_bar();
  if (threadIdx.x % 32 == 0) ran[w] = P;
  switch_bar();
  regs_set<regs, REG_LOW>();
}

// out: [0] 1 once the default partition ran, [1 + w] the partition worker warp w ran, [1 + WORKER_WARPS + 2 w + r]
// the state it read in round r (its partition, then the exit state)
extern "C" __global__ void __launch_bounds__((DEFAULT_WARPS + WORKER_WARPS) * 32, 1) ENTRY(int *out) {
  const unsigned warp = __shfl_sync(0xffffffff, threadIdx.x / 32, 0);  // warp-uniform, as Triton tells ptxas
  if (warp < DEFAULT_WARPS) {
    regs_inc<REG_DEFAULT>();
    mbar_init();
    own_bar();
    store_states<false>();
    switch_bar();  // start: releases the workers
    regs_dec<REG_DEFAULT_PART>();
    switch_bar();  // the workers have read their states
    own_bar();
    mbar_arrive();
    if (threadIdx.x == 0) out[0] = 1;
    switch_bar();  // end: every partition is done
    regs_inc<REG_DEFAULT>();
    own_bar();
    mbar_inval();
    store_states<true>();
    switch_bar();  // exit
    return;
  }
  const unsigned w = warp - DEFAULT_WARPS;
  for (int round = 0;; ++round) {
    regs_dec<REG_LOW>();
    worker_bar();
    switch_bar();
    unsigned short state;
    asm volatile("ld.shared.u8 %0, [%1];" : "=h"(state) : "r"(smem_at(STATE + w)) : "memory");
    if (threadIdx.x % 32 == 0 && round < 2) out[1 + WORKER_WARPS + 2 * w + round] = state;
    if (state > EXIT_STATE) {  // Triton's default destination, for a warp no partition holds (none here)
      switch_bar();
      switch_bar();
      continue;
    }
    if (state == EXIT_STATE) return;
    switch (state) {
      case 0: partition<0>(out + 1, w); break;
      case 1: if (PARTS > 1) partition<1>(out + 1, w); break;
      case 2: if (PARTS > 2) partition<2>(out + 1, w); break;
      case 3: if (PARTS > 3) partition<3>(out + 1, w); break;
      case 4: if (PARTS > 4) partition<4>(out + 1, w); break;
    }
  }
}

// the control: the same states handed over and read back across __syncthreads() at one PC for every warp, where
// racecheck's model of a barrier is the plainest
extern "C" __global__ void __launch_bounds__((DEFAULT_WARPS + WORKER_WARPS) * 32, 1) control(int *out) {
  const unsigned warp = threadIdx.x / 32;
  const bool worker = warp >= DEFAULT_WARPS;
  const unsigned w = warp - DEFAULT_WARPS;
  if (!worker) store_states<false>();
  __syncthreads();
  unsigned short start = 0, exit = 0;
  if (worker) asm volatile("ld.shared.u8 %0, [%1];" : "=h"(start) : "r"(smem_at(STATE + w)) : "memory");
  __syncthreads();
  if (!worker) store_states<true>();
  __syncthreads();
  if (worker) asm volatile("ld.shared.u8 %0, [%1];" : "=h"(exit) : "r"(smem_at(STATE + w)) : "memory");
  if (worker && threadIdx.x % 32 == 0) {
    out[1 + w] = start;
    out[1 + WORKER_WARPS + 2 * w] = start;
    out[1 + WORKER_WARPS + 2 * w + 1] = exit;
  }
  if (threadIdx.x == 0) out[0] = 1;
}
