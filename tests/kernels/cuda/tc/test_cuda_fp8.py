"""The FP8 levels (tc4_persistent_fp8, tc8_block_scaled_fp8, tc8_promoted_fp8, tc6_stream_k_fp8_block) without a
GPU: every configuration they can launch compiles for sm_90a with QGMMA of its formats in the SASS and nothing
spilled; the BF16 epilogue's staging arithmetic against TMA's swizzle and the banks; tensor maps of the K-major
operands; constraints; formats and output types; the traffic model; the FP8 peers' host side."""
from __future__ import annotations

import dataclasses
import shutil
import subprocess

import pytest
import sass

from gemmlab import fp8
from gemmlab.errors import InvalidConfigError, NoGPUError
from gemmlab.kernels.cuda.launch.nvrtc import _nvrtc_version, source_path
from gemmlab.kernels.cuda.tc.model.budget import C_BOX_BYTES, SMEM_LIMIT, scale_bytes, smem_bytes, stage_bytes
from gemmlab.kernels.cuda.tc.model.tiles import bk
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout, target_layout
from gemmlab.kernels.registry import get_kernel, list_kernels
from gemmlab.problem import Problem

TC4 = get_kernel("cuda/tc4_persistent_fp8")
TC8 = get_kernel("cuda/tc8_block_scaled_fp8")
TC8P = get_kernel("cuda/tc8_promoted_fp8")  # tc8's kernel with per-tensor scales
TC6 = get_kernel("cuda/tc6_stream_k_fp8_block")  # tc8 with a stream-K tail
TC8C = get_kernel("cuda/tc8_cluster_fp8_block")  # tc8 in 2-CTA clusters, one box of C held for the next tile
LEVELS = [TC4, TC8, TC8P, TC6, TC8C]
CONFIGS = [c for s in LEVELS for c in s.configurations(formats=True)]
SHORT = {fp8.E4M3: "E4M3", fp8.E5M2: "E5M2"}


def _cfg_id(spec) -> str:
    p = spec.params
    return f"{spec.short}-n{p['BN']}-{'-'.join(SHORT[f] for f in spec.formats)}-{'bf16' if p['OUT_BF16'] else 'fp32'}"


def test_levels_registered_with_their_precisions_and_peers():
    assert (TC4.precision, TC4.level, TC8.precision, TC8.level) == ("fp8", 4, "fp8_block", 8)
    assert (TC8P.precision, TC8P.source, TC8P.params["PER_TENSOR"]) == ("fp8", TC8.source, 1)
    for spec in LEVELS:
        assert "changed" in spec.doc and "Predicted" in spec.doc
    names = {s.name for s in list_kernels("peers/*")}
    assert {"peers/cublaslt_fp8", "peers/cublaslt_fp8_promoted", "peers/cublaslt_fp8_block"} <= names
    from gemmlab.harness.bench import FALLBACK_PEERS, PEERS

    assert PEERS["fp8"] == "peers/cublaslt_fp8" and PEERS["fp8_block"] == "peers/cublaslt_fp8_block"
    assert FALLBACK_PEERS["fp8_block"] == "fp8"


def test_every_configuration_is_counted():
    # tc4: two tile widths x clusters on and off (SHORT_K) x four format pairs x two output types; tc8: one width,
    # the block-scaled specs two tile heights (short_tile), the per-tensor one the 192 rows alone
    assert len(TC4.configurations(formats=True)) == 32 and len(TC8.configurations(formats=True)) == 16
    assert len(TC8P.configurations(formats=True)) == 8 and len(TC6.configurations(formats=True)) == 8
    assert len(TC8C.configurations(formats=True)) == 16
    for spec in (TC8, TC8C):
        assert [(c.params["BM"], c.params["STAGES"], c.params["CONSUMER_REGS"], c.params["OUT_BF16"])
                for c in spec.configurations()] == [(192, 4, 160, 1), (192, 4, 160, 0), (128, 5, 232, 1),
                                                    (128, 5, 232, 0)]
        assert all(c.short_tile is None for c in spec.configurations())  # each pinned
    # what differs in memory (sanitize runs these): widths x clusters x output types, the formats as the level has
    # them, each pinned (SHORT_K=0: a shape of short K runs the build as it is)
    assert [(c.params["BN"], c.params["CM"], c.params["OUT_BF16"]) for c in TC4.configurations()] == \
        [(bn, cm, out) for cm in (2, 1) for bn in (256, 192) for out in (1, 0)]
    assert all(c.formats == (fp8.E4M3, fp8.E4M3) and c.params["SHORT_K"] == 0 for c in TC4.configurations())


def test_short_k_turns_tc4s_clusters_off():
    """SHORT_K: an FP8 product of K <= 2048 (16 k-tiles) in one wave of 128x256 tiles runs tc4 without clusters (no
    cluster launch, the grid of the tiles, not of whole clusters), its model the unclustered build's; K = 2049 and
    up keeps the 2-CTA clusters, as do more tiles than SMs (not measured) and a variant with SHORT_K=0, which the run
    that measured the rule timed beside it."""
    from gemmlab.harness.bench import variant

    for shape, clustered in (((1536, 1536, 1536), False), ((2048, 2048, 2048), False), ((2048, 2048, 2049), True),
                             ((1024, 14336, 4096), True), ((16, 4096, 1024), False), ((8192, 8192, 1024), True),
                             ((2048, 2304, 2048), True)):
        problem = Problem(*shape, "fp8")
        runs = TC4.for_problem(problem)
        assert (runs.cluster() is not None) == clustered and runs.params["CM"] == (2 if clustered else 1), shape
        assert runs.for_problem(problem) is runs  # a configuration runs as it is
        assert TC4.launch_geometry(problem) == runs.launch_geometry(problem)
        assert TC4.traffic(problem) == runs.traffic(problem)
    short = Problem(1536, 1536, 1536, "fp8")
    assert TC4.for_problem(short).launch_geometry(short).grid == (96, 1, 1)  # 12 x 8 tiles of 128 x 192
    assert TC4.traffic(short).l2_read > TC4.with_params({"SHORT_K": 0}).traffic(short).l2_read  # no multicast
    pinned = variant(TC4.name, {"SHORT_K": 0})
    assert pinned.for_problem(short).cluster() == (2, 1, 1)
    assert "SHORT_K" not in TC4.for_problem(short).defines()


