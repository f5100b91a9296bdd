"""Run a CUDA C++ kernel's source on the CPU, so CI can check its index math and edge handling without a GPU.

The source NVRTC compiles (local headers inlined, tile parameters as -D defines) is compiled for the host with
g++ -std=c++20 together with a small shim:
- every CUDA thread of a block is a std::thread; threadIdx and blockIdx are thread_locals, blockDim and
  gridDim globals; __syncthreads is a std::barrier over the block's threads;
- blocks run one after another on the same threads, with a barrier between them, so the threads of a block run
  concurrently and the shared memory is reused as on a GPU;
- static __shared__ arrays become function-local statics in one linker section, and the dynamic shared memory
  (`extern __shared__ T name[];`) is one 227 KiB array; both are filled with NaN before every block, so a read
  of shared memory no thread wrote in that block poisons the result;
- float4, make_float4, __ldg, fmaf, min and the qualifiers (__device__, __global__, __forceinline__,
  __launch_bounds__, __align__) get host meanings; a 128-bit access (a float4 read from or written to global
  or shared memory) of an address that is not 16-byte aligned, a fault on the GPU, is counted and reported.
- cp.async (LDGSTS) is a copy queued per thread: `cp.async.ca/cg.shared.global` joins the thread's open group
  (zero-filling past its source size, a 16-byte copy checked for alignment like a float4), `commit_group` closes
  the group, and `wait_group N` performs every closed group but the N most recent, oldest first. Nothing lands in
  shared memory before its wait, so a stage read before the wait that covers it reads the NaN the block started
  with; groups still queued when a block ends are dropped.
- split-K's ticket (atomicAdd on a u32, __threadfence) and its partials' L2 loads and stores (__ldcg, __stcg) are
  a std::atomic_ref add, a fence, plain loads and stores. A launch takes a workspace and a ticket array after K
  where the level's kernel does (HOSTSIM_WORKSPACE=1), and may run its blocks in reverse order, so that another CTA
  of a tile draws its last ticket.
Other inline PTX has no host meaning: a level whose source calls a helper that is another `asm` statement cannot
run here (see `ptx_blockers`).

Operands come from `guarded_matrix`: the data sits inside bands of a NaN with its own payload, so a load that
strays past a matrix poisons the result and a store that strays past C changes the bits of C's bands.
"""
from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

HAVE_GXX = shutil.which("g++") is not None
DYNAMIC_SMEM_BYTES = 227 * 1024  # sm_90's per-block opt-in maximum
GUARD = 16  # floats of NaN on each side of a guarded matrix
# The guard bands' NaN, with a payload of its own: a stray store, even of a NaN, changes the bits.
GUARD_BITS = np.uint32(0x7FC5EED5)

