"""The tensor-core levels (cuda/tc*) without a GPU: every level compiles for sm_90a through NVRTC with no
spills, the wgmma levels carry wgmma in their PTX (HGMMA in SASS where a disassembler is installed), and the
host-side pieces (tensor-map arguments, wgmma descriptors, tile order, launch geometry, constraints, operand
staging) behave as the kernels assume."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import sass

from gemmlab.errors import CompileError, InvalidConfigError
from gemmlab.kernels.cuda.tc import tc5_swap_ab
from gemmlab.kernels.cuda.tc.model.budget import (ALIGN_SLACK, C_BOX_BYTES, SMEM_LIMIT, epilogue_bytes,
                                                  launch_registers, pass_bytes, smem_bytes, stage_bytes)
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.stream_k import (SK_FILL, SK_MIN_KTILES, SK_SKIP_FILL, stream_k_dp_tiles,
                                                    stream_k_grid, stream_k_partials, stream_k_units)
from gemmlab.kernels.cuda.tc.model.tiles import ONE_LAUNCH_MAX_K, bk, narrow_pays, tile_order, wgmma_desc
from gemmlab.kernels.cuda.tc.model.timeline import TIMELINE_SOURCES, TL_SLOTS
from gemmlab.kernels.cuda.tc.model.traffic import wgmma_traffic
from gemmlab.kernels.cuda.launch.nvrtc import SOURCE_DIRS, _read_source, compile_cuda, source_path
from gemmlab.kernels.cuda.launch.tma import TiledMap
from gemmlab.kernels.registry import list_kernels
from gemmlab.problem import Problem

TC = [s for s in list_kernels("cuda/tc*") if s.precision not in ("fp8", "fp8_block")]  # FP8: test_cuda_fp8.py
WGMMA = [s for s in TC if s.level >= 2]


def test_every_level_and_precision_registered():
    names = {s.name for s in TC}
    for level in ("tc1_mma_sync", "tc2_wgmma_tma", "tc3_warp_specialized", "tc4_persistent"):
        for prec in ("bf16", "tf32"):
            assert f"cuda/{level}_{prec}" in names
    assert "cuda/tc5_swap_ab_tf32" in names  # TF32 only: BF16 wgmma reads N-major B as it is
    assert {"cuda/tc6_stream_k_bf16", "cuda/tc6_stream_k_tf32"} <= names
    assert "cuda/tc7_3xtf32" in names  # FP32 in and out: level 11, after v10 in the FP32 table
    for s in TC:
        assert (s.level, s.precision) == (11, "fp32") if s.name == "cuda/tc7_3xtf32" else \
            s.level in (1, 2, 3, 4, 5, 6) and s.precision in ("bf16", "tf32")
        assert s.doc and "changed" in s.doc


@pytest.mark.parametrize("spec", TC, ids=lambda s: s.name)
def test_compiles_sm90a_without_spills(spec):
    report = spec.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0, report
    assert report.registers <= 255
    if spec.level >= 3:
        # the 384-thread launch bound caps registers at 168; setmaxnreg then moves them to the consumers
        assert report.registers <= 168


def _ptx(spec) -> str:
    """The PTX NVRTC makes of the level (through the nvrtc bindings: no driver needed)."""
    from cuda.bindings import nvrtc

    src = _read_source(spec.source).encode()
    err, prog = nvrtc.nvrtcCreateProgram(src, spec.source.encode(), 0, [], [])
    opts = [b"--gpu-architecture=compute_90a", b"--std=c++17"]
    opts += [f"-D{k}={v}".encode() for k, v in spec.defines().items()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetPTX(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode(errors="replace")


@pytest.mark.parametrize("spec", TC, ids=lambda s: s.name)
def test_tensor_core_instructions_in_ptx(spec):
    ptx = _ptx(spec)
    if spec.level == 1:
        assert "mma.sync.aligned" in ptx and "cp.async" in ptx
        assert "wgmma" not in ptx
    else:
        typ = "bf16" if spec.precision == "bf16" else "tf32"
        assert f"wgmma.mma_async.sync.aligned.m64n{_wgmma_n(spec)}k" in ptx and f".f32.{typ}.{typ}" in ptx
        assert "cp.async.bulk.tensor.2d" in ptx and "mbarrier.try_wait" in ptx
    if spec.level >= 3:
        assert "setmaxnreg.inc" in ptx and "setmaxnreg.dec" in ptx
    if spec.level >= 4 and spec.params.get("CM", 1) * spec.params.get("CN", 1) > 1:
        assert "multicast::cluster" in ptx and "mapa" in ptx
    if getattr(spec, "swap_ab", False):  # B's fragments come from registers: no descriptor for wgmma's A
        assert "ld.shared.v2" in ptx and "}, {%r" in ptx


def _wgmma_n(spec) -> int:
    """The wgmma N of a level: BN, or BM where the kernel computes Cᵀ (swap_ab)."""
    return spec.params["BM"] if getattr(spec, "swap_ab", False) else spec.params["BN"]


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec", WGMMA, ids=lambda s: s.name)
def test_hgmma_in_sass(spec, tmp_path):
    listing = sass.sass(spec.compile("sm_90a").cubin, tmp_path)
    typ = "BF16" if spec.precision == "bf16" else "TF32"
    assert f"HGMMA.64x{_wgmma_n(spec)}x{16 if typ == 'BF16' else 8}.F32.{typ}" in listing
    assert "UTMALDG" in listing and "LDL" not in listing and "STL" not in listing


def test_no_setmaxnreg_warning():
    for spec in TC:
        log = spec.compile("sm_90a").log
        assert "C7508" not in log and "setmaxnreg" not in log.lower(), log


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


def _host_block(header: str, name: str) -> str:
    text = source_path(header).read_text()
    begin, end = f"// begin {name} arithmetic", f"// end {name} arithmetic"
    return text[text.index(begin):text.index(end)]


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
                   "#define __device__\n#define __forceinline__ inline\n" + _host_block("tc_scheduler.cuh", "schedule") + main)
    exe = tmp_path / "schedule"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-O1", "-o", str(exe), str(src)], check=True)
    got = [tuple(map(int, line.split()))
           for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()]
    want = [tile for m, n, g in cases for tile in tile_order(m, n, g)]
    assert got == want


HOST_SHIM = ["-D__host__=", "-D__device__=", "-D__forceinline__=inline"]  # device qualifiers, gone on the host
INCLUDES = [f"-I{d}" for d in SOURCE_DIRS]  # the folders NVRTC finds the headers in


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
                   + _host_block("tc_scheduler.cuh", "schedule") + _host_block("tc_persistent.cuh", "grid") + main)
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


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (8192, 8192, 8192), (33, 17, 65), (1, 1, 1)])
def test_launch_geometry(shape):
    for spec in TC:
        p = Problem(*shape, spec.precision)
        geo = spec.launch_geometry(p) if spec.level < 4 else spec.launch_geometry(p, sm_count=132)
        if spec.level >= 4:  # the launch of the spec that runs the problem (tc6 splitting nothing runs tc4's)
            spec = spec.for_problem(p, 132)
        bm, bn = spec.params["BM"], spec.params["BN"]
        if spec.level >= 4:
            cm, cn = spec.params.get("CM", 1), spec.params.get("CN", 1)
            tiles = -(-p.m // (bm * cm)) * -(-p.n // (bn * cn))
            if spec.params.get("STREAM_K"):
                kt = -(-p.k // bk(spec.precision))
                assert geo.grid == (stream_k_grid(tiles, kt, 132), 1, 1) and geo.grid[0] <= 132
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
    m = spec.c_map(Problem(300, 520, 200, "bf16"))
    assert (m.rows, m.cols, m.row_stride, m.box_rows, m.box_cols) == (300, 520, 520, 64, 32)
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
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n" + _host_block("tc_epilogue.cuh", "staging") + main)
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
                p = {**c.params, "EPI_TMA": epi} if "EPI_TMA" in c.params else dict(c.params)
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


def test_tma_stores_retire_before_the_ctas_exit():
    """No CTA exits while a TMA store still reads its shared memory. Kept as text: only a GPU run could show the
    race (a CTA whose successor on the SM overwrites the staging boxes mid-store), and no host run can."""
    for source in ("tc4_persistent.cu", "tc8_block_scaled_fp8.cu"):
        assert "tma_store_wait_all();" in source_path(source).read_text()


# ---- constraints -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source,change,message", [
    ("tc4_persistent.cu", {"STAGES": 1}, "at least 2 slots"),
    ("tc4_persistent.cu", {"STAGES": 6}, "227 KB"),
    ("tc4_persistent.cu", {"CONSUMER_REGS": 236}, "multiples of 8"),
    ("tc4_persistent.cu", {"CONSUMER_REGS": 256, "PRODUCER_REGS": 256}, "registers the block holds"),
    ("tc4_persistent.cu", {"BN": 160}, "n64, n128, n192, n256"),
    ("tc4_persistent.cu", {"BN": 64}, "64-column B boxes"),
    ("tc5_swap_ab.cu", {"CN": 4}, "1 or 2 CTAs along N"),
    ("tc5_swap_ab.cu", {"BN": 320}, "256 at most"),
])
def test_the_compiler_refuses_what_the_constraints_refuse(source, change, message):
    """The static_asserts in the kernels' headers hold each build to wgmma_constraints even when a define set
    bypasses the Python checks: NVRTC refuses the build with the constraint's reason."""
    spec = next(s for s in WGMMA if s.source == source and s.level in (4, 5))
    defines = {**spec.defines(), **change}
    host_refuses = wgmma_constraints({**spec.params, **change}, specialized=True,
                                                    swap_ab=spec.swap_ab)
    assert host_refuses, change  # the host refuses it too
    with pytest.raises(CompileError, match=message):
        compile_cuda(source, spec.entry, defines, "sm_90a")