def _spill_stores(spec) -> int:
    """The bytes ptxas spills: none, but in tc8_cluster_fp8_block's BF16 builds on 192-row tiles (CM=2 and a held
    box of C, 160 consumer registers) NVRTC 13.5, the wheel CI installs, keeps three of the walk's values computed
    before setmaxnreg in local memory (12 bytes, loaded where each role starts and once a tile, never in the k-tile
    loop); the H200's NVRTC 13.0, which built the measured binaries, spills nothing there, nor does either on the
    128-row tile's 232 registers."""
    clustered = (spec.name == TC8C.name and spec.params.get("EPI_DEFER") and spec.params["OUT_BF16"]
                 and spec.params["BM"] == 192)
    return 12 if clustered and _nvrtc_version() != "13.0" else 0


def _assert_spills_as_expected(report, spec):
    spilled = _spill_stores(spec)
    assert report.spill_stores == spilled and report.spill_loads <= 3 * spilled, report
    assert report.stack_bytes == (16 if spilled else 0), report  # the spilled words' frame, 16-byte aligned


@pytest.mark.parametrize("spec", CONFIGS, ids=_cfg_id)
def test_compiles_sm90a_without_spills(spec):
    report = spec.compile("sm_90a").report
    _assert_spills_as_expected(report, spec)
    assert report.registers <= 168  # the 384-thread launch bound; setmaxnreg gives the consumers 232
    log = spec.compile("sm_90a").log
    assert "C7508" not in log
    assert "C7512" not in log  # ptxas serializes the wgmma where it cannot tell which wait retires which group


# the variants results/h200/run.sh times beside the registered parameters, in every configuration they launch
VARIANTS = [c for spec, changes in ((TC4, {"EPI_LEND": 1, "EPI_DEFER": 0}),
                                     (TC4, {"EPI_LEND": 1, "CM": 1, "EPI_DEFER": 0}),
                                     (TC4, {"EPI_DEFER": 0}), (TC4, {"EPI_DEFER": 2}), (TC4, {"EPI_DEFER": 4}),
                                     (TC8, {"HALVES": 1, "SCALE_TMA": 1, "SCALE_GATE": 0}), (TC8P, {"HALVES": 1}),
                                     (TC8, {"SCALE_TMA": 1, "SCALE_GATE": 0}), (TC8, {"EPI_DEFER": 1}),
                                     (TC8, {"SCALE_GATE": 0}))
            for c in dataclasses.replace(spec, params={**spec.params, **changes}).configurations()]


@pytest.mark.parametrize("spec", VARIANTS, ids=lambda s: f"{_cfg_id(s)}-lend{s.params.get('EPI_LEND', 0)}"
                                                          f"-cm{s.params['CM']}-halves{s.params.get('HALVES', 0)}"
                                                          f"-scales{s.params.get('SCALE_TMA', 0)}"
                                                          f"-defer{s.params.get('EPI_DEFER', 0)}")
def test_variants_compile_without_spills_or_serialized_wgmma(spec):
    compiled = spec.compile("sm_90a")
    assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0, compiled.report
    assert "C7512" not in compiled.log and "C7517" not in compiled.log


@pytest.mark.parametrize("spec", [s for s in LEVELS if not s.params.get("STREAM_K")], ids=lambda s: s.name)
def test_timeline_build_compiles_without_spills(spec):
    report = dataclasses.replace(spec, params={**spec.params, "TIMELINE": 1}).compile("sm_90a").report
    _assert_spills_as_expected(report, spec)  # the clustered spec's as its registered build's


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec", CONFIGS, ids=_cfg_id)
def test_qgmma_of_the_formats_in_sass(spec, tmp_path):
    listing = sass.sass(spec.compile("sm_90a").cubin, tmp_path)
    ops = [i.op for i in sass.instructions(listing)]
    a, b = (SHORT[f] for f in spec.formats)
    # one k-tile: 4 x k32 = 128 of K; EPI_DEFER peels a k-tile off the loop for each held box (tc4; tc8 one for
    # its one box; BF16 C only)
    assert ops.count(f"QGMMA.64x{spec.params['BN']}x32.F32.{a}.{b}") == 4 * (1 + _held(spec))
    assert not any(op.startswith(("HGMMA", "HMMA")) for op in ops)
    if not _spill_stores(spec):  # local memory only where ptxas 13.5 spills (_spill_stores), never in the k-tile
        assert not any(op.startswith(("LDL", "STL")) for op in ops)
    assert not any(i.op.startswith(("LDL", "STL")) for i in _ktile_loop(spec, tmp_path))
    # B multicast within 2-CTA clusters (tc4, tc8_cluster_fp8_block); tc8 runs without clusters
    assert ("UTMALDG.2D.MULTICAST" in ops) == (spec.params["CM"] > 1) and "UTMALDG.2D" in ops and "UTMASTG.2D" in ops
    assert ("F2FP.BF16.F32.PACK_AB" in ops) == bool(spec.params["OUT_BF16"])  # BF16 C packed two columns at a time


