"""v11 (FP32 split-K) without a GPU: the model's choice of tile and S on the suite's shapes, every build compiled for
sm_90a without spills or local memory, the plan's grid, workspace and tickets (a stub libcuda records the launch),
and the kernel source on the host simulator: ragged shapes against float64, the same bits whichever CTA of a tile
draws the last ticket, the tickets back at zero after each launch."""
from __future__ import annotations

import hostsim
import numpy as np
import pytest
from hostsim import host_builds  # noqa: F401  (the session's host libraries, a pytest fixture)
from test_plans import H200, launch_record, make, on_host_h200, stub  # noqa: F401  (stub, on_host_h200: fixtures)

from gemmlab.errors import InvalidConfigError
from gemmlab.harness import grid
from gemmlab.kernels.cuda.sgemm import v11_split_k as v11
from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

NAME = "cuda/v11_split_k"
SMALL_M = [(m, n, k) for n, k in grid.LAYERS for m in (32, 64, 128)]


def spec():
    return get_kernel(NAME)


# ---- the model on the suite's shapes ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", grid.LONG_K)
def test_long_k_splits_over_the_gpu_with_enough_k_tiles_each(shape):
    plan = spec().split_plan(Problem(*shape))
    assert plan.splits > 1 and plan.ctas >= 128, plan  # a wave of CTAs on 132 SMs, where the tiles are 4-64
    assert plan.kt // plan.splits >= v11.MIN_SPLIT_KTILES
    assert (plan.bm, plan.bn) in v11.TILES
    unsplit = min(split_k.clocks(*shape, "fp32", bm, bn, 1, 132, v11.ENGINE) for bm, bn in v11.TILES)
    roof = shape[0] * shape[1] * shape[2] / (132 * v11.FFMA_PER_SM_CLOCK)  # every FP32 lane busy
    assert plan.clocks < unsplit and plan.clocks <= 1.35 * roof  # the loop's FFMA share, the reduction, a start
    assert plan.workspace_bytes == 4 * plan.bm * plan.bn * plan.ctas


@pytest.mark.parametrize("shape", SMALL_M, ids=lambda s: "x".join(map(str, s)))
def test_small_m_against_llm_weights_fills_the_sms(shape):
    """M = 32-128 rows against 1024-14336-wide weights: the tile and S keep at least 80% of the 132 SMs busy, each
    with the warps that hide the loop's latencies (as many CTAs an SM as fit, where one CTA's warps are fewer)."""
    plan = spec().split_plan(Problem(*shape))
    tile = v11.TILES[(plan.bm, plan.bn)]
    places = 132 * tile["MIN_BLOCKS"]
    warps = v11.threads({**tile, "BM": plan.bm, "BN": plan.bn}) // 32
    assert min(plan.ctas, places) >= 0.8 * 132, plan
    assert min(plan.ctas, places) * warps >= 0.8 * 132 * min(v11.HIDING_WARPS, tile["MIN_BLOCKS"] * warps), plan
    assert plan.kt // plan.splits >= v11.MIN_SPLIT_KTILES or plan.splits == 1


def test_an_sm_short_of_warps_runs_slower():
    """The same CTAs' clocks, one CTA of 4 warps an SM against three: the first pays the latency the second hides,
    so the model takes the splits that fill an SM (256x4096x4096: 128 tiles of 64x128, S = 3, not 1)."""
    one = split_k.clocks(256, 4096, 4096, "fp32", 64, 128, 1, 132, v11.ENGINE)
    three = split_k.clocks(256, 4096, 4096, "fp32", 64, 128, 3, 132, v11.ENGINE)
    assert three < one and spec().split_plan(Problem(256, 4096, 4096)).ctas >= 3 * 128
    # one CTA of 4 warps on each SM runs its loop at 4/12 of the rate: three times the k-tiles' clocks
    blind = split_k.Engine(**{**vars(v11.ENGINE), "hiding_warps": 0})
    ktile = 64 * 128 * 16 / (v11.FFMA_PER_SM_CLOCK * v11.ffma_share(64, 128))
    kt = 4096 // 16
    assert one - split_k.clocks(256, 4096, 4096, "fp32", 64, 128, 1, 132, blind) == pytest.approx(2 * kt * ktile)


