"""The tensor-core levels' host pieces against the kernels' layout: tensor-map arguments, wgmma descriptors, the
tile order and launch geometry, the shared-memory budget and layout, and tc4's epilogue through TMA."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import source_path
from gemmlab.kernels.cuda.launch.tma import TiledMap
from gemmlab.kernels.cuda.tc.model.budget import (ALIGN_SLACK, C_BOX_BYTES, SMEM_LIMIT, epilogue_bytes, pass_bytes,
                                                  smem_bytes, stage_bytes)
from gemmlab.kernels.cuda.tc.model.stream_k import SK_MIN_KTILES, stream_k_grid
from gemmlab.kernels.cuda.tc.model.tiles import bk, tile_order, wgmma_desc
from gemmlab.problem import Problem

import sass
from tc_levels import HOST_SHIM, INCLUDES, TC, WGMMA, host_block


# ---- tensor maps -------------------------------------------------------------------------------------------
def test_tensor_map_arguments_innermost_first():
    m = TiledMap("bf16", rows=4096, cols=8192, row_stride=8192, box_rows=128, box_cols=64)
    args = m.encode_args(0x7F0000000000)
    assert args["global_dim"] == [8192, 4096]
    assert args["global_strides"] == [8192 * 2]
    assert args["box_dim"] == [64, 128]
    assert args["element_strides"] == [1, 1] and args["swizzle"] == 128
    assert m.box_bytes == 128 * 128


def test_tensor_map_rejects_what_tma_cannot_do():
    assert TiledMap("bf16", 10, 7, 7, 64, 64).errors()  # 14-byte stride
    assert TiledMap("fp32", 10, 8, 8, 64, 64).errors()  # 256-byte box rows, swizzle row is 128
    assert TiledMap("fp32", 10, 8, 8, 300, 32).errors()  # box side past 256
    assert TiledMap("fp32", 10, 8, 4, 64, 32).errors()  # stride shorter than a row
    assert not TiledMap("fp32", 10, 5, 8, 64, 32).errors()  # padded stride is fine
    with pytest.raises(ValueError):
        TiledMap("bf16", 64, 64, 64, 64, 64).encode_args(0x1008)


@pytest.mark.parametrize("prec", ["bf16", "tf32"])
def test_operand_maps_match_kernel_boxes(prec):
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == prec)
    p = Problem(1000, 520, 200, prec)
    a, b = spec.operand_maps(p, lda=200, ldb=520 if prec == "bf16" else 200)
    kt = bk(prec)
    assert (a.rows, a.cols, a.box_rows, a.box_cols) == (1000, 200, 128, kt)
    if prec == "bf16":  # B as given: K rows of N, boxes of BK rows x 64 columns
        assert (b.rows, b.cols, b.box_rows, b.box_cols) == (200, 520, kt, 64)
    else:  # Bᵀ: N rows of K
        assert (b.rows, b.cols, b.box_rows, b.box_cols) == (520, 200, 64, kt)
    # every box lands exactly in the stage bytes the kernel expects on its barrier
    boxes_b = spec.params["BN"] // 64
    assert a.box_bytes + boxes_b * b.box_bytes == stage_bytes(spec.params["BM"], spec.params["BN"])
    assert not a.errors() and not b.errors()


# ---- wgmma descriptors -------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to build the header with")
@pytest.mark.parametrize("prec", ["bf16", "fp8"])
@pytest.mark.parametrize("bn,rows", [(144, 16), (224, 32)])
def test_a_tile_off_the_atom_loads_b_in_boxes_that_tile_it(tmp_path, prec, bn, rows):
    """The widths off the atom (OFF_ATOM_WIDTHS): Bᵀ (N rows of K, K-major) in boxes of 16 or 32 rows, the same
    B_BOX_ROWS the device header makes of BN, each 1024-byte aligned in the stage (the 128-byte swizzle repeats
    every 8 rows), so the stage's A box and BN / rows boxes of B are exactly the bytes its barrier expects, split
    between a cluster's two CTAs."""
    from gemmlab.kernels.cuda.tc.model.tiles import OFF_ATOM_BUILD, b_box_rows
    from gemmlab.kernels.registry import get_kernel

    problem = Problem(1536, 1536, 1536, prec)
    spec = get_kernel(f"cuda/tc4_persistent_{prec}").with_params({"BN": bn, **OFF_ATOM_BUILD})
    a, b = spec.operand_maps(problem, lda=1536, ldb=1536, b_kmajor=True)
    assert b_box_rows(bn) == rows and (b.rows, b.cols, b.box_rows, b.box_cols) == (1536, 1536, rows, bk(prec))
    assert b.box_bytes % 1024 == 0 and not b.errors()
    assert a.box_bytes + bn // rows * b.box_bytes == stage_bytes(128, bn)
    assert bn // rows >= spec.params["CM"]  # each CTA of the cluster multicasts at least one box
    src = tmp_path / "boxes.cpp"
    src.write_text('#include <cstdio>\n#include "tc_layout.cuh"\n'
                   'int main() { printf("%d %d %d\\n", B_BOX_ROWS, B_BOX_BYTES, STAGE_BYTES); }\n')
    exe = tmp_path / "boxes"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, *INCLUDES,
                    f"-DBN={bn}", "-DBM=128", "-DB_KMAJOR=1", *(["-DTC_FP8=1", "-DTC_BF16=0"] if prec == "fp8" else []),
                    "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert list(map(int, out)) == [rows, b.box_bytes, stage_bytes(128, bn)]


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to build the header with")
@pytest.mark.parametrize("prec", ["bf16", "fp8", "tf32"])
@pytest.mark.parametrize("m,rows", [(1, 8), (3, 8), (16, 16), (17, 32), (64, 64), (100, 16)])
def test_a_box_of_a_variant_s_rows_is_what_the_barrier_expects(tmp_path, prec, m, rows):
    """tc10 with A_ROWS (a variant): A's map copies that many rows a stage where they are fewer than the tile's, and
    the header's STAGE_TX, what load_stage arms the stage's barrier with, is that box and the B tile, the bytes the
    copies land; A_ROWS of the tile's rows is the registered binary (STAGE_TX = STAGE_BYTES, no define); past the
    box's rows M is refused, as the tile's rows past it hold a stale stage's bytes."""
    from gemmlab.kernels.registry import get_kernel

    problem = Problem(m, 4096, 4096, prec)
    variant = get_kernel(f"cuda/tc10_split_k_{prec}").with_params({"A_ROWS": rows})
    if m > rows:
        assert f"M={m} needs a box of M rows at least" in variant.is_valid(problem)
        return
    spec = variant.for_problem(problem)
    p = spec.params
    assert p["BM"] == 64 and p["A_ROWS"] == (rows if rows < 64 else 0)  # 0: the tile's rows
    assert ("A_ROWS" in spec.defines()) == (rows < 64)
    a, b = spec.operand_maps(problem, lda=4096, ldb=4096, b_kmajor=True)
    assert (a.rows, a.box_rows) == (m, rows) and not a.errors()
    src = tmp_path / "stage.cpp"
    src.write_text('#include <cstdio>\n#include "tc_layout.cuh"\n'
                   'int main() { printf("%d %d %d\\n", A_BOX_BYTES, STAGE_TX, STAGE_BYTES); }\n')
    exe = tmp_path / "stage"
    defines = [f"-D{k}={v}" for k, v in spec.defines().items() if k in ("BM", "BN", "A_ROWS", "TC_BF16", "TC_FP8")]
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, *INCLUDES, *defines,
                    "-DB_KMAJOR=1", "-o", str(exe), str(src)], check=True)
    out = list(map(int, subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()))
    assert out == [a.box_bytes, a.box_bytes + p["BN"] // 64 * b.box_bytes, stage_bytes(64, p["BN"])]


def test_wgmma_descriptor_fields():
    d = wgmma_desc(0x1_2400, 16, 1024)
    assert d & 0x3FFF == 0x1_2400 >> 4
    assert (d >> 16) & 0x3FFF == 1  # leading byte offset, 16-byte units
    assert (d >> 32) & 0x3FFF == 64  # stride byte offset 1024
    assert (d >> 49) & 0x7 == 0  # base offset: tiles are 1024-byte aligned
    assert d >> 62 == 1  # 128-byte swizzle
    d = wgmma_desc(0x400, 8192, 1024)
    assert (d >> 16) & 0x3FFF == 512
    assert wgmma_desc(0x4_0000 + 0x400, 16, 1024) & 0x3FFF == 0x400 >> 4  # 18-bit shared window


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_device_descriptor_matches_host(tmp_path):
    """tc_layout.cuh's descriptors compiled on the host: wgmma_desc equals wgmma_desc, and the
    mainloop's split form (desc_lo plus 16-byte steps, then desc_of) equals the whole descriptor of the moved
    address, for tile starts across the shared window, with a cluster rank above it, at every K step."""
    cases = [(rank << 24 | addr, off, lbo) for rank in (0, 1) for addr in range(0, 227 * 1024, 3 * 1024)
             for off in (0, 32, 64, 96, 2048, 6144) for lbo in (16, 1024, 8192)]
    main = r"""
#include <cstdio>
int main() {
  unsigned addr, off, lbo;
  while (scanf("%u %u %u", &addr, &off, &lbo) == 3)
    printf("%llu %llu\n", wgmma_desc(addr, lbo, 1024), desc_of(desc_lo(addr, lbo) + off / 16, 1024));
}
"""
    src = tmp_path / "desc.cpp"
    src.write_text('#include "tc_layout.cuh"\n' + main)
    exe = tmp_path / "desc"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, *INCLUDES,
                    "-DBM=128", "-DBN=256", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], input="\n".join(f"{a} {o} {l}" for a, o, l in cases), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(out) == len(cases)
    for (addr, off, lbo), line in zip(cases, out):
        whole, split = map(int, line.split())
        assert whole == wgmma_desc(addr, lbo, 1024), (addr, lbo)
        assert split == wgmma_desc((addr & 0x3FFFF) + off, lbo, 1024), (addr, off, lbo)