def test_invalid_configurations_refused_before_compiling():
    spec = next(s for s in WGMMA if s.level == 4)
    import dataclasses

    for bad in ({"STAGES": 5}, {"BN": 96}, {"BM": 96}, {"CM": 3}, {"CONSUMER_REGS": 236},
                {"PRODUCER_REGS": 40, "CONSUMER_REGS": 256}, {"STAGES": 1}):
        with pytest.raises(InvalidConfigError):
            dataclasses.replace(spec, params={**spec.params, **bad})
    tc1 = next(s for s in TC if s.level == 1)
    with pytest.raises(InvalidConfigError):
        dataclasses.replace(tc1, params={**tc1.params, "BM": 64})


def test_launch_register_pool():
    """__launch_bounds__(threads, 1) caps each thread at 65536 / threads rounded down to 8 (255 at most)."""
    assert launch_registers(384) == 384 * 168
    assert launch_registers(640) == 640 * 96
    assert launch_registers(256) == 65536 and launch_registers(128) == 128 * 256


def test_setmaxnreg_counts_fit_the_launch_pool():
    """setmaxnreg moves registers between a block's warps and never adds any: a 256x128 tc4 tile (4 consumer
    warpgroups, 640 threads, 96 registers each at launch) with consumers at 112 would leave setmaxnreg.inc
    waiting forever (it hung on the H200), so it is refused; 104 fits and compiles with the pool ptxas gives."""
    import dataclasses

    spec = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16")
    wide = {"BM": 256, "BN": 128, "PRODUCER_REGS": 40, "EPI_TMA": 0, "NARROW_BN": 0}  # 4 warpgroups, no staging
    with pytest.raises(InvalidConfigError, match="at launch"):
        dataclasses.replace(spec, params={**spec.params, **wide, "CONSUMER_REGS": 112})
    ok = dataclasses.replace(spec, params={**spec.params, **wide, "CONSUMER_REGS": 104})
    report = ok.compile("sm_90a").report
    assert report.spills == 0 and report.registers * 640 == launch_registers(640)
    for s in WGMMA:  # every specialized level's counts fill at most the pool ptxas assigned
        if s.level >= 3:
            threads = s.launch_geometry(Problem(4096, 4096, 4096, s.precision)).block[0]
            used = s.params["PRODUCER_REGS"] * 128 + s.params["CONSUMER_REGS"] * (threads - 128)
            assert used <= s.compile("sm_90a").report.registers * threads == launch_registers(threads)