SHIM = r"""
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
thread_local uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<> *hostsim_bar;
static std::atomic<int> hostsim_misaligned{0};

// CUDA's float4 is 16-byte aligned, and a 128-bit load or store (global or shared) of an address that is not
// faults on the GPU. Every float4 copied from or assigned to memory checks its address; locals are aligned.
inline void hostsim_check16(const void *p) {
  if (reinterpret_cast<std::uintptr_t>(p) & 15) hostsim_misaligned.fetch_add(1, std::memory_order_relaxed);
}
struct alignas(16) float4 {
  float x, y, z, w;
  float4() = default;
  float4(float x_, float y_, float z_, float w_) : x(x_), y(y_), z(z_), w(w_) {}
  float4(const float4 &o) : x(o.x), y(o.y), z(o.z), w(o.w) { hostsim_check16(&o); }
  float4 &operator=(const float4 &o) {
    hostsim_check16(this);
    x = o.x, y = o.y, z = o.z, w = o.w;
    return *this;
  }
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// cp.async: per-thread groups of queued copies, performed at the wait that covers them
struct hostsim_copy { void *dst; const void *src; int bytes, src_bytes; };
thread_local std::vector<std::vector<hostsim_copy>> hostsim_groups;  // committed, oldest first
thread_local std::vector<hostsim_copy> hostsim_open;  // issued since the last commit
inline void hostsim_cp_async(void *dst, const void *src, int bytes, int src_bytes) {
  if (bytes == 16) {
    hostsim_check16(dst);
    if (src_bytes) hostsim_check16(src);
  }
  hostsim_open.push_back({dst, src, bytes, src_bytes});
}
inline void hostsim_cp_async_commit() {
  hostsim_groups.push_back(std::move(hostsim_open));
  hostsim_open.clear();
}
inline void hostsim_cp_async_wait(int pending) {
  while ((int)hostsim_groups.size() > pending) {
    for (const hostsim_copy &c : hostsim_groups.front()) {
      if (c.src_bytes) std::memcpy(c.dst, c.src, c.src_bytes);
      std::memset(static_cast<char *>(c.dst) + c.src_bytes, 0, c.bytes - c.src_bytes);
    }
    hostsim_groups.erase(hostsim_groups.begin());
  }
}
inline float4 __ldcg(const float4 *p) { return *p; }
inline void __stcg(float4 *p, float4 v) { *p = v; }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline float __ldg(const float *p) { return *p; }
inline float4 __ldg(const float4 *p) { return *p; }
inline void __syncthreads() { hostsim_bar->arrive_and_wait(); }
inline unsigned long long __cvta_generic_to_shared(const void *p) { return (unsigned long long)p; }
using std::min;
using std::max;

alignas(16) static unsigned char hostsim_dynamic_smem[HOSTSIM_DYNAMIC_SMEM];
// Every static __shared__ array lands in this section; the linker brackets it with __start_/__stop_ symbols.
__attribute__((section("hostsim_shared"), used)) static char hostsim_shared_anchor;
extern "C" char __start_hostsim_shared[], __stop_hostsim_shared[];

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __shared__ static __attribute__((section("hostsim_shared")))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

#include "kernel.inc"

#if HOSTSIM_WORKSPACE
#define HOSTSIM_ARGS C, A, B, M, N, K, static_cast<float *>(ws), static_cast<unsigned *>(tickets)
#else
#define HOSTSIM_ARGS C, A, B, M, N, K
#endif

// One launch: grid (gx, gy, gz) of blocks of (bx, by, bz) threads, the last block first with `reverse`. Returns how
// many 128-bit accesses were misaligned.
extern "C" int hostsim_run(float *C, const float *A, const float *B, int M, int N, int K,
                           unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           void *ws, void *tickets, int reverse) {
  const unsigned threads = bx * by * bz, blocks = gx * gy * gz;
  blockDim = {bx, by, bz};
  gridDim = {gx, gy, gz};
  hostsim_misaligned = 0;
  auto poison = [] {  // 0xFF bytes are a NaN float
    std::memset(hostsim_dynamic_smem, 0xFF, sizeof hostsim_dynamic_smem);
    std::memset(__start_hostsim_shared, 0xFF, __stop_hostsim_shared - __start_hostsim_shared);
  };
  std::barrier<> bar(threads);
  hostsim_bar = &bar;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=, &bar] {
      threadIdx = {t % bx, t / bx % by, t / (bx * by)};
      for (unsigned i = 0; i < blocks; ++i) {
        const unsigned b = reverse ? blocks - 1 - i : i;
        if (t == 0) poison();
        bar.arrive_and_wait();  // shared memory poisoned before any thread of the block touches it
        blockIdx = {b % gx, b / gx % gy, b / (gx * gy)};
        hostsim_groups.clear();  // copies a block left queued never land in the next one's shared memory
        hostsim_open.clear();
        HOSTSIM_ENTRY(HOSTSIM_ARGS);
        bar.arrive_and_wait();  // every thread is done with this block's shared memory
      }
    });
  for (auto &th : pool) th.join();
  return hostsim_misaligned;
}
"""

_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?(\w+)\s+(\w+)\s*\[\s*\]\s*;")
_PTX_HELPER = re.compile(r"(\w+)\s*\([^)]*\)\s*\{\s*asm\s+volatile\s*\(\s*\"([\w.]+)")
# the cp.async statements the shim runs, each as a call of its host version
_CP_ASYNC = [
    (re.compile(r'asm\s+volatile\s*\(\s*"cp\.async\.c[ag]\.shared\.global \[%0\], \[%1\], (\d+), %2;(?:\\n)?"\s*'
                r'::\s*"r"\(\s*smem_addr\((\w+)\)\s*\),\s*"l"\((\w+)\),\s*"r"\((.*?)\)\s*\);'),
     r"hostsim_cp_async(\2, \3, \1, \4);"),
    (re.compile(r'asm\s+volatile\s*\(\s*"cp\.async\.commit_group;(?:\\n)?"\s*::\s*\);'), "hostsim_cp_async_commit();"),
    (re.compile(r'asm\s+volatile\s*\(\s*"cp\.async\.wait_group %0;(?:\\n)?"\s*::\s*"n"\((\w+)\)\s*\);'),
     r"hostsim_cp_async_wait(\1);"),
]
SHIMMED_PTX = ("cp.async.ca.shared.global", "cp.async.cg.shared.global", "cp.async.commit_group",
               "cp.async.wait_group")


