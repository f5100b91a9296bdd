"""tc_epilogue.cuh's store_acc run on the host: the function's own text, compiled with a host C++ compiler beside a
C whose elements log each store, for each of a warpgroup's 128 threads at tiles on and past the edges of C, row-major
and transposed (C_TRANSPOSED). Every element of the tile inside C is stored exactly once, with its fragment's value,
and nothing else is: an edge guard that lets one column or row past C through (``<`` made ``<=``) stores an element
that is not the tile's."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gemmlab.kernels.cuda.launch.nvrtc import source_path

from tc_levels import host_block

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler to run the device code with")

HARNESS = r"""
#include <cstdio>
#include <vector>
#define __device__
#define __forceinline__ inline
struct { int x; } threadIdx;
struct Logged;  // an element of C that logs each store into it (its offset from C, the value)
static Logged *origin;
struct Logged {
  float v;
  Logged &operator=(float x);
};
Logged &Logged::operator=(float x) {
  std::printf("%lld %.1f\n", (long long)(this - origin), x);
  v = x;
  return *this;
}
inline float out_value(Logged *, float x) { return x; }
inline void store_pair(Logged *p, float x, float y) { p[0] = x; p[1] = y; }
struct float2 { float x, y; };  // for tc_out.cuh's FP32 store_pair beside pairs_aligned, which store_acc does not call here
inline float2 make_float2(float x, float y) { return {x, y}; }
PAIRS
struct TcArgs {};  // no fused epilogue: its per-group step does nothing, as in an EPI=0 build
template <int TN, typename D> inline void epi_group(D &, const TcArgs &, int, int, int, int, int) {}

STORE_ACC

template <int TN> void tile(int M, int N, int row0, int col0) {
  std::vector<Logged> c((size_t)(M + 80) * (N + 272));
  origin = c.data();
  for (int t = 0; t < 128; ++t) {
    threadIdx.x = t;
    float d[TN / 2];
    for (int i = 0; i < TN / 2; ++i) d[i] = 1000.0f * t + i;
    store_acc<TN>(c.data(), d, row0, col0, M, N, TcArgs{});
  }
  std::printf("end\n");
}

int main() {
  int tn, m, n, row0, col0;
  while (std::scanf("%d %d %d %d %d", &tn, &m, &n, &row0, &col0) == 5) {
    if (tn == 64) tile<64>(m, n, row0, col0); else tile<256>(m, n, row0, col0);
  }
}
"""

# (TN, M, N, row0, col0): whole tiles (the paired stores), tiles cut by the last row, the last column, both, an odd N
CASES = [(64, 128, 128, 64, 64), (64, 100, 128, 64, 0), (64, 128, 70, 0, 64), (64, 100, 70, 64, 64),
         (64, 128, 127, 0, 64), (64, 65, 65, 64, 64), (64, 1, 1, 0, 0), (256, 64, 256, 0, 0), (256, 70, 250, 64, 0),
         (256, 200, 257, 128, 256)]


def store_acc_text() -> str:
    """store_acc's definition in tc_epilogue.cuh, from its template line to its closing brace."""
    text = source_path("tc_epilogue.cuh").read_text()
    start = text.index("template <int TN, typename T>\n__device__ __forceinline__ void store_acc(")
    depth, i = 0, text.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return text[start:i]


def expected(tn, m, n, row0, col0, transposed) -> dict[int, float]:
    """Each element of the tile inside C: its offset and the value of the fragment register that holds it."""
    out = {}
    for t in range(128):
        for i in range(tn // 2):
            j, h, e = i // 4, (i % 4) // 2, i % 2
            row = row0 + 16 * (t // 32) + (t % 32) // 4 + 8 * h
            col = col0 + 2 * (t % 4) + 8 * j + e
            if row < m and col < n:
                out[col * m + row if transposed else row * n + col] = 1000.0 * t + i
    return out


@pytest.mark.parametrize("transposed", [0, 1])
def test_store_acc_stores_each_element_of_the_tile_inside_c_once_and_nothing_else(tmp_path, transposed):
    src, exe = tmp_path / "store_acc.cpp", tmp_path / "store_acc"
    src.write_text(f"#define C_TRANSPOSED {transposed}\n" + HARNESS.replace("STORE_ACC", store_acc_text()).replace(
        "PAIRS", host_block("tc_out.cuh", "pairs")))
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], input="\n".join(" ".join(map(str, c)) for c in CASES), capture_output=True,
                         text=True, check=True).stdout.split("end\n")
    for case, block in zip(CASES, out):
        stores = [line.split() for line in block.splitlines()]
        offsets = [int(o) for o, _ in stores]
        assert len(offsets) == len(set(offsets)), case  # no element stored twice
        assert {int(o): float(v) for o, v in stores} == expected(*case, transposed), case