def test_validity_any_shape():
    for spec in TC:
        for shape in [(1, 1, 1), (33, 17, 65), (4097, 4095, 4099), (8192, 8192, 8192)]:
            assert spec.is_valid(Problem(*shape, spec.precision)) is None
        other = "tf32" if spec.precision == "bf16" else "bf16"
        assert spec.is_valid(Problem(64, 64, 64, other))


def test_traffic_models():
    p = Problem(4096, 4096, 4096, "tf32")
    level = {s.level: s for s in WGMMA if s.precision == "tf32"}
    assert level[4].params["CM"] == 2
    t4, t3 = level[4].traffic(p), level[3].traffic(p)
    assert t4.global_read < t3.global_read  # multicast halves B's reads
    assert "pre-pass" in t4.basis and t4.global_write == 4 * 4096 * 4096 * 2
    pb = Problem(4096, 4096, 4096, "bf16")
    tb = next(s for s in WGMMA if s.level == 4 and s.precision == "bf16").traffic(pb)
    assert tb.global_write == 4 * 4096 * 4096 and "pre-pass" not in tb.basis


def test_persistent_grid_fits_resident_clusters():
    spec = next(s for s in WGMMA if s.level == 4 and s.params["CM"] == 2)
    p = Problem(4096, 4096, 4096, spec.precision)
    assert spec.launch_geometry(p, sm_count=132).grid == (132, 1, 1)
    # a GPU that holds only 60 two-CTA clusters at once gets 60 of them, never a second partial wave
    assert spec.launch_geometry(p, sm_count=132, max_clusters=60).grid == (120, 1, 1)
    small = Problem(256, 256, 64, spec.precision)  # one cluster tile
    assert spec.launch_geometry(small, sm_count=132, max_clusters=60).grid == (2, 1, 1)