def kernel_source(source: str) -> str:
    """The text NVRTC compiles for `source` (a file under kernels/cuda/), local headers inlined."""
    from gemmlab.kernels.cuda.launch.nvrtc import _read_source

    return _read_source(source)


def host_source(text: str) -> str:
    """`text` with each `extern __shared__ T name[];` turned into a pointer to the shim's dynamic shared array
    (a static local cannot be `extern`), and each cp.async statement a call of the shim's; nothing else changes."""
    for pattern, replacement in _CP_ASYNC:
        text = pattern.sub(replacement, text)
    return _EXTERN_SHARED.sub(
        lambda m: f"{m.group(1)} *const {m.group(2)} = reinterpret_cast<{m.group(1)} *>(hostsim_dynamic_smem);", text)


def ptx_blockers(source: str) -> list[str]:
    """What keeps `source` (a level's .cu file under kernels/cuda/) off the host: the helpers whose body is an
    inline PTX `asm` statement that the level's own text calls, directly or through a struct of its headers, as
    'name (instruction)'. Empty when the level can run here."""
    from gemmlab.kernels.cuda.launch.nvrtc import source_path

    text = kernel_source(source)
    own = source_path(source).read_text()
    helpers = {name: instr for name, instr in _PTX_HELPER.findall(text) if instr not in SHIMMED_PTX}

    def calls(body: str, name: str) -> bool:
        return re.search(rf"\b{name}\b", body) is not None

    found = [f"{name} ({instr})" for name, instr in helpers.items() if calls(own, name)]
    for struct in re.finditer(r"^\s*struct (\w+)", text, flags=re.M):
        end = text.find("\n};", struct.end())
        body = text[struct.end():end if end >= 0 else len(text)]
        inner = [f"{name} ({instr})" for name, instr in helpers.items() if calls(body, name)]
        if inner and calls(own, struct.group(1)):
            found.append(f"{struct.group(1)}'s {', '.join(inner)}")
    return found