@pytest.mark.parametrize("lbo", [16, 8192])
def test_split_descriptor_steps_equal_whole_descriptors(lbo):
    """desc_of(desc_lo(addr, lbo) + off / 16, sbo) == wgmma_desc(addr + off, lbo, sbo) for every tile start the
    kernels use (1024-byte aligned, in the 18-bit window, with a cluster rank above it) and every K step."""
    def split(addr, off, sbo):
        lo = (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16)) + off // 16
        return (((sbo >> 4) | (1 << 30)) << 32) | lo

    for rank in (0, 1):
        for addr in range(0, 227 * 1024 - 48 * 1024, 1024):
            for off in (0, 32, 64, 96, 2048, 4096, 6144):
                a = (rank << 24) | addr
                assert split(a, off, 1024) == wgmma_desc(addr + off, lbo, 1024)


# ---- tile order and geometry -------------------------------------------------------------------------------
def test_tile_order_is_a_grouped_snake():
    order = tile_order(5, 3, 2)
    assert sorted(order) == [(m, n) for m in range(5) for n in range(3)]
    assert order[:6] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]  # a group of 2 rows, column by column
    assert order[6:12] == [(2, 2), (3, 2), (2, 1), (3, 1), (2, 0), (3, 0)]  # the next group right to left
    assert order[-3:] == [(4, 0), (4, 1), (4, 2)]  # the last, short group, left to right again


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_tile_order_matches_device_scheduler(tmp_path):
    """schedule() compiled on the host hands out the tiles in tile_order's order."""
    cases = [(5, 3, 2), (16, 16, 8), (32, 32, 8), (8, 16, 8), (7, 1, 8), (1, 9, 8), (33, 5, 4)]
    main = "int main() {\n" + "".join(
        f"  for (int t = 0; t < {m * n}; ++t) {{ int tm, tn; schedule(t, {m}, {n}, {g}, tm, tn); "
        f'printf("%d %d\\n", tm, tn); }}\n' for m, n, g in cases) + "}\n"
    src = tmp_path / "schedule.cpp"
    src.write_text("#include <cstdio>\n#include <algorithm>\nusing std::min;\n#define __host__\n"
                   "#define __device__\n#define __forceinline__ inline\n" + host_block("tc_scheduler.cuh", "schedule") + main)
    exe = tmp_path / "schedule"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-O1", "-o", str(exe), str(src)], check=True)
    got = [tuple(map(int, line.split()))
           for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()]
    want = [tile for m, n, g in cases for tile in tile_order(m, n, g)]
    assert got == want