# ---- tc5: Cᵀ = Bᵀ·Aᵀ with B's fragments from registers ------------------------------------------------------
TC5 = next(s for s in TC if s.level == 5)


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
                   + _host_block("tc_swap.cuh", "fragment") + main)
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
    # B as given, no Bᵀ pre-pass; A per 128 columns, B per 256 rows; and TF32_ROUND=3's pre-pass reads A and writes
    # it rounded, a launch of its own (prepass) before the kernel
    t = TC5.traffic(Problem(4096, 4096, 4096, "tf32"))
    assert "Bᵀ" not in t.basis and "rounding pre-pass" in t.basis and t.prepass == 8 * 4096 * 4096
    assert t.global_write == 4 * 4096 * 4096 + 4 * 4096 * 4096
    assert t.global_read == 4 * (4096 * 4096 * 32 + 4096 * 4096 * 16) + 4 * 4096 * 4096
    truncating = wgmma_traffic("tf32", 256, 128, prepass=False, persistent=True, group_m=8, swap_ab=True)
    assert truncating(Problem(4096, 4096, 4096, "tf32")).prepass == 0


def test_tc5_invalid_configurations_refused():
    import dataclasses

    for bad in ({"CN": 3}, {"CM": 2}, {"BM": 192}, {"BN": 96}, {"STAGES": 5}):
        with pytest.raises(InvalidConfigError):
            dataclasses.replace(TC5, params={**TC5.params, **bad})
    dataclasses.replace(TC5, params={**TC5.params, "BM": 128, "STAGES": 7})  # 32 KB stages: 7 fit


# ---- tc6: stream-K tail ----------------------------------------------------------------------------------------
TC6 = [s for s in TC if s.level == 6]
SK_CASES = [(t, g, kt) for t in (1, 2, 5, 25, 131, 132, 133, 192, 263, 264, 265, 512, 2048)
            for g in (1, 3, 7, 68, 132) for kt in (1, 2, 3, 11, 64, 128)]


FILLS = [(0, 100), (SK_FILL, SK_SKIP_FILL), (100, 100), (30, 60)]


def _sk_check(tiles: int, grid: int, kt: int, fill: int = SK_FILL,
              skip: int = SK_SKIP_FILL) -> None:
    """The properties the kernel's fixup relies on, for one (T, G, KT) and region rule."""
    units = stream_k_units(tiles, grid, kt, fill, skip)
    dp = stream_k_dp_tiles(tiles, grid, fill, skip)
    waves, rest = divmod(tiles, grid)
    if rest == 0 or (waves and rest * 100 >= skip * grid):
        assert dp == tiles  # whole waves, or a last wave nearly full: no stream-K
    elif waves == 0 or rest * 100 >= fill * grid:
        assert dp == waves * grid  # the partial wave alone is the stream-K region
    else:
        assert dp == (waves - 1) * grid  # a thin partial wave joins the last full one
    assert tiles - dp < 2 * grid
    seen = {}
    for c, us in enumerate(units):
        assert [t for t, _, _ in us if t < dp] == list(range(c, dp, grid))  # data-parallel tiles first, whole
        assert all(kb == 0 and ke == kt for t, kb, ke in us if t < dp)
        assert sum(kb > 0 for _, kb, _ in us) <= 1  # at most one partial per CTA: a workspace slot each
        tail = [u for u in us if u[0] >= dp]
        assert all(kb == 0 for _, kb, _ in tail[1:])  # ... and only the first stream-K unit can start mid-tile
        assert all(ke == kt for _, _, ke in us[:-1])  # only the last unit can stop mid-tile
        for t, kb, ke in us:
            assert 0 <= kb < ke <= kt
            for k in range(kb, ke):
                assert (t, k) not in seen  # every (tile, k) iteration exactly once
                seen[(t, k)] = c
    assert len(seen) == tiles * kt
    sk = [sum(ke - kb for t, kb, ke in us if t >= dp) for us in units]
    assert max(sk) - min(sk) <= 1  # balanced stream-K ranges
    for t in range(tiles):
        owners = [(c, i) for c, us in enumerate(units) for i, u in enumerate(us) if u[0] == t and u[1] == 0]
        assert len(owners) == 1  # one owner per tile: the unit holding k = 0
        c, i = owners[0]
        holders = sorted({seen[(t, k)] for k in range(kt)})
        assert holders[0] == c  # the owner's CTA runs the tile's first iterations; the peers come after it
        if len(holders) > 1:
            assert i == len(units[c]) - 1  # a split tile's owner unit is the last its CTA runs
            for p in holders[1:]:
                first = next(u for u in units[p] if u[0] >= dp)
                assert first[0] == t and first[1] > 0  # each peer's partial is its first stream-K unit


@pytest.mark.parametrize("fills", FILLS)
def test_stream_k_partition(fills):
    for case in SK_CASES:
        _sk_check(*case, *fills)


def test_stream_k_partition_dense_small():
    for tiles in range(1, 40):
        for grid in range(1, 20):
            for kt in range(1, 9):
                for fills in FILLS:
                    _sk_check(tiles, grid, kt, *fills)


