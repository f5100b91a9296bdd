"""The ceiling probes (gemmlab.harness.roof_probes) compile for sm_90a without spills (NVRTC needs no GPU), do in
SASS the work the host counts (every counted load, FFMA or wgmma executed once per counted iteration, ptxas having
merged or hoisted none), and stored ceilings are found again."""
import json
import re
import shutil
import subprocess

import pytest
import sass

from gemmlab.analysis.ceilings import SHIPPED
from gemmlab.analysis.roofline import DEVICES, ceilings_for
from gemmlab.harness import roof_probes
from gemmlab.kernels.cuda.launch.nvrtc import SOURCE_DIRS, compile_cuda, source_path
from gemmlab.kernels.cuda.launch.tma import TiledMap

GXX = shutil.which("g++") or shutil.which("clang++")
needs_sass = pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")


@pytest.mark.parametrize("source, entry, defines", roof_probes.probe_builds(),
                         ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}{x}" for k, x in v.items()))
def test_probe_compiles_without_spills(source, entry, defines):
    report = compile_cuda(source, entry, defines, "sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0, report


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_another_architecture_runs_the_generic_probes_alone(arch):
    """Off sm_90 (an A100, an RTX 4090) the ceilings measure with the probes that compile there: the shared-memory
    loads, FFMA chains and 16-byte L2 loads; wgmma's rates and the bulk and TMA copies are Hopper's alone."""
    probes = roof_probes.clock_probes(hopper=False)
    assert {p.figure for p in probes} == {"smem", "fp32"}
    assert {p.figure for p in roof_probes.clock_probes()} == {"smem", "fp32", *roof_probes.WGMMA_PRECISIONS}
    for source, entry, defines in [(p.source, p.entry, p.defines) for p in probes] + \
            [("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": u}) for u in roof_probes.LDG_UNROLL]:
        report = compile_cuda(source, entry, defines, arch).report
        assert report.spills == 0, (source, arch, report)


def test_each_clock_probe_runs_one_cta_an_sm_within_what_a_block_may_take():
    """An H200 or A100 block may take more than ALONE_SMEM, and every probe launches with at least that; an RTX 4090's
    (99 KB of its SM's 100) launches with all of it, still one CTA an SM, and leaves out the shared-memory probe of
    eight loads in flight, whose 128 KB it cannot hold."""
    for limit in (232448, 166912):
        plan = roof_probes.clock_plan(True, limit)
        assert len(plan) == len(roof_probes.clock_probes()) and all(roof_probes.ALONE_SMEM <= s <= limit
                                                                    for _, s in plan)
    plan = roof_probes.clock_plan(False, 101376)
    assert all(s == 101376 for _, s in plan) and {p.figure for p, _ in plan} == {"smem", "fp32"}
    assert [p.defines["UNROLL"] for p, _ in plan if p.figure == "smem"] == [4]


def test_wgmma_probe_holds_tc4s_accumulators_in_registers():
    # a warpgroup's m64n256 accumulator is 128 floats a thread: the probe must keep them all in registers
    wgmma = [b for b in roof_probes.probe_builds() if b[1] == "probe_wgmma"]
    assert {b[2]["TC_BF16"] for b in wgmma} == {0, 1}
    for source, entry, defines in wgmma:
        assert compile_cuda(source, entry, defines, "sm_90a").report.registers >= 128 + 8


def _listing(source, entry, defines, tmp_path):
    return sass.instructions(sass.sass(compile_cuda(source, entry, defines, "sm_90a").cubin, tmp_path))


def _work(probe, instr) -> float:
    """What one warp-wide (warpgroup-wide, for wgmma) instruction of ``probe``'s counted kind does for one CTA, all
    its warps running it: bytes for 16-byte shared loads, FLOPs for FFMA and HGMMA; 0 for any other."""
    warps = probe.threads // 32
    if probe.figure == "smem":
        return 32 * 16 * warps if instr.op == "LDS.128" else 0
    if probe.figure == "fp32":
        return 2 * 32 * warps if instr.op == "FFMA" else 0
    m = re.fullmatch(r"HGMMA\.64x(\d+)x(\d+)\.F32\.(TF32|BF16)", instr.op)
    return 2 * 64 * int(m.group(1)) * int(m.group(2)) * warps // 4 if m else 0


