"""tc10 (split-K): the model's choice of tile and S, each split's k-tiles and the reduction's order in the device
arithmetic run on the host, every build compiled for sm_90a, the plan's grid and workspace on ragged shapes (a stub
libcuda records the launch), and on a GPU (GEMMLAB_TEST_GPU=1) correct results with the same bits on every call."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import sass
from test_plans import H200, launch_record, make, stub, tc_args  # noqa: F401  (stub: a pytest fixture)

from gemmlab.errors import InvalidConfigError
from gemmlab.harness.grid import LONG_K
from gemmlab.kernels.cuda.tc.model import split_k
from gemmlab.kernels.cuda.tc.model.budget import SMEM_LIMIT, smem_bytes
from gemmlab.kernels.geometry import ceil_div
from gemmlab.kernels.plan import COL, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

from tc_levels import host_block

NAMES = {"bf16": "cuda/tc10_split_k_bf16", "fp8": "cuda/tc10_split_k_fp8", "fp8_block": "cuda/tc10_split_k_fp8_block"}
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


@pytest.mark.parametrize("precision", list(NAMES))
def test_many_tiles_and_short_k_do_not_split(precision):
    assert split_k.choose(4096, 4096, 4096, precision).splits == 1
    assert split_k.choose(300, 200, 100, precision).splits == 1  # 1-2 k-tiles: no split keeps a pipeline
    assert split_k.choose(1, 1, 1, precision).splits == 1


def test_block_scaled_tiles_sit_in_one_block_of_b_scales():
    assert all(128 % bn == 0 for _, bn, _ in split_k.tiles_for("fp8_block"))
    assert all(smem_bytes({"BM": bm, "BN": bn, "STAGES": st}) <= SMEM_LIMIT for bm, bn, st in split_k.TILES)


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


# ---- the builds ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NAMES.values()))
def test_every_build_compiles_to_wgmma_without_local_memory(name, tmp_path):
    builds = get_kernel(name).configurations()
    assert {(b.params["BM"], b.params["BN"]) for b in builds} == \
        {(bm, bn) for bm, bn, _ in split_k.tiles_for(get_kernel(name).precision)}
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
            mma = "HGMMA" if "bf16" in name else "QGMMA"
            assert any(op.startswith(f"{mma}.64x{build.params['BN']}x") for op in ops), build.params
            assert not any(op.startswith(("LDL", "STL")) for op in ops)


def test_constraints_refuse_what_the_source_does_not_build():
    with pytest.raises(InvalidConfigError, match="BN=256"):
        get_kernel(NAMES["fp8_block"]).with_params({"BN": 256})
    with pytest.raises(InvalidConfigError, match="EPI_TMA"):
        get_kernel(NAMES["bf16"]).with_params({"EPI_TMA": 1})
    with pytest.raises(InvalidConfigError, match="SPLITS"):
        get_kernel(NAMES["bf16"]).with_params({"SPLITS": -1})


# ---- the plan on ragged shapes ---------------------------------------------------------------------------------------
RAGGED = [(1, 33, 4097), (3, 257, 1001), (17, 31, 2049), (127, 129, 777), (129, 1, 4095)]


@pytest.mark.parametrize("precision", list(NAMES))
@pytest.mark.parametrize("shape", RAGGED)
def test_plan_launches_tiles_by_splits_with_its_workspace(stub, precision, shape):  # noqa: F811
    """A pinned S (5, K never a multiple of it in k-tiles here) on ragged shapes: the grid is tiles x S, the plan
    holds S partials a tile and a ticket a tile, zeroed, and hands both to the kernel."""
    stub.stub_reset()
    spec = get_kernel(NAMES[precision]).with_params({"SPLITS": 5})
    layout = Layout(b=COL) if precision != "bf16" else ROW_MAJOR
    plan, gpu = make(stub, spec.name, shape, layout, spec=spec)
    m, n, k = shape
    p = plan.spec.params
    assert ceil_div(k, plan.spec.k_tile) >= 5
    splits = 5
    tiles = ceil_div(m, p["BM"]) * ceil_div(n, p["BN"])
    ptrs = (0x7000_0000_0000, 0x7100_0000_0000, 0x7200_0000_0000)
    plan.launch(*ptrs, 0x5EED, *([0x7300_0000_0000, 0x7300_0000_0040] if precision != "bf16" else []))
    rec = launch_record(stub, 0)
    args = tc_args(rec.params)
    assert rec.grid == (tiles, splits, 1) and rec.block == ((p["BM"] // 64 + 1) * 128, 1, 1)
    assert rec.stream == 0x5EED and (args["M"], args["N"], args["K"]) == shape
    ws, tickets = plan.buffers[-2:]
    assert (args["sk_ws"], args["sk_flags"]) == (ws.ctypes.data, tickets.ctypes.data)
    assert ws.nbytes == 4 * tiles * splits * p["BM"] * p["BN"]
    assert tickets.nbytes == 4 * tiles and not tickets.any() and gpu.synced == 1


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


def test_traffic_adds_each_partial_written_once_and_read_once():
    spec = get_kernel(NAMES["bf16"])
    long_k = Problem(256, 256, 16384, "bf16")
    runs = spec.for_problem(long_k)
    plan = runs.split_plan(long_k, 132)
    base = spec.traffic_model(long_k, 132, params=dict(runs.params))
    t = spec.traffic(long_k)
    ws = 4 * plan.bm * plan.bn * plan.ctas
    assert plan.splits > 1 and plan.workspace_bytes == ws
    assert (t.global_read - base.global_read, t.global_write - base.global_write) == (ws, ws)
    one = Problem(4096, 4096, 256, "bf16")  # many tiles, 4 k-tiles: no split, the registered model as it is
    assert spec.for_problem(one).split_plan(one, 132).splits == 1
    assert spec.traffic(one).global_read == spec.traffic_model(one, 132, params=dict(
        spec.for_problem(one).params)).global_read