def test_stream_k_split_of_the_seed_shapes():
    # 2048x3072x4096 BF16: 192 tiles for 132 SMs, 64 k-tiles each: no data-parallel wave, all stream-K
    assert stream_k_dp_tiles(192, 132) == 0
    units = stream_k_units(192, 132, 64)
    assert {sum(ke - kb for _, kb, ke in us) for us in units} == {93, 94}  # 12288 iterations / 132
    # 4096³: 512 tiles = 3.88 waves, the last 88% full: all data-parallel (stream-K measured slower there);
    # 8192³: 2048 tiles, 15 whole waves and 68 tiles (52%) of stream-K
    assert stream_k_dp_tiles(512, 132) == 512 and stream_k_dp_tiles(2048, 132) == 1980
    assert stream_k_dp_tiles(512, 132, fill=50, skip=100) == 396  # the variants measured
    assert stream_k_dp_tiles(512, 132, fill=100, skip=100) == 264  # the two-wave region of the first design
    assert stream_k_dp_tiles(264, 132) == 264  # whole waves: no stream-K at all
    assert stream_k_partials(264, 132, 64) == 0
    # fewer tiles than SMs: the grid grows until each CTA holds about SK_MIN_KTILES k-tiles, at most one per SM
    assert stream_k_grid(25, 11, 132) == 25 * 11 // SK_MIN_KTILES
    assert stream_k_grid(1, 1, 132) == 1 and stream_k_grid(600, 64, 132) == 132
    assert stream_k_grid(3, 2, 132) == 3


def test_producer_and_consumers_walk_the_same_grid():
    """The stream-K arithmetic itself runs on the host (test_stream_k_device_arithmetic_runs_like_the_model).
    Kept as text: the producer's walk (produce_ring, run by produce) and each level's consumer walk are device code
    (TMA, mbarriers); that they are built from the same grid, and so hand out the same units, shows only here."""
    common = source_path("tc_pipeline.cuh").read_text()
    assert "for (Walk u(cta, ctas, tiles, KT); u.valid(); u.next(), ++unit)" in common  # the producer's (produce_ring)
    persistent = source_path("tc_persistent.cuh").read_text()
    assert "produce_ring<STAGES>(sm.smem, sm.full, sm.empty, grid.cluster, grid.clusters, grid.tiles, grid.KT," \
        in persistent
    for level in ("tc4_persistent.cu", "tc5_swap_ab.cu"):
        src = source_path(level).read_text()
        assert "produce<" in src and "grid, sm, tid," in src  # the producer of the level's own grid
        assert src.count("for (Walk u(grid.cluster, grid.clusters, grid.tiles, grid.KT); u.valid(); u.next())") == 1
        # the unit's k-tiles from u.kb (tc4 may peel the first off the loop: EPI_DEFER)
        assert "int kt = u.kb" in src and "kt < u.ke; ++kt, ++it)" in src and "sk_fixup<" in src


GXX = shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_stream_k_device_arithmetic_runs_like_the_model(tmp_path):
    """Compile the device walk (SkWalk, plain C++) on the host and compare its units and each split tile's peers
    with the Python model on many (T, G, KT)."""
    main = r"""
#include <cstdio>
int main() {
  int T, G, KT;
  while (scanf("%d %d %d", &T, &G, &KT) == 3) {
    for (int c = 0; c < G; ++c) {
      printf("C");
      for (SkWalk u(c, G, T, KT); u.valid(); u.next()) {
        printf(" %d,%d,%d", u.tile, u.kb, u.ke);
        if (u.owner_of_split()) {
          printf(":");
          for (int p = u.first_peer(); p >= 0; p = u.next_peer(p)) printf("%d;", p);
        }
      }
      printf("\n");
    }
  }
}
"""
    src = tmp_path / "walk.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n" + _host_block("tc_scheduler.cuh", "stream-K") + main)
    for fill, skip in FILLS:
        exe = tmp_path / f"walk{fill}_{skip}"
        subprocess.run([GXX, "-O1", "-std=c++17", f"-DSK_FILL={fill}", f"-DSK_SKIP_FILL={skip}", "-o", str(exe),
                        str(src)], check=True)
        _compare_walk(exe, fill, skip)