@needs_sass
@pytest.mark.parametrize("probe", roof_probes.clock_probes(), ids=lambda p: f"{p.entry}-{p.figure}-{p.defines}")
def test_clock_probe_loop_does_the_counted_work(probe, tmp_path):
    """Between the probe's two clock reads there is one loop, its body one iteration: every counted instruction of
    the timed span sits in it, and together they do the work per iteration that the host divides by the cycles."""
    instrs = _listing(probe.source, probe.entry, probe.defines, tmp_path)
    clocks = [i.addr for i in instrs if "SR_CLOCKLO" in i.args]
    start, stop = clocks[0], clocks[-1]
    timed = [(first, last) for first, last in sass.loops(instrs) if start < first and last < stop]
    assert len(timed) == 1, f"{len(timed)} loops between the clock reads (unrolled, with a remainder?)"
    (first, last), = timed
    counted = [i for i in sass.between(instrs, start, stop) if _work(probe, i)]
    assert counted and all(first <= i.addr <= last for i in counted)
    assert sum(_work(probe, i) for i in counted) == probe.work_per_iter


@needs_sass
@pytest.mark.parametrize("unroll", roof_probes.LDG_UNROLL)
def test_l2_load_probe_issues_every_load(unroll, tmp_path):
    """Each trip of the sweep's inner loop issues UNROLL 16-byte loads past L1: the bytes a pass counts."""
    instrs = _listing("probe_l2_ldg.cu", "probe_l2_ldg", {"UNROLL": unroll}, tmp_path)
    loads = [i for i in instrs if i.op.startswith("LDG")]
    assert len(loads) == unroll and all(i.op == "LDG.E.128.STRONG.GPU" for i in loads)
    around = [loop for loop in sass.loops(instrs) if all(loop[0] <= i.addr <= loop[1] for i in loads)]
    first, last = min(around, key=lambda loop: loop[1] - loop[0])
    assert not [loop for loop in sass.loops(instrs) if first <= loop[0] and loop[1] <= last and loop != (first, last)]


@needs_sass
@pytest.mark.parametrize("chunk, stages", roof_probes.BULK)
def test_bulk_probe_issues_one_copy_per_chunk(chunk, stages, tmp_path):
    instrs = _listing("probe_l2_bulk.cu", "probe_l2_bulk", {"CHUNK": chunk, "STAGES": stages, **roof_probes.TC_TILE},
                      tmp_path)
    assert [i.op for i in instrs if i.op.startswith("UBLKCP")] == ["UBLKCP.S.G"]