def _held(spec) -> int:
    """The boxes of C a warpgroup of ``spec``'s build holds for the next tile (tc_epilogue.cuh's held_boxes): none
    where C is FP32."""
    return min(spec.defines().get("EPI_DEFER", 0), spec.params["BN"] // 64)


def _ktile_loop(spec, tmp_path) -> list:
    """The instructions of the innermost loop that issues the k-tile's QGMMA (HGMMA for BF16; EPI_DEFER's peeled
    first k-tiles issue their own outside it)."""
    instrs = sass.instructions(sass.sass(spec.compile("sm_90a").cubin, tmp_path))
    qgmma = [i.addr for i in instrs if i.op.startswith(("QGMMA", "HGMMA"))]
    first, last = min(((f, l) for f, l in sass.loops(instrs) if any(f <= q <= l for q in qgmma)),
                      key=lambda fl: fl[1] - fl[0])
    return sass.between(instrs, first, last)


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
@pytest.mark.parametrize("spec", [c for s in (TC4, TC8, get_kernel("cuda/tc4_persistent_bf16"))
                                  for c in s.configurations() if c.params.get("OUT_BF16")],
                         ids=lambda c: f"{c.name.split('/')[1]}-n{c.params['BN']}")
def test_held_boxes_of_c_are_stored_under_the_next_tiles_first_wgmma(tmp_path, spec):
    """EPI_DEFER: tc4 (FP8, BF16) peels a k-tile off the k-tile loop for each held box (all of a 192-wide tile's 3
    boxes, 3 of a 256-wide tile's 4), tc8 one for its one box (EPI_DEFER=1): a group of 4 QGMMA (HGMMA) outside the
    loop each, between whose last one and its wait the warpgroup issues the TMA store of one held box; the build
    without holds none there. In all, each box's store is issued once in each place it can leave: at its tile's end
    (the boxes not held), under a peeled k-tile, after the loop of a unit shorter than the held boxes (tc4), at the
    CTA's last unit."""
    boxes = spec.params["BN"] // 64

    def peeled_ktiles(changes):
        s = dataclasses.replace(spec, params={**spec.params, **changes})
        instrs = sass.instructions(sass.sass(s.compile("sm_90a").cubin, tmp_path))
        loop = {i.addr for i in _ktile_loop(s, tmp_path)}
        peeled = [n for n, i in enumerate(instrs) if i.op.startswith(("QGMMA", "HGMMA")) and i.addr not in loop]
        groups = [peeled[g:g + 4] for g in range(0, len(peeled), 4)]
        waits = [next(n for n in range(g[-1], len(instrs)) if instrs[n].op == "WARPGROUP.DEPBAR.LE") for g in groups]
        stores = sum(i.op == "UTMASTG.2D" for i in instrs)
        return [sum(i.op == "UTMASTG.2D" for i in instrs[g[-1]:w]) for g, w in zip(groups, waits)], stores

    held = 1 if spec.name == TC8.name else 3  # tc4's registered count (all of a 192-wide tile's); tc8's variant
    held = min(held, boxes)
    short_units = 0 if spec.name == TC8.name else held  # tc8 peels one k-tile, which every unit has
    assert peeled_ktiles({"EPI_DEFER": held}) == ([1] * held, boxes + held + short_units)
    assert peeled_ktiles({"EPI_DEFER": 0}) == ([], boxes)


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_tc8_promotes_every_k_tile_and_tc4_scales_outside_its_mainloop(tmp_path):
    """tc8's k-tile loop: the wgmma from zero, a wait for it, and at least BN/2 FFMA per thread into the FP32
    accumulators; tc4's k-tile loop has no promotion (its scales wait for the epilogue)."""
    for spec in (TC8, TC8P):
        loop = [i.op for i in _ktile_loop(spec, tmp_path)]
        assert sum(op == "FFMA" for op in loop) >= spec.params["BN"] // 2
        assert any(op.startswith("WARPGROUP.DEPBAR") for op in loop)
    loop = [i.op for i in _ktile_loop(TC4, tmp_path)]
    assert not any(op in ("FFMA", "FMUL") for op in loop)


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_tc8_block_scales_arrive_by_tma_and_are_read_before_the_wgmma(tmp_path):
    """SCALE_TMA: the producer copies the block scales with 1-D TMA (UTMALDG.1D, nowhere in the per-tensor build),
    and the consumers' k-tile loop reads its three from shared memory before its first QGMMA, with no global load;
    the SCALE_TMA=0 build loads them in the loop from global memory."""
    ops = [i.op for i in sass.instructions(sass.sass(TC8.compile("sm_90a").cubin, tmp_path))]
    assert ops.count("UTMALDG.1D") == 2  # A's box and B's (no STRADDLE at BN=128)
    assert "UTMALDG.1D" not in [i.op for i in sass.instructions(sass.sass(TC8P.compile("sm_90a").cubin, tmp_path))]
    loop = [i.op for i in _ktile_loop(TC8, tmp_path)]
    first = next(n for n, op in enumerate(loop) if op.startswith("QGMMA"))
    assert sum(op.startswith("LDS") for op in loop[:first]) == 3
    assert not any(op.startswith("LDS") for op in loop[first:]) and not any(op.startswith("LDG") for op in loop)
    ldg = dataclasses.replace(TC8, params={**TC8.params, "SCALE_TMA": 0, "SCALE_GATE": 0})
    assert sum(op.startswith("LDG") for op in (i.op for i in _ktile_loop(ldg, tmp_path))) >= 3


@pytest.mark.parametrize("spec, changes, per_clock", [
    (TC4, {}, 128), (TC8, {}, 149 + 1 / 3), (TC8, {"HALVES": 1, "SCALE_TMA": 1, "SCALE_GATE": 0}, 181 + 1 / 3),
    (TC8, {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40}, 160),
    (TC8, {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40, "HALVES": 1, "SCALE_TMA": 1,
           "SCALE_GATE": 0}, 192)])
def test_shared_memory_per_clock_of_the_fp8_tiles(spec, changes, per_clock):
    """docs/tensor_cores/tc8.md's table of what an FP8 tile reads and writes in shared memory per clock at the tensor
    cores' 8,192 FLOP per SM: B 64 (every m64 wgmma reads all of B), A 4096 / N of the wgmma (HALVES halves it),
    TMA writes 4096·(BM + BN)/(BM·BN); the traffic model adds the epilogue's BF16 staging, written and read once
    (2 bytes per clock at K = 8192). On a shape of whole tiles the model is that sum."""
    s = dataclasses.replace(spec, params={**spec.params, **changes})
    p = s.params
    m, n, k = 40 * p["BM"], 64 * p["BN"], 8192
    t = s.traffic(Problem(m, n, k, s.precision))
    epilogue = 2 * 2 * m * n / (2 * m * n * k) * 8192
    assert t.smem / (2 * m * n * k) * 8192 == pytest.approx(per_clock + epilogue)


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_tc8_halves_keep_one_half_in_flight_while_promoting_the_other(tmp_path):
    """HALVES: a k-tile's wgmma are two groups of 4 m64n64k32 (the prologue's k-tile and the loop's), and the
    warpgroup waits with one group still in flight (wait_group 1) before each half's promotion."""
    halves = dataclasses.replace(TC8, params={**TC8.params, "HALVES": 1, "SCALE_TMA": 1, "SCALE_GATE": 0})
    instrs = sass.instructions(sass.sass(halves.compile("sm_90a").cubin, tmp_path))
    ops = [i.op for i in instrs]
    assert ops.count("QGMMA.64x64x32.F32.E4M3.E4M3") == 16 and not any(op.startswith("QGMMA.64x128") for op in ops)
    # the k-tile loop: two groups of 4, each issued while the other is in flight (the warpgroup waits down to one
    # group, never to none), and the ring slot released between the two: after the wait that retires the last
    # k-tile's second half, before the next k-tile's second half is issued
    first, last = min(((f, l) for f, l in sass.loops(instrs)
                       if any(f <= i.addr <= l and i.op.startswith("QGMMA") for i in instrs)),
                      key=lambda fl: fl[1] - fl[0])  # the innermost loop with wgmma (the prologue's are outside)
    loop = sass.between(instrs, first, last)
    qgmma = [n for n, i in enumerate(loop) if i.op.startswith("QGMMA")]
    waits = [n for n, i in enumerate(loop) if i.op == "WARPGROUP.DEPBAR.LE"]
    assert len(qgmma) == 8 and all(loop[n].args == "gsb0, 0x1" for n in waits)
    first_wait = min(n for n in waits if n > qgmma[3])
    release = [n for n, i in enumerate(loop) if i.op.startswith("SYNCS.ARRIVE")]
    assert first_wait < qgmma[4] and len(release) == 1 and first_wait < release[0] < qgmma[4]


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_lending_epilogue_fences_and_commits_once_per_tile(tmp_path):
    """EPI_LEND: where the tile's last ring slot holds the boxes past a warpgroup's own two (BF16 C), the
    warpgroup writes all its boxes, fences them for TMA once and commits their stores as one bulk group; the
    registered epilogue fences and commits once per box (4 at 128x256, 3 at 128x192; ring_init fences once more).
    FP32 C's boxes do not fit in the slot, so that build is the registered one's."""
    def counts(spec, changes):
        cubin = dataclasses.replace(spec, params={**spec.params, **changes}).compile("sm_90a").cubin
        instrs = sass.instructions(sass.sass(cubin, tmp_path))
        ops = [i.op for i in instrs]
        meets = sum(i.op == "BAR.SYNC.DEFER_BLOCKING" and i.args == "0x4, 0x100" for i in instrs)
        return ops.count("FENCE.VIEW.ASYNC.S"), ops.count("UTMACMDFLUSH"), meets

    for cfg in TC4.configurations():
        boxes = cfg.params["BN"] // 64
        if cfg.params["OUT_BF16"]:
            assert counts(cfg, {"EPI_DEFER": 0}) == (1 + boxes, boxes, 0)
            # and both consumer warpgroups (barrier 4, 256 threads) meet before writing into the slot
            assert counts(cfg, {"EPI_LEND": 1, "EPI_DEFER": 0}) == (2, 1, 1)
        else:
            assert counts(cfg, {"EPI_LEND": 1, "EPI_DEFER": 0}) == counts(cfg, {})


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_lent_slot_is_released_once_its_stores_have_read_it(tmp_path):
    """EPI_LEND: in the k-tile loop, after the k-tile's wgmma are issued and before the wait for the previous
    k-tile's, warp 0 waits for its bulk stores to have read shared memory (DEPBAR on SB0) and only then arrives on
    the lent slot's `empty` barrier (in both CTAs of the cluster); the loop without lending (nor held boxes) has no
    such wait, and arrives only after the wgmma wait."""
    def loop_ops(changes):
        spec = dataclasses.replace(TC4, params={**TC4.params, **changes})
        return [(i.op, i.args) for i in _ktile_loop(spec, tmp_path)]

    lend, registered = loop_ops({"EPI_LEND": 1, "EPI_DEFER": 0}), loop_ops({"EPI_DEFER": 0})
    ops = [op for op, _ in lend]
    last_qgmma = max(n for n, op in enumerate(ops) if op.startswith("QGMMA"))
    wgmma_wait = ops.index("WARPGROUP.DEPBAR.LE")
    read_wait = lend.index(("DEPBAR.LE", "SB0, 0x0"))
    arrives = [n for n, op in enumerate(ops) if op.startswith("SYNCS.ARRIVE")]
    assert last_qgmma < read_wait < wgmma_wait
    assert sum(read_wait < n < wgmma_wait for n in arrives) == TC4.params["CM"]
    assert ("DEPBAR.LE", "SB0, 0x0") not in registered
    assert all(n > [op for op, _ in registered].index("WARPGROUP.DEPBAR.LE")
               for n, (op, _) in enumerate(registered) if op.startswith("SYNCS.ARRIVE"))


# ---- the BF16 epilogue's staging (tc_epilogue.cuh, host-compiled) --------------------------------------------------
GXX = shutil.which("g++") or shutil.which("clang++")


def _host_block(name: str, source: str = "tc_epilogue.cuh") -> str:
    text = source_path(source).read_text()
    return text[text.index(f"// begin {name} arithmetic"):text.index(f"// end {name} arithmetic")]


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_lent_boxes_fit_the_last_ring_slot_only_for_bf16_c(tmp_path):
    """lent_bytes / lends (tc_epilogue.cuh, host-compiled): at 128x256 a warpgroup's BF16 boxes past its own two
    are 2 of 8 KB, both warpgroups' 32 KB of the 48 KB stage; at 128x192 one box each; FP32 C's 6 (128x256) or 4
    (128x192) boxes past its own exceed the stage, so those builds do not lend."""
    main = r"""
#include <cstdio>
int main() {
  const int bns[] = {256, 192};
  for (int bn : bns)
    for (int out = 2; out <= 4; out += 2)
      printf("%d %d %d %d\n", bn, out, lent_bytes(bn, out, 2), lends(bn, out, 2, 2, (128 + bn) * 128) ? 1 : 0);
}
"""
    src = tmp_path / "lend.cpp"
    src.write_text("#define __host__\n#define __device__\n" + _host_block("lend") + main)
    exe = tmp_path / "lend"
    subprocess.run([GXX, "-O1", "-std=c++17", "-o", str(exe), str(src)], check=True)
    rows = [tuple(map(int, line.split())) for line in
            subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()]
    assert rows == [(256, 2, 16384, 1), (256, 4, 49152, 0), (192, 2, 8192, 1), (192, 4, 32768, 0)]
    assert all(stage_bytes(128, bn) == (128 + bn) * 128 for bn in (192, 256))


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
@pytest.mark.parametrize("changes", [{}, {"SCALE_TMA": 2}, {"SCALE_TMA": 0},
                                     {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40},
                                     {"BM": 128, "STAGES": 5, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40,
                                      "SCALE_TMA": 2}], ids=str)
def test_scale_area_is_the_shared_memory_the_host_gives_it(changes, tmp_path):
    """tc8's scale slots and, with SCALE_TMA=2, their ring's barriers (scale_area_bytes, host-compiled) take the
    bytes the launch's shared-memory model (scale_bytes) gives them, so the ring's barriers after them
    stay inside the launch."""
    p = {**TC8.params, **changes}
    src = tmp_path / "area.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n#include <cstdio>\n"
                   + _host_block("scale", "tc8_block_scaled_fp8.cu")
                   + "int main() { printf(\"%d\\n\", scale_area_bytes()); }\n")
    exe = tmp_path / "area"
    defines = [f"-D{k}={p[k]}" for k in ("BM", "BN", "STAGES", "SCALE_TMA")]
    subprocess.run([GXX, "-O1", "-std=c++17", *defines, "-o", str(exe), str(src)], check=True)
    area = int(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    assert area == scale_bytes(p) and (area > 0) == (p["SCALE_TMA"] > 0)
    assert smem_bytes(p) <= SMEM_LIMIT


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_scale_ring_copies_from_its_own_producer_warp_and_is_waited_for_apart(tmp_path):
    """SCALE_TMA=2: the operands' producer loop issues only their 2-D copies, the scales' 1-D copies come from a
    loop of their own (producer warp 1); the consumers' k-tile loop gives the scale slot back beside the operands'
    after the wgmma wait. Where the scale ring's barrier is waited for: with SCALE_GATE=0 in the consumers' k-tile
    loop, before its three reads; registered (SCALE_GATE=1) in the operands' producer loop, before their copies,
    and the consumers wait on the operands' barrier alone, as with SCALE_TMA=1, whose 1-D copies sit in the
    operands' loop."""
    def build(changes):
        spec = dataclasses.replace(TC8, params={**TC8.params, **changes})
        instrs = sass.instructions(sass.sass(spec.compile("sm_90a").cubin, tmp_path))

        def ops_in(f, l):
            return [i.op for i in sass.between(instrs, f, l)]
        copies = [fl for fl in sass.loops(instrs) if any(op.startswith("UTMALDG") for op in ops_in(*fl))]
        operands = min((fl for fl in copies if ops_in(*fl).count("UTMALDG.2D") == 3), key=lambda fl: fl[1] - fl[0])
        return ops_in(*operands), [ops_in(*fl) for fl in copies], spec

    operand_loop, _, beside = build({"SCALE_TMA": 1, "SCALE_GATE": 0})
    assert operand_loop.count("UTMALDG.1D") == 2
    beside_waits = operand_loop[:operand_loop.index("UTMALDG.2D")].count("SYNCS.PHASECHK.TRANS64.TRYWAIT")
    gated_loop, _, gated = build({})  # registered: SCALE_TMA=2, SCALE_GATE=1
    assert "UTMALDG.1D" not in gated_loop
    operand_loop, loops, ring = build({"SCALE_GATE": 0})
    assert "UTMALDG.1D" not in operand_loop
    # warp 0 waits for the k-tile's slot (`empty`) and, gated, for its scales too, before it arms the operands'
    # barrier (its arrive with the byte count) and issues their copies
    def waits_before_arming(ops):
        return ops[:ops.index("SYNCS.ARRIVE.TRANS64")].count("SYNCS.PHASECHK.TRANS64.TRYWAIT")
    assert waits_before_arming(gated_loop) > waits_before_arming(operand_loop) == beside_waits > 0
    assert gated_loop.index("SYNCS.ARRIVE.TRANS64") < gated_loop.index("UTMALDG.2D")
    # warp 1's k-tile loop: its two 1-D copies, no operand copies, and a wait (for the slot's `empty`) before them
    scale_loops = [ops for ops in loops if ops.count("UTMALDG.1D") == 2 and "UTMALDG.2D" not in ops]
    assert scale_loops
    inner = min(scale_loops, key=len)
    assert "SYNCS.PHASECHK.TRANS64.TRYWAIT" in inner[:inner.index("UTMALDG.1D")]
    loop = [i.op for i in _ktile_loop(ring, tmp_path)]
    reg = [i.op for i in _ktile_loop(beside, tmp_path)]
    first, first_reg = (next(n for n, op in enumerate(ops) if op.startswith("QGMMA")) for ops in (loop, reg))
    waits = [n for n, op in enumerate(loop[:first]) if op == "SYNCS.PHASECHK.TRANS64.TRYWAIT"]
    assert len(waits) > sum(op == "SYNCS.PHASECHK.TRANS64.TRYWAIT" for op in reg[:first_reg]) > 0
    lds = [n for n, op in enumerate(loop[:first]) if op.startswith("LDS")]
    assert len(lds) == 3 and max(waits) < min(lds)  # the scale ring's wait, then its reads
    wait = loop.index("WARPGROUP.DEPBAR.LE")
    assert sum(op.startswith("SYNCS.ARRIVE") for op in loop[wait:]) == 2
    assert sum(op.startswith("SYNCS.ARRIVE") for op in reg[reg.index("WARPGROUP.DEPBAR.LE"):]) == 1
    gated_consumer = [i.op for i in _ktile_loop(gated, tmp_path)]
    first_gated = next(n for n, op in enumerate(gated_consumer) if op.startswith("QGMMA"))
    assert (gated_consumer[:first_gated].count("SYNCS.PHASECHK.TRANS64.TRYWAIT")
            == reg[:first_reg].count("SYNCS.PHASECHK.TRANS64.TRYWAIT"))
    assert sum(op.startswith("LDS") for op in gated_consumer[:first_gated]) == 3
    wait = gated_consumer.index("WARPGROUP.DEPBAR.LE")
    assert sum(op.startswith("SYNCS.ARRIVE") for op in gated_consumer[wait:]) == 2


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_tc8_scale_boxes_start_on_16_bytes_and_hold_a_tiles_scales(tmp_path):
    """SCALE_TMA: the producer's box of A's scales (BM + 4 floats from scale_box(kb·M + m0)) starts on 16 bytes,
    where TMA faults otherwise, and holds the tile's BM scales of k-block kb from the consumers' scale_skip(kb·M) on,
    at every M (ragged ones too); B's box of 4 holds its one scale at scale_skip of the same element."""
    main = r"""
#include <cstdio>
int main() {
  const int Ms[] = {1, 17, 33, 127, 192, 4097, 6143};
  for (int M : Ms)
    for (int kb = 0; kb < 9; ++kb)
      for (int m0 = 0; m0 < M; m0 += 64) {
        const int e = kb * M + m0;
        printf("%d %d %d %d %d %d\n", M, kb, m0, scale_box(e), scale_skip(kb * M), scale_skip(e));
      }
}
"""
    src = tmp_path / "scales.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n"
                   + _host_block("scale", "tc8_block_scaled_fp8.cu") + main)
    exe = tmp_path / "scales"
    defines = [f"-D{k}={TC8.params[k]}" for k in ("BM", "BN", "STAGES", "SCALE_TMA")]
    subprocess.run([GXX, "-O1", "-std=c++17", *defines, "-o", str(exe), str(src)], check=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) > 100
    bm = TC8.params["BM"]
    for line in lines:
        m, kb, m0, start, skip_a, skip = map(int, line.split())
        e = kb * m + m0
        assert start % 4 == 0 and start + skip_a == e == start + skip  # 16 bytes; the consumers find row 0
        assert 0 <= skip_a and skip_a + bm <= bm + 4  # rows 0..BM-1 inside the box of BM + 4


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_bf16_staging_follows_the_tma_swizzle_without_bank_conflicts(tmp_path):
    """Thread t's 32-bit word of 8-column group s (its BF16 pair of columns 8s + 2(t%4), +1, fragment row r) lands
    where TMA's 128-byte swizzle puts those elements of a 64x64 BF16 box (row r + 8: 1024 bytes on); the 128
    threads cover the box once; and each warp's store (fixed s) hits each of the 32 banks once."""
    main = r"""
#include <cstdio>
int main() {
  for (unsigned t = 0; t < 128; ++t)
    for (int s = 0; s < 8; ++s) printf("%u %d %u\n", t, s, c_stage_offset_bf16(c_stage_lane_bf16(t), s));
}
"""
    src = tmp_path / "stage.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n" + _host_block("staging")
                   + main)
    exe = tmp_path / "stage"
    subprocess.run([GXX, "-O1", "-o", str(exe), str(src)], check=True)
    offsets = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        t, s, off = map(int, line.split())
        offsets[t, s] = off
    covered = []
    for (t, s), off in offsets.items():
        row, q = 16 * (t // 32) + (t % 32) // 4, t % 4
        for h in (0, 1):
            r, col = row + 8 * h, 8 * s + 2 * q
            want = r * 128 + ((((2 * col) // 16) ^ (r % 8)) * 16) + (2 * col) % 16  # TMA's 128B swizzle, 2 B each
            assert off + 1024 * h == want, (t, s, h)
            covered += [(r, col), (r, col + 1)]
    assert sorted(covered) == [(r, c) for r in range(64) for c in range(64)]
    for warp in range(4):
        for s in range(8):
            banks = [(offsets[t, s] // 4) % 32 for t in range(32 * warp, 32 * warp + 32)]
            assert sorted(banks) == list(range(32)), (warp, s)


# ---- operands, C and the shared memory they take ------------------------------------------------------------------
def test_a_k_tile_is_128_of_k_in_the_same_stage_bytes():
    assert bk("fp8") == bk("fp8_block") == 128
    for spec, stage in ((TC4, 384 * 128), (TC8, 320 * 128)):
        p = Problem(1000, 520, 208, spec.precision)
        a, b = spec.operand_maps(p, lda=208, ldb=208, b_kmajor=True)
        assert a.dtype == b.dtype == "fp8" and not a.errors() and not b.errors()
        assert (a.rows, a.cols, a.box_rows, a.box_cols) == (1000, 208, spec.params["BM"], 128)  # A: M rows of K
        assert (b.rows, b.cols, b.box_rows, b.box_cols) == (520, 208, 64, 128)  # B: N rows of K, 64-row boxes
        assert a.box_bytes + spec.params["BN"] // 64 * b.box_bytes == stage_bytes(
            spec.params["BM"], spec.params["BN"]) == stage
    # a K whose rows are not 16 bytes is what the plan stages (TMA strides in 16-byte units)
    assert TC4.operand_maps(Problem(64, 64, 100, "fp8"), lda=100, ldb=100, b_kmajor=True)[0].errors()


def test_c_maps_and_when_tma_stores_c():
    p = Problem(300, 520, 256, "fp8")
    c = TC4.c_map(p)
    assert (c.dtype, c.box_rows, c.box_cols, c.box_bytes) == ("bf16", 64, 64, C_BOX_BYTES)
    fp32 = TC4.for_formats(fp8.E4M3, fp8.E4M3, "float32")
    assert (fp32.c_map(p).dtype, fp32.c_map(p).box_cols) == ("fp32", 32)
    assert TC4.c_by_tma(p, 0x7F0000000000)
    assert not TC4.c_by_tma(Problem(300, 100, 256, "fp8"), 0x7F0000000000)  # 200-byte BF16 rows
    assert fp32.c_by_tma(Problem(300, 100, 256, "fp8"), 0x7F0000000000)  # 400-byte FP32 rows
    # tc4: 4 stages of 48 KB and 16 B of barriers, 2 warpgroups' two 8 KB boxes of C, 1 KB of alignment slack; tc8:
    # 4 stages of 40 KB, 3 warpgroups' boxes and each slot's scales (196 floats of A's in 896 bytes, two 128-byte
    # places of B's); tc4 with four boxes per warpgroup (its whole 64x256 BF16 fragment) on 3 stages
    assert smem_bytes(dict(TC4.params)) == 4 * (49152 + 16) + 2 * 2 * 8192 + 1024 == 230_464
    # the scale ring: twice the stages' slots of 896 + 256 bytes, and a full and an empty barrier per slot
    ring = 4 * (40960 + 16) + 8 * (896 + 256) + 8 * 16
    assert smem_bytes(dict(TC8.params)) == ring + 3 * 2 * 8192 + 1024 == 223_424
    assert smem_bytes({**TC4.params, "EPI_BOXES": 4, "STAGES": 3}) == 3 * (49152 + 16) + 2 * 4 * 8192 + 1024
    assert max(smem_bytes(dict(TC4.params)), smem_bytes(dict(TC8.params))) <= SMEM_LIMIT


def test_fp8_reads_b_k_major_only_and_refuses_a_row_major_b_with_the_reason():
    for spec in LEVELS:
        assert spec.layouts == frozenset({Layout(b=COL)})
        assert target_layout(Layout(b=COL), spec.layouts) == Layout(b=COL)
        assert target_layout(Layout(a=COL, b=COL), spec.layouts) == Layout(b=COL)  # A copied row-major
        assert target_layout(ROW_MAJOR, spec.layouts) is None
        assert "K-major" in spec.layout_refusal(ROW_MAJOR) and "N×K" in spec.layout_refusal(ROW_MAJOR)
        assert spec.natural_layout(Problem(8, 8, 8, spec.precision)) == Layout(b=COL)


def test_formats_and_output_types_are_binaries_of_their_own():
    v = TC4.for_formats(fp8.E5M2, fp8.E4M3, "float32")
    assert (v.params["A_E5M2"], v.params["B_E5M2"], v.params["OUT_BF16"]) == (1, 0, 0)
    assert v.formats == (fp8.E5M2, fp8.E4M3) and str(v.output_dtype(Problem(4, 4, 4, "fp8"))) == "float32"
    assert v.defines()["TC_FP8"] == 1 and v.defines()["A_E5M2"] == 1
    assert TC4.for_formats(fp8.E4M3, fp8.E4M3, "bfloat16") is TC4
    # FP32 C's build holds no boxes (EPI_DEFER's words are BF16), in a stream-K level's whole-tile launches too;
    # the parameter stays, so BF16 C again is the registered build
    assert v.defines()["EPI_DEFER"] == 0 and v.for_formats(fp8.E4M3, fp8.E4M3, "bfloat16").defines() == TC4.defines()
    deferring = dataclasses.replace(TC6, whole_tiles={**TC6.whole_tiles, "EPI_DEFER": 1})
    w = deferring.for_formats(fp8.E4M3, fp8.E4M3, "float32").without_stream_k()
    assert w.params["EPI_DEFER"] == 1 and w.defines()["EPI_DEFER"] == 0
    a, b = v.make_inputs(Problem(8, 8, 8, "fp8"), seed=1)
    assert (a.fmt, b.fmt) == (fp8.E5M2, fp8.E4M3)
    from gemmlab.errors import DTypeError

    with pytest.raises(DTypeError, match="float16"):
        TC4.for_formats(fp8.E4M3, fp8.E4M3, "float16")
    with pytest.raises(DTypeError):
        get_kernel("peers/cublaslt_fp8").for_formats(fp8.E5M2, fp8.E4M3, "bfloat16")


def test_constraints_refuse_what_cannot_work_with_the_reason():
    for spec, bad, match in ((TC4, {"BN": 64, "NARROW_BN": 0}, "n128, n192 and n256"),
                             (TC8, {"BN": 256, "STAGES": 4}, "232"),
                             (TC8, {"BN": 64}, "232"),
                             (TC4, {"A_E5M2": 2}, "A_E5M2=2: 0 or 1"),
                             (TC8, {"OUT_BF16": 3}, "OUT_BF16=3"),
                             (TC8, {"STAGES": 7}, "shared memory"),
                             (TC8, {"STREAM_K": 1}, "STREAM_K=1 with SCALE_TMA=2"),
                             (TC6, {"SCALE_TMA": 0}, "STREAM_K=1 with SCALE_TMA=0"),
                             (TC6, {"HALVES": 1}, "STREAM_K=1 with HALVES=1"),
                             (TC8, {"BN": 192, "STAGES": 3}, "CONSUMER_REGS=160"),
                             (TC4, {"SCALE_TMA": 1}, "option of tc8's source"),
                             (TC8, {"PER_TENSOR": 1, "SCALE_TMA": 1}, "one scale per operand"),
                             (TC4, {"EPI_BOXES": 1}, "at least 2"),
                             (TC4, {"EPI_BOXES": 4}, "shared memory"),
                             (TC4, {"PER_TENSOR": 1}, "tc8's source"),
                             (TC4, {"EPI_LEND": 2}, "EPI_LEND=2"),
                             (TC4, {"EPI_LEND": 1, "EPI_TMA": 0, "EPI_BOXES": 2}, "EPI_TMA=1"),
                             (TC8, {"EPI_LEND": 1}, "not an option of this level's source"),
                             (TC8, {"HALVES": 2}, "HALVES=2"),
                             (TC4, {"HALVES": 1}, "not an option of this level's source"),
                             (get_kernel("cuda/tc4_persistent_bf16"), {"EPI_LEND": 1}, "not an option"),
                             (get_kernel("cuda/tc3_warp_specialized_bf16"), {"HALVES": 1}, "not an option"),
                             (TC8, {"HALVES": 1, "BN": 192, "BM": 128, "CONSUMER_REGS": 232, "PRODUCER_REGS": 40},
                              "BN=128"),
                             (TC8, {"HALVES": 1, "SCALE_TMA": 0}, "spill"),
                             (TC8, {"HALVES": 1, "SCALE_TMA": 2}, "spill"),
                             (TC8, {"SCALE_TMA": 3}, "SCALE_TMA=3"),
                             (TC8P, {"SCALE_TMA": 2}, "one scale per operand"),
                             (TC4, {"EPI_DEFER": 5}, "0 to 4"),
                             (TC4, {"EPI_LEND": 1}, "one or the other"),
                             (TC4, {"EPI_TMA": 0}, "EPI_DEFER=3 holds boxes .*EPI_TMA=1"),
                             (get_kernel("cuda/tc4_persistent_bf16"), {"EPI_TMA": 0}, "EPI_TMA=1"),
                             (TC8, {"HALVES": 1, "SCALE_TMA": 1, "EPI_DEFER": 1}, "no first k-tile"),
                             (TC6, {"EPI_DEFER": 1}, "stream-K walk"),
                             (TC8, {"EPI_DEFER": 2}, "more spill at 160"),
                             (TC8, {"EPI_DEFER": 1, "SCALE_TMA": 0}, "beside the scales' loads"),
                             (TC8P, {"EPI_DEFER": 1}, "PER_TENSOR"),
                             (TC8, {"SCALE_GATE": 2}, "SCALE_GATE=2"),
                             (TC8, {"SCALE_TMA": 1}, "SCALE_GATE=1 with SCALE_TMA=1"),
                             (TC8P, {"SCALE_GATE": 1}, "SCALE_GATE=1 with SCALE_TMA=0")):
        with pytest.raises(InvalidConfigError, match=match):
            dataclasses.replace(spec, params={**spec.params, **bad})
    # a 192-wide tile straddles two scale blocks of B: two warpgroups of 232 registers hold its accumulator sets
    dataclasses.replace(TC8, params={**TC8.params, "BM": 128, "BN": 192, "STAGES": 4, "CONSUMER_REGS": 232,
                                     "PRODUCER_REGS": 40})


def test_traffic_counts_one_byte_operands_bf16_c_and_the_block_scales():
    p = Problem(4096, 4096, 4096, "fp8")
    t4 = TC4.traffic(p)
    assert t4.global_write == 2 * 4096 * 4096
    assert t4.global_read == 4096 * 4096 * 16 + 4096 * 4096 * 16  # A per 256 columns, B per 256-row cluster
    t7 = TC8.traffic(Problem(4096, 4096, 4096, "fp8_block"))
    # A per 128-column tile (32 of them), B per 192-row tile (22, the last of 64 rows), no clusters; the scales: A's
    # rows' per 128-column tile, one B scale per tile, each per k-tile (32)
    scales = 4 * 32 * (4096 * 32 + 22 * 32)
    assert t7.global_read == 4096 * 4096 * 32 + 4096 * 4096 * 22 + scales and "scales" in t7.basis
    assert TC8P.traffic(p).global_read == 4096 * 4096 * 32 + 4096 * 4096 * 22  # one scale per operand


def test_cublaslt_peers_are_modeled_on_the_tiles_their_kernels_name():
    """nvjet ..._256x128_..._1x2 (per tensor) and ..._128x128_..._2x1 (promoted, block-scaled), as profiled."""
    p = Problem(4096, 4096, 4096, "fp8")
    fast = get_kernel("peers/cublaslt_fp8").traffic(p)
    assert fast.global_read == 4096 * 4096 * 16 + 4096 * 4096 * 16  # A per 2x128 columns, B per 256 rows
    assert fast.global_write == 2 * 4096 * 4096
    for name, prec in (("peers/cublaslt_fp8_promoted", "fp8"), ("peers/cublaslt_fp8_block", "fp8_block")):
        t = get_kernel(name).traffic(Problem(4096, 4096, 4096, prec))
        assert t.global_read == 4096 * 4096 * 32 + 4096 * 4096 * 16  # A per 128 columns, B per 2x128 rows


def test_launch_geometry_and_timeline_rate():
    for spec in LEVELS:
        p = Problem(4096, 4096, 4096, spec.precision)
        geo = spec.launch_geometry(p, 132)
        # tc8: three consumer warpgroups; clusters of 2 in tc4 and tc8_cluster_fp8_block
        threads, cluster = (384 if spec is TC4 else 512), ((2, 1, 1) if spec in (TC4, TC8C) else None)
        assert geo.grid == (132, 1, 1) and geo.block == (threads, 1, 1) and spec.cluster() == cluster
        build = spec.instrumented(p)
        if spec is TC6:  # the stamps are of whole tiles: none where the tail splits them
            assert build is None and TC6.instrumented(Problem(8192, 8192, 8192, "fp8_block")).spec.params == {
                **TC8.params, "TIMELINE": 1}
            continue
        assert build.spec.params["TIMELINE"] == 1 and build.k_tile == 128
    # 128x256x128 at 4096 FMA per SM per clock; 192x128x128 at the same rate
    assert TC4.instrumented(Problem(4096, 4096, 4096, "fp8")).ideal_ktile_cycles == 1024
    for spec in (TC8, TC8P):
        assert spec.instrumented(Problem(4096, 4096, 4096, spec.precision)).ideal_ktile_cycles == 768
    assert TC4.for_problem(Problem(2048, 3072, 4096, "fp8")).params["BN"] == 192  # tc4's narrower last wave


def test_dispatch_defaults_and_the_row_major_b_refusal():
    from gemmlab import dispatch
    from gemmlab.device import GPUInfo
    from gemmlab.errors import LayoutError

    h200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")
    assert dispatch.choose(Problem(4096, 4096, 4096, "fp8"), Layout(b=COL), h200).spec is TC4  # not TC8P
    ragged = Problem(300, 17, 1000, "fp8_block")  # a block-scaled level that takes it (the grid's: tc10 there)
    spec = dispatch.choose(ragged, Layout(b=COL), h200).spec
    assert spec.precision == "fp8_block" and spec.is_valid(ragged) is None and spec.name.startswith("cuda/tc")
    with pytest.raises(LayoutError, match="K-major"):
        dispatch.choose(Problem(64, 64, 64, "fp8"), ROW_MAJOR, h200)


def test_peers_need_a_gpu_and_torchs_shapes():
    for name in ("peers/cublaslt_fp8", "peers/cublaslt_fp8_block"):
        peer = get_kernel(name)
        assert peer.layouts == frozenset({Layout(b=COL)})
        assert peer.is_valid(Problem(4096, 4096, 4096, peer.precision)) is None
        assert "multiples of 16" in peer.is_valid(Problem(64, 17, 64, peer.precision))
        # cuBLASLt's blockwise product is wrong unless ceil(K/128) is a multiple of 4: refused, not timed
        for k in (256, 384, 640, 1136):
            assert ("ceil(K/128) is not a multiple of 4" in str(peer.is_valid(Problem(256, 256, k, peer.precision)))
                    ) == peer.blockwise, (name, k)
        assert peer.is_valid(Problem(256, 256, 512, peer.precision)) is None
        from gemmlab import device

        if device.gpu() is None:
            with pytest.raises(NoGPUError):
                peer.plan(Problem(64, 64, 64, peer.precision))


def test_block_peer_falls_back_to_the_per_tensor_time_and_says_so():
    from gemmlab.harness.bench_records import PEERS, link_ratios
    from gemmlab.harness.record import BenchRecord, Status

    def rec(kernel, precision, ms, backend="cuda", reason=""):
        return BenchRecord(kernel, backend, None, precision, "", {}, 64, 64, 64, median_ms=ms, reason=reason,
                           peer=PEERS[precision], status=Status.OK if ms else Status.ERROR)

    records = [rec("peers/cublaslt_fp8", "fp8", 0.10, "peer"),
               rec("peers/cublaslt_fp8_block", "fp8_block", None, "peer", "torch 2.x has no blockwise scaled matmul"),
               rec("cuda/tc8_block_scaled_fp8", "fp8_block", 0.125)]
    link_ratios(records)
    tc8 = records[-1]
    assert tc8.peer == "peers/cublaslt_fp8" and tc8.peer_ratio == pytest.approx(0.8)
    assert "no blockwise" in tc8.peer_note and "own medians" in tc8.peer_note
    assert tc8.to_json()["peer_note"] == tc8.peer_note and "peer_note" not in records[0].to_json()


@pytest.mark.skipif(not sass.AVAILABLE, reason="no cuobjdump and nvdisasm to disassemble with")
def test_tc8s_stream_k_tail_splits_where_the_last_wave_is_short_and_launches_tc8_elsewhere(tmp_path):
    """tc6_stream_k_fp8_block: at 4096³ tc8's 704 tiles are 5.33 waves on 132 SMs, so the last 176 tiles (one wave and
    the partial one, SK_FILL) are cut into equal k-ranges, with the scales beside each k-tile (SCALE_TMA=1, the
    stream-K walk spills beside tc8's scale ring); 8192³ (85% full last wave) and 2048×3072×4096 (2 whole waves)
    launch tc8's registered parameters, the same binary. The split build's partials meet through the fixup's
    release reduction on the tile's flag, which the whole-tile build has none of."""
    split = TC6.for_problem(Problem(4096, 4096, 4096, "fp8_block"))
    assert TC6.stream_k_tiles(Problem(4096, 4096, 4096, "fp8_block")) == 176
    assert split.params["STREAM_K"] == 1 and split.params["SCALE_TMA"] == 1
    assert split.launch_geometry(Problem(4096, 4096, 4096, "fp8_block")).grid == (132, 1, 1)
    for shape in ((8192, 8192, 8192), (2048, 3072, 4096)):
        whole = TC6.for_problem(Problem(*shape, "fp8_block"))
        assert whole.params == TC8.params and whole.source == TC8.source
    # every format pair and output type launches its own binary where no tile is split, too
    for c in TC6.configurations(formats=True):
        whole = c.for_problem(Problem(8192, 8192, 8192, "fp8_block"))
        assert all(whole.params[k] == c.params[k] for k in ("A_E5M2", "B_E5M2", "OUT_BF16"))
        assert "STREAM_K" not in whole.params
    def ops(spec):
        return [i.op for i in sass.instructions(sass.sass(spec.compile("sm_90a").cubin, tmp_path))]

    assert any(op.startswith("RED") and ".GPU" in op for op in ops(split))
    assert not any(op.startswith("RED") for op in ops(TC8))
