"""tc5: Cᵀ = Bᵀ·Aᵀ with B's fragments from registers, checked against the host's model of its fragment map."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import source_path
from gemmlab.kernels.cuda.tc.model.budget import stage_bytes
from gemmlab.kernels.cuda.tc.model.kernel import PRE_PASS
from gemmlab.problem import Problem

from tc_levels import HOST_SHIM, TC5, host_block

# the A_IN_REGS variant as it runs: x in registers, w through TF32_ROUND=3's pre-pass (the registered builds' maps
# round both operands, TMA_ROUND, and leave no pre-pass for the exchange to shrink)
A_IN_REGS = {"A_IN_REGS": 1, **PRE_PASS}


# ---- tc5: Cᵀ = Bᵀ·Aᵀ with B's fragments from registers ------------------------------------------------------


def _frag_col(cw: int, w: int, g: int) -> int:
    """tc5's frag_col: the tile column of fragment row g (row g + 8 is the next column) of warp w, warpgroup cw."""
    return 64 * cw + 32 * (w // 2) + 8 * (w % 2) + 2 * (g % 2) + 16 * ((g // 2) % 2) + 4 * (g // 4)


def _b_offset(k: int, c: int) -> int:
    """tc5's b_offset without the A tile: byte offset of B (K row k, tile column c) in 128B-swizzled 32-column
    boxes of BK = 32 rows (TMA's 128-byte swizzle: 16-byte chunk j of row k lands at chunk j ^ (k % 8))."""
    cc = c % 32
    return (c // 32) * 32 * 128 + k * 128 + ((((cc >> 2) ^ (k & 7)) << 4) | ((cc & 3) * 4))


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_tc5_fragment_map_matches_device(tmp_path):
    """tc_swap.cuh's fragment arithmetic (frag_col, b_offset, SwapThread) compiled on the host: every consumer
    thread of tc5's tile gets the column and B offsets of the Python model above, which the tests below check for
    coverage, bank conflicts and whole sectors."""
    bm, bn = TC5.params["BM"], TC5.params["BN"]
    main = r"""
#include <cstdio>
int main() {
  for (int k = 0; k < 32; ++k)
    for (int c = 0; c < BN; ++c) printf("B %d %d %u\n", k, c, b_offset(k, c) - A_TILE_BYTES);
  for (int tid = 128; tid < 128 * (CW + 1); ++tid) {
    const SwapThread me(tid, tid / 128);
    printf("T %d %d %d %d %u %u\n", tid, me.cw, me.t, me.col, me.lo - A_TILE_BYTES, me.hi - A_TILE_BYTES);
  }
}
"""
    src = tmp_path / "frag.cpp"
    src.write_text("typedef unsigned u32;\n" + "".join(
        line + "\n" for line in source_path("tc_swap.cuh").read_text().splitlines()
        if line.startswith(("#define CW", "#define B_BOX_COLS", "#define B_BOX_TILE_BYTES")))
                   + host_block("tc_swap.cuh", "fragment") + main)
    exe = tmp_path / "frag"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, f"-DBM={bm}",
                    f"-DBN={bn}", "-DBK=32", f"-DA_TILE_BYTES={bm * 128}", "-o", str(exe), str(src)], check=True)
    rows = [line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                     check=True).stdout.splitlines()]
    offsets = [r for r in rows if r[0] == "B"]
    assert len(offsets) == 32 * bn
    for _, k, c, off in offsets:
        assert int(off) == _b_offset(int(k), int(c)), (k, c)
    threads = [tuple(map(int, r[1:])) for r in rows if r[0] == "T"]
    assert len(threads) == 128 * (bn // 64)
    for tid, cw, t, col, lo, hi in threads:
        w, g = (tid // 32) % 4, (tid % 32) // 4
        assert (cw, t, col) == (tid // 128 - 1, tid % 4, _frag_col(tid // 128 - 1, w, g)), tid
        assert (lo, hi) == (_b_offset(t, col), _b_offset(t + 4, col)), tid


def _kmajor_frag_col(cw: int, w: int, g: int) -> int:
    """SWAP_B_KMAJOR's frag_col: fragment row g is column 16w + g of warpgroup cw's 64 (row g + 8: 8 columns on)."""
    return 64 * cw + 16 * w + g


def _kmajor_b_offset(k: int, c: int) -> int:
    """SWAP_B_KMAJOR's b_offset without the A tile: row c of the BN-row box of Bᵀ, 128 bytes of K, TMA's 128-byte
    swizzle (16-byte chunk j of row c at chunk j ^ (c % 8))."""
    return c * 128 + ((((k >> 2) ^ (c & 7)) << 4) | ((k & 3) * 4))


def _host_fragments(tmp_path, kmajor: int, main: str, defines=(), args=()) -> list[list[str]]:
    """tc_swap.cuh's fragment arithmetic compiled on the host at tc5's tile, with SWAP_B_KMAJOR=kmajor and
    ``defines``, running ``main`` (which may add more of the header's host blocks) with ``args``; its output lines
    split into words."""
    bm, bn = TC5.params["BM"], TC5.params["BN"]
    src = tmp_path / "frag.cpp"
    src.write_text("typedef unsigned u32;\n" + "".join(
        line + "\n" for line in source_path("tc_swap.cuh").read_text().splitlines()
        if line.startswith(("#define CW", "#define B_BOX_COLS", "#define B_BOX_TILE_BYTES", "#define FRAG_PAIR")))
                   + host_block("tc_swap.cuh", "fragment") + main)
    exe = tmp_path / "frag"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, f"-DBM={bm}",
                    f"-DBN={bn}", "-DBK=32", f"-DA_TILE_BYTES={bm * 128}", f"-DSWAP_B_KMAJOR={kmajor}", *defines,
                    "-o", str(exe), str(src)], check=True)
    return [line.split() for line in subprocess.run([str(exe), *args], capture_output=True, text=True,
                                                    check=True).stdout.splitlines()]


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_tc5_kmajor_fragment_map_matches_device(tmp_path):
    """SWAP_B_KMAJOR=1 (B handed over as the N×K Bᵀ): every consumer thread's column, and the offset of each of its
    four values per k8 step (kmajor_frag_offset from lo), are the Python model's: (column c or c + 8, K row
    8kk + t or 8kk + t + 4) in the swizzled box of Bᵀ."""
    bn = TC5.params["BN"]
    rows = _host_fragments(tmp_path, 1, r"""
#include <cstdio>
int main() {
  for (int k = 0; k < 32; ++k)
    for (int c = 0; c < BN; ++c) printf("B %d %d %u\n", k, c, b_offset(k, c) - A_TILE_BYTES);
  for (int tid = 128; tid < 128 * (CW + 1); ++tid) {
    const SwapThread me(tid, tid / 128);
    for (int kk = 0; kk < 4; ++kk)
      for (int i = 0; i < 4; ++i)
        printf("T %d %d %d %d %d %d %u\n", tid, me.cw, me.t, me.col, kk, i,
               kmajor_frag_offset(me.lo, kk, i / 2, i % 2) - A_TILE_BYTES);
  }
}
""")
    offsets = [r for r in rows if r[0] == "B"]
    assert len(offsets) == 32 * bn
    for _, k, c, off in offsets:
        assert int(off) == _kmajor_b_offset(int(k), int(c)), (k, c)
    values = [tuple(map(int, r[1:])) for r in rows if r[0] == "T"]
    assert len(values) == 128 * (bn // 64) * 16
    for tid, cw, t, col, kk, i, off in values:
        w, g = (tid // 32) % 4, (tid % 32) // 4
        assert (cw, t, col) == (tid // 128 - 1, tid % 4, _kmajor_frag_col(tid // 128 - 1, w, g)), tid
        # a[kk][i]: (row g, k t), (row g + 8, k t), (row g, k t + 4), (row g + 8, k t + 4)
        assert off == _kmajor_b_offset(8 * kk + t + 4 * (i // 2), col + 8 * (i % 2)), (tid, kk, i)


def test_tc5_kmajor_fragment_columns_cover_the_tile_once():
    cols = sorted(_kmajor_frag_col(cw, w, g) + e for cw in range(2) for w in range(4) for g in range(8)
                  for e in (0, 8))
    assert cols == list(range(TC5.params["BN"]))


def test_tc5_kmajor_fragment_loads_are_bank_conflict_free():
    """SWAP_B_KMAJOR=1: each 4-byte load of a warp (one of a thread's four values of a k8 step) touches each of the
    32 banks once."""
    for cw in range(2):
        for w in range(4):
            for kk in range(4):
                for h in (0, 1):
                    for pair in (0, 8):
                        banks = [_kmajor_b_offset(8 * kk + lane % 4 + 4 * h, _kmajor_frag_col(cw, w, lane // 4) + pair)
                                 // 4 % 32 for lane in range(32)]
                        assert sorted(banks) == list(range(32)), (cw, w, kk, h, pair)


def test_tc5_kmajor_stores_fill_whole_sectors():
    """SWAP_B_KMAJOR=1: one 4-byte store instruction of a warp (fixed j, v, column c or c + 8) writes 4 C rows x 8
    consecutive columns: 4 whole 32-byte sectors."""
    n = 4096
    for w in range(4):
        for pair in (0, 8):
            sectors = {(((2 * (lane % 4)) * n + _kmajor_frag_col(0, w, lane // 4) + pair) * 4) // 32
                       for lane in range(32)}
            assert len(sectors) * 32 == 32 * 4


def test_tc5_fragment_columns_cover_the_tile_once():
    cols = sorted(_frag_col(cw, w, g) + e for cw in range(2) for w in range(4) for g in range(8) for e in (0, 1))
    assert cols == list(range(TC5.params["BN"]))


def test_tc5_fragment_loads_are_bank_conflict_free():
    """Each half-warp's ld.shared.v2 (lanes 0-15, 16-31) touches each of the 32 banks once, for every k8 step."""
    for cw in range(2):
        for w in range(4):
            for k in range(32):
                if k % 8 >= 4:
                    continue  # thread t reads rows 8s + t and 8s + t + 4: k is the first of the pair
                for half in (0, 1):
                    banks = []
                    for lane in range(16 * half, 16 * half + 16):
                        g, t = lane // 4, lane % 4
                        for row in (k - k % 8 + t, k - k % 8 + t + 4):
                            off = _b_offset(row, _frag_col(cw, w, g))
                            assert off % 8 == 0  # 8-byte aligned: columns c, c + 1 in one ld.shared.v2
                        off = _b_offset(k - k % 8 + t + (k % 8 // 4) * 4, _frag_col(cw, w, g))
                        banks += [off // 4 % 32, off // 4 % 32 + 1]
                    assert sorted(banks) == list(range(32)), (cw, w, k, half)


def test_tc5_stores_fill_whole_sectors():
    """One float2 store instruction of a warp (fixed j, v) writes 4 C rows x 16 columns: 8 whole 32-byte sectors."""
    n = 4096
    for w in range(4):
        sectors, written = set(), 0
        for lane in range(32):
            g, t = lane // 4, lane % 4
            addr = ((2 * t) * n + _frag_col(0, w, g)) * 4
            sectors |= {addr // 32, (addr + 7) // 32}
            written += 8
        assert len(sectors) * 32 == written == 256


def test_tc5_operands_as_given_no_transpose():
    p = Problem(1000, 520, 200, "tf32")
    a, b = TC5.operand_maps(p, lda=200, ldb=520)
    assert (a.rows, a.cols, a.box_rows, a.box_cols) == (1000, 200, 256, 32)  # A: M rows of K, all BM rows
    assert (b.rows, b.cols, b.box_rows, b.box_cols) == (200, 520, 32, 32)  # B: K rows of N, 32-column boxes
    assert a.box_bytes + TC5.params["BN"] // 32 * b.box_bytes == stage_bytes(256, 128)
    import dataclasses

    cn2 = dataclasses.replace(TC5, params={**TC5.params, "CN": 2})
    a2, _ = cn2.operand_maps(p, lda=200, ldb=520)
    assert a2.box_rows == 128  # each CTA of the cluster loads and multicasts half of A's rows
    assert cn2.cluster() == (2, 1, 1)
    # B as given, no Bᵀ pre-pass; A per 128 columns, B per 256 rows; and TF32_ROUND=3's pre-pass (a variant) reads A
    # and writes it rounded, a launch of its own (prepass) before the kernel
    problem = Problem(4096, 4096, 4096, "tf32")
    t = TC5.with_params(PRE_PASS).traffic(problem)
    assert "Bᵀ" not in t.basis and "rounding pre-pass" in t.basis and t.prepass == 8 * 4096 * 4096
    assert t.global_write == 4 * 4096 * 4096 + 4 * 4096 * 4096
    assert t.global_read == 4 * (4096 * 4096 * 32 + 4096 * 4096 * 16) + 4 * 4096 * 4096
    assert TC5.traffic(problem).prepass == 0  # the registered build: its maps round both operands


def test_tc5_invalid_configurations_refused():
    import dataclasses

    for bad in ({"CN": 3}, {"CM": 2}, {"BM": 192}, {"BN": 96}, {"STAGES": 5}):
        with pytest.raises(InvalidConfigError):
            dataclasses.replace(TC5, params={**TC5.params, **bad})
    dataclasses.replace(TC5, params={**TC5.params, "BM": 128, "STAGES": 7})  # 32 KB stages: 7 fit


@pytest.mark.parametrize("name", ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
def test_kmajor_builds_compile_for_sm90a_without_spills(name, tmp_path):
    """Every binary tc5 and tc6 launch for B as w.t() (SWAP_B_KMAJOR=1): no spills within the launch bound's 168
    registers, wgmma tf32 with B's fragments from 4-byte shared loads (no ld.shared.v2 of the N-major tile), HGMMA
    in SASS where a disassembler is installed."""
    from types import SimpleNamespace

    import sass

    from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda
    from gemmlab.kernels.registry import get_kernel
    from tc_levels import ptx_of

    spec = get_kernel(name)
    for build in spec.configurations():
        compiled = compile_cuda(build.source, build.entry, {**build.defines(), "SWAP_B_KMAJOR": 1}, "sm_90a")
        report = compiled.report
        assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, (build.params, report)
        assert "C7513" not in compiled.log  # ptxas serialized no wgmma (a fragment written while one may read it)
        if sass.AVAILABLE:
            listing = sass.sass(compiled.cubin, tmp_path)
            assert f"HGMMA.64x{build.params['BM']}x8.F32.TF32" in listing and "LDL" not in listing
            _assert_fragments_load_under_two_groups_in_flight(sass, listing)
    ptx = ptx_of(SimpleNamespace(source=spec.source, defines=lambda: {**spec.defines(), "SWAP_B_KMAJOR": 1}))
    assert f"wgmma.mma_async.sync.aligned.m64n{spec.params['BM']}k8.f32.tf32.tf32" in ptx
    assert "ld.shared.v2" not in ptx and re.search(r"ld\.shared\.(u32|b32|f32)", ptx)


def _assert_fragments_load_under_two_groups_in_flight(sass, listing: str) -> None:
    """The k-tile loop (sass.k_tile_loop) issues a commit group a k8 step and lets two run
    (WARPGROUP.DEPBAR.LE gsb0, 2), loads the next step's fragments into registers no wgmma still in flight reads, and
    hands a k-tile's slot back only once none of its wgmmas may still read it."""
    body = sass.k_tile_loop(sass.instructions(listing))
    hgmma = [i for i in body if i.op.startswith("HGMMA")]
    assert len(hgmma) >= 4 and all("gsb0" in i.args for i in hgmma)
    assert {i.args for i in body if i.op.startswith("WARPGROUP.DEPBAR")} == {"gsb0, 0x2"}
    assert len({i.args.split(",")[1] for i in hgmma}) >= 4  # a register set a step
    assert not sass.register_operand_hazards(body)
    assert any(i.op.startswith("SYNCS.ARRIVE") for i in body) and not sass.releases_under_previous_trip(body)


@pytest.mark.parametrize("name", ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
def test_row_major_b_builds_load_fragments_under_two_groups_in_flight(name, tmp_path):
    """The same mainloop for B handed over row-major (8-byte fragment loads from the N-major tile)."""
    import sass

    from gemmlab.kernels.registry import get_kernel

    for build in get_kernel(name).configurations():
        compiled = build.compile("sm_90a")
        assert "C7513" not in compiled.log and compiled.report.spills == 0, build.params
        if sass.AVAILABLE:
            _assert_fragments_load_under_two_groups_in_flight(sass, sass.sass(compiled.cubin, tmp_path))


def _alignment_check(tmp_path) -> list[str]:
    """The compiler's flags that stop a program at its first misaligned access (UBSan's alignment check), where this
    compiler links it; else none (the stores still compared, their alignment unchecked)."""
    flags = ["-fsanitize=alignment", "-fno-sanitize-recover=alignment"]
    probe = tmp_path / "probe.cpp"
    probe.write_text("int main() { return 0; }\n")
    built = subprocess.run([shutil.which("g++") or shutil.which("clang++"), *flags, "-o", str(tmp_path / "probe"),
                            str(probe)], capture_output=True)
    return flags if built.returncode == 0 else []


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("m,n,m0,n0,offset", [(512, 256, 256, 128, 0), (512, 256, 0, 0, 0), (513, 256, 256, 0, 0),
                                              (301, 200, 256, 128, 0), (300, 130, 0, 128, 0), (512, 256, 0, 0, 1)])
def test_the_transposed_store_writes_the_transpose_of_the_row_store(tmp_path, m, n, m0, n0, offset):
    """tc5's store (store_acc_t) on the host, for every consumer thread of one tile of an M×N product, built as tc5
    stores (C_TRANSPOSED=0) and as A_IN_REGS stores (C_TRANSPOSED=1) from the same accumulators: the second writes
    element (r, c) of the product at C[c·M + r] exactly where the first writes it at C[r·N + c], the same elements
    and values (whole tiles by float2 where M is even, edge tiles and odd M element by element), nothing outside the
    product. float2 is 8-byte aligned as CUDA's, under the sanitizer's alignment check: a C ``offset`` floats off
    8 bytes takes the element path, never a misaligned float2."""
    main = r"""
#include <cmath>
#include <cstdio>
#include <vector>
struct alignas(8) float2 { float x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
""" + host_block("tc_out.cuh", "pairs") + host_block("tc_swap.cuh", "store") + rf"""
int main(int, char **argv) {{
  const int M = {m}, N = {n}, m0 = {m0}, n0 = {n0};
  std::vector<float> buffer(M * N + 64 + {offset}, NAN);
  float *c = buffer.data() + {offset};
  for (int tid = 128; tid < 128 * (CW + 1); ++tid) {{
    const SwapThread me(tid, tid / 128);
    float d[BM / 2];
    for (int i = 0; i < BM / 2; ++i) d[i] = tid * 1000 + i;
    store_acc_t(c, d, m0, n0 + 64 * me.cw, n0 + me.col, me.t, M, N);
  }}
  FILE *f = fopen(argv[1], "wb");
  fwrite(c, sizeof(float), M * N + 64, f);
  fclose(f);
}}
"""
    out = []
    for transposed in (0, 1):
        _host_fragments(tmp_path, 1, main, [f"-DC_TRANSPOSED={transposed}", *_alignment_check(tmp_path)],
                        [str(tmp_path / f"c{transposed}")])
        out.append(np.fromfile(tmp_path / f"c{transposed}", np.float32))
    rows, cols = (out[0][:m * n].reshape(m, n), out[1][:m * n].reshape(n, m).T)
    np.testing.assert_array_equal(rows, cols)
    assert np.isnan(out[0][m * n:]).all() and np.isnan(out[1][m * n:]).all()  # nothing past C
    written = ~np.isnan(rows)
    tile_rows, tile_cols = min(TC5.params["BM"], m - m0), min(TC5.params["BN"], n - n0)
    assert written.sum() == tile_rows * tile_cols and written[m0:m0 + tile_rows, n0:n0 + tile_cols].all()


@pytest.mark.parametrize("name,shape", [("cuda/tc5_swap_ab_tf32", (8192, 1024, 8192)),
                                        ("cuda/tc6_stream_k_tf32", (2048, 1024, 8192)),
                                        ("cuda/tc5_swap_ab_tf32", (200, 100, 64))])
def test_a_in_regs_builds_compile_without_spills_and_store_c_by_float2(name, shape, tmp_path):
    """The A_IN_REGS variant's build for the shape (tc5 whole tiles, tc6's stream-K tail, the small problem's
    rounding in shared memory) compiles for sm_90a as its base does: no spills, the 168-register launch bound; in its
    SASS the full tile's store is one 8-byte STG per pair of the accumulator's floats, where the base's stores are 4
    bytes each."""
    import sass

    from gemmlab.harness.bench import variant
    from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda

    problem = Problem(*shape, "tf32")
    exchanged = variant(name, A_IN_REGS).for_problem(problem)
    base = variant(name, PRE_PASS).for_problem(problem.transposed())
    assert exchanged.with_params({"A_IN_REGS": 0}).params == base.params  # the tiles, split and rounding of Cᵀ
    assert exchanged.launch_geometry(problem) == base.launch_geometry(problem.transposed())
    builds = [exchanged.compile("sm_90a"),  # its defines hold SWAP_B_KMAJOR: no other layout runs it
              compile_cuda(base.source, base.entry, {**base.defines(), "SWAP_B_KMAJOR": 1}, "sm_90a")]
    for compiled in builds:
        assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0 and compiled.report.registers <= 168
    if not sass.AVAILABLE:
        pytest.skip("no cuobjdump and nvdisasm to disassemble with")
    ops = [[i.op for i in sass.instructions(sass.sass(c.cubin, tmp_path))] for c in builds]
    assert all(any(op.startswith("HGMMA.64x256x8.F32.TF32") for op in o) for o in ops)
    assert ops[0].count("STG.E.64") == exchanged.params["BM"] // 4 and "STG.E.64" not in ops[1]


def test_a_in_regs_is_refused_where_it_cannot_run():
    """A_IN_REGS takes 0 or 1, on the levels that load their register operand from a K-major tile (tc5 and tc6 TF32;
    not tc7, whose fragments come N-major), and reads the call's B only as the transpose of an N×K matrix."""
    from gemmlab.harness.bench import variant
    from gemmlab.kernels.plan import ROW_MAJOR
    from gemmlab.kernels.registry import get_kernel

    with pytest.raises(InvalidConfigError, match="A_IN_REGS=2: 0"):
        variant("cuda/tc5_swap_ab_tf32", {"A_IN_REGS": 2})
    with pytest.raises(InvalidConfigError, match="swap_kmajor_b: tc5, tc6 TF32"):
        get_kernel("cuda/tc7_3xtf32").with_params({"A_IN_REGS": 1})
    exchanged = variant("cuda/tc6_stream_k_tf32", A_IN_REGS)
    assert ROW_MAJOR not in exchanged.layouts and ROW_MAJOR in get_kernel("cuda/tc6_stream_k_tf32").layouts
    assert "transpose of an N×K matrix (w.t())" in exchanged.layout_refusal(ROW_MAJOR)


@pytest.mark.parametrize("name", ["cuda/tc5_swap_ab_tf32", "cuda/tc6_stream_k_tf32"])
def test_the_scaling_model_prices_a_in_regs_as_its_base_on_the_transposed_problem(name):
    """The scaling model of the A_IN_REGS variant is its base build's (the pre-pass) on Cᵀ = w·xᵀ, w in A's role:
    its tiles over N×M and its pre-pass rounding w (8·N·K bytes), not x; at 8192×1024×8192 that is the model's
    gain."""
    from gemmlab.analysis.scaling import LAUNCH_US, estimate
    from gemmlab.dispatch import _roofs
    from gemmlab.harness.bench import variant
    from gemmlab.kernels.plan import COL, ROW, Layout

    roofs = _roofs("NVIDIA H200", 132)
    problem = Problem(8192, 1024, 8192, "tf32")
    exchanged = estimate(variant(name, A_IN_REGS), problem, roofs, Layout(ROW, COL))
    base = variant(name, PRE_PASS)
    assert exchanged == estimate(base.with_params({"C_TRANSPOSED": 1}), problem.transposed(), roofs, Layout(ROW, COL))
    rounding_w = estimate(base, problem.transposed(), roofs, Layout(ROW, COL))
    assert exchanged.serial_ms == rounding_w.serial_ms
    assert exchanged.serial_ms < estimate(base, problem, roofs, Layout(ROW, COL)).serial_ms
    assert exchanged.serial_ms == pytest.approx(8.0 * 1024 * 8192 / (roofs.dram_gbs * 1e9) * 1e3 + LAUNCH_US / 1e3)


def test_the_scaling_models_gain_for_a_in_regs_is_the_one_the_h200_measured():
    """The model's ratio of each level's pre-pass build to its A_IN_REGS variant, against the variant's gain over
    that build timed interleaved on the H200 (results/h200/tc5_a_in_regs.json, run while the pre-pass was registered:
    1.27× down to 0.92× as rows of x fall below w's), under the datasheet's roofs the model was fitted with. On the
    H200's measured L2 bandwidth, which dispatch reads now, both builds are compute-bound at M = 4096-8192 and the
    model puts the gain about 10% high (1.39 against 1.27 at 8192x1024x8192): its price of the pre-pass at large M is
    a gap, which costs nothing while A_IN_REGS runs only when named."""
    import dataclasses
    from pathlib import Path

    from gemmlab.analysis.roofline import ceilings_for, device_spec
    from gemmlab.analysis.scaling import estimate
    from gemmlab.harness.bench import variant
    from gemmlab.kernels.plan import COL, ROW, Layout
    from gemmlab.results import load_results

    roofs = dataclasses.replace(ceilings_for(device_spec("NVIDIA H200")), sm_count=132)
    w_t = Layout(ROW, COL)
    run = load_results(Path(__file__).resolve().parents[4] / "results" / "h200" / "tc5_a_in_regs.json")
    gains = [r for r in run["records"] if r.get("variant_of")]
    assert len(gains) == 10
    for r in gains:
        problem = Problem(r["m"], r["n"], r["k"], "tf32")
        model = estimate(variant(r["variant_of"], PRE_PASS), problem, roofs, w_t).ms / \
            estimate(variant(r["variant_of"], A_IN_REGS), problem, roofs, w_t).ms
        assert model == pytest.approx(r["variant_gain"], rel=0.03), (r["kernel"], problem.label())