def _compare_walk(exe, fill: int, skip: int) -> None:
    cases = SK_CASES + [(t, g, kt) for t in range(1, 12) for g in range(1, 9) for kt in range(1, 6)]
    out = subprocess.run([str(exe)], input="\n".join(f"{t} {g} {k}" for t, g, k in cases), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    row = 0
    for t, g, kt in cases:
        units = stream_k_units(t, g, kt, fill, skip)
        holders = {}
        for c, us in enumerate(units):
            for tile, kb, ke in us:
                holders.setdefault(tile, []).append(c)
        for c, us in enumerate(units):
            want = []
            for tile, kb, ke in us:
                w = f"{tile},{kb},{ke}"
                if kb == 0 and ke < kt:
                    w += ":" + "".join(f"{p};" for p in holders[tile][1:])
                want.append(w)
            assert out[row] == " ".join(["C"] + want), (t, g, kt, c, fill, skip)
            row += 1
    assert row == len(out)


@pytest.mark.parametrize("spec", TC6, ids=lambda s: s.name)
def test_tc6_is_its_base_level_with_stream_k(spec):
    base = next(s for s in TC if s.level == (4 if spec.precision == "bf16" else 5) and s.precision == spec.precision)
    assert spec.source == base.source and spec.entry == base.entry
    sk = {"STREAM_K": 1, "SK_FILL": SK_FILL, "SK_SKIP_FILL": SK_SKIP_FILL}
    own = {k: v for k, v in base.params.items() if k != "NARROW_BN"}  # narrower tiles are the base level's choice
    assert spec.params in ({**own, "CM": 1, **sk}, {**own, **sk})
    assert spec.params.get("CM", 1) * spec.params.get("CN", 1) == 1
    assert "STREAM_K" not in base.params  # tc4, tc5 compile with the .cu default, STREAM_K=0
    assert "red.release.gpu" in _ptx(spec) and "ld.acquire.gpu" in _ptx(spec)
    assert "red.release.gpu" not in _ptx(base)
    # bar 0 (__syncthreads), the consumers' bar 1 and, under EPI_TMA, each warpgroup's epilogue bar 2 + cw: a
    # barrier id held in a register makes ptxas reserve all 16 (harmless at one CTA per SM)
    assert spec.compile("sm_90a").report.barriers == (16 if spec.params.get("EPI_TMA") else 2)
    # where no tile is split (whole waves, or a last wave at least SK_SKIP_FILL % full), tc6 launches the base
    # level's kernel: the same binary
    plain = spec.without_stream_k()
    assert plain.params == base.params and plain.compile("sm_90a").cubin == base.compile("sm_90a").cubin
    assert spec.stream_k_tiles(Problem(4096, 4096, 4096, spec.precision)) == 0  # 116 of 132: 88% full
    assert spec.stream_k_tiles(Problem(8192, 8192, 8192, spec.precision)) == 68
    # BF16: tc4's 192-wide tiles fill the seed shape's last wave (128 cluster tiles for 66 clusters), so tc6 runs them
    seed = Problem(2048, 3072, 4096, spec.precision)
    assert spec.stream_k_tiles(seed) == (0 if spec.precision == "bf16" else 192)
    if spec.precision == "bf16":
        assert spec.for_problem(seed).params == {**base.params, "BN": 192, "NARROW_BN": 0}


def test_small_tf32_problems_round_a_in_shared_memory_in_one_launch():
    """tc6 TF32 up to ONE_LAUNCH_MNK multiply-adds: TF32_ROUND=2 (no pre-pass), split or not; above it, tc5's
    pre-pass. The traffic model and the configurations verify --sanitize runs follow the same rule."""
    from gemmlab.kernels.cuda.tc import tc6_stream_k

    tf32 = next(s for s in TC6 if s.precision == "tf32")
    limit = tc6_stream_k.ONE_LAUNCH_MNK
    assert tf32.one_launch_mnk == limit == 512 ** 3
    # K past ONE_LAUNCH_MAX_K: the pass would cost each CTA more k-tiles than the launch saves; K % 4: A's rows are
    # not 16-byte pitched, so A is copied first anyway, which the pre-pass does as it rounds
    assert ONE_LAUNCH_MAX_K == 512
    for shape, rounds in (((512, 512, 512), 2), ((256, 256, 256), 2), ((17, 33, 8), 2), ((17, 33, 5), 3),
                          ((16, 16, 65536), 3), ((128, 128, 516), 3), ((513, 512, 512), 3),
                          ((1024, 1024, 1024), 3), ((4096, 4096, 4096), 3)):
        problem = Problem(*shape, "tf32")
        runs = tf32.for_problem(problem)
        assert runs.params["TF32_ROUND"] == rounds, shape
        traffic = tf32.traffic(problem)
        m, n, k = shape
        assert traffic.prepass == (0 if rounds == 2 else 8 * m * k), shape
        assert ("rounding pre-pass" in traffic.basis) == (rounds == 3)
    # a small problem whose K gives stream-K nothing to split runs the base level, still in one launch
    tiny_k = Problem(256, 256, 32, "tf32")
    assert tf32.stream_k_tiles(tiny_k) == 0
    assert tf32.for_problem(tiny_k).params == {**tc5_swap_ab.PARAMS, "TF32_ROUND": 2}
    # the in-place pass reads and writes A's tiles in shared memory: more shared-memory bytes than the pre-pass build
    small = Problem(512, 512, 512, "tf32")
    pre_pass = wgmma_traffic("tf32", 256, 128, prepass=False, stream_k=True, group_m=8, swap_ab=True,
                                       round_a=True)(small)
    assert tf32.traffic(small).smem > pre_pass.smem and tf32.traffic(small).global_read < pre_pass.global_read
    assert [c.params["TF32_ROUND"] for c in tf32.configurations()] == [3, 2]
    assert all(c.for_problem(small).params["TF32_ROUND"] == c.params["TF32_ROUND"] for c in tf32.configurations())
    assert not next(s for s in TC6 if s.precision == "bf16").one_launch_mnk
    # tc5, whose few CTAs at these sizes carry the pass alone, keeps the pre-pass above 256³
    tc5 = next(s for s in TC if s.level == 5)
    assert tc5.one_launch_mnk == tc5_swap_ab.ONE_LAUNCH_MNK == 256 ** 3
    assert [tc5.for_problem(Problem(*s, "tf32")).params["TF32_ROUND"] for s in ((256,) * 3, (257, 256, 256))] == [2, 3]
    assert [c.params["TF32_ROUND"] for c in tc5.configurations()] == [3, 2]


def test_tc6_refuses_clusters_and_bad_values():
    import dataclasses

    bf16, tf32 = (next(s for s in TC6 if s.precision == p) for p in ("bf16", "tf32"))
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(bf16, params={**bf16.params, "CM": 2})
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(tf32, params={**tf32.params, "CN": 2})
    with pytest.raises(InvalidConfigError, match="STREAM_K=2"):
        dataclasses.replace(bf16, params={**bf16.params, "STREAM_K": 2})
    for bad in ({"SK_FILL": 101}, {"SK_FILL": 80, "SK_SKIP_FILL": 70}, {"SK_SKIP_FILL": 120}):
        with pytest.raises(InvalidConfigError, match="SK_FILL"):
            dataclasses.replace(bf16, params={**bf16.params, **bad})
    tc4 = next(s for s in TC if s.level == 4 and s.precision == "tf32" and s.params["CM"] == 2)
    with pytest.raises(InvalidConfigError, match="clusters off"):
        dataclasses.replace(tc4, params={**tc4.params, "STREAM_K": 1})


def test_tc6_traffic_counts_the_partials():
    for spec in TC6:
        base = next(s for s in TC if s.level == (4 if spec.precision == "bf16" else 5) and s.precision == spec.precision)
        # the seed shape for TF32; for BF16 a shape where tc4 keeps its 256-wide tile, so tc6 splits
        m, n, k = (2048, 3072, 4096) if spec.precision == "tf32" else (2048, 2048, 4096)
        p = Problem(m, n, k, spec.precision)
        bm, bn = spec.params["BM"], spec.params["BN"]
        # the split walk runs with clusters off: its reads and writes are those of unclustered tiles plus partials
        t6 = spec.traffic(p)
        tb = wgmma_traffic(spec.precision, bm, bn, prepass=False,
                                     round_a=spec.params.get("TF32_ROUND", 0) == 3)(p)
        tiles, kt = -(-m // bm) * -(-n // bn), -(-k // bk(spec.precision))
        partials = stream_k_partials(tiles, 132, kt)
        assert 0 < partials <= 132
        assert t6.global_read - tb.global_read == t6.global_write - tb.global_write == 4 * bm * bn * partials
        assert "stream-K" in t6.basis
        whole = Problem(bm * 132, bn, 64, spec.precision)  # 132 tiles: one whole wave, no partials
        assert spec.traffic(whole) == base.traffic(whole)  # the base level runs, clusters and all


# ---- tc4 with its clock stamps (TIMELINE=1, gemmlab timeline) ---------------------------------------------------
@pytest.mark.parametrize("prec", ["bf16", "tf32"])
def test_timeline_build_compiles_without_spills(prec):
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == prec)
    stamped = spec.instrumented(Problem(4096, 4096, 4096, prec)).spec
    report = stamped.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    # the stamps are compiled in only on request: the measured binary does not carry them
    assert "globaltimer" not in _ptx(spec.for_problem(Problem(4096, 4096, 4096, prec))) and \
        "globaltimer" in _ptx(stamped)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                    reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("source", TIMELINE_SOURCES)
def test_timeline_slots_agree_with_the_kernel(tmp_path, source):
    """The slots per warpgroup and the units they hold, as each stamped kernel's own text (headers inlined) defines
    them, evaluated by the host compiler: the host allocates TL_SLOTS per warpgroup and harness/timeline.py reads
    (TL_SLOTS - 4) // 3 units."""
    text = _read_source(source)
    macros = "".join(line + "\n" for line in text.splitlines()
                     if line.startswith(("#define TL_SLOTS", "#define TL_UNITS")))
    src = tmp_path / "slots.cpp"
    src.write_text("#include <cstdio>\n" + macros + 'int main() { printf("%d %d\\n", TL_SLOTS, TL_UNITS); }\n')
    exe = tmp_path / "slots"
    subprocess.run([shutil.which("g++") or shutil.which("clang++"), "-o", str(exe), str(src)], check=True)
    slots, units = map(int, subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    assert slots == TL_SLOTS and units == (TL_SLOTS - 4) // 3


# ---- tc4's narrower tile where it fills the last wave (NARROW_BN) ------------------------------------------------
TC4 = [s for s in WGMMA if s.level == 4]


def test_narrow_tiles_only_where_they_fill_the_last_wave():
    p = dict(TC4[0].params)
    assert p["BN"] == 256 and p["NARROW_BN"] == 192 and p["CM"] == 2
    # seed shape: 96 cluster tiles for 66 clusters take 2 rounds of 256 columns; 192-wide, 128 tiles take 2 of 192
    assert narrow_pays(2048, 3072, p)
    assert not narrow_pays(4096, 4096, p)  # 4 rounds of 256 against 6 of 192
    assert not narrow_pays(8192, 8192, p)  # 16 x 256 = 4096 against 21 x 192 = 4032: within NARROW_COST
    assert not narrow_pays(300, 520, p)  # one wave either way: the wide tile as before
    assert not narrow_pays(2048, 3072, p, sm_count=264)  # a GPU twice as wide holds every tile at once
    assert not narrow_pays(2048, 3072, {**p, "NARROW_BN": 0})
    assert not narrow_pays(2048, 3072, {**p, "STREAM_K": 1})


@pytest.mark.parametrize("spec", TC4, ids=lambda s: s.name)
def test_narrow_tile_is_a_pinned_configuration(spec):
    seed, big = Problem(2048, 3072, 4096, spec.precision), Problem(4096, 4096, 4096, spec.precision)
    narrow = spec.for_problem(seed)
    assert narrow.params == {**spec.params, "BN": 192, "NARROW_BN": 0} and spec.for_problem(big) is spec
    assert narrow.for_problem(seed) is narrow  # pinned: no second choice
    assert spec.launch_geometry(seed) == narrow.launch_geometry(seed)
    assert spec.traffic(seed) == narrow.traffic(seed) and "192-column" in spec.traffic(seed).basis
    assert "NARROW_BN" not in spec.defines()  # a host-side choice: the wide binary is the one measured before
    wide_cfg, narrow_cfg = spec.configurations()
    assert wide_cfg.params == {**spec.params, "NARROW_BN": 0} and narrow_cfg.params == narrow.params
    report = narrow_cfg.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    assert "m64n192k" in _ptx(narrow_cfg) and "m64n192k" not in _ptx(wide_cfg)


def test_narrow_tile_refused_where_it_cannot_work():
    import dataclasses

    bf16 = TC4[0] if TC4[0].precision == "bf16" else TC4[1]
    for bad, why in (({"NARROW_BN": 256}, "below BN=256"), ({"NARROW_BN": 160}, "a wgmma N"),
                     ({"NARROW_BN": 64}, "a B box per CTA")):  # CM=2: each CTA multicasts at least one B box
        with pytest.raises(InvalidConfigError, match=why):
            dataclasses.replace(bf16, params={**bf16.params, **bad})
    with pytest.raises(InvalidConfigError, match="NARROW_BN"):
        dataclasses.replace(TC5, params={**TC5.params, "NARROW_BN": 64})


def test_a_spec_models_the_tile_its_parameters_name():
    """WgmmaKernel.traffic hands the spec's own parameters to its traffic model; for the configuration each
    registered level runs at a shape (for_problem: narrow tiles, stream-K or its base level, the one-launch TF32
    build) that is the model it was registered with, and a pinned tile is modeled at that tile."""
    import dataclasses

    shapes = [(m, n, k) for m in (256, 1024, 1536, 2048, 2304, 4096) for n in (256, 2304, 3072, 5120, 4096, 14336)
              for k in (256, 4096)]
    from gemmlab.kernels.registry import get_kernel, list_kernels

    for spec in [s for s in list_kernels() if isinstance(s, WgmmaKernel)]:
        for shape in shapes:
            problem = Problem(*shape, spec.precision)
            runs = spec.for_problem(problem)
            mine, registered = runs.traffic(problem), runs.traffic_model(problem)
            assert (mine.global_read, mine.global_write, mine.smem, mine.l2) == \
                (registered.global_read, registered.global_write, registered.smem, registered.l2), (spec.name, shape)
    tc8 = get_kernel("cuda/tc8_block_scaled_fp8")
    p = Problem(4096, 4096, 4096, "fp8_block")
    pinned = dataclasses.replace(tc8, params={**tc8.params, "BM": 128, "STAGES": 5, "CONSUMER_REGS": 232,
                                              "PRODUCER_REGS": 40})
    assert pinned.traffic(p).global_read > tc8.traffic(p).global_read  # B once per 128 rows, not per 192