@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("cm,cn", [(1, 1), (2, 1), (1, 2)])
def test_persistent_grid_origins_follow_the_tile_order(tmp_path, cm, cn):
    """PersistentGrid (tc_persistent.cuh), which both the producer and the consumers of tc4, tc5, tc7 and tc8 ask for
    a unit's origin, compiled on the host for every CTA rank of a cluster: its tile counts are the cluster tiles'
    and tile t's origin is this CTA's share of tile_order's t-th cluster tile."""
    bm, bn, group_m = 128, 256, 8
    main = r"""
#include <cstdio>
int main() {
  int M, N;
  while (scanf("%d %d", &M, &N) == 2)
    for (unsigned r = 0; r < CM * CN; ++r) {
      blockIdx.x = r, gridDim.x = 132, rank_now = r;
      const PersistentGrid<CM, CN> grid(M, N, 4096);
      printf("G %d %d %d %d %d\n", grid.tiles_m, grid.tiles_n, grid.KT, grid.clusters, grid.rank);
      for (int t = 0; t < grid.tiles; ++t) printf("%d %d\n", grid.origin(t).x, grid.origin(t).y);
    }
}
"""
    src = tmp_path / "grid.cpp"
    src.write_text("#include <algorithm>\nusing std::min;\ntypedef unsigned u32;\nstruct int2 { int x, y; };\n"
                   "int2 make_int2(int x, int y) { return {x, y}; }\nstruct { unsigned x; } blockIdx, gridDim;\n"
                   "unsigned rank_now;\nu32 cluster_rank() { return rank_now; }\n"
                   + host_block("tc_scheduler.cuh", "schedule") + host_block("tc_persistent.cuh", "grid") + main)
    exe = tmp_path / "grid"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-O1", "-std=c++17", *HOST_SHIM,
                    f"-DCM={cm}", f"-DCN={cn}", f"-DBM={bm}", f"-DBN={bn}", "-DBK=32", f"-DGROUP_M={group_m}",
                    "-o", str(exe), str(src)], check=True)
    shapes = [(4096, 4096), (300, 520), (128, 256), (8192, 2048), (1, 1), (2176, 4352)]
    out = subprocess.run([str(exe)], input="\n".join(f"{m} {n}" for m, n in shapes), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    row = 0
    for m, n in shapes:
        tiles_m, tiles_n = -(-m // (cm * bm)), -(-n // (cn * bn))
        for r in range(cm * cn):
            assert out[row] == f"G {tiles_m} {tiles_n} 128 {132 // (cm * cn)} {r if cm * cn > 1 else 0}"
            row += 1
            for tm, tn in tile_order(tiles_m, tiles_n, group_m):
                want = ((tm * cm + r) * bm, tn * bn) if cn == 1 else (tm * bm, (tn * cn + r) * bn)
                assert tuple(map(int, out[row].split())) == want, (m, n, r, tm, tn)
                row += 1
    assert row == len(out)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("cm", [1, 2])
def test_batched_grid_walks_every_products_tiles_once(tmp_path, cm):
    """PersistentGrid with BATCHED=1 (tc4's batch build): the walk's rows are every product's cluster-tile rows in
    turn, in tile_order of (batch x tiles_m) rows; product() takes a unit's row apart into the product and its row
    there, so each (product, tile) of every CTA rank comes once, at the origin the unbatched grid gives that tile."""
    bm, bn, group_m = 128, 256, 8
    main = r"""
#include <cstdio>
int main() {
  int M, N, batch;
  while (scanf("%d %d %d", &M, &N, &batch) == 3)
    for (unsigned r = 0; r < CM; ++r) {
      blockIdx.x = r, gridDim.x = 132, rank_now = r;
      const PersistentGrid<CM, 1> grid(M, N, 4096, batch);
      printf("G %d %d %d\n", grid.tiles_m, grid.tiles_n, grid.tiles);
      for (int t = 0; t < grid.tiles; ++t) {
        int m = grid.origin(t).x;
        const int b = grid.product(m);
        printf("%d %d %d\n", b, m, grid.origin(t).y);
      }
    }
}
"""
    src = tmp_path / "grid.cpp"
    src.write_text("#include <algorithm>\nusing std::min;\ntypedef unsigned u32;\nstruct int2 { int x, y; };\n"
                   "int2 make_int2(int x, int y) { return {x, y}; }\nstruct { unsigned x; } blockIdx, gridDim;\n"
                   "unsigned rank_now;\nu32 cluster_rank() { return rank_now; }\n"
                   + host_block("tc_scheduler.cuh", "schedule") + host_block("tc_persistent.cuh", "grid") + main)
    exe = tmp_path / "grid"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-O1", "-std=c++17", *HOST_SHIM, "-DBATCHED=1",
                    f"-DCM={cm}", "-DCN=1", f"-DBM={bm}", f"-DBN={bn}", "-DBK=32", f"-DGROUP_M={group_m}",
                    "-o", str(exe), str(src)], check=True)
    shapes = [(512, 512, 8), (300, 520, 3), (2048, 2048, 64), (1, 1, 5), (640, 256, 7)]
    out = subprocess.run([str(exe)], input="\n".join(" ".join(map(str, s)) for s in shapes), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    row = 0
    for m, n, batch in shapes:
        per, tiles_n = -(-m // (cm * bm)), -(-n // bn)
        for r in range(cm):
            assert out[row] == f"G {batch * per} {tiles_n} {batch * per * tiles_n}"
            row += 1
            got = [tuple(map(int, line.split())) for line in out[row:row + batch * per * tiles_n]]
            row += batch * per * tiles_n
            want = [(tm // per, (tm % per * cm + r) * bm, tn * bn) for tm, tn in tile_order(batch * per, tiles_n,
                                                                                              group_m)]
            assert got == want
            assert len(set(got)) == len(got) and {b for b, _, _ in got} == set(range(batch))
    assert row == len(out)


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (8192, 8192, 8192), (33, 17, 65), (1, 1, 1)])
def test_launch_geometry(shape):
    for spec in TC:
        p = Problem(*shape, spec.precision)
        geo = spec.launch_geometry(p) if spec.level < 4 else spec.launch_geometry(p, sm_count=132)
        if "SPLITS" in spec.params:  # tc10: tiles x S CTAs of the tile chosen per problem (test_tc10_split_k.py)
            s = spec.for_problem(p, 132).split_plan(p, 132)
            assert geo.grid == (-(-p.m // s.bm) * -(-p.n // s.bn), s.splits, 1) and s.splits <= max(1, s.kt // 4)
            assert geo.threads == (s.bm // 64 + 1) * 128 and geo.smem <= 227 * 1024
            continue
        if spec.level >= 4:  # the launch of the spec that runs the problem (tc6 splitting nothing runs tc4's)
            spec = spec.for_problem(p, 132)
        bm, bn = spec.params["BM"], spec.params["BN"]
        if spec.level >= 4:
            cm, cn = spec.params.get("CM", 1), spec.params.get("CN", 1)
            tiles = -(-p.m // (bm * cm)) * -(-p.n // (bn * cn))
            if spec.params.get("STREAM_K"):
                kt = -(-p.k // bk(spec.precision))
                least = spec.params.get("SK_MIN_KTILES", SK_MIN_KTILES)  # k-tiles a CTA at least (tc9: 16)
                assert geo.grid == (stream_k_grid(tiles, kt, 132, least), 1, 1) and geo.grid[0] <= 132
            else:
                assert geo.grid == (min(tiles, 132 // (cm * cn)) * cm * cn, 1, 1)
            assert spec.cluster() == ((cm * cn, 1, 1) if cm * cn > 1 else None)
        else:
            assert geo.grid == (-(-p.n // bn), -(-p.m // bm), 1)
        consumers = (bn if getattr(spec, "swap_ab", False) else bm) // 64  # tc5's warpgroups split the tile's N
        threads = {1: 256, 2: consumers * 128}.get(spec.level, (consumers + 1) * 128)
        assert geo.threads == threads
        assert geo.smem <= 227 * 1024


def test_shared_memory_budget():
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16")
    ring = 4 * (384 * 128 + 16)  # 4 stages of a 128-row A and a 256-column B tile, 128 bytes deep, + barriers
    staging = 2 * 2 * 64 * 128  # EPI_TMA: two 64x32 FP32 boxes per consumer warpgroup
    assert smem_bytes(dict(spec.params)) == ring + staging + 1024 <= SMEM_LIMIT
    assert smem_bytes({**spec.params, "EPI_TMA": 0}) == ring + 1024
    tf32 = next(s for s in WGMMA if s.level == 4 and s.precision == "tf32")
    assert smem_bytes(dict(tf32.params)) == ring + staging + 1024  # truncating: the BF16 build's budget
    rounded = {**tf32.params, "TF32_ROUND": 2}  # the producer's pass: a `ready` barrier per slot
    assert smem_bytes(rounded) == ring + staging + 4 * 8 + 1024 <= SMEM_LIMIT


# ---- tc4's epilogue through shared memory and TMA (EPI_TMA=1) ------------------------------------------------
def test_c_map_boxes_are_the_staging_boxes():
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16")
    # FP32 C (out_dtype=float32): 32 columns of 4 bytes a box row; BF16 C, the default now, and FP16 C: 64 of 2
    for build, dtype, cols in ((spec.for_formats("bfloat16", "bfloat16", "float32"), "fp32", 32), (spec, "bf16", 64),
                               (next(s for s in WGMMA if s.level == 4 and s.precision == "fp16"), "f16", 64)):
        m = build.c_map(Problem(300, 520, 200, build.precision))
        assert (m.dtype, m.rows, m.cols, m.row_stride, m.box_rows, m.box_cols) == (dtype, 300, 520, 520, 64, cols)
        assert m.box_bytes == C_BOX_BYTES and not m.errors()


def test_c_by_tma_only_where_tma_can_address_c():
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16")
    n520, n17, n130 = (Problem(300, n, 200, "bf16") for n in (520, 17, 130))
    assert spec.c_by_tma(n520, 0x7F0000000000)
    assert not spec.c_by_tma(n17, 0x7F0000000000)  # 68-byte rows: the kernel stores from registers
    assert not spec.c_by_tma(n130, 0x7F0000000000)
    assert not spec.c_by_tma(n520, 0x7F0000000008)  # a C view that is not 16-byte aligned
    assert TiledMap("fp32", 33, 17, 17, 64, 32).errors()  # TMA itself refuses that stride


def test_epilogue_option_refused_where_it_does_not_exist():
    import dataclasses

    tc4 = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16")
    with pytest.raises(InvalidConfigError, match="EPI_TMA=2"):
        dataclasses.replace(tc4, params={**tc4.params, "EPI_TMA": 2})
    tc5 = next(s for s in WGMMA if s.level == 5)
    with pytest.raises(InvalidConfigError, match="EPI_TMA=1 is an option of the tc4_persistent.cu source"):
        dataclasses.replace(tc5, params={**tc5.params, "EPI_TMA": 1})


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_staging_offsets_follow_the_tma_swizzle(tmp_path):
    """Compile the device's staging arithmetic on the host: every (thread, step, row half) lands where TMA's
    128-byte swizzle puts the element that thread holds, the 128 threads fill a 64x32 FP32 box exactly once, and
    each half-warp's float2 store (shared memory serves 8-byte stores half a warp at a time) hits each of the 32
    banks once: one wavefront, the fewest 128 bytes can."""
    main = r"""
#include <cstdio>
int main() {
  for (unsigned t = 0; t < 128; ++t)
    for (int s = 0; s < 4; ++s)
      printf("%u %d %u %u\n", t, s, c_stage_group(t, s), c_stage_offset(c_stage_lane(t), s));
}
"""
    src = tmp_path / "stage.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n" + host_block("tc_epilogue.cuh", "staging") + main)
    exe = tmp_path / "stage"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-O1", "-o", str(exe), str(src)], check=True)
    offsets = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        t, s, group, off = map(int, line.split())
        offsets[t, s] = group, off
    covered = []
    for (t, s), (group, off) in offsets.items():
        row, q = 16 * (t // 32) + (t % 32) // 4, t % 4
        for h in (0, 1):
            r, col = row + 8 * h, 8 * group + 2 * q
            want = r * 128 + ((((4 * col) // 16) ^ (r % 8)) * 16) + (4 * col) % 16  # TMA's 128B swizzle
            assert off + 1024 * h == want, (t, s, h)
            covered += [(r, col), (r, col + 1)]
    assert sorted(covered) == [(r, c) for r in range(64) for c in range(32)]
    for half in range(8):
        for s in range(4):
            for h in (0, 1):
                banks = [((offsets[t, s][1] + 1024 * h) // 4 + e) % 32 for t in range(16 * half, 16 * half + 16)
                         for e in (0, 1)]
                assert sorted(banks) == list(range(32)), (half, s, h)


PERSISTENT_SOURCES = ("tc4_persistent.cu", "tc5_swap_ab.cu", "tc7_3xtf32.cu", "tc8_block_scaled_fp8.cu")


def _kernel_layout(source: str) -> str:
    """The kernel's shared-memory layout (PersistentSmem's arguments, which are SmemLayout's) and the macros they
    name, as its source declares them."""
    text = source_path(source).read_text()
    args = re.search(r"const PersistentSmem<(.+?)> sm\(smem_raw\);", text).group(1)
    macros = [found[0] for name in ("CW", "SMALL_BYTES")  # the first definition: the one the kernel compiles with
              if (found := re.findall(rf"^#define {name} .*$", text + source_path("tc_swap.cuh").read_text(), re.M))]
    return "\n".join(macros) + f"\ntypedef SmemLayout<{args}> Layout;\n"


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_shared_memory_layout_matches_the_launch(tmp_path):
    """Each persistent level's SmemLayout (tc_layout.cuh, with the arguments its PersistentSmem passes) compiled on
    the host for every configuration it launches: the ring, then the level's own bytes (the epilogue's staging boxes, tc7's
    small parts of A), then the barriers; what it asks for at launch is what the Python launcher requests, and each
    consumer warpgroup's staging pair lies inside the staging bytes, after the previous one."""
    import dataclasses

    main = r"""
#include <cstdio>
int main() {
  printf("%d %d %d %d %d %d", Layout::extra, Layout::full, Layout::empty, Layout::ready, Layout::end,
         Layout::launch_bytes);
  for (int cw = 0; cw <= BM / 64; ++cw) printf(" %d", staging_offset(cw));
  printf("\n");
}
"""
    checked = 0
    for spec in WGMMA:
        if spec.source not in PERSISTENT_SOURCES:
            continue
        for c in spec.configurations():
            for epi in sorted({c.params.get("EPI_TMA", 0), 0}):
                # without the TMA store nothing is held (EPI_DEFER holds boxes for it)
                p = {**c.params, "EPI_TMA": epi, **({} if epi else {"EPI_DEFER": 0})} if "EPI_TMA" in c.params \
                    else dict(c.params)
                d = {"TF32_ROUND": 0, **c.defines(), "EPI_TMA": epi}
                src = tmp_path / f"layout{checked}.cpp"
                src.write_text('#include "tc_layout.cuh"\n' + _kernel_layout(c.source) + main)
                exe = tmp_path / f"layout{checked}"
                subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM,
                                *INCLUDES, *(f"-D{k}={v}" for k, v in d.items()), "-o", str(exe), str(src)],
                               check=True)
                got = list(map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                                   check=True).stdout.split()))
                extra, full, empty, ready, end, launch, *staging = got
                ring = p["STAGES"] * stage_bytes(p["BM"], p["BN"])
                assert extra == ring and empty == full + 8 * p["STAGES"] and ready == empty + 8 * p["STAGES"]
                assert launch == end + ALIGN_SLACK
                assert launch == smem_bytes(p), (c.name, p)
                v = dataclasses.replace(c, params=p, whole_tiles=None)  # tc6: its own binary, not its base
                assert launch == v.launch_geometry(Problem(4096, 4096, 4096, c.precision)).smem, (c.name, p)
                assert full - extra == epilogue_bytes(p) + (pass_bytes(p) - 8 * p["STAGES"]
                                                                      if c.source == "tc7_3xtf32.cu" else 0)
                if epi:
                    assert staging == [cw * 2 * C_BOX_BYTES for cw in range(p["BM"] // 64 + 1)]
                    assert staging[-1] == full - extra  # the last warpgroup's pair ends where the barriers start
                checked += 1
    assert checked >= 8


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
def test_a_fused_bias_in_producer_warps_has_its_box_barriers_in_the_launch(tmp_path):
    """tc4 BF16 with a fused bias hands its boxes to producer warps (EPI_ASYNC): each staging box's BoxSync (two
    mbarriers and the box's origin, 24 bytes) follows the staging boxes, inside the bytes the launcher requests;
    the plain build and an activation's keep the plain layout."""
    from gemmlab.epilogue import Epilogue
    from gemmlab.kernels.registry import get_kernel

    main = r"""
#include <cstdio>
int main() { printf("%d %d %d", Layout::extra, Layout::full, Layout::launch_bytes); }
"""
    tc4 = get_kernel("cuda/tc4_persistent_bf16")
    problem = Problem(4096, 4096, 4096, "bf16")
    for build, boxsync in ((tc4.with_epilogue(Epilogue(addend="bias"), "bfloat16"), 24), (tc4, 0),
                           (tc4.with_epilogue(Epilogue("gelu", addend="bias"), "bfloat16"), 0)):
        d = {"TF32_ROUND": 0, **build.defines()}
        assert d.get("EPI_ASYNC", 0) == (boxsync > 0)
        src, exe = tmp_path / f"async{boxsync}.cpp", tmp_path / f"async{boxsync}"
        src.write_text('#include "tc_layout.cuh"\n' + _kernel_layout(build.source) + main)
        subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-std=c++17", *HOST_SHIM, *INCLUDES,
                        *(f"-D{k}={v}" for k, v in d.items()), "-o", str(exe), str(src)], check=True)
        extra, full, launch = map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                                      check=True).stdout.split())
        assert full - extra == 2 * 2 * (C_BOX_BYTES + boxsync)
        assert launch == build.launch_geometry(problem).smem <= SMEM_LIMIT


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("name", ["cuda/tc4_persistent_bf16", "cuda/tc8_block_scaled_fp8", "cuda/tc10_split_k_bf16"])
def test_tma_stores_retire_before_the_ctas_exit(name, tmp_path):
    """No CTA exits while a TMA store still reads its shared memory (a successor CTA on the SM would overwrite the
    staging boxes mid-store): in the SASS of each level that stores C by TMA, a wait on the bulk stores' scoreboard
    (DEPBAR.LE SB0) stands between the last store and every exit after it."""
    from gemmlab.kernels.registry import get_kernel

    cfg = get_kernel(name).configurations()[0]
    assert cfg.params.get("EPI_TMA")
    ins = sass.instructions(sass.sass(cfg.compile("sm_90a").cubin, tmp_path))
    last_store = max(i.addr for i in ins if i.op.startswith(("UTMASTG", "UTMACMDFLUSH")))
    waits = [i.addr for i in ins if i.op == "DEPBAR.LE" and i.args.startswith("SB0") and i.addr > last_store]
    exits = [i.addr for i in ins if i.op == "EXIT" and i.addr > last_store]
    assert exits and waits and min(waits) < min(exits)
