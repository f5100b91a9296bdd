"""tc10 (split-K): the model's choice of tile and S, each split's k-tiles, the reduction's order and the TF32 build's
fragment offsets in the device arithmetic run on the host, every build compiled for sm_90a, the plan's grid and
workspace on ragged shapes (a stub libcuda records the launch), the TF32 build's rounding per operand layout, and on
a GPU (test_tc10_split_k_gpu.py) correct results with the same bits on every call."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sass
from test_plans import H200, HostGPU, launch_record, make, stub, tc_args  # noqa: F401  (stub: a fixture)

from gemmlab import driver
from gemmlab.errors import InvalidConfigError
from gemmlab.harness.grid import LAYERS, LONG_K, M_SWEEP
from gemmlab.kernels.cuda.launch.nvrtc import compile_cuda
from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.cuda.tc.model.budget import SMEM_LIMIT, launch_registers, smem_bytes
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

from tc_levels import host_block

from gemmlab.kernels.cuda.tc.tc10_split_k import IN_KERNEL

NAMES = {"bf16": "cuda/tc10_split_k_bf16", "fp8": "cuda/tc10_split_k_fp8", "fp8_block": "cuda/tc10_split_k_fp8_block",
         "tf32": "cuda/tc10_split_k_tf32"}
MMA = {"bf16": "HGMMA.64x{}x16.F32.BF16", "fp8": "QGMMA.64x{}x32.F32.E4M3.E4M3", "fp8_block": "QGMMA.64x{}x32.F32.E4M3.E4M3",
       "tf32": "HGMMA.64x{}x8.F32.TF32"}  # the SASS instruction of each build's mainloop at tile width BN
GXX = shutil.which("g++") or shutil.which("clang++")


# ---- the model ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kt", [1, 2, 7, 8, 63, 64, 65, 257, 1000])
def test_splits_cover_k_in_order_without_an_empty_one(kt):
    for splits in range(1, min(kt, 70) + 1):
        plan = split_k.SplitPlan(64, 64, 8, splits, 1, kt, 0.0)
        ranges = plan.ranges()
        assert ranges[0][0] == 0 and ranges[-1][1] == kt
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # contiguous, in split order
        assert {e - b for b, e in ranges} <= {kt // splits, kt // splits + 1}  # balanced, none empty


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape", LONG_K)
def test_long_k_splits_over_the_gpu_with_a_pipeline_of_k_tiles_each(precision, shape):
    plan = split_k.choose(*shape, precision, 132)
    assert plan.splits > 1 and 66 <= plan.ctas <= split_k.MAX_WAVES * 132, plan
    assert plan.kt // plan.splits >= split_k.MIN_SPLIT_KTILES  # the producer's copies run ahead in every split
    assert (plan.bm, plan.bn, plan.stages) in split_k.tiles_for(precision)
    # fewer splits or none would cost more, in the model's own clocks
    assert plan.clocks < split_k.clocks(*shape, precision, plan.bm, plan.bn, 1, 132)
    assert plan.workspace_bytes == 4 * plan.bm * plan.bn * plan.ctas


SMALL_M = [(m, n, k) for n, k in LAYERS for m in M_SWEEP if m <= 128]


@pytest.mark.parametrize("shape", SMALL_M)
def test_small_m_fills_the_gpu_on_64_row_tiles_where_m_fits_them(shape):
    """The suite's decode rows, TF32 (4-byte operands: twice the k-tiles of BF16 at the same K): no 128-row tile
    where 64 rows hold M, the weight's columns and splits of K over at least 80% of the SMs, each split a pipeline's
    worth of k-tiles, and no more splits than the model's clocks pay for."""
    m, n, k = shape
    plan = split_k.choose(m, n, k, "tf32", 132)
    assert plan.kt == ceil_div(k, 32) and (plan.bm == 64 or m > 64), plan
    assert 0.8 * 132 <= plan.ctas <= split_k.MAX_WAVES * 132, plan
    assert plan.splits == 1 or plan.kt // plan.splits >= split_k.MIN_SPLIT_KTILES
    assert all(plan.clocks <= split_k.clocks(m, n, k, "tf32", plan.bm, plan.bn, s, 132)
               for s in range(1, plan.splits))


@pytest.mark.parametrize("precision", list(NAMES))
def test_many_tiles_and_short_k_do_not_split(precision):
    assert split_k.choose(4096, 4096, 4096, precision).splits == 1
    assert split_k.choose(300, 200, 100, precision).splits == 1  # 1-2 k-tiles: no split keeps a pipeline
    assert split_k.choose(1, 1, 1, precision).splits == 1


def test_block_scaled_tiles_sit_in_one_block_of_b_scales():
    assert all(128 % bn == 0 for _, bn, _ in split_k.tiles_for("fp8_block"))
    assert all(smem_bytes({"BM": bm, "BN": bn, "STAGES": st}) <= SMEM_LIMIT
               for bm, bn, st in split_k.TILES + split_k.MEASURED_TILES)


# ---- the device arithmetic on the host ----------------------------------------------------------------------------
HOST_MAIN = r"""
#include <cstdio>
#include <cstring>
#include <vector>
struct float4 { float x, y, z, w; };
""" + "{block}" + r"""
// stdin: "B S KT" prints split_begin(0..S); "R S" then S x 8 floats prints the reduction's 8 sums (their bits)
// through split_reduce with each (U, J)
template <int U, int J>
void reduce(const std::vector<float> &p, int S) {
  float d[8];
  split_reduce<8, U, J>(d, S, [&](int s, int j) {
    const float *q = &p[s * 8 + 4 * j];
    return float4{q[0], q[1], q[2], q[3]};
  });
  for (float x : d) { unsigned u; std::memcpy(&u, &x, 4); printf(" %08x", u); }
}
int main() {
  char op;
  while (scanf(" %c", &op) == 1) {
    if (op == 'B') {
      int S, KT;
      scanf("%d %d", &S, &KT);
      for (int s = 0; s <= S; ++s) printf(" %d", split_begin(s, S, KT));
    } else {
      int S;
      scanf("%d", &S);
      std::vector<float> p(S * 8);
      for (float &x : p) scanf("%f", &x);
      reduce<1, 1>(p, S); reduce<2, 1>(p, S); reduce<2, 2>(p, S); reduce<3, 2>(p, S);
    }
    printf("\n");
  }
}
"""


@pytest.fixture(scope="module")
def split_exe(tmp_path_factory):
    if GXX is None:
        pytest.skip("no host C++ compiler to run the device arithmetic with")
    tmp = tmp_path_factory.mktemp("split")
    src = tmp / "split.cpp"
    shim = "#define __host__\n#define __device__\n#define __forceinline__ inline\n"
    src.write_text(shim + HOST_MAIN.replace("{block}", host_block("split_k.cuh", "split")))
    exe = tmp / "split"
    subprocess.run([GXX, "-O2", "-std=c++17", "-ffp-contract=off", "-o", str(exe), str(src)], check=True)
    return exe