class HostBuilds:
    """Host libraries built once per (kernel text, entry, defines) for the session; `directory` holds them."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._libs: dict[str, ctypes.CDLL] = {}

    def library(self, text: str, entry: str, defines: dict) -> ctypes.CDLL:
        flags = [f"-D{k}={v}" for k, v in sorted(defines.items())]
        flags += [f"-DHOSTSIM_ENTRY={entry}", f"-DHOSTSIM_DYNAMIC_SMEM={DYNAMIC_SMEM_BYTES}"]
        body = host_source(text)
        key = hashlib.sha256("\0".join([SHIM, body, *flags]).encode()).hexdigest()[:20]
        if key not in self._libs:
            work = self.directory / key
            work.mkdir(parents=True, exist_ok=True)
            (work / "kernel.inc").write_text(body)
            (work / "run.cpp").write_text(SHIM)
            lib = work / "kernel.so"
            done = subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", *flags,
                                   str(work / "run.cpp"), "-o", str(lib)], capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"g++ could not build {entry} {defines} for the host:\n{done.stderr[-4000:]}")
            cdll = ctypes.CDLL(str(lib))
            cdll.hostsim_run.restype = ctypes.c_int
            cdll.hostsim_run.argtypes = ([ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_uint] * 6
                                         + [ctypes.c_void_p] * 2 + [ctypes.c_int])
            self._libs[key] = cdll
        return self._libs[key]


_builds: HostBuilds | None = None


def use_build_dir(directory: Path) -> HostBuilds:
    """Where this session's host libraries go (a session fixture passes a tmp_path_factory directory). Called
    again, it keeps the libraries already built."""
    global _builds
    if _builds is None:
        _builds = HostBuilds(directory)
    return _builds


@pytest.fixture(scope="session")
def host_builds(tmp_path_factory) -> HostBuilds:
    """The session's host libraries, under pytest's temporary directory."""
    return use_build_dir(tmp_path_factory.mktemp("hostsim"))


def run_on_host(spec, problem, A: np.ndarray, B: np.ndarray, C: np.ndarray, *, source_text: str | None = None,
                b_kmajor: bool = False, reverse_blocks: bool = False) -> None:
    """Launch `spec`'s kernel on the CPU for `problem`: C = A·B with the spec's defines and launch geometry.
    A, B and C are C-contiguous float32 (M×K, K×N, M×N; with `b_kmajor`, B is the N×K Bᵀ and the spec's build for
    that layout runs), placed as the caller wants (misaligned ones too). `source_text` replaces the source file's
    text (a deliberately broken variant, say). A split-K level (one with a ``split_plan``) gets its workspace, NaN
    (a partial read before it was written poisons C), and its tickets at zero, which must be back at zero after the
    launch; `reverse_blocks` runs the grid's blocks last first."""
    if _builds is None:
        raise RuntimeError("hostsim.use_build_dir() was not called: no directory for the host builds")
    spec = spec.for_problem(problem)  # a per-shape kernel's defines and geometry must come from one choice
    if b_kmajor:
        from gemmlab.kernels.plan import COL, Layout

        spec = spec.for_layout(Layout(b=COL))
    m, n, k = problem.shape
    for x, shape in ((A, (m, k)), (B, (n, k) if b_kmajor else (k, n)), (C, (m, n))):
        assert x.dtype == np.float32 and x.flags.c_contiguous and x.shape == shape, (x.dtype, x.shape, shape)
    geo = spec.launch_geometry(problem)
    if geo.smem > DYNAMIC_SMEM_BYTES:
        raise ValueError(f"{spec.name} asks for {geo.smem} bytes of dynamic shared memory, past {DYNAMIC_SMEM_BYTES}")
    text = kernel_source(spec.source) if source_text is None else source_text
    split = spec.split_plan(problem) if hasattr(spec, "split_plan") else None
    ws = np.full(max(4, split.workspace_bytes // 4 if split else 4), np.nan, np.float32)
    tickets = np.zeros(max(1, split.tiles if split else 1), np.uint32)
    lib = _builds.library(text, spec.entry, {**spec.defines(), "HOSTSIM_WORKSPACE": int(split is not None)})
    misaligned = lib.hostsim_run(C.ctypes.data, A.ctypes.data, B.ctypes.data, m, n, k, *geo.grid, *geo.block,
                                 ws.ctypes.data, tickets.ctypes.data, int(reverse_blocks))
    if misaligned:
        raise AssertionError(f"{spec.name} made {misaligned} 128-bit accesses to addresses not 16-byte aligned")
    if tickets.any():
        raise AssertionError(f"{spec.name}: tickets left at {sorted(set(tickets.tolist()))} after the launch, not "
                             "set back to zero for the next")


def guarded_matrix(rng: np.random.Generator, rows: int, cols: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(raw, view): N(0,1) float32 rows×cols (view) whose data starts `offset` floats past a 16-byte boundary
    inside `raw`. GUARD floats before it and GUARD + rows·cols after it hold the GUARD_BITS NaN, so a load that
    strays outside the matrix poisons the result, and a store past C's end (an unguarded edge tile writes up to
    about a tile's worth of rows past it) lands in the band, where it is seen, not in someone else's memory."""
    raw = np.full(2 * (rows * cols + GUARD) + 4, GUARD_BITS, np.uint32).view(np.float32)
    start = (-raw.ctypes.data // 4) % 4 + GUARD + offset
    view = raw[start:start + rows * cols].reshape(rows, cols)
    view[...] = rng.standard_normal((rows, cols), dtype=np.float32)
    return raw, view


def check_gemm_on_host(spec, problem, offset: int, seed: int = 0, *, source_text: str | None = None,
                       tol: float = 1e-5, b_kmajor: bool = False, reverse_blocks: bool = False) -> np.ndarray:
    """Run `spec` on guarded operands (data `offset` floats past a 16-byte boundary; with `b_kmajor`, B stored as
    the N×K Bᵀ; `reverse_blocks`: see run_on_host) and assert: relative error under `tol` against float64, every
    element of C written (C starts as NaN), and no store outside C. Returns a copy of C."""
    m, n, k = problem.shape
    rng = np.random.default_rng(seed)
    _, a = guarded_matrix(rng, m, k, offset)
    _, b = guarded_matrix(rng, *((n, k) if b_kmajor else (k, n)), offset)
    c_raw, c = guarded_matrix(rng, m, n, offset)
    c[...] = np.nan
    run_on_host(spec, problem, a, b, c, source_text=source_text, b_kmajor=b_kmajor, reverse_blocks=reverse_blocks)
    b = b.T if b_kmajor else b
    start = (c.ctypes.data - c_raw.ctypes.data) // 4
    outside = np.ones(c_raw.shape, bool)
    outside[start:start + m * n] = False
    strays = np.flatnonzero((c_raw.view(np.uint32) != GUARD_BITS) & outside)
    assert strays.size == 0, (f"{spec.name} {problem.shape}: {strays.size} stores landed outside C, element offsets "
                              f"{strays[0] - start} to {strays[-1] - start} from C's first")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.linalg.norm(c - ref) / np.linalg.norm(ref)  # NaN when an element was unwritten or read a guard band
    assert err < tol, f"{spec.name} {problem.shape} offset {offset}: relative error {err}"
    return c.copy()