@needs_sass
@pytest.mark.parametrize("source, entry, defines", roof_probes.tma_builds(), ids=lambda v: str(v))
def test_tma_probe_copies_the_stage_it_counts(source, entry, defines, tmp_path):
    """Per k-tile the producer issues one A box and BN/64 boxes of Bᵀ, whose bytes by the maps the host encodes are
    the stage it counts; each CTA walks as many units."""
    bm, bn = defines["BM"], defines["BN"]
    instrs = _listing(source, entry, defines, tmp_path)
    assert [i.op for i in instrs if i.op.startswith("UTMALDG")] == ["UTMALDG.2D"] * (1 + bn // 64)
    for own in (False, True):
        walk = roof_probes.tma_walk(132, bm, bn, 16 << 20, own)
        a = TiledMap("fp32", walk["m"], walk["k"], walk["k"], bm, 32)
        b = TiledMap("fp32", walk["n"], walk["k"], walk["k"], 64, 32)
        assert not a.errors() and not b.errors()
        assert a.box_bytes + bn // 64 * b.box_bytes == walk["stage"]
        assert walk["units"] % 132 == 0 and walk["moved"] == walk["units"] * walk["KT"] * walk["stage"]
        assert (walk["m"] + walk["n"]) * walk["k"] * 4 <= 16 << 20  # what stays in L2


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler")
def test_tma_probe_args_match_the_kernels_struct(tmp_path):
    """TMA_ARGS lays ProbeTmaArgs out as the C++ compiler does."""
    text = source_path("probe_l2_tma.cu").read_text()
    struct = text[text.index("// begin args struct"):text.index("// end args struct")]
    offsets, size, _ = roof_probes.TMA_ARGS.layout()
    fields = [name for name, _ in roof_probes.TMA_ARGS.fields]
    src = tmp_path / "args.cpp"
    src.write_text(f'#include <cstddef>\n#include <cstdio>\n#include "{source_path("tc_args.cuh")}"\n{struct}'
                   "int main() {\n" + "".join(f'  printf("%zu\\n", offsetof(ProbeTmaArgs, {f}));\n' for f in fields)
                   + '  printf("%zu\\n", sizeof(ProbeTmaArgs));\n}\n')
    exe = tmp_path / "args"
    subprocess.run([GXX, *(f"-I{d}" for d in SOURCE_DIRS), "-o", str(exe), str(src)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert got == [offsets[f] for f in fields] + [size]


def test_stored_ceilings_fill_what_the_run_did_not_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    base = ceilings_for(DEVICES["h200"], dram_gbs=4100.0)  # a copy measured in the same run
    # nothing stored yet: the H200's measurement shipped with gemmlab, under the run's own copy; another GPU, as it is
    shipped = json.loads(SHIPPED.read_text())
    first = roof_probes.stored_ceilings(base)
    assert (first.dram_gbs, first.l2_gbs) == (4100.0, shipped["l2_gbs"]) and "data/ceilings-h200.json" in first.origin
    other = ceilings_for(DEVICES["h100"])
    assert roof_probes.stored_ceilings(other) is other
    path = roof_probes.stored_path("NVIDIA H200")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"gpu": "NVIDIA H200", "dram_gbs": 3900.0, "l2_gbs": 9500.0,
                                "smem_bytes_per_clk": 126.0, "flop_per_clk": {"bf16": 4090.0}, "time": "t"}))
    roofs = roof_probes.stored_ceilings(base)
    assert (roofs.dram_gbs, roofs.l2_gbs, roofs.smem_bytes_per_clk) == (4100.0, 9500.0, 126.0)
    assert roofs.flop_per_clk["bf16"] == 4090.0 and roofs.flop_per_clk["fp32"] == 256
    assert roofs.source["l2"] == roofs.source["bf16"] == "measured" and roofs.source["fp32"] == "datasheet"
    assert "same run" in roofs.origin and str(path) in roofs.origin