@pytest.mark.parametrize("size", [2048, 3072, 4096, 8192])
def test_many_tiles_do_not_split(size):
    assert spec().split_plan(Problem(size, size, size)).splits == 1


def test_short_k_does_not_split():
    assert spec().split_plan(Problem(300, 200, 100)).splits == 1  # 7 k tiles: under a split's least
    assert spec().split_plan(Problem(1, 1, 1)).splits == 1


def test_the_tiles_rate_follows_their_issue_slots():
    """8×8 a lane (64 FFMAs a k against 4 shared loads) is modeled faster per FFMA than 8×4 (32 against 3)."""
    assert v11.ffma_share(128, 128) > v11.ffma_share(64, 128) > v11.ffma_share(32, 128) > 0.8
    assert v11.ffma_share(64, 128) == 64 / (64 + 4 + 5 * (2 + 4) / 16)


def test_the_wgmma_engine_is_the_default():
    """tc10's functions without an engine are the tensor cores' model; v11's engine changes the answer."""
    assert split_k.choose(256, 256, 16384, "bf16") == split_k.choose(256, 256, 16384, "bf16", 132,
                                                                     split_k.wgmma("bf16"))
    assert split_k.choose(256, 256, 16384, "fp32", 132, v11.ENGINE).bm in (32, 64, 128)


# ---- the builds ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", [ROW_MAJOR, Layout(b=COL)], ids=["row_major_b", "w_t"])
def test_every_build_compiles_without_spills_or_local_memory(layout):
    builds = spec().configurations()
    assert {(b.params["BM"], b.params["BN"]) for b in builds} == set(v11.TILES)
    for build in builds:
        runs = build.for_layout(layout)
        assert runs.params.get("B_KMAJOR", 0) == (layout.b == COL)
        report = runs.compile("sm_90a").report
        assert report.spills == 0 and report.stack_bytes == 0, (runs.params, report)
        threads = v11.threads(dict(runs.params))
        assert report.registers * threads * runs.params["MIN_BLOCKS"] <= 65536, (runs.params, report)
        assert "SPLITS" not in runs.defines()  # S is gridDim.y: one binary a tile for every S


def test_geometry_is_tiles_by_splits():
    problem = Problem(100, 300, 4097)
    for build in spec().configurations():
        p = build.params
        geo = build.launch_geometry(problem)
        tiles = ceil_div(100, p["BM"]) * ceil_div(300, p["BN"])
        assert geo.grid == (tiles, v11.PINNED_SPLITS, 1)
        assert geo.threads == v11.threads(dict(p)) and geo.smem == v11.smem_bytes(dict(p))
    s = spec().split_plan(Problem(256, 256, 65536))
    assert spec().launch_geometry(Problem(256, 256, 65536)).grid == s.grid


def test_constraints_refuse_what_the_source_does_not_build():
    with pytest.raises(InvalidConfigError, match="SPLITS"):
        spec().with_params({"SPLITS": -1})
    with pytest.raises(InvalidConfigError, match="k tile is 16"):
        spec().with_params({"BK": 8})
    with pytest.raises(InvalidConfigError, match="lanes, not 32"):
        spec().with_params({"RN": 1})


def test_traffic_adds_each_partial_written_once_and_read_once():
    long_k = Problem(256, 256, 65536)
    runs = spec().for_problem(long_k)
    plan = runs.split_plan(long_k)
    t = spec().traffic(long_k)
    p = runs.params
    tiled = 4 * (256 * 65536 * ceil_div(256, p["BN"]) + 65536 * 256 * ceil_div(256, p["BM"]))
    assert plan.splits > 1
    assert (t.global_read, t.global_write) == (tiled + plan.workspace_bytes, 4 * 256 * 256 + plan.workspace_bytes)
    square = Problem(4096, 4096, 4096)
    assert spec().traffic(square).global_write == 4 * 4096 * 4096  # no split: no partials


