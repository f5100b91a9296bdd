"""tc4's options: clock stamps (TIMELINE=1, gemmlab timeline), the narrower tile where it fills the last wave
(NARROW_BN), and each spec's traffic model at the tile its parameters name."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gemmlab.errors import CompileError, InvalidConfigError
from gemmlab.kernels.cuda.launch.nvrtc import _read_source, compile_cuda
from gemmlab.kernels.cuda.tc.model.kernel import WgmmaKernel
from gemmlab.kernels.cuda.tc.model.tiles import OFF_ATOM_BUILD, OFF_ATOM_WIDTHS, narrow_pays
from gemmlab.kernels.cuda.tc.model.timeline import TIMELINE_SOURCES, TL_SLOTS
from gemmlab.kernels.registry import list_kernels
from gemmlab.problem import Problem

from tc_levels import TC5, WGMMA, ptx_of


# ---- tc4 with its clock stamps (TIMELINE=1, gemmlab timeline) ---------------------------------------------------
@pytest.mark.parametrize("prec", ["bf16", "tf32"])
def test_timeline_build_compiles_without_spills(prec):
    spec = next(s for s in WGMMA if s.level == 4 and s.precision == prec)
    stamped = spec.instrumented(Problem(4096, 4096, 4096, prec)).spec
    report = stamped.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    # the stamps are compiled in only on request: the measured binary does not carry them
    assert "globaltimer" not in ptx_of(spec.for_problem(Problem(4096, 4096, 4096, prec))) and \
        "globaltimer" in ptx_of(stamped)


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
    # fewer wide tiles than clusters: each busy cluster runs one whole tile, a narrow one sooner on idle clusters
    assert narrow_pays(300, 520, p) and narrow_pays(4096, 512, p)  # 8 x 512² as one batch: 32 tiles, 48 narrow
    assert narrow_pays(1536, 1536, p)  # 36 cluster tiles of 256 columns against 48 of 192
    assert not narrow_pays(2816, 1536, p)  # 66 wide tiles fill the 66 clusters; 88 narrow would take 2 rounds
    assert narrow_pays(2048, 3072, p, sm_count=264)  # a GPU twice as wide: 96 tiles for 132 clusters, 128 narrow
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
    # each tile width in every output type its precision writes (BF16 / FP16 C by default, and FP32)
    builds = spec.configurations()
    assert len(builds) == 2 * len(spec.prec.output_dtypes)
    wide_cfg, narrow_cfg = (c for c in builds if c.output_dtype(seed) == spec.output_dtype(seed))
    assert wide_cfg.params == {**spec.params, "NARROW_BN": 0} and narrow_cfg.params == narrow.params
    report = narrow_cfg.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    assert "m64n192k" in ptx_of(narrow_cfg) and "m64n192k" not in ptx_of(wide_cfg)


# ---- tc4's widths off the 64-column atom, pinned (OFF_ATOM_WIDTHS: 144 and 224, a K-major B) -----------------------
@pytest.mark.parametrize("prec", ["bf16", "fp16", "fp8"])
@pytest.mark.parametrize("bn", OFF_ATOM_WIDTHS)
def test_a_width_off_the_atom_reads_b_k_major_and_stores_c_from_registers(prec, bn):
    from gemmlab.errors import LayoutError
    from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
    from gemmlab.kernels.registry import get_kernel

    spec = get_kernel(f"cuda/tc4_persistent_{prec}")
    odd = spec.with_params({"BN": bn, **OFF_ATOM_BUILD})
    problem, wt = Problem(1536, 1536, 1536, prec), Layout(b=COL)
    assert odd.for_problem(problem).params["BN"] == bn  # pinned (FP8 at short K: its clusters off, SHORT_K)
    assert odd.layouts == {wt} and odd.natural_layout(problem) == wt
    if prec != "fp8":  # FP8 reads B K-major whatever the width; a 16-bit build only where the tile is off the atom
        assert "K-major" in odd.layout_refusal(ROW_MAJOR) and odd.defines()["B_KMAJOR"] == 1
        with pytest.raises(LayoutError, match="K-major"):
            odd.make_plan(problem, ROW_MAJOR, None)
        _, b = odd.make_inputs(Problem(8, 24, 16, prec))
        assert b.shape == (16, 24) and b.strides[0] < b.strides[1]  # w.t(): the one layout it reads
        assert "B_KMAJOR" not in spec.defines()
    report = odd.compile("sm_90a").report
    assert report.spills == 0 and report.stack_bytes == 0 and report.registers <= 168, report
    store = "cp.async.bulk.tensor.2d.global.shared"  # C's TMA store, the registered build's
    assert f"m64n{bn}k" in ptx_of(odd) and store not in ptx_of(odd) and store in ptx_of(spec)
    # the registered level never takes one: the widths lost to the atom's wherever they fill the waves better
    assert all(spec.for_problem(Problem(m, n, k, prec)).params["BN"] % 64 == 0
               for m, n, k in ((1536, 1536, 1536), (1024, 14336, 4096), (768, 768, 768)))


def test_widths_off_the_atom_refused_where_they_cannot_work():
    bf16, tf32 = (next(s for s in TC4 if s.precision == p) for p in ("bf16", "tf32"))
    odd = {"BN": 224, **OFF_ATOM_BUILD}
    assert not bf16.constraints({**bf16.params, **odd})
    for change in ({"EPI_TMA": 1}, {"EPI_DEFER": 3}, {"BATCHED": 1}):
        assert any("from registers" in e for e in bf16.constraints({**bf16.params, **odd, **change}))
        with pytest.raises(CompileError, match="from registers"):  # the source refuses it too
            compile_cuda(bf16.source, bf16.entry, {**bf16.with_params(odd).defines(), **change}, "sm_90a")
    assert any("NARROW_BN=0" in e for e in bf16.constraints({**bf16.params, **odd, "NARROW_BN": 192}))
    # a 16-bit build reading an N-major B (no B_KMAJOR) is refused by the source: its tile is whole atoms
    defines = {k: v for k, v in bf16.with_params(odd).defines().items() if k != "B_KMAJOR"}
    with pytest.raises(CompileError, match="whole 64-column"):
        compile_cuda(bf16.source, bf16.entry, defines, "sm_90a")
    assert any("n224 on tc4" in e for e in bf16.constraints({**bf16.params, **odd, "BN": 160}))  # no shape built
    assert any("BN=224" in e for e in tf32.constraints({**tf32.params, **odd}))  # no tf32 n224 wrapper


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
    build) that is the model it was registered with, but where SHORT_K turns the clusters off (tc4 FP8 at short K):
    there, B's multicast gone, more bytes from L2; where a short tile runs the problem (tc8's block-scaled specs),
    B read once per 128 rows, not per 192; and a pinned tile is modeled at that tile."""
    import dataclasses

    shapes = [(m, n, k) for m in (256, 1024, 1536, 2048, 2304, 4096) for n in (256, 2304, 3072, 5120, 4096, 14336)
              for k in (256, 4096)]
    from gemmlab.kernels.registry import get_kernel, list_kernels

    from gemmlab.kernels.cuda.tc.tc10_split_k import SplitK

    shorts = set()
    # tc10 models its partials' round trip on top of its registered model (its own traffic test covers it)
    for spec in [s for s in list_kernels() if isinstance(s, WgmmaKernel) and not isinstance(s, SplitK)]:
        for shape in shapes:
            problem = Problem(*shape, spec.precision)
            runs = spec.for_problem(problem)
            mine, registered = runs.traffic(problem), runs.traffic_model(problem)
            if runs.params.get("CM", 1) < spec.params.get("CM", 1):  # SHORT_K
                assert spec.params["SHORT_K"] >= problem.k and mine.l2 > registered.l2, (spec.name, shape)
                continue
            if runs.params["BM"] < spec.params["BM"] and spec.short_tile:
                assert runs.params["BM"] == spec.short_tile["BM"] and spec.traffic(problem) == mine
                assert mine == runs.traffic_model(problem, params=dict(runs.params))
                assert mine.global_read >= spec.traffic_model(problem, params=dict(spec.params)).global_read
                shorts.add(spec.name)
                continue
            assert (mine.global_read, mine.global_write, mine.smem, mine.l2) == \
                (registered.global_read, registered.global_write, registered.smem, registered.l2), (spec.name, shape)
    assert shorts == {"cuda/tc8_block_scaled_fp8", "cuda/tc8_cluster_fp8_block"}
    tc8 = get_kernel("cuda/tc8_block_scaled_fp8")
    p = Problem(4096, 4096, 4096, "fp8_block")
    pinned = dataclasses.replace(tc8, params={**tc8.params, "BM": 128, "STAGES": 5, "CONSUMER_REGS": 232,
                                              "PRODUCER_REGS": 40})
    assert pinned.traffic(p).global_read > tc8.traffic(p).global_read  # B once per 128 rows, not per 192