def _run(exe, lines: list[str]) -> list[str]:
    return subprocess.run([str(exe)], input="\n".join(lines), capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_device_split_ranges_are_the_model(split_exe):
    cases = [(s, kt) for kt in (1, 5, 64, 127, 256, 4097, 65536 // 64) for s in (1, 2, 3, 7, 16, 33) if s <= kt]
    out = _run(split_exe, [f"B {s} {kt}" for s, kt in cases])
    for (s, kt), line in zip(cases, out):
        assert [int(x) for x in line.split()] == [split_k.split_begin(i, s, kt) for i in range(s + 1)]


def _in_order(p: np.ndarray) -> np.ndarray:
    """The FP32 sums of the partials p (S x 8) added one by one in split order from zero."""
    d = np.zeros(8, np.float32)
    for row in p:
        d = (d + row).astype(np.float32)
    return d


@pytest.mark.parametrize("splits", [1, 2, 3, 5, 16, 33])
def test_the_reduction_adds_the_partials_in_split_order(split_exe, splits):
    """Partials of widely different magnitudes, whose FP32 sum depends on the order: every (U, J) batching of the
    loads gives the bits of the in-order sum, which arrival order does not enter (split_reduce has no argument for
    it), and the sum in reverse order differs, so the check could see another order."""
    rng = np.random.default_rng(splits)
    p = (rng.standard_normal((splits, 8)) * 10.0 ** rng.integers(-3, 8, (splits, 8))).astype(np.float32)
    line = " ".join(f"{x:.9g}" for x in p.ravel())
    words = _run(split_exe, [f"R {splits} {line}"])[0].split()
    want = [f"{int(x):08x}" for x in _in_order(p).view(np.uint32)]
    assert words == want * 4
    if splits >= 5:
        assert [f"{int(x):08x}" for x in _in_order(p[::-1]).view(np.uint32)] != want


FRAG_MAIN = r"""
#include <cstdio>
""" + "{block}" + r"""
int main() {  // every thread's offset of every value of every k8 step
  for (unsigned t = 0; t < 128; ++t)
    for (int kk = 0; kk < 4; ++kk)
      for (int i = 0; i < 4; ++i) printf("%u\n", a_frag_offset(t, kk, i));
}
"""


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler to run the device arithmetic with")
def test_tf32_a_fragments_are_wgmmas_layout_in_the_swizzled_tile(tmp_path):
    """a_frag_offset compiled on the host against the PTX m64k8 tf32 A fragment (thread t holds rows 16(t/32) +
    (t%32)/4 and 8 more, K t%4 and 4 more) placed by the 128-byte swizzle of a K-major tile, 128 bytes a row: every
    value of the warpgroup's 64 x 32 k-tile read once, and each warp's load on 32 distinct banks."""
    src = tmp_path / "frag.cpp"
    src.write_text("#define __host__\n#define __device__\n#define __forceinline__ inline\n"
                   + FRAG_MAIN.replace("{block}", host_block("tc10_split_k.cu", "fragment")))
    exe = tmp_path / "frag"
    subprocess.run([GXX, "-O2", "-std=c++17", "-o", str(exe), str(src)], check=True)
    got = np.array(_run(exe, []), np.int64).reshape(128, 4, 4)
    t, kk, i = np.meshgrid(np.arange(128), np.arange(4), np.arange(4), indexing="ij")
    row, k = 16 * (t // 32) + t % 32 // 4 + 8 * (i % 2), 8 * kk + t % 4 + 4 * (i // 2)
    assert np.array_equal(got, row * 128 + ((k // 4) ^ (row % 8)) * 16 + k % 4 * 4)
    assert sorted(got.ravel()) == list(range(0, 64 * 128, 4))  # the warpgroup's 64 rows x 32 floats, once each
    banks = got.reshape(4, 32, 4, 4) // 4 % 32  # (warp, lane, kk, i)
    assert all(len(set(banks[w, :, s, v])) == 32 for w in range(4) for s in range(4) for v in range(4))


# ---- the builds ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NAMES.values()))
def test_every_build_compiles_to_wgmma_without_local_memory(name, tmp_path):
    spec = get_kernel(name)
    builds = spec.configurations()
    assert {(b.params["BM"], b.params["BN"]) for b in builds} == \
        {(bm, bn) for bm, bn, _ in split_k.tiles_for(spec.precision, measured=True)}
    # TF32: the registered build (the maps round: TF32_ROUND=0's binary), and the variant rounding in the kernel
    # (TF32_ROUND=2): each tile with and without the pass over B's tiles (ROUND_B_SMEM, a K-major B)
    # ... and each with its partials added across a cluster, through the workspace by the last split, and by every
    # split (SK_SPREAD)
    ways = ((0, 0), (2, 0), (2, 1)) if spec.precision == "tf32" else ((0, 0),)
    keys = [(b.params["BM"], b.params["BN"], b.params.get("TF32_ROUND", 0), b.params.get("ROUND_B_SMEM", 0),
             b.defines()["SK_CLUSTER"], b.defines()["SK_SPREAD"]) for b in builds]
    # ... but 128x256 (BN = 256) neither rounds in the kernel nor adds its partials across a cluster (constraints)
    assert set(keys) == {(bm, bn, rnd, r, c, spread) for bm, bn, _ in split_k.tiles_for(spec.precision, measured=True)
                         for rnd, r in ways for c, spread in ((0, 0), (1, 0), (0, 1))
                         if bn <= 128 or (rnd == 0 and c == 0)}
    assert all(b.params.get("TMA_ROUND", 0) == (b.params.get("TF32_ROUND", 0) == 0 and spec.precision == "tf32")
               for b in builds)
    for build in builds:
        compiled = build.compile("sm_90a")
        assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0, build.params
        threads = (build.params["BM"] // 64 + 1) * 128
        assert compiled.report.registers <= 65536 // threads // 8 * 8
        assert "SPLITS" not in build.defines()  # S is gridDim.y: one binary for every S
        problem = Problem(100, 100, 4097, build.precision)
        assert build.for_problem(problem).params == build.params  # pinned: the tile stays, S = 3 splits
        assert build.launch_geometry(problem).grid[1] == 3
        if sass.AVAILABLE:
            ops = {i.op for i in sass.instructions(sass.sass(compiled.cubin, tmp_path))}
            assert MMA[spec.precision].format(build.params["BN"]) in ops, (build.params, ops)
            assert not any(op.startswith(("LDL", "STL")) for op in ops)
            # C through the staging boxes and TMA stores; the operands by TMA
            assert any(op.startswith("UTMASTG") for op in ops), build.params
            assert any(op.startswith("UTMALDG") for op in ops), build.params
            # setmaxnreg moves registers between the block's warps only: the producer's and the consumers' counts
            # within what the block holds from launch, or an inc waits forever (the producer gives registers to the
            # consumers)
            moves = {i.op.split(".")[1]: int(i.args.split(",")[-1], 16)
                     for i in sass.instructions(sass.sass(compiled.cubin, tmp_path)) if "SETMAXREG" in i.op}
            assert {"DEALLOC", "TRY_ALLOC"} <= set(moves), (build.params, moves)
            producer, consumer = moves["DEALLOC"], moves["TRY_ALLOC"]
            pool = compiled.report.registers * threads  # what ptxas gave the block at launch
            assert pool <= launch_registers(threads)
            assert 128 * producer + (threads - 128) * consumer <= pool, (build.params, moves, pool)
            # across a cluster: its barrier, and 16-byte loads and stores of the peers' shared memory (generic LD/ST
            # of the cluster's window); through the workspace, neither
            cluster = {"UCGABAR_ARV", "UCGABAR_WAIT", "LD.E.128", "ST.E.128"}
            assert cluster <= ops if build.defines()["SK_CLUSTER"] else not cluster & ops, build.params
            # every split counting its partial (a release add, no value back) and one thread of each polling the
            # count (acquire loads): the spread reduction's wait, in its builds alone; the last split's ticket
            # (an acquire-release add with the count back) in both workspace builds
            spread = {"REDG.E.ADD.STRONG.GPU", "LDG.E.STRONG.GPU"}
            assert spread <= ops if build.defines()["SK_SPREAD"] else not spread & ops, build.params
            assert ("ATOMG.E.ADD.STRONG.GPU" in ops) == (not build.defines()["SK_CLUSTER"]), build.params
            # the partials are ordered before the ticket by the consumers' barrier and the ticket's release, not by
            # a sequentially consistent fence in every thread (which waited for each thread's stores to reach L2)
            assert "MEMBAR.SC.GPU" not in ops, build.params
            if build.params.get("TF32_ROUND", 0):  # the k-tile loop: its slot handed back after its wgmmas
                body = sass.k_tile_loop(sass.instructions(sass.sass(compiled.cubin, tmp_path)))
                assert not sass.register_operand_hazards(body) and not sass.releases_under_previous_trip(body)
                loop_ops = {i.op for i in body}
                if build.params.get("ROUND_B_SMEM", 0):
                    # the consumers' pass over the next B tile (16-byte shared loads and stores), fenced for the
                    # async proxy, and the named barrier of the consumer threads before the wgmmas read it
                    assert {"LDS.128", "STS.128", "FENCE.VIEW.ASYNC.S"} <= loop_ops, build.params
                    assert any(i.op.startswith("BAR.SYNC") and i.args.startswith("0x1,") for i in body)


def test_constraints_refuse_what_the_source_does_not_build():
    tf32 = get_kernel(NAMES["tf32"]).with_params(IN_KERNEL)  # the variants below round in the kernel
    with pytest.raises(InvalidConfigError, match="BN=256"):
        get_kernel(NAMES["fp8_block"]).with_params({"BN": 256})
    with pytest.raises(InvalidConfigError, match="EPI_TMA=2"):
        get_kernel(NAMES["bf16"]).with_params({"EPI_TMA": 2})
    with pytest.raises(InvalidConfigError, match="SPLITS"):
        get_kernel(NAMES["bf16"]).with_params({"SPLITS": -1})
    with pytest.raises(InvalidConfigError, match="SK_CLUSTER=2"):
        get_kernel(NAMES["bf16"]).with_params({"SK_CLUSTER": 2})
    with pytest.raises(InvalidConfigError, match="SK_SPREAD=2"):
        get_kernel(NAMES["bf16"]).with_params({"SK_SPREAD": 2})
    with pytest.raises(InvalidConfigError, match="one at most"):
        get_kernel(NAMES["bf16"]).with_params({"SK_SPREAD": 1, "SK_CLUSTER": 1})
    for rows in (4, 12, 256):  # A's box: whole groups of 8 rows (the swizzle's), within the tile (BM=128)
        with pytest.raises(InvalidConfigError, match=f"A_ROWS={rows}: the rows of A's box"):
            get_kernel(NAMES["bf16"]).with_params({"A_ROWS": rows})
    with pytest.raises(InvalidConfigError, match="A_ROWS=32: a swapped level"):
        get_kernel("cuda/tc5_swap_ab_tf32").with_params({"A_ROWS": 32})
    for rounding in (1, 3):  # the register-operand-only and pre-pass roundings are tc5's swap's
        with pytest.raises(InvalidConfigError, match=f"TF32_ROUND={rounding}"):
            tf32.with_params({"TF32_ROUND": rounding})
    with pytest.raises(InvalidConfigError, match="ROUND_B_SMEM"):
        tf32.with_params({"TF32_ROUND": 0, "ROUND_B_SMEM": 1})
    # 128x256 builds (a ring of 4) through the workspace; a cluster's reduction keeps a partial and the sums in the
    # ring, which 4 stages of it do not hold (the source's static_assert), and A's rounded fragments spill beside
    # 128 accumulators
    wide = {"BM": 128, "BN": 256, "STAGES": 4}
    assert get_kernel(NAMES["bf16"]).with_params({**wide, "SK_SPREAD": 1}).params["BN"] == 256
    with pytest.raises(InvalidConfigError, match="SK_CLUSTER=1 at 128x256"):
        get_kernel(NAMES["bf16"]).with_params({**wide, "SK_CLUSTER": 1})
    with pytest.raises(InvalidConfigError, match="TF32_ROUND=2 at BN=256"):
        tf32.with_params(wide)


@pytest.mark.parametrize("precision", list(NAMES))
def test_a_box_of_fewer_rows_is_refused_past_them_on_the_tile_that_runs(precision, tmp_path):
    """A_ROWS (a variant): refused where M passes the box on the tile tc10 chooses for the problem, whatever BM the
    variant named (a pinned BM=64 runs 128-row tiles at 1000x4096x4096); dropped where the chosen tile is no taller
    than the box (one binary with the registered build); the plan it times is the registered build's tile and S. A
    build with a 16-row box compiles without spills, with the precision's wgmma in SASS where a disassembler is
    installed; A_ROWS=0 on another level is its registered binary."""
    base = get_kernel(NAMES[precision])
    pinned = base.with_params({"BM": 64, "A_ROWS": 64})
    big = Problem(1000, 4096, 4096, precision)
    assert base.for_problem(big).params["BM"] == 128 and "M=1000 needs a box" in pinned.is_valid(big)
    for shape in ((64, 4096, 4096), (65, 256, 16384), (16, 14336, 4096), (3, 1024, 8192)):
        problem = Problem(*shape, precision)
        registered = base.for_problem(problem).params
        for rows in (64, 96):
            runs = base.with_params({"A_ROWS": rows})
            assert not runs.is_valid(problem)
            built = runs.for_problem(problem)
            p = built.params
            assert {k: p[k] for k in ("BM", "BN", "STAGES", "SPLITS")} == \
                {k: registered[k] for k in ("BM", "BN", "STAGES", "SPLITS")}
            assert registered["BM"] == 64 and p["A_ROWS"] == 0 and "A_ROWS" not in built.defines()
    short = base.with_params({"A_ROWS": 16}).for_problem(Problem(16, 14336, 4096, precision))
    assert short.defines()["A_ROWS"] == 16 and short.params["BM"] == 64
    compiled = short.compile("sm_90a")
    assert compiled.report.spills == 0 and compiled.report.stack_bytes == 0
    if sass.AVAILABLE:
        ops = {i.op for i in sass.instructions(sass.sass(compiled.cubin, tmp_path))}
        assert MMA[precision].format(short.params["BN"]) in ops
    tc4 = get_kernel("cuda/tc4_persistent_bf16")
    assert tc4.with_params({"A_ROWS": 0}).defines() == tc4.defines()
    assert tc4.with_params({"A_ROWS": 64}).defines()["A_ROWS"] == 64


def test_tf32_rounds_to_nearest_so_auto_may_pick_it():
    """The registered build's maps round (TMA_ROUND=1 over the truncating binary), as the in-kernel variant does;
    without either it truncates, which auto passes over."""
    spec = get_kernel(NAMES["tf32"])
    assert (spec.params["TF32_ROUND"], spec.params["TMA_ROUND"]) == (0, 1) and spec.auto_refusal() == ""
    assert spec.with_params(IN_KERNEL).auto_refusal() == ""
    assert "truncates" in spec.with_params({"TMA_ROUND": 0}).auto_refusal()
    assert spec.is_valid(Problem(3, 4096, 14336, "tf32")) is None and spec.fuses_epilogue


# ---- the plan on ragged shapes ---------------------------------------------------------------------------------------
RAGGED = [(1, 33, 4097), (3, 257, 1001), (17, 31, 2049), (127, 129, 777), (129, 1, 4095)]


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape", RAGGED)
@pytest.mark.parametrize("way", ["workspace", "cluster", "spread"])
def test_plan_launches_tiles_by_splits_with_its_workspace(stub, precision, shape, way):  # noqa: F811
    """A pinned S (5, K never a multiple of it in k-tiles here) on ragged shapes: the grid is tiles x S. Through the
    workspace (SK_CLUSTER=0) the plan holds S partials a tile and a ticket a tile, zeroed, and hands both to the
    kernel, the last split adding them or (the SK_SPREAD=1 variant, the grid resident at once) every split a share;
    across a cluster (the SK_CLUSTER=1 variant) each tile's S CTAs are one cluster of (1, S, 1), with no workspace
    and nothing zeroed."""
    stub.stub_reset()
    sk_cluster = int(way == "cluster")
    spec = get_kernel(NAMES[precision]).with_params({"SPLITS": 5, "SK_CLUSTER": sk_cluster,
                                                     "SK_SPREAD": int(way == "spread")})
    layout = Layout(b=COL) if precision != "bf16" else ROW_MAJOR  # TF32: x @ w.t(), B read and rounded in place
    plan, gpu = make(stub, spec.name, shape, layout, spec=spec)
    m, n, k = shape
    p = plan.spec.params
    assert ceil_div(k, plan.spec.k_tile) >= 5
    splits = 5
    tiles = ceil_div(m, p["BM"]) * ceil_div(n, p["BN"])
    ptrs = (0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    plan.launch(*ptrs, 0x5EED, *([0x7300_0000_0000, 0x7300_0000_0040] if precision.startswith("fp8") else []))
    rec = launch_record(stub, 0)
    args = tc_args(rec.params)
    assert rec.grid == (tiles, splits, 1) and rec.block == ((p["BM"] // 64 + 1) * 128, 1, 1)
    assert rec.stream == 0x5EED and (args["M"], args["N"], args["K"]) == shape
    if sk_cluster:
        assert rec.cluster == (1, splits, 1) and (args["sk_ws"], args["sk_flags"]) == (0, 0)
        waves = ceil_div(tiles, 66)  # the stub's resident clusters
        assert any(f"one cluster of 5 CTAs a tile, {waves} wave(s) of the 66 resident" in s for s in plan.steps)
        assert gpu.synced == 0  # nothing zeroed
        assert 4 * tiles not in [b.nbytes for b in plan.buffers]  # no tickets (the operands' pitched copies only)
        return
    assert rec.cluster == (0, 0, 0) and p["SK_SPREAD"] == (way == "spread")
    assert any(("each split adds its share" if way == "spread" else "the last split of a tile adds") in step and
               f"{splits} splits of K" in step for step in plan.steps)
    ws, tickets = plan.buffers[-2:]
    assert (args["sk_ws"], args["sk_flags"]) == (ws.ctypes.data, tickets.ctypes.data)
    assert ws.nbytes == 4 * tiles * splits * p["BM"] * p["BN"]
    assert tickets.nbytes == 4 * tiles and not tickets.any() and gpu.synced == 1


@pytest.mark.parametrize("layout", [Layout(b=COL), ROW_MAJOR], ids=["w.t()", "row-major B"])
def test_in_kernel_tf32_plan_rounds_each_operand_once(stub, layout):  # noqa: F811
    """The in-kernel rounding (TF32_ROUND=2, a variant). x @ w.t() (B K-major): one launch of the binary whose
    consumers round B's tiles (ROUND_B_SMEM=1), B's map the N×K weight in place. A row-major B: tc4's pattern, the
    transpose pre-pass writing Bᵀ rounded into the workspace B's map holds, then the binary without the pass. A's
    fragments are rounded in registers either way: no pre-pass over A."""
    stub.stub_reset()
    shape = (3, 4096, 14336)
    spec = get_kernel(NAMES["tf32"]).with_params(IN_KERNEL)
    plan, gpu = make(stub, None, shape, layout, spec=spec)
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(a, b, c, 0x5EED)
    runs = spec.for_problem(Problem(*shape, "tf32"), H200.sm_count)
    entries = [compiled.entry for compiled, _, _ in gpu.loaded]
    main = next(compiled for compiled, _, _ in gpu.loaded if compiled.entry == "tc10_split_k")
    args = tc_args(launch_record(stub, stub.stub_launches() - 1).params)
    m, n, k = shape
    assert list(args["a"][[2, 3, 4, 5, 6, 7]]) == [a, k, m, 4 * k, 32, 64]  # A in place, 64-row boxes of 32 K
    if layout == ROW_MAJOR:
        assert sorted(entries) == ["tc10_split_k", "tc_transpose"] and stub.stub_launches() == 2
        assert launch_record(stub, 0).block == (32, 8, 1)  # the transpose first, on the caller's stream
        assert launch_record(stub, 0).stream == 0x5EED
        transpose = next(compiled for compiled, _, _ in gpu.loaded if compiled.entry == "tc_transpose")
        assert transpose is compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32, "ROUND": 1}, "sm_90a")
        assert main is compile_cuda(runs.source, runs.entry, runs.defines(), "sm_90a")
        assert args["b"][2] == plan.buffers[0].ctypes.data and any("rounded to TF32" in s for s in plan.steps)
    else:
        assert entries == ["tc10_split_k"] and stub.stub_launches() == 1
        assert main is compile_cuda(runs.source, runs.entry, {**runs.defines(), "ROUND_B_SMEM": 1}, "sm_90a")
        assert list(args["b"][[2, 3, 4, 5, 6, 7]]) == [b, k, n, 4 * k, 32, 64]  # w (N×K) in place
    assert stub.stub_copies() == 0
    assert (args["M"], args["N"], args["K"], args["C"]) == (m, n, k, c)
    assert launch_record(stub, stub.stub_launches() - 1).smem == smem_bytes(dict(runs.params))


@pytest.mark.parametrize("layout", [Layout(b=COL), ROW_MAJOR], ids=["w.t()", "row-major B"])
def test_tma_round_plan_reads_both_operands_through_tf32_maps(stub, layout):  # noqa: F811
    """The registered build (TMA_ROUND=1): the truncating binary (no pass of the consumers', no rounding transpose),
    A's and B's maps of type TFLOAT32 (11), which round on the copy into shared memory; C's map stays FP32 (7), so C
    is not rounded. A row-major B goes through the plain transpose into the workspace, then a TFLOAT32 map over
    that."""
    stub.stub_reset()
    shape = (130, 200, 4100)
    spec = get_kernel(NAMES["tf32"])
    assert spec.params["TMA_ROUND"] == 1 and spec.auto_refusal() == ""  # rounds to nearest
    plan, gpu = make(stub, None, shape, layout, spec=spec)
    runs = spec.for_problem(Problem(*shape, "tf32"), H200.sm_count)
    main = next(compiled for compiled, _, _ in gpu.loaded if compiled.entry == "tc10_split_k")
    assert main is compile_cuda(runs.source, runs.entry, runs.defines(), "sm_90a")  # no ROUND_B_SMEM
    truncating = spec.with_params({"TMA_ROUND": 0}).for_problem(Problem(*shape, "tf32"), H200.sm_count)
    assert runs.defines() == truncating.defines()  # the truncating binary: TMA_ROUND is the host's
    a, b, c = 0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000
    plan.launch(a, b, c, 0x5EED)
    args = tc_args(launch_record(stub, stub.stub_launches() - 1).params)
    assert (args["a"][1], args["b"][1]) == (driver.TMA_DTYPES["tf32"], driver.TMA_DTYPES["tf32"]) == (11, 11)
    assert args["c"][1] == driver.TMA_DTYPES["fp32"] == 7
    assert args["a"][2] == a
    assert any("rounded to TF32 by their TMA copies" in step for step in plan.steps)  # what explain() says
    if layout == ROW_MAJOR:
        transpose = next(compiled for compiled, _, _ in gpu.loaded if compiled.entry == "tc_transpose")
        assert transpose is compile_cuda("tc_transpose.cu", "tc_transpose", {"TILE_T": 32}, "sm_90a")
        assert args["b"][2] == plan.buffers[0].ctypes.data and stub.stub_launches() == 2
    else:
        assert args["b"][2] == b and stub.stub_launches() == 1


def test_tma_round_is_a_tf32_option_of_a_build_that_truncates_in_the_kernel():
    tf32 = get_kernel(NAMES["tf32"]).with_params(IN_KERNEL)
    for changes in ({"TMA_ROUND": 1}, {"TMA_ROUND": 2, "TF32_ROUND": 0}):
        with pytest.raises(InvalidConfigError, match="TMA_ROUND"):
            tf32.with_params(changes)
    with pytest.raises(InvalidConfigError, match="TMA_ROUND=1: rounding to TF32 is an option of the TF32 levels"):
        get_kernel(NAMES["bf16"]).with_params({"TMA_ROUND": 1})


def test_auto_choice_is_carried_into_the_plan(stub):  # noqa: F811
    stub.stub_reset()
    shape = (256, 256, 16384)
    plan, _ = make(stub, NAMES["bf16"], shape, Layout(b=COL))
    want = split_k.choose(*shape, "bf16", H200.sm_count)
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0)
    assert launch_record(stub, 0).grid == want.grid
    assert (plan.spec.params["BM"], plan.spec.params["BN"], plan.spec.params["SPLITS"]) == \
        (want.bm, want.bn, want.splits)
    assert get_kernel(NAMES["bf16"]).launch_geometry(Problem(*shape, "bf16")).grid == want.grid


H200_NAME = "NVIDIA H200"
RESULTS = Path(__file__).resolve().parents[4] / "results" / "h200"


def test_a_measured_choice_replaces_the_model_s_in_the_plan(stub):  # noqa: F811
    """At a problem the shipped sweep measured (512³ BF16: 64x64 tiles, one split, where the model splits K in two),
    the plan launches the measured tile and S; one row more and the model's choice runs again; a GPU of another SM
    count (an H100 PCIe's 114) keeps the model's (one of the H200's, an H100 SXM: the plan test below)."""
    stub.stub_reset()
    shape = (512, 512, 512)
    hit = split_k.measured(*shape, "bf16", H200.sm_count)
    model = split_k.choose(*shape, "bf16", H200.sm_count)
    assert hit is not None and (hit.bm, hit.bn, hit.splits) != (model.bm, model.bn, model.splits)
    plan, _ = make(stub, NAMES["bf16"], shape, Layout(b=COL))
    plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0)
    assert launch_record(stub, 0).grid == hit.grid
    assert (plan.spec.params["BM"], plan.spec.params["BN"], plan.spec.params["STAGES"]) == (hit.bm, hit.bn, hit.stages)
    assert split_k.measured(513, 512, 512, "bf16", H200.sm_count) is None
    assert split_k.measured(*shape, "bf16", 114) is None
    assert get_kernel(NAMES["bf16"]).launch_geometry(Problem(513, 512, 512, "bf16")).grid == \
        split_k.choose(513, 512, 512, "bf16", H200.sm_count).grid


def test_fp16_takes_bf16_s_measured_choices():
    """FP16 has no sweep of its own: it runs BF16's measured tile and S (the same builds at the same instruction
    rates), as it reads BF16's dispatch table; where BF16 has none, the model's."""
    table = json.loads(split_k.MEASURED.read_text())["choices"]
    assert "fp16" not in table
    for label, hit in table["bf16"].items():
        shape = tuple(int(x) for x in label.split("x"))
        got = split_k.measured(*shape, "fp16", H200.sm_count)
        assert got == split_k.measured(*shape, "bf16", H200.sm_count)
        assert (got.bm, got.bn, got.stages, got.splits) == (hit["BM"], hit["BN"], hit["STAGES"], hit["SPLITS"])
        assert get_kernel("cuda/tc10_split_k_fp16").launch_geometry(Problem(*shape, "fp16")).grid == got.grid
    assert split_k.measured(513, 512, 512, "fp16", H200.sm_count) is None


def test_the_plan_says_where_its_tile_and_s_come_from(stub):  # noqa: F811
    """explain() names the measured choice and the model's it replaced, or the model's alone; for an H100 SXM (the
    H200's chip) the H100's own measurement where it holds one, whichever GPU this machine has, and for FP16 BF16's
    sweep."""
    import dataclasses

    stub.stub_reset()
    plan, _ = make(stub, NAMES["bf16"], (512, 512, 512), Layout(b=COL))
    assert "tile 64x64, S = 1: measured fastest at this shape on the NVIDIA H200" in plan.explain()
    assert "where the model takes 64x64 with S = 2" in plan.explain()
    h100 = dataclasses.replace(H200, name="NVIDIA H100 80GB HBM3", l2_bytes=50 * 2**20, total_mem_bytes=80 * 2**30)
    for name, precision, sweep in ((NAMES["bf16"], "bf16", ""), ("cuda/tc10_split_k_fp16", "fp16", " in bf16's sweep")):
        plan = get_kernel(name).make_plan(Problem(512, 512, 512, precision), Layout(b=COL), h100, HostGPU(stub))
        assert plan.spec.params["SPLITS"] == 1
        assert (f"tile 64x64, S = 1: measured fastest at this shape{sweep} on the NVIDIA H100 80GB HBM3 "
                "(data/split_k-h100.json)") in plan.explain()  # the H100's own sweep, made for the GPU it names
    plan, _ = make(stub, NAMES["bf16"], (513, 512, 512), Layout(b=COL))
    model = split_k.choose(513, 512, 512, "bf16", H200.sm_count)
    assert f"tile {model.bm}x{model.bn}, S = {model.splits}: the model's choice" in plan.explain()


def _shipped_choices():
    return [(precision, tuple(int(x) for x in shape.split("x")), hit)
            for precision, shapes in json.loads(split_k.MEASURED.read_text())["choices"].items()
            for shape, hit in shapes.items()]


@pytest.mark.parametrize("precision,shape,hit", _shipped_choices(), ids=lambda v: v if isinstance(v, str) else None)
def test_every_shipped_choice_is_a_build_the_plan_runs(stub, precision, shape, hit):  # noqa: F811
    """Each shipped choice is one of its precision's builds, passes its constraints, leaves no split empty, and is what the plan of x @ w.t() launches: tiles x S CTAs,
    S partials a tile in its workspace, no cluster."""
    stub.stub_reset()
    assert (hit["BM"], hit["BN"], hit["STAGES"]) in split_k.tiles_for(precision, measured=True)
    plan_k = split_k.measured(*shape, precision, H200.sm_count)
    assert min(end - begin for begin, end in plan_k.ranges()) >= 1
    spec = get_kernel(NAMES[precision]).for_problem(Problem(*shape, precision), H200.sm_count)
    assert spec.config_error() is None
    plan, _ = make(stub, NAMES[precision], shape, Layout(b=COL))
    ptrs = (0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    plan.launch(*ptrs, 0, *([0x7300_0000_0000, 0x7300_0000_0040] if precision.startswith("fp8") else []))
    rec = launch_record(stub, stub.stub_launches() - 1)
    assert rec.grid == plan_k.grid and rec.cluster == (0, 0, 0)
    if plan_k.splits > 1:
        assert plan.buffers[-2].nbytes == plan_k.workspace_bytes


def test_measured_choices_outside_what_the_kernel_builds_are_not_taken():
    """A table names a tile and S; one the precision does not build (fp8_block's tiles sit in one 128-wide block of
    B's scales), or an S past the problem's k-tiles, leaves the model's choice."""
    def table(bm, bn, stages, splits, precision="fp8_block", shape="256x256x4096"):
        return {"gpu": H200_NAME, "sm_count": 132, "choices": {precision: {shape: {
            "BM": bm, "BN": bn, "STAGES": stages, "SPLITS": splits}}}}

    assert split_k.measured(256, 256, 4096, "fp8_block", 132, table(64, 128, 8, 4)).splits == 4
    assert split_k.measured(256, 256, 4096, "fp8_block", 132, table(64, 256, 8, 4)) is None
    assert split_k.measured(256, 256, 4096, "fp8_block", 132, table(64, 128, 7, 4)) is None
    assert split_k.measured(256, 256, 4096, "fp8_block", 132, table(64, 128, 8, 33)) is None
    assert split_k.measured(256, 256, 4096, "fp8_block", 132, table(64, 128, 8, 0)) is None


def _rows(times: dict, shape=(128, 4096, 4096), precision="fp8"):
    """(precision, shape, params, µs, gain) rows of a sweep: {(BM, BN, STAGES, SPLITS): (µs, gain)}."""
    return [(precision, shape, {"BM": bm, "BN": bn, "STAGES": st, "SPLITS": s}, us, gain)
            for (bm, bn, st, s), (us, gain) in times.items()]


def test_measured_table_keeps_a_choice_only_where_both_measures_pass_the_margin():
    """The model's choice at 128x4096x4096 FP8 is 64x128 with S = 2. A build is kept where its median is faster than
    the model's choice's by more than the margin (a build timed twice by its faster median) and its interleaved gain
    over the model's choice is too; failing either, the model's choice stands. A run made with the table applied
    (the measured choice registered, the model's pinned: its gain below 1) gives the same answer."""
    model = split_k.choose(128, 4096, 4096, "fp8")
    mine = (model.bm, model.bn, model.stages, model.splits)
    assert mine == (64, 128, 8, 2)
    margin, other = split_k.MEASURED_MARGIN, (64, 64, 8, 1)
    fast, gain = 15.0 * (1 - 2 * margin), 1 + 2 * margin
    # the model's choice registered (20.0, gain 1 by definition) and pinned (15.0: its median, not its gain, counts)
    rows = _rows({mine: (20.0, 1.0)}) + _rows({mine: (15.0, 1.04), other: (fast, gain)})
    hit = split_k.measured_table([rows], "GPU", 132)["choices"]["fp8"]["128x4096x4096"]
    assert hit["model"]["us"] == 15.0 and hit["gain"] == round(gain, 3)
    assert {k: hit[k] for k in ("BM", "BN", "STAGES", "SPLITS")} == {"BM": 64, "BN": 64, "STAGES": 8, "SPLITS": 1}
    for us, g in ((15.0 * (1 - margin / 2), gain), (fast, 1 + margin / 2), (fast, None)):
        assert split_k.measured_table([_rows({mine: (15.0, 1.0), other: (us, g)})], "GPU", 132)["choices"] == {}
    applied = split_k.measured_table([_rows({other: (fast, 1.0), mine: (15.0, 1 / gain)})], "GPU", 132)
    assert applied["choices"]["fp8"]["128x4096x4096"]["SPLITS"] == 1
    close = split_k.measured_table([_rows({other: (fast, 1.0), mine: (15.0, 1 / (1 + margin / 2))})], "GPU", 132)
    assert close["choices"] == {}
    # a pinned S past the k-tiles is the build with S = KT, as the plan runs it
    short = (128, 4096, 1024)
    model = split_k.choose(*short, "fp8")
    capped = split_k.measured_table([_rows({(model.bm, model.bn, model.stages, model.splits): (15.0, 1.0),
                                            (64, 64, 8, 64): (10.0, 1.5)}, shape=short)], "GPU", 132)
    assert capped["choices"]["fp8"]["128x4096x1024"]["SPLITS"] == 8
    plan = split_k.measured(128, 4096, 1024, "fp8", 132, table=capped)
    assert (plan.bm, plan.bn, plan.splits, plan.grid) == (64, 64, 8, (128, 8, 1))


def test_shipped_measured_table_is_the_committed_sweeps_and_holds_in_a_run_with_it():
    """data/split_k-h200.json is what the table's rule makes of the H200's sweeps: FP8 block-scaled's and TF32's
    (results/h200/tc10_sweep{,2}_*.json) and BF16's and FP8's of the 128x64 tile (tc10_sweep3_*.json, which timed
    the earlier table's choices as the registered builds, the model's pinned and 128x64 at S = 1, 2 and 4 beside them,
    at every shape of the suite where auto runs tc10, and so replace those precisions' earlier sweeps). Of the BF16
    and FP8 choices the run made with the earlier table applied kept (tc10_measured_confirm.json), three stand, one
    gave way to 128x64 and one came within the margin in the new sweep."""
    from gemmlab.dispatch_command import split_k_runs
    from gemmlab.results import load_results

    paths = sorted([*RESULTS.glob("tc10_sweep_fp8_block.json"), *RESULTS.glob("tc10_sweep2_fp8_block.json"),
                    *RESULTS.glob("tc10_sweep_tf32.json"), *RESULTS.glob("tc10_sweep2_tf32.json"),
                    *RESULTS.glob("tc10_sweep3_*.json")])
    runs = [load_results(p) for p in paths]
    assert len(paths) == 6 and {r["env"]["gpu"]["name"] for r in runs} == {H200_NAME}
    per_run = [rows for r in runs for rows in split_k_runs(r)]
    assert {row[0] for rows in per_run for row in rows} == {"bf16", "fp8", "fp8_block", "tf32"}
    want = split_k.measured_table(per_run, H200_NAME, 132, sources=[p.name for p in paths])
    shipped = json.loads(split_k.MEASURED.read_text())
    assert shipped == json.loads(json.dumps(want)) and sum(map(len, shipped["choices"].values())) == 14
    confirm = load_results(RESULTS / "tc10_measured_confirm.json")
    confirm["records"] = [r for r in confirm["records"] if r["precision"] in ("bf16", "fp8")]
    again = split_k.measured_table(split_k_runs(confirm), H200_NAME, 132)
    kept = {(p, s, (v["BM"], v["BN"], v["SPLITS"])) for p, c in again["choices"].items() for s, v in c.items()}
    ship = {(p, s, (v["BM"], v["BN"], v["SPLITS"])) for p, c in shipped["choices"].items() for s, v in c.items()}
    assert len(kept & ship) == 3 and {(p, s) for p, s, _ in kept - ship} == {("bf16", "32x4096x4096"),
                                                                           ("fp8", "256x4096x4096")}
    # FP8 256x4096x4096 now runs 128x64; BF16 32x4096x4096's choice came within the margin of the model's in sweep3
    assert ("fp8", "256x4096x4096", (128, 64, 1)) in ship and "32x4096x4096" not in shipped["choices"]["bf16"]


def _record(kernel, variant_of=None, gain=None, precision="bf16", layout="row,col", **params):
    base = dict(get_kernel(variant_of or kernel).params)
    return {"kernel": kernel, "variant_of": variant_of, "variant_gain": gain, "precision": precision, "m": 8,
            "n": 16, "k": 32, "verified": True, "median_ms": 0.01, "layout": layout, "params": {**base, **params}}


def test_split_k_rows_read_the_build_that_ran():
    """Each row is the build the record ran (its params) and its gain over the run's registered build (1.0 for the
    registered one); records that failed verification, of other kernels or of another layout are left out (FP8's
    name none: its B is always K-major); a variant that changes more than the tile, the ring and S is refused."""
    from gemmlab.dispatch_command import split_k_rows
    from gemmlab.errors import GemmlabError

    name = NAMES["bf16"]
    records = [_record(name, BM=64, BN=128, STAGES=8, SPLITS=4),
               _record(f"{name}[BM=64,STAGES=8,SPLITS=3]", name, 0.5, BM=64, STAGES=8, SPLITS=3),
               {**_record(f"{name}[SPLITS=2]", name, 9.0, SPLITS=2), "verified": False},
               _record(f"{name}[SPLITS=2]", name, 9.0, layout="row,row", SPLITS=2),
               _record("cuda/tc4_persistent_bf16"),
               _record(NAMES["fp8"], precision="fp8", layout=None, SPLITS=2)]
    rows = split_k_rows({"records": records})
    assert [(r[0], r[2]["BM"], r[2]["BN"], r[2]["STAGES"], r[2]["SPLITS"], r[4]) for r in rows] == \
        [("bf16", 64, 128, 8, 4, 1.0), ("bf16", 64, 128, 8, 3, 0.5), ("fp8", 128, 128, 6, 2, 1.0)]
    assert [round(r[3], 6) for r in rows] == [10.0, 10.0, 10.0]
    with pytest.raises(GemmlabError, match=r"changes EPI_TMA; tc10's table holds builds that differ"):
        split_k_rows({"records": [_record(f"{name}[EPI_TMA=0]", name, 1.2, EPI_TMA=0)]})
    # a record from before SK_CLUSTER existed ran the workspace's reduction, the registered one; the cluster's does not
    # go into the table
    before = _record(name, SPLITS=2)
    del before["params"]["SK_CLUSTER"]
    assert len(split_k_rows({"records": [before]})) == 1
    with pytest.raises(GemmlabError, match=r"changes SK_CLUSTER"):
        split_k_rows({"records": [_record(f"{name}[SK_CLUSTER=1]", name, 0.7, SK_CLUSTER=1)]})
    del before["params"]["SK_SPREAD"]  # nor SK_SPREAD, added later still
    assert len(split_k_rows({"records": [before]})) == 1
    with pytest.raises(GemmlabError, match=r"changes SK_SPREAD"):
        split_k_rows({"records": [_record(f"{name}[SK_SPREAD=1]", name, 0.7, SK_SPREAD=1)]})


def _cli(*args):
    import sys

    return subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--split-k", *map(str, args)],
                          capture_output=True, text=True)


def test_dispatch_split_k_writes_out_and_refuses_other_runs(tmp_path):
    """--split-k --out writes the table of the runs named (BF16's sweep of the 128x64 tile: the shipped BF16 choices);
    runs of two GPUs, a run without a GPU, a non-H200 run without --out and a run without tc10's records are each
    refused in one line, exit 2."""
    src = RESULTS / "tc10_sweep3_bf16.json"
    out = tmp_path / "split.json"
    proc = _cli(src, "--out", out)
    assert proc.returncode == 0, proc.stderr
    shipped = json.loads(split_k.MEASURED.read_text())["choices"]["bf16"]
    assert json.loads(out.read_text())["choices"] == {"bf16": shipped}
    run = json.loads(src.read_text())

    def variant(path, **env_gpu):
        path.write_text(json.dumps({**run, "env": {**run["env"], "gpu": {**run["env"]["gpu"], **env_gpu}}}))
        return path

    h100 = variant(tmp_path / "h100.json", name="NVIDIA H100 80GB HBM3")
    no_gpu = tmp_path / "no_gpu.json"
    no_gpu.write_text(json.dumps({**run, "env": {k: v for k, v in run["env"].items() if k != "gpu"}}))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**run, "records": [{**run["records"][0], "kernel": "cuda/tc4_persistent_bf16"}]}))
    for args, says in (((src, h100, "--out", out), "from 2 GPUs"), ((no_gpu, "--out", out), "name no GPU"),
                       ((h100,), "write it elsewhere with --out"), ((other, "--out", out), "0 verified records")):
        proc = _cli(*args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert says in proc.stderr, proc.stderr
    assert _cli(h100, "--out", out).returncode == 0 and json.loads(out.read_text())["gpu"] == "NVIDIA H100 80GB HBM3"


def test_dispatch_model_counts_the_splits():
    from gemmlab.analysis.scaling import estimate
    from gemmlab.dispatch import _roofs

    roofs = _roofs("NVIDIA H200", 132)
    long_k = Problem(256, 256, 16384, "bf16")
    mine = estimate(get_kernel(NAMES["bf16"]), long_k, roofs)
    assert mine.split == mine.tiles and mine.fill > 0.4
    plan = split_k.choose(256, 256, 16384, "bf16", 132)  # its last split reads S partials and writes its own
    want = (plan.splits + 1) * 4 * plan.bm * plan.bn / (roofs.l2_gbs * 1e9 / 132) * 1e3
    assert mine.reduce_ms == pytest.approx(want) and "split-K reduction" in mine.factors()
    assert estimate(get_kernel("cuda/tc4_persistent_bf16"), long_k, roofs).reduce_ms == 0
    assert mine.ms < estimate(get_kernel("cuda/tc2_wgmma_tma_bf16"), long_k, roofs).ms  # tc2: 2 of 132 SMs busy


def test_dispatch_model_plans_for_the_gpu_s_sms():
    """On a GPU of 114 SMs the dispatch model sees the tile and S a launch there runs (tc10's choice weighs the
    waves over the GPU's SMs), not the H200's."""
    from gemmlab.analysis.scaling import estimate
    from gemmlab.dispatch import _roofs

    problem = Problem(256, 256, 16384, "bf16")
    for sms in (132, 114):
        plan = split_k.choose(*problem.shape, "bf16", sms)
        reduce = (plan.splits + 1) * 4 * plan.bm * plan.bn
        roofs = _roofs("NVIDIA H200", sms)
        assert estimate(get_kernel(NAMES["bf16"]), problem, roofs).reduce_ms == \
            pytest.approx(reduce / (roofs.l2_gbs * 1e9 / sms) * 1e3)
    assert split_k.choose(*problem.shape, "bf16", 114).splits != split_k.choose(*problem.shape, "bf16", 132).splits


def test_a_bench_without_a_gpu_records_the_build_of_the_named_gpu_s_sms(tmp_path):
    """bench --gpu a100 (108 SMs) without a GPU: the record's parameters and the build it compiled (its shared
    memory) are tc10's choice on 108 SMs, which differs from the H200's at 1024³."""
    import sys

    out = tmp_path / "a100.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--gpu", "a100", "--kernels", NAMES["bf16"],
                           "--shape", "1024", "--json", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(out.read_text())["records"][0]
    problem = Problem(1024, 1024, 1024, "bf16")
    runs, h200 = (get_kernel(NAMES["bf16"]).for_problem(problem, sms) for sms in (108, 132))
    assert rec["params"] == dict(runs.params) != dict(h200.params)
    assert rec["smem_bytes"] - rec["smem_static"] == runs.launch_geometry(problem).smem


def test_a_bench_without_a_gpu_models_the_layout_it_was_given(tmp_path):
    """bench --layout row,col without a GPU: TF32 tc10 reads w.t() in place, so its record's model has no Bᵀ
    pre-pass, and the record says the layout its model took."""
    import sys

    out = tmp_path / "w_t.json"
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "bench", "--kernels", NAMES["tf32"], "--layout", "row,col",
                           "--shape", "128x4096x4096", "--json", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(out.read_text())["records"][0]
    assert rec["layout"] == "row,col" and "prepass" not in rec["model"]["levels"]
    from gemmlab.analysis.roofline import DEVICES, model

    natural = model(get_kernel(NAMES["tf32"]), Problem(128, 4096, 4096, "tf32"), DEVICES["h200"])
    assert natural.modeled_read_bytes - rec["model"]["modeled_read_bytes"] == 4 * 4096 * 4096  # no B read for Bᵀ


def test_spread_runs_where_the_grid_is_resident_at_once_and_the_plan_checks_it(stub):  # noqa: F811
    """SK_SPREAD=1 takes the spread reduction where S > 1 and the tiles x S CTAs fit the SMs one an SM (a split waits
    for its tile's others: all must be resident), the last split's elsewhere; its traffic adds each tile's sums
    written once and read once; the plan launches it cooperative (the driver starts it only with every CTA resident),
    after asking the occupancy query, and refuses a grid that is not resident."""
    spec = get_kernel(NAMES["bf16"]).with_params({"SK_SPREAD": 1, "SPLITS": 8})  # 16 tiles of 128x128: 128 CTAs
    long_k = Problem(512, 512, 16384, "bf16")
    runs = spec.for_problem(long_k)
    s = runs.split_plan(long_k, 132)
    assert (s.splits, s.ctas, runs.params["SK_SPREAD"]) == (8, 128, 1)
    one = spec.with_params({"SPLITS": 1}).for_problem(long_k)
    assert one.params["SK_SPREAD"] == 0  # one split: nothing to add
    wide = spec.with_params({"SPLITS": 5}).for_problem(Problem(1024, 1024, 8192, "bf16"))  # 64 tiles x 5 > 132
    assert wide.params["SK_SPREAD"] == 0 and wide.defines()["SK_SPREAD"] == 0
    assert split_k.spreads(s, 1, 132) and not split_k.spreads(s, 1, 127) and not split_k.spreads(s, 0, 132)
    ticket = get_kernel(NAMES["bf16"]).traffic(long_k)
    assert spec.traffic(long_k).global_read - ticket.global_read == 4 * s.bm * s.bn * s.tiles
    assert spec.traffic(long_k).global_write - ticket.global_write == 4 * s.bm * s.bn * s.tiles

    class NotResident(HostGPU):
        def blocks_per_sm(self, kernel, geo):
            return 0

    with pytest.raises(RuntimeError, match="not co-resident.*a split waiting for its tile's others"):
        spec.make_plan(long_k, Layout(b=COL), H200, NotResident(stub))
    for build, cooperative in ((spec, 1), (spec.with_params({"SK_SPREAD": 0}), 0), (spec.with_params({"SPLITS": 1}), 0)):
        stub.stub_reset()
        plan, _ = make(stub, build.name, long_k.shape, Layout(b=COL), spec=build)
        plan.launch(0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000, 0)
        rec = launch_record(stub, 0)
        assert rec.cooperative == cooperative and rec.cluster == (0, 0, 0), build.params


def test_the_spread_variant_s_choice_prices_the_shared_reduction():
    """With SK_SPREAD=1 the model prices a tile's reduction at 3 + 1/S partials for its busiest CTA (its own
    written, a 1/S share of each read, the share's sums written, the sums read back by the last) instead of the
    last split's 1 + S, wherever the grid is resident at once, and the last split's past that: more splits pay, and
    at 256x256x16384 BF16 the choice moves to the largest S whose grid fits the SMs."""
    assert [split_k.reduction_partials(s, False) for s in (1, 2, 8)] == [0.0, 3, 9]
    assert [split_k.reduction_partials(s, True) for s in (1, 2, 8)] == [0.0, 3.5, 3.125]
    m, n, k = 256, 256, 16384
    ticket, shared = split_k.choose(m, n, k, "bf16"), split_k.choose(m, n, k, "bf16", spread=True)
    assert shared.clocks < ticket.clocks and shared.splits > ticket.splits
    assert shared.ctas <= 132 < shared.tiles * (shared.splits + 1)
    partial = 4 * shared.bm * shared.bn / split_k.SM_BYTES_PER_CLOCK
    alone = split_k.clocks(m, n, k, "bf16", shared.bm, shared.bn, shared.splits, 132)
    assert alone - shared.clocks == pytest.approx((1 + shared.splits - 3 - 1 / shared.splits) * partial)
    # past the SMs the spread build falls back to the last split's reduction, and so does its price
    assert split_k.clocks(1024, 1024, 8192, "bf16", 128, 128, 5, 132, spread=True) == \
        split_k.clocks(1024, 1024, 8192, "bf16", 128, 128, 5, 132)
    spec = get_kernel(NAMES["bf16"]).with_params({"SK_SPREAD": 1})
    runs = spec.for_problem(Problem(m, n, k, "bf16"))
    assert (runs.params["BM"], runs.params["SPLITS"], runs.params["SK_SPREAD"]) == (shared.bm, shared.splits, 1)
    # the dispatcher's model prices the reduction of the build that runs the same way
    from gemmlab.analysis.scaling import estimate
    from gemmlab.dispatch import _roofs

    roofs, long_k = _roofs("NVIDIA H200", 132), Problem(512, 512, 16384, "bf16")
    pinned = get_kernel(NAMES["bf16"]).with_params({"SPLITS": 8})
    ticket, spread = (estimate(b, long_k, roofs).reduce_ms for b in (pinned, pinned.with_params({"SK_SPREAD": 1})))
    assert spread == pytest.approx(ticket * (3 + 1 / 8) / 9)


@pytest.mark.parametrize("sk_cluster", [0, 1])
def test_traffic_adds_each_partial_written_once_and_read_once(sk_cluster):
    """Through the workspace, each partial is written to and read back from global memory once; added across a
    cluster (S = 8 here), none of them leaves shared memory, and the walk is split alike."""
    spec = get_kernel(NAMES["bf16"]).with_params({"SK_CLUSTER": sk_cluster})
    long_k = Problem(256, 256, 16384, "bf16")
    runs = spec.for_problem(long_k)
    plan = runs.split_plan(long_k, 132)
    base = spec.traffic_model(long_k, 132, params=dict(runs.params))
    t = spec.traffic(long_k)
    ws = 4 * plan.bm * plan.bn * plan.ctas * (1 - sk_cluster)
    assert plan.splits == 8 and plan.workspace_bytes == 4 * plan.bm * plan.bn * plan.ctas
    assert (t.global_read - base.global_read, t.global_write - base.global_write) == (ws, ws)
    assert t.walk.split_tail == plan.tiles and (runs.cluster() is not None) == bool(sk_cluster)
    one = Problem(4096, 4096, 256, "bf16")  # many tiles, 4 k-tiles: no split, the registered model as it is
    assert spec.for_problem(one).split_plan(one, 132).splits == 1
    assert spec.traffic(one).global_read == spec.traffic_model(one, 132, params=dict(
        spec.for_problem(one).params)).global_read


H100_NAME = "NVIDIA H100 80GB HBM3"


def test_the_h100_table_is_its_committed_sweeps():
    """data/split_k-h100.json is what the table's rule makes of the H100 SXM's sweeps: results/h100/tc10_128x64*.json
    (the registered build, the model's choice pinned and the 128x64 tile at S = 1, 2 and 4 beside them) and
    tc10_sweep4_*.json (the 128x256 tile at S = 1-6 beside the registered build, which at the shapes the earlier
    table held was its choice, with the model's not pinned: that run leaves those choices as the earlier runs made
    them, and adds 128x256 at S = 1 where it beat the model's choice; its _applied twin, run with those choices
    registered and the model's not pinned, adds nothing there)."""
    from gemmlab.dispatch_command import split_k_runs
    from gemmlab.results import load_results

    paths = sorted([*(RESULTS.parent / "h100").glob("tc10_128x64*.json"),
                    *(RESULTS.parent / "h100").glob("tc10_sweep4_*.json")])
    runs = [load_results(p) for p in paths]
    assert len(paths) == 12 and {r["env"]["gpu"]["name"] for r in runs} == {H100_NAME}
    want = split_k.measured_table([rows for r in runs for rows in split_k_runs(r)], H100_NAME, 132,
                                  sources=[p.name for p in paths])
    shipped = json.loads((split_k.MEASURED.parent / "split_k-h100.json").read_text())
    assert shipped == json.loads(json.dumps(want))
    tiles = lambda bn: {(p, s) for p, c in shipped["choices"].items() for s, v in c.items()  # noqa: E731
                        if (v["BM"], v["BN"]) == (128, bn)}
    assert tiles(64) == {("bf16", "256x4096x4096"), ("bf16", "128x4096x14336"), ("fp8", "256x4096x4096"),
                         ("fp8", "128x4096x14336"), ("fp8", "512x1024x8192"), ("fp8", "1024x1024x8192")}
    assert tiles(256) == {(p, s) for p in ("bf16", "fp8") for s in ("1024x4096x4096", "1536x1536x1536",
                                                                    "256x14336x4096")}
    assert all(v["SPLITS"] == 1 for c in shipped["choices"].values() for v in c.values() if v["BN"] == 256)


def test_a_run_counts_only_where_it_timed_the_model_s_choice():
    """Gains compare within a run. A later run whose registered build is the table's choice (gain 1.0 there) and
    which did not pin the model's choice leaves that choice as the earlier run made it; where it did pin the model's,
    it counts: a slower median there, or a gain within the margin, removes the choice."""
    model = split_k.choose(128, 4096, 4096, "fp8")
    mine, other = (model.bm, model.bn, model.stages, model.splits), (64, 64, 8, 1)
    first = _rows({mine: (15.0, 1.0), other: (12.0, 1.2)})
    table = lambda *runs: split_k.measured_table(list(runs), "GPU", 132)["choices"]  # noqa: E731
    assert table(first)["fp8"]["128x4096x4096"]["SPLITS"] == 1
    later = _rows({other: (12.5, 1.0), (128, 256, 4, 4): (20.0, 0.6)})  # the choice registered, no model pinned
    assert table(first, later) == table(first)
    assert table(later) == {}  # alone it says nothing about the model's choice
    confirm = _rows({other: (12.5, 1.0), mine: (12.8, 1 / 1.02)})  # the model's pinned, within the margin
    hit = table(first, confirm)["fp8"]["128x4096x4096"]  # the fastest medians: 12.0 against 12.8, gain 1.2
    assert (hit["us"], hit["gain"], hit["model"]["us"]) == (12.0, 1.2, 12.8)
    slower = _rows({other: (14.0, 1.0), mine: (11.0, 1.3)})
    assert table(first, slower) == {}  # the model's fastest median is now the fastest
    # a run that does not count lends no median: its 9.0 for the model's choice would block the choice
    assert table(first, _rows({other: (12.5, 1.0), mine: (9.0, None)})) == table(first)
    # the gain is the one of the fastest median's run, not the best of any run: 1.02 there, within the margin
    lucky = _rows({mine: (15.0, 1.0), other: (11.0, 1.02)})
    assert table(first, lucky) == {}
    # the fastest median among builds with an interleaved gain: a faster one without a gain is passed over
    ungained = _rows({mine: (15.0, 1.0), other: (12.0, 1.2), (64, 128, 8, 1): (10.0, None)})
    assert {k: table(ungained)["fp8"]["128x4096x4096"][k] for k in ("BN", "SPLITS", "gain")} == \
        {"BN": 64, "SPLITS": 1, "gain": 1.2}


def test_a_file_of_several_runs_counts_each_run_apart():
    """A results file written with --append holds several bench runs (each record's ``run``); gains compare within
    one, so split_k_runs hands measured_table each run's rows apart."""
    from gemmlab.dispatch_command import split_k_runs

    name = "cuda/tc10_split_k_fp8"
    model = split_k.choose(128, 4096, 4096, "fp8")
    shape = {"m": 128, "n": 4096, "k": 4096, "precision": "fp8", "verified": True, "layout": "row,col"}

    def rec(run, ms, gain, **params):
        base = dict(get_kernel(name).params)
        return {**shape, "kernel": name if gain == 1.0 else f"{name}[pinned]", "variant_of": None if gain == 1.0
                else name, "variant_gain": gain, "median_ms": ms, "run": run, "params": {**base, **params}}

    mine = {"BM": model.bm, "BN": model.bn, "STAGES": model.stages, "SPLITS": model.splits}
    other = {"BM": 64, "BN": 64, "STAGES": 8, "SPLITS": 1}
    results = {"records": [rec("a", 0.015, 1.0, **mine), rec("a", 0.012, 1.2, **other),
                           rec("b", 0.0125, 1.0, **other), rec("b", 0.030, 0.4, BM=128, BN=256, STAGES=4, SPLITS=4)]}
    runs = split_k_runs(results)
    assert [len(r) for r in runs] == [2, 2]
    assert split_k.measured_table(runs, "GPU", 132)["choices"]["fp8"]["128x4096x4096"]["gain"] == 1.2
    # pooled as one run, run b's registered 64x64 (gain 1.0) would stand for the choice's gain: none kept
    assert split_k.measured_table([sum(runs, [])], "GPU", 132)["choices"] == {}


def test_an_h100_takes_its_own_measured_choices_first_then_the_h200s(monkeypatch, stub):  # noqa: F811
    """On an H100 SXM its own table answers where it holds a choice (128x4096x4096 BF16: 64x64, S = 1, where the
    H200's holds 128x64, S = 2; 128x4096x14336: 128x64, S = 2, where the H200's holds none; FP16 reads BF16's), the
    H200's where only it does (TF32's), and the model where neither does; the plan names the table, and reads the
    table of the GPU it is made for. On an H200, or without a GPU, the H200's alone."""
    import dataclasses

    from gemmlab import device

    h100 = dataclasses.replace(H200, name=H100_NAME, l2_bytes=50 * 2**20, total_mem_bytes=80 * 2**30)
    tile = lambda plan: (plan.bm, plan.bn, plan.splits)  # noqa: E731
    for gpu in (None, H200):
        monkeypatch.setattr(device, "gpu", lambda gpu=gpu: gpu)
        assert split_k.own_table() is None and tile(split_k.measured(128, 4096, 4096, "bf16")) == (128, 64, 2)
        assert split_k.measured(128, 4096, 14336, "bf16") is None
    tf32 = tile(split_k.measured(1024, 1024, 1024, "tf32"))
    monkeypatch.setattr(device, "gpu", lambda: h100)
    assert split_k.own_table()["gpu"] == H100_NAME
    for precision in ("bf16", "fp16"):
        assert tile(split_k.measured(128, 4096, 4096, precision)) == (64, 64, 1)
        got = split_k.measured(128, 4096, 14336, precision)
        assert (got.bm, got.bn, got.stages, got.splits, got.grid) == (128, 64, 8, 2, (64, 2, 1))
    assert tile(split_k.measured(1024, 1024, 1024, "tf32")) == tf32 == (64, 128, 1)
    assert split_k.measured(513, 512, 512, "bf16") is None
    stub.stub_reset()
    plan = get_kernel(NAMES["bf16"]).make_plan(Problem(128, 4096, 14336, "bf16"), Layout(b=COL), h100,
                                               HostGPU(stub))
    assert (plan.spec.params["BM"], plan.spec.params["BN"], plan.spec.params["SPLITS"]) == (128, 64, 2)
    assert ("tile 128x64, S = 2: measured fastest at this shape on the NVIDIA H100 80GB HBM3 "
            "(data/split_k-h100.json)") in plan.explain()
    # a plan follows the GPU it is made for, not this machine's first: an H200's plan on this (H100) machine
    plan = get_kernel(NAMES["bf16"]).make_plan(Problem(128, 4096, 4096, "bf16"), Layout(b=COL), H200, HostGPU(stub))
    assert (plan.spec.params["BM"], plan.spec.params["BN"], plan.spec.params["SPLITS"]) == (128, 64, 2)
    assert "on the NVIDIA H200 (data/split_k-h200.json)" in plan.explain()


def test_the_model_never_takes_the_128x64_tile_only_a_measured_table_does():
    """128x64 is built in every precision (fp8_block too: 64 divides 128) and taken from a table, but the model
    chooses among TILES alone: it cannot tell 128x64 from 64x128 where N is a multiple of 128 and would take it for
    its fewer tiles where N is not (1024x320x4096), where no sweep has timed it. 128x256 likewise, in every
    precision but fp8_block (one B scale a k-tile: BN divides 128)."""
    assert split_k.MEASURED_TILES == ((128, 64, 8), (128, 256, 4))
    assert not set(split_k.MEASURED_TILES) & set(split_k.TILES)
    for precision in ("bf16", "fp8", "fp8_block", "tf32"):
        assert (128, 64, 8) in split_k.tiles_for(precision, measured=True)
        assert ((128, 256, 4) in split_k.tiles_for(precision, measured=True)) == (precision != "fp8_block")
        assert not set(split_k.MEASURED_TILES) & set(split_k.tiles_for(precision))
        for shape in ((1024, 320, 4096), (256, 576, 8192), (1024, 1024, 1024), (256, 4096, 4096),
                      (512, 4096, 14336)):
            pick = split_k.choose(*shape, precision)
            assert (pick.bm, pick.bn) in {(bm, bn) for bm, bn, _ in split_k.TILES}
    import dataclasses

    with_it = dataclasses.replace(split_k.wgmma("bf16"), tiles=split_k.TILES + split_k.MEASURED_TILES)
    tempted = split_k.choose(1024, 320, 4096, "bf16", engine=with_it)
    assert (tempted.bm, tempted.bn) == (128, 64)  # what the model would take, had it the tile
    table = {"sm_count": 132, "choices": {"bf16": {"1024x320x4096": {"BM": 128, "BN": 64, "STAGES": 8,
                                                                     "SPLITS": 3}}}}
    got = split_k.measured(1024, 320, 4096, "bf16", 132, table)
    assert (got.bm, got.bn, got.splits, got.grid) == (128, 64, 3, (8 * 5, 3, 1))


def test_a_measured_128x256_runs_where_the_build_s_options_run_it(monkeypatch):
    """A table naming 128x256 at S = 2 (512x4096x4096): the registered BF16, FP16 (BF16's choices), FP8 and TF32
    builds and the spread variant run it, 64 tiles x 2 on 384 threads; a build adding the partials across a cluster
    and TF32 rounding A in the kernel, whose constraints refuse that tile, run the model's choice instead of raising;
    fp8_block, which does not build it, does not take the entry."""
    shape = (512, 4096, 4096)
    entry = {"BM": 128, "BN": 256, "STAGES": 4, "SPLITS": 2}
    table = {"gpu": H200_NAME, "sm_count": 132, "file": "split_k-h200.json",
             "choices": {p: {"x".join(map(str, shape)): entry} for p in ("bf16", "fp8", "fp8_block", "tf32")}}
    monkeypatch.setattr(split_k, "_shipped", lambda: table)

    def runs(name, params=None):
        spec = get_kernel(name).with_params(params or {})
        problem = Problem(*shape, spec.precision)
        p = spec.for_problem(problem).params
        return (p["BM"], p["BN"], p["STAGES"], p["SPLITS"]), spec.launch_geometry(problem)

    names = {**NAMES, "fp16": "cuda/tc10_split_k_fp16"}
    for name, params in (("bf16", None), ("fp16", None), ("fp8", None), ("tf32", None), ("bf16", {"SK_SPREAD": 1})):
        tile, geometry = runs(names[name], params)
        assert tile == (128, 256, 4, 2), name
        assert geometry.grid == (4 * 16, 2, 1) and geometry.block == (384, 1, 1)
    for name, params in (("bf16", {"SK_CLUSTER": 1}), ("tf32", IN_KERNEL), ("fp8_block", None)):
        model = split_k.choose(*shape, name, 132)
        assert runs(NAMES[name], params)[0] == (model.bm, model.bn, model.stages, model.splits), name