def test_dispatch_model_counts_the_splits():
    from gemmlab.analysis.scaling import estimate
    from gemmlab.dispatch import _roofs

    roofs = _roofs("NVIDIA H200", 132)
    long_k = Problem(256, 256, 65536)
    mine = estimate(spec(), long_k, roofs)
    assert mine.split == mine.tiles and mine.reduce_ms > 0 and mine.fill > 0.9
    assert mine.ms < estimate(get_kernel("cuda/v10_register_prefetch"), long_k, roofs).ms / 10


def test_the_suite_grid_times_it_where_it_counts():
    """v11 is an FP32 candidate of the grid; the pruner times it at every long-K shape (every candidate there) and at
    every grid shape where the shipped table measured it fastest."""
    from gemmlab.kernels.registry import select

    assert NAME in [s.name for s in select(grid.CANDIDATES["fp32"])]
    skip = grid.pruner(ROW_MAJOR, H200)
    table = grid.shipped_table()["NVIDIA H200"]["fp32"]
    won = [shape for shape in grid.SHAPES
           if [r["kernel"] for r in table.get("x".join(map(str, shape)), []) if not r.get("failed")][:1] == [NAME]]
    assert len(won) >= 10
    assert all(skip(spec(), Problem(*shape)) == "" for shape in won + list(grid.LONG_K))


# ---- the plan ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 33, 4097), (17, 31, 2049), (127, 129, 777), (256, 256, 65536)])
def test_plan_launches_tiles_by_splits_with_its_workspace(stub, shape):  # noqa: F811
    """A pinned S (5) and the model's choice: the grid is tiles x S, the plan holds S partials a tile and a ticket a
    tile, zeroed and waited for once, and hands both to the kernel after K; w.t() runs the B_KMAJOR build."""
    for chosen in (spec().with_params({"SPLITS": 5}), spec()):
        stub.stub_reset()
        plan, gpu = make(stub, NAME, shape, Layout(b=COL), spec=chosen)
        s = plan.spec.split_plan(Problem(*shape))
        p = plan.spec.params
        assert p["B_KMAJOR"] == 1 and p["SPLITS"] == s.splits > 1
        plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0x5EED)
        rec = launch_record(stub, 0)
        assert rec.grid == (s.tiles, s.splits, 1) and rec.stream == 0x5EED
        assert rec.block == (v11.threads(dict(p)), 1, 1) and rec.smem == v11.smem_bytes(dict(p))
        c, a, b = np.frombuffer(rec.params[:24], np.uint64)
        m, n, k = np.frombuffer(rec.params[24:36], np.int32)
        ws, tickets = np.frombuffer(rec.params[36:52], np.uint64)
        assert (c, a, b, m, n, k) == (0x7200_0000_0000, 0x7000_0000_0000, 0x7100_0000_0000, *shape)
        assert (ws, tickets) == tuple(x.ctypes.data for x in plan.buffers)
        assert plan.buffers[0].nbytes == 4 * s.tiles * s.splits * p["BM"] * p["BN"] == s.workspace_bytes
        assert plan.buffers[1].nbytes == 4 * s.tiles and not plan.buffers[1].any() and gpu.synced == 1
        assert "split-K" in plan.explain()


def test_an_unsplit_plan_holds_no_workspace(stub):  # noqa: F811
    """S = 1: no partials and no tickets, so one plan serves every stream."""
    stub.stub_reset()
    plan, gpu = make(stub, NAME, (4096, 4096, 4096))
    assert plan.spec.params["SPLITS"] == 1 and plan.buffers == [] and gpu.synced == 0


def test_a_named_call_with_w_t_reads_w_in_place_and_keeps_its_workspace_to_one_stream(on_host_h200):  # noqa: F811
    """gemmlab.plan(x, w.t(), kernel="cuda/v11_split_k") at a small-M shape: no copy of w, the split in explain(), and
    a plan that holds partials and tickets, which gemmlab.call keeps to one stream (not shared)."""
    from gemmlab.call import checks
    from gemmlab.call.operands import Facts
    from gemmlab.kernels.plan import ROW

    fa = Facts("torch", (32, 4096), "float32", ROW, 0)
    fb = Facts("torch", (4096, 4096), "float32", COL, 0)
    prepared = checks.prepare(fa, fb, NAME, "fp32", 0)
    text = prepared.explain()
    assert not prepared.copy_a and not prepared.copy_b and "B is read in place" in text
    assert "B_KMAJOR=1" in text and "split-K" in text and not prepared.shared


