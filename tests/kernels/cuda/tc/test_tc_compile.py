"""The tensor-core levels (cuda/tc*) without a GPU: every level registered, compiled for sm_90a through NVRTC with no
spills and wgmma in its PTX (HGMMA in SASS where a disassembler is installed); the constraints refuse what the
compiler would, launch registers fit their pool, and the models hold for every shape."""
from __future__ import annotations

import re

import pytest
import sass

from gemmlab.errors import CompileError, DTypeError, InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda
from gemmlab.kernels.cuda.tc.model.budget import launch_registers
from gemmlab.kernels.cuda.tc.model.constraints import wgmma_constraints
from gemmlab.problem import Problem

from tc_levels import TC, WGMMA, ptx_of


def test_every_level_and_precision_registered():
    names = {s.name for s in TC}
    for level in ("tc1_mma_sync", "tc2_wgmma_tma", "tc3_warp_specialized", "tc4_persistent"):
        for prec in ("bf16", "fp16", "tf32"):
            assert f"cuda/{level}_{prec}" in names
    assert "cuda/tc5_swap_ab_tf32" in names  # TF32 only: BF16 wgmma reads N-major B as it is
    assert {"cuda/tc6_stream_k_bf16", "cuda/tc6_stream_k_fp16", "cuda/tc6_stream_k_tf32"} <= names
    assert "cuda/tc7_3xtf32" in names  # FP32 in and out: level 11, after v10 in the FP32 table
    # BF16 and FP16 (and FP8): few rows of A on a narrow tile; split-K, also in TF32
    assert {"cuda/tc9_narrow_swap_bf16", "cuda/tc9_narrow_swap_fp16", "cuda/tc10_split_k_bf16",
            "cuda/tc10_split_k_fp16", "cuda/tc10_split_k_tf32"} <= names
    for s in TC:  # FP16 on every BF16 level: the same levels, one precision record
        assert (s.level, s.precision) == (11, "fp32") if s.name == "cuda/tc7_3xtf32" else \
            s.level in (1, 2, 3, 4, 5, 6, 9, 10) and s.precision in ("bf16", "fp16", "tf32")
        assert s.doc and "changed" in s.doc
    assert sorted(s.name.replace("_bf16", "") for s in TC if s.precision == "bf16") == \
        sorted(s.name.replace("_fp16", "") for s in TC if s.precision == "fp16")


@pytest.mark.parametrize("spec", TC, ids=lambda s: s.name)
def test_compiles_sm90a_without_spills(spec):
    report = spec.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0, report
    assert report.registers <= 255
    if spec.level >= 3:
        # the 384-thread launch bound caps registers at 168; setmaxnreg then moves them to the consumers
        assert report.registers <= 168


@pytest.mark.parametrize("spec", TC, ids=lambda s: s.name)
def test_tensor_core_instructions_in_ptx(spec):
    ptx = ptx_of(spec)
    if spec.level == 1:
        assert "mma.sync.aligned" in ptx and "cp.async" in ptx
        assert "wgmma" not in ptx
    else:
        typ = spec.prec.tensor_core_type or "tf32"  # bf16, f16 (TC_F16) or tf32 (tc7's FP32 too: 3 TF32 products)
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
    assert re.search(_hgmma(spec), listing), _hgmma(spec)
    assert "UTMALDG" in listing and "LDL" not in listing and "STL" not in listing


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec", [s for s in WGMMA if s.params.get("CM", 1) * s.params.get("CN", 1) > 1],
                         ids=lambda s: s.name)
def test_a_cluster_meets_after_its_ring_s_set_up_without_a_gpu_memory_barrier(spec, tmp_path):
    """The ring's set-up ends with fence.mbarrier_init, which releases the barriers to the cluster; the meeting
    after it arrives relaxed, so no warp runs a gpu-scope memory barrier (MEMBAR.ALL.GPU) before its first cluster
    arrival, where a release arrival put one in every warp of the launch."""
    ops = [i.op for i in sass.instructions(sass.sass(spec.compile("sm_90a").cubin, tmp_path))]
    first = ops.index("UCGABAR_ARV")
    assert "UCGABAR_WAIT" in ops[first:] and "MEMBAR.ALL.GPU" not in ops[:first], ops[:first]


def _hgmma(spec) -> str:
    """The HGMMA a level's SASS holds: .F32.BF16 and .F32.TF32 name their operands; f16, the instruction's own
    type, has no suffix after .F32."""
    typ = {"bf16": r"\.BF16", "f16": r"(?![.\w])", "tf32": r"\.TF32"}[spec.prec.tensor_core_type or "tf32"]
    return rf"HGMMA\.64x{_wgmma_n(spec)}x{16 if spec.prec.sixteen_bit else 8}\.F32{typ}"


