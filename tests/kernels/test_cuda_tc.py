"""The tensor-core levels (cuda/tc*) without a GPU: every level compiles for sm_90a through NVRTC with no
spills, the wgmma levels carry wgmma in their PTX (HGMMA in SASS where a disassembler is installed), and the
host-side pieces (tensor-map arguments, wgmma descriptors, tile order, launch geometry, constraints, operand
staging) behave as the kernels assume."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gemmlab.errors import InvalidConfigError
from gemmlab.kernels.cuda import tc_common
from gemmlab.kernels.cuda._nvrtc import SOURCE_DIR, _read_source
from gemmlab.kernels.cuda._tma import TiledMap
from gemmlab.kernels.registry import list_kernels
from gemmlab.problem import Problem

TC = list_kernels("cuda/tc*")
WGMMA = [s for s in TC if s.level >= 2]


def test_every_level_and_precision_registered():
    names = {s.name for s in TC}
    for level in ("tc1_mma_sync", "tc2_wgmma_tma", "tc3_warp_specialized", "tc4_persistent"):
        for prec in ("bf16", "tf32"):
            assert f"cuda/{level}_{prec}" in names
    for s in TC:
        assert s.level in (1, 2, 3, 4) and s.precision in ("bf16", "tf32")
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
        n = spec.params["BN"]
        assert f"wgmma.mma_async.sync.aligned.m64n{n}k" in ptx and f".f32.{typ}.{typ}" in ptx
        assert "cp.async.bulk.tensor.2d" in ptx and "mbarrier.try_wait" in ptx
    if spec.level >= 3:
        assert "setmaxnreg.inc" in ptx and "setmaxnreg.dec" in ptx
    if spec.level == 4 and spec.params["CM"] > 1:
        assert "multicast::cluster" in ptx and "mapa" in ptx


def _cuda_tool(name: str) -> str | None:
    """A CUDA binary on PATH, or from the nvidia-cuda-cuobjdump / -nvdisasm wheels the test extras install."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for candidate in Path(root).glob(f"cu*/bin/{name}"):
            return str(candidate)
    return None


CUOBJDUMP, NVDISASM = _cuda_tool("cuobjdump"), _cuda_tool("nvdisasm")


@pytest.mark.skipif(CUOBJDUMP is None or NVDISASM is None, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec", WGMMA, ids=lambda s: s.name)
def test_hgmma_in_sass(spec, tmp_path):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(spec.compile("sm_90a").cubin)
    env = dict(os.environ, PATH=os.path.dirname(NVDISASM) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], capture_output=True, text=True, env=env).stdout
    typ = "BF16" if spec.precision == "bf16" else "TF32"
    assert f"HGMMA.64x{spec.params['BN']}x{16 if typ == 'BF16' else 8}.F32.{typ}" in sass
    assert "UTMALDG" in sass and "LDL" not in sass and "STL" not in sass


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
    bk = tc_common.bk(prec)
    assert (a.rows, a.cols, a.box_rows, a.box_cols) == (1000, 200, 128, bk)
    if prec == "bf16":  # B as given: K rows of N, boxes of BK rows x 64 columns
        assert (b.rows, b.cols, b.box_rows, b.box_cols) == (200, 520, bk, 64)
    else:  # Bᵀ: N rows of K
        assert (b.rows, b.cols, b.box_rows, b.box_cols) == (520, 200, 64, bk)
    # every box lands exactly in the stage bytes the kernel expects on its barrier
    boxes_b = spec.params["BN"] // 64
    assert a.box_bytes + boxes_b * b.box_bytes == tc_common.stage_bytes(spec.params["BM"], spec.params["BN"])
    assert not a.errors() and not b.errors()


# ---- wgmma descriptors -------------------------------------------------------------------------------------
def test_wgmma_descriptor_fields():
    d = tc_common.wgmma_desc(0x1_2400, 16, 1024)
    assert d & 0x3FFF == 0x1_2400 >> 4
    assert (d >> 16) & 0x3FFF == 1  # leading byte offset, 16-byte units
    assert (d >> 32) & 0x3FFF == 64  # stride byte offset 1024
    assert (d >> 49) & 0x7 == 0  # base offset: tiles are 1024-byte aligned
    assert d >> 62 == 1  # 128-byte swizzle
    d = tc_common.wgmma_desc(0x400, 8192, 1024)
    assert (d >> 16) & 0x3FFF == 512
    assert tc_common.wgmma_desc(0x4_0000 + 0x400, 16, 1024) & 0x3FFF == 0x400 >> 4  # 18-bit shared window


def test_device_descriptor_matches_host():
    text = (SOURCE_DIR / "tc_common.cuh").read_text()
    assert "((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62)" in text


# ---- tile order and geometry -------------------------------------------------------------------------------
def test_tile_order_is_a_grouped_permutation():
    order = tc_common.tile_order(5, 3, 2)
    assert sorted(order) == [(m, n) for m in range(5) for n in range(3)]
    assert order[:6] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]  # a group of 2 rows, column by column
    assert order[-3:] == [(4, 0), (4, 1), (4, 2)]  # the last, short group


def test_tile_order_matches_device_scheduler():
    text = (SOURCE_DIR / "tc4_persistent.cu").read_text()
    for line in ("const int group = GROUP_M * tiles_n;", "const int first = (t / group) * GROUP_M;",
                 "const int rows = min(tiles_m - first, GROUP_M);", "tm = first + r % rows;", "tn = r / rows;"):
        assert line in text


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (8192, 8192, 8192), (33, 17, 65), (1, 1, 1)])
def test_launch_geometry(shape):
    for spec in TC:
        p = Problem(*shape, spec.precision)
        geo = spec.launch_geometry(p) if spec.level < 4 else spec.launch_geometry(p, sm_count=132)
        bm, bn = spec.params["BM"], spec.params["BN"]
        if spec.level == 4:
            cm = spec.params["CM"]
            tiles = -(-p.m // (bm * cm)) * -(-p.n // bn)
            assert geo.grid == (min(tiles, 132 // cm) * cm, 1, 1)
            assert geo.grid[0] % cm == 0
            assert spec.cluster() == ((cm, 1, 1) if cm > 1 else None)
        else:
            assert geo.grid == (-(-p.n // bn), -(-p.m // bm), 1)
        threads = {1: 256, 2: bm // 64 * 128}.get(spec.level, (bm // 64 + 1) * 128)
        assert geo.threads == threads
        assert geo.smem <= 227 * 1024


def test_shared_memory_budget():
    spec = next(s for s in WGMMA if s.level == 4)
    assert tc_common.smem_bytes(dict(spec.params)) == 4 * (384 * 128 + 16) + 1024


# ---- constraints -------------------------------------------------------------------------------------------
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