# ---- the kernel source on the host ---------------------------------------------------------------------------------
HOST_SHAPES = [(1, 1, 1), (1, 17, 4097), (17, 33, 127), (33, 1, 1000), (127, 33, 515), (33, 127, 4097)]
needs_gxx = pytest.mark.skipif(not hostsim.HAVE_GXX, reason="needs g++ (C++20) to run the kernel source on the CPU")


@needs_gxx
@pytest.mark.usefixtures("host_builds")
@pytest.mark.parametrize("tile", list(v11.TILES), ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("b_kmajor", [False, True], ids=["row_major_b", "w_t"])
def test_source_on_cpu_right_and_the_same_bits_whichever_split_reduces(tile, b_kmajor):
    """Each tile at S = 5 (S = KT where K has fewer k tiles) on ragged shapes, 16-byte aligned and not: within FP32
    tolerance of float64, and the same bits when the grid's blocks run last first, so that split 0 draws each tile's
    last ticket where split S - 1 did (run_on_host also checks the tickets are back at zero)."""
    build = spec().with_params({**v11.TILES[tile], "BM": tile[0], "BN": tile[1], "SPLITS": 5})
    for i, shape in enumerate(HOST_SHAPES):
        problem = Problem(*shape)
        offset = i % 2
        first = hostsim.check_gemm_on_host(build, problem, offset, seed=i, b_kmajor=b_kmajor)
        again = hostsim.check_gemm_on_host(build, problem, offset, seed=i, b_kmajor=b_kmajor, reverse_blocks=True)
        assert (first.view(np.uint32) == again.view(np.uint32)).all(), shape


@needs_gxx
@pytest.mark.usefixtures("host_builds")
@pytest.mark.parametrize("shape", [(32, 1024, 8192), (127, 129, 4097), (33, 17, 65)], ids=lambda s: "x".join(map(str, s)))
def test_source_on_cpu_at_the_models_choice(shape):
    """The tile and S the model picks, with B as w.t(); the bits of two runs agree."""
    problem = Problem(*shape)
    first = hostsim.check_gemm_on_host(spec(), problem, 0, seed=3, b_kmajor=True)
    again = hostsim.check_gemm_on_host(spec(), problem, 0, seed=3, b_kmajor=True, reverse_blocks=True)
    assert (first.view(np.uint32) == again.view(np.uint32)).all()


# Each variant breaks the source in one place (the file is untouched); the host run must notice.
BROKEN = {
    # the ticket never set back: the next launch would count from S
    "ticket_not_reset": ("      if (reduces) tickets[tile] = 0;", "", "tickets left"),
    # the last but one split reduces, one partial still unwritten (NaN here), and the last finds the ticket reset
    "reduces_a_ticket_early": ("== (unsigned)splits - 1;", "== (unsigned)splits - 2;", "tickets left"),
    # each split's partial written over partial 0's place: the reduction reads unwritten partials (NaN here)
    "partials_in_one_place": ("__stcg(mine + (long long)split * PARTIAL_QUADS", "__stcg(mine", "relative error"),
    # a split that runs on into the next one's first k tile: that tile's product counted twice
    "split_past_its_end": ("t1 = split_begin(split + 1, splits, kt);",
                           "t1 = min(kt, split_begin(split + 1, splits, kt) + 1);", "relative error"),
}


@needs_gxx
@pytest.mark.usefixtures("host_builds")
@pytest.mark.parametrize("variant", BROKEN)
def test_host_run_catches_a_broken_split(variant):
    old, new, symptom = BROKEN[variant]
    build, problem = spec().with_params({"SPLITS": 4}), Problem(33, 17, 1000)
    text = hostsim.kernel_source(build.source)
    assert text.count(old) == 1, f"{build.source} changed: {old!r} is not in it once"
    hostsim.check_gemm_on_host(build, problem, 0, source_text=text)
    with pytest.raises(AssertionError, match=symptom):
        hostsim.check_gemm_on_host(build, problem, 0, source_text=text.replace(old, new))