# ---- C's type: every 16-bit level in each output type its precision writes ---------------------------------------
SIXTEEN = [s for s in TC if s.prec.sixteen_bit]
OUTPUTS = [(s, out) for s in SIXTEEN for out in s.prec.output_dtypes]
PACK = {"bfloat16": "F2FP.BF16.F32.PACK_AB", "float16": "F2FP.F16.F32.PACK_AB"}


def test_a_16_bit_level_writes_its_operands_type_by_default_and_fp32_on_request():
    for s in SIXTEEN:
        dtype = s.prec.input_dtype
        assert str(s.output_dtype(Problem(64, 64, 64, s.precision))) == dtype  # torch's rule
        fp32 = s.for_formats(dtype, dtype, "float32")
        assert str(fp32.output_dtype(Problem(64, 64, 64, s.precision))) == "float32"
        assert fp32.for_formats(dtype, dtype, dtype).defines() == s.defines()
        assert {k: v for k, v in fp32.defines().items() if k.startswith("OUT_")} == \
            {"OUT_BF16" if s.precision == "bf16" else "OUT_F16": 0}
        with pytest.raises(DTypeError, match="float64 C"):  # a C its precision does not write
            s.for_formats(dtype, dtype, "float64")


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec,out", OUTPUTS, ids=lambda x: getattr(x, "name", x))
def test_each_output_type_compiles_without_spills_and_packs_c_in_its_type(spec, out, tmp_path):
    """BF16 or FP16 C: the pairs rounded and packed by one F2FP of C's type; FP32 C none. HGMMA (tc1: HMMA) of the
    operands' type either way, no local memory, registers within the launch bound."""
    dtype = spec.prec.input_dtype
    build = spec.for_formats(dtype, dtype, out)
    compiled = build.compile("sm_90a")
    report = compiled.report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= (255 if spec.level < 3 else 168)
    listing = sass.sass(compiled.cubin, tmp_path)
    assert "LDL" not in listing and "STL" not in listing
    if spec.level == 1:
        assert "HMMA.16816.F32" + (".BF16" if spec.precision == "bf16" else " ") in listing
    else:
        assert re.search(_hgmma(spec), listing)
    for dtype_name, pack in PACK.items():
        assert (pack in listing) == (out == dtype_name), (out, pack)
    if build.params.get("EPI_TMA", 0):  # C's tensor map in C's own type: TMA stores either way
        assert "UTMASTG" in listing


def test_no_setmaxnreg_warning():
    for spec in TC:
        log = spec.compile("sm_90a").log
        assert "C7508" not in log and "setmaxnreg" not in log.lower(), log


# ---- constraints -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source,change,message", [
    ("tc4_persistent.cu", {"STAGES": 1}, "at least 2 slots"),
    ("tc4_persistent.cu", {"STAGES": 6}, "227 KB"),
    ("tc4_persistent.cu", {"CONSUMER_REGS": 236}, "multiples of 8"),
    ("tc4_persistent.cu", {"CONSUMER_REGS": 256, "PRODUCER_REGS": 256}, "registers the block holds"),
    ("tc4_persistent.cu", {"BN": 160, "EPI_TMA": 0}, "n64, n128, n192, n256"),
    ("tc4_persistent.cu", {"BN": 64}, "at least one of the tile's B boxes"),
    ("tc4_persistent.cu", {"BN": 224, "EPI_TMA": 0, "EPI_DEFER": 0}, "n144 and n224 for 16-bit"),  # not TF32
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
    wide = {"BM": 256, "BN": 128, "PRODUCER_REGS": 40, "EPI_TMA": 0, "EPI_DEFER": 0, "NARROW_BN": 0}  # no staging
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
    # BF16 C by default (torch's rule): 2 bytes an element, where it was FP32's 4 before
    assert tb.global_write == 2 * 4096 * 4096 and "pre-pass" not in tb.basis


def test_persistent_grid_fits_resident_clusters():
    spec = next(s for s in WGMMA if s.level == 4 and s.params["CM"] == 2)
    p = Problem(4096, 4096, 4096, spec.precision)
    assert spec.launch_geometry(p, sm_count=132).grid == (132, 1, 1)
    # a GPU that holds only 60 two-CTA clusters at once gets 60 of them, never a second partial wave
    assert spec.launch_geometry(p, sm_count=132, max_clusters=60).grid == (120, 1, 1)
    small = Problem(256, 128, 64, spec.precision)  # one cluster tile, 256 or 192 columns wide
    assert spec.launch_geometry(small, sm_count=132, max_clusters=60).grid == (2, 1, 1)