def test_the_dram_roof_is_the_faster_of_the_copy_and_the_read_stream(tmp_path, monkeypatch):
    """measure_ceilings with its probes stubbed: the DRAM roof (dram_gbs, what the models and the stored ceilings
    take) is the read stream's where it outruns the copy, the copy's where it does not; copy_bw_gbs stays the copy's
    (the suite's DRAM roof and older results' key), and the read probe streams as many bytes as the copy moves."""
    import sys
    import types

    from gemmlab import device
    from gemmlab.harness import env

    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    pool = types.SimpleNamespace(free_all_blocks=lambda: None)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(get_default_memory_pool=lambda: pool))
    info = device.GPUInfo("NVIDIA H200", 132, (9, 0), 60 << 20, 232448, 1980.0, 141 << 30, "13.0", "13.2")
    monkeypatch.setattr(device, "require_gpu", lambda what: info)
    monkeypatch.setattr(env, "collect", lambda info, mode: {"git_sha": "x", "time": "t"})
    hopper = []  # what each probe set was told of the architecture: wgmma's, bulk and TMA probes on sm_90 alone
    monkeypatch.setattr(roof_probes, "l2_bandwidth", lambda sm, h: hopper.append(h) or {"l2_gbs": 15000.0})
    limits = []  # the shared memory a block may take, as each run told the clock probes
    monkeypatch.setattr(roof_probes, "clock_rates", lambda sm, hopper, smem_limit: limits.append(smem_limit) or {
        "smem_bytes_per_clk": 128.0, "flop_per_clk": {}})
    monkeypatch.setattr(roof_probes, "cublas_reference", lambda size: {"cublas_fp32_tflops": 50.0})
    read_sizes = []
    for copy_gbs, read_gbs in ((4090.0, 4350.0), (4090.0, 3900.0)):
        monkeypatch.setattr(roof_probes, "copy_bandwidth", lambda nbytes, g=copy_gbs: {"dram_gbs": g,
                                                                                        "copy_bytes": nbytes})
        monkeypatch.setattr(roof_probes, "dram_read_bandwidth",
                            lambda sm, nbytes, g=read_gbs: read_sizes.append(nbytes) or {"dram_read_gbs": g})
        out = roof_probes.measure_ceilings()
        assert out["copy_bw_gbs"] == copy_gbs and out["dram_read_gbs"] == read_gbs
        assert out["dram_gbs"] == max(copy_gbs, read_gbs)
        stored = json.loads(roof_probes.stored_path(info.name).read_text())
        assert roof_probes.stored_ceilings(ceilings_for(DEVICES["h200"])).dram_gbs == stored["dram_gbs"]
    assert read_sizes == [1 << 30, 1 << 30] and hopper == [True, True]
    monkeypatch.setattr(device, "require_gpu", lambda what: device.GPUInfo("NVIDIA A100-SXM4-80GB", 108, (8, 0),
                                                                           40 << 20, 166912, 1410.0, 80 << 30, "", ""))
    roof_probes.measure_ceilings()
    assert hopper[-1] is False and limits[-1] == 166912 and limits[0] == 232448


def test_a_measurement_under_the_drivers_name_is_read_under_the_datasheets(tmp_path, monkeypatch):
    """The H100's driver names it "NVIDIA H100 80GB HBM3" (what measure_ceilings stores under) and the devices table
    "NVIDIA H100 SXM" (what the models read under): both are one board, so the measurement is read back."""
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    assert roof_probes.stored_path("NVIDIA H100 80GB HBM3") == roof_probes.stored_path(DEVICES["h100"].name)
    assert roof_probes.stored_path("NVIDIA H200") != roof_probes.stored_path("NVIDIA H100 80GB HBM3")
    path = roof_probes.stored_path("NVIDIA H100 80GB HBM3")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"gpu": "NVIDIA H100 80GB HBM3", "dram_gbs": 3100.0, "l2_gbs": 14000.0,
                                "time": "t"}))
    roofs = roof_probes.stored_ceilings(ceilings_for(DEVICES["h100"]))
    assert (roofs.dram_gbs, roofs.l2_gbs) == (3100.0, 14000.0) and roofs.source["l2"] == "measured"


def test_a_measurement_stored_under_the_name_it_is_read_by_is_still_read(tmp_path, monkeypatch):
    """Before the files were keyed by board, an H200's measurement was stored as NVIDIA_H200.json, the name the
    models read it by: it is still read (over the measurement shipped with gemmlab), until a new one is stored."""
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    old = tmp_path / "ceilings" / "NVIDIA_H200.json"
    assert old != roof_probes.stored_path("NVIDIA H200")
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"gpu": "NVIDIA H200", "l2_gbs": 9000.0, "time": "t"}))
    roofs = roof_probes.stored_ceilings(ceilings_for(DEVICES["h200"]))
    assert roofs.l2_gbs == 9000.0 and str(old) in roofs.origin
    roof_probes.stored_path("NVIDIA H200").write_text(json.dumps({"gpu": "NVIDIA H200", "l2_gbs": 15000.0}))
    assert roof_probes.stored_ceilings(ceilings_for(DEVICES["h200"])).l2_gbs == 15000.0
