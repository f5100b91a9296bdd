"""kernel="auto" between measured shapes: each kernel's measured time scaled by the model of analysis/scaling.py,
the rules of the table kept (measured shapes read as measured, refusals, failed rows, layouts read in place first),
the table written from results files, and the grid run that measures it."""
import functools
import json
import subprocess
import sys
import time

import pytest

from gemmlab import dispatch
from gemmlab.analysis.roofline import ceilings_for, device_spec
from gemmlab.dispatch_layout import operand_copies, parse_layout
from gemmlab.analysis.scaling import estimate
from gemmlab.harness import bench, grid
from gemmlab.harness.layouts import arrange, launch
from gemmlab.harness.bench_records import bench_one, run_layout
from gemmlab.harness.record import BenchRecord, Status
from gemmlab.kernels.plan import COL, ROW, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import BatchedProblem, Problem

H200 = dispatch.shipped_gpu()
W_T = Layout(ROW, COL)  # B handed over as w.t()
TC2, TC4, TC6 = "cuda/tc2_wgmma_tma_bf16", "cuda/tc4_persistent_bf16", "cuda/tc6_stream_k_bf16"


# each test on a dispatch table of its own: an empty cache folder, the tables read afresh (conftest.py)
pytestmark = pytest.mark.usefixtures("own_dispatch_cache")


def rec(kernel, ms, shape, precision="bf16", layout=None, copies=None, failed=False, host_us=None):
    m, n, k = shape
    r = {"kernel": kernel, "backend": "cuda", "precision": precision, "m": m, "n": n, "k": k,
         "median_ms": None if failed else ms, "verified": not failed, "status": "FAILED" if failed else "ok"}
    for key, value in (("layout", layout), ("copies", copies), ("call_host_us", host_us)):
        if value is not None:
            r[key] = value
    return r


def results(*records):
    return {"env": {"gpu": {"name": "NVIDIA H200"}, "command": "gemmlab bench"}, "records": list(records)}


def only(monkeypatch, *records):
    """kernel="auto" reads this table alone (not the shipped one)."""
    table = dispatch.table_from_results(results(*records))
    monkeypatch.setattr(dispatch, "load_table", functools.lru_cache(maxsize=1)(lambda: table))
    return table


def test_a_measured_shape_takes_its_measured_winner_as_it_was_measured(monkeypatch):
    only(monkeypatch, rec(TC2, 0.050, (512, 4096, 4096)), rec(TC4, 0.060, (512, 4096, 4096)),
         rec(TC6, 0.020, (1024, 4096, 4096)))
    choice = dispatch.choose(Problem(512, 4096, 4096, "bf16"), ROW_MAJOR, H200)
    assert choice.spec.name == TC2 and "#1 of the 2 candidates at 512x4096x4096" in choice.why
    ranked = dispatch.rank(Problem(512, 4096, 4096, "bf16"), ROW_MAJOR, H200)
    assert [(c.spec.name, c.ms, c.exact) for c in ranked] == [(TC2, 0.050, True), (TC4, 0.060, True)]


def test_between_measured_shapes_the_models_prediction_ranks_them(monkeypatch):
    """M=128 lies a doubling from both measured shapes: each kernel's prediction reads both; tc4 is measured slower
    at M=64 and far faster at M=256, and the model (the same tiles at all three M) predicts it faster between."""
    only(monkeypatch, rec(TC2, 0.02, (64, 4096, 4096)), rec(TC2, 0.20, (256, 4096, 4096)),
         rec(TC4, 0.04, (64, 4096, 4096)), rec(TC4, 0.06, (256, 4096, 4096)))
    problem = Problem(128, 4096, 4096, "bf16")
    ranked = dispatch.rank(problem, ROW_MAJOR, H200)
    assert [c.spec.name for c in ranked] == [TC4, TC2]
    tc4 = ranked[0]
    assert [label for label, *_ in tc4.basis] == ["64x4096x4096", "256x4096x4096"]
    assert 0.04 < tc4.ms < 0.06 and not tc4.exact
    choice = dispatch.choose(problem, ROW_MAJOR, H200)
    assert choice.spec.name == TC4 and "ranked near 128x4096x4096" in choice.why and "predicted" in choice.why


def test_a_long_k_problem_of_few_tiles_goes_to_stream_k_where_the_data_says_so(monkeypatch):
    """At 512x512x4096 tc2 (whole tiles) was measured a little faster than tc6; at K=65536 its 16 tiles leave most
    SMs idle for 16 times as long, where tc6 splits K over the grid: the model moves the choice to tc6."""
    only(monkeypatch, rec(TC2, 0.010, (512, 512, 4096)), rec(TC6, 0.011, (512, 512, 4096)))
    problem = Problem(512, 512, 65536, "bf16")
    ranked = {c.spec.name: c for c in dispatch.rank(problem, W_T, H200)}
    assert ranked[TC2].basis[0][2] > 2 * ranked[TC6].basis[0][2]  # the model's ratios from 512x512x4096
    assert dispatch.choose(problem, W_T, H200).spec.name == TC6
    assert ranked[TC6].model.split and ranked[TC2].model.fill < 0.2
    # where tc6 was measured much slower there, the measurement wins over the model's ratio
    only(monkeypatch, rec(TC2, 0.010, (512, 512, 4096)), rec(TC6, 0.060, (512, 512, 4096)))
    assert dispatch.choose(problem, W_T, H200).spec.name == TC2


def test_near_a_measured_shape_its_winner_stands_against_a_small_predicted_gain(monkeypatch):
    """4000x4100x4096 is a fraction of a doubling from 4096³: tc4's 256-row clusters take 5.3 waves there, tc3's
    128x256 tiles 4.1, and under the datasheet's roofs (tc3 bound by the assumed L2 at both shapes) the model
    predicts tc3 ahead by less than the margin it is trusted to; the measured winner stays."""
    from gemmlab.analysis import ceilings

    monkeypatch.setattr(ceilings, "SHIPPED", ceilings.SHIPPED.with_name("none.json"))  # no measurement: the datasheet
    dispatch._roofs.cache_clear()
    assert dispatch._roofs(H200.name, H200.sm_count).source["l2"] == "assumed"
    tc3 = "cuda/tc3_warp_specialized_bf16"
    only(monkeypatch, rec(TC4, 0.2083, (4096, 4096, 4096)), rec(tc3, 0.2301, (4096, 4096, 4096)))
    # FP32 C, as these rows were measured (BF16's default is BF16 C now, whose halved C bytes put tc4 ahead here)
    problem = Problem(4000, 4100, 4096, "bf16", out_dtype="float32")
    ranked = dispatch.rank(problem, W_T, H200)
    assert [c.spec.name for c in ranked] == [tc3, TC4]
    assert ranked[1].per_call_ms < ranked[0].per_call_ms * (1 + dispatch.MARGIN)
    choice = dispatch.choose(problem, W_T, H200)
    assert choice.spec.name == TC4 and "#2" in choice.why and f"stands against {tc3}" in choice.why
    # measured slower by more than the margin, the model's choice is taken
    only(monkeypatch, rec(TC4, 0.2083, (4096, 4096, 4096)), rec(tc3, 0.1800, (4096, 4096, 4096)))
    assert dispatch.choose(problem, W_T, H200).spec.name == tc3


def test_a_near_shape_measured_without_host_time_reads_the_call_path_of_the_others(monkeypatch):
    """Host time is measured at small shapes only; a prediction that also reads a larger shape, whose rows hold
    none, counts the call path's time measured at the others there too, not 0 µs."""
    only(monkeypatch, rec(TC4, 0.100, (1024, 4096, 4096), host_us=20.0), rec(TC4, 0.300, (4096, 4096, 4096)))
    problem = Problem(2048, 4096, 4096, "bf16", out_dtype="float32")
    c, = dispatch.rank(problem, W_T, H200)
    assert [b[4] for b in c.basis] == [20.0, 20.0]
    assert c.per_call_ms - c.ms == pytest.approx(20.0 / 1e3, rel=0.01)  # geomeans of the two sums: near, not equal


@pytest.mark.parametrize("reverse", [False, True])
def test_equally_near_shapes_with_different_winners_leave_the_pick_to_the_model(monkeypatch, reverse):
    """4096³ is one doubling from 2048x4096x4096, where tc3 was measured fastest, and from 8192x4096x4096, where tc4
    was: no one nearest winner to anchor on, so the model's first runs, whatever order the table lists them in."""
    tc3 = "cuda/tc3_warp_specialized_bf16"
    records = [rec(tc3, 0.0500, (2048, 4096, 4096)), rec(TC4, 0.0520, (2048, 4096, 4096)),
               rec(TC4, 0.370, (8192, 4096, 4096)), rec(tc3, 0.410, (8192, 4096, 4096))]
    only(monkeypatch, *(records[::-1] if reverse else records))
    problem = Problem(4096, 4096, 4096, "bf16", out_dtype="float32")
    ranked = dispatch.rank(problem, W_T, H200)
    assert [c.spec.name for c in ranked] == [TC4, tc3]
    assert ranked[0].per_call_ms * (1 + dispatch.MARGIN) ** (1 + ranked[0].basis[0][3]) > ranked[1].per_call_ms
    assert dispatch.choose(problem, W_T, H200).spec.name == TC4


def test_a_pick_says_what_it_stands_against_only_where_the_margin_kept_it(monkeypatch):
    """gluon tc4 measured 10x faster than the CUDA tc4 but unable to fuse relu: with relu the pick is the CUDA tc4,
    measured there, and its reason names no prediction it would stand against (there is none: gluon's was refused)."""
    from gemmlab.epilogue import Epilogue

    only(monkeypatch, rec("gluon/tc4_persistent_bf16", 0.010, (512, 4096, 4096)), rec(TC4, 0.100, (512, 4096, 4096)))
    choice = dispatch.choose(Problem(512, 4096, 4096, "bf16"), ROW_MAJOR, H200, Epilogue(activation="relu"))
    assert choice.spec.name == TC4 and "measured there" in choice.why and "stands against" not in choice.why


def test_refusals_and_failed_rows_hold_between_measured_shapes(monkeypatch):
    only(monkeypatch,
         rec("cuda/tc4_persistent_tf32", 0.01, (64, 4096, 4096), "tf32"),  # truncates: never picked by auto
         rec("cuda/tc5_swap_ab_tf32", 0.03, (64, 4096, 4096), "tf32"),
         rec("cuda/tc6_stream_k_tf32", 0.02, (64, 4096, 4096), "tf32"),
         rec("cuda/tc6_stream_k_tf32", None, (256, 4096, 4096), "tf32", failed=True),  # failed at a neighbour
         rec("cuda/tc5_swap_ab_tf32", 0.05, (256, 4096, 4096), "tf32"))
    problem = Problem(128, 4096, 4096, "tf32")
    names = [c.spec.name for c in dispatch.rank(problem, ROW_MAJOR, H200)]
    assert "cuda/tc6_stream_k_tf32" not in names and names[0] == "cuda/tc4_persistent_tf32"
    choice = dispatch.choose(problem, ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/tc5_swap_ab_tf32" and "#2" in choice.why


def test_a_row_timed_in_the_callers_layout_is_read_first_and_copies_are_modeled(monkeypatch):
    """tc1 reads B only row-major: timed with B as w.t() its time includes gemmlab.matmul's copy of B, which the
    model takes out for a row-major caller; a kernel timed in both layouts is read in the caller's."""
    shape = (1024, 4096, 4096)
    only(monkeypatch, rec("cuda/tc1_mma_sync_bf16", 0.30, shape, layout="row,col", copies=["B"]),
         rec(TC4, 0.20, shape), rec(TC4, 0.25, shape, layout="row,col"))
    problem = Problem(*shape, "bf16")
    mine = {c.spec.name: c for c in dispatch.rank(problem, W_T, H200)}
    assert mine[TC4].ms == 0.25 and mine["cuda/tc1_mma_sync_bf16"].ms == 0.30
    assert mine["cuda/tc1_mma_sync_bf16"].copies == ("B",)
    row_major = {c.spec.name: c for c in dispatch.rank(problem, ROW_MAJOR, H200)}
    assert row_major[TC4].ms == 0.20 and row_major["cuda/tc1_mma_sync_bf16"].ms < 0.30  # without the copy
    assert dispatch.choose(problem, W_T, H200).spec.name == TC4  # read in place, and the fastest


def test_the_scaling_model_counts_waves_fill_and_copies():
    roofs = ceilings_for(device_spec("h200"))
    tc4 = get_kernel(TC4)
    full = estimate(tc4, Problem(4096, 4096, 4096, "bf16"), roofs)
    assert (full.tiles, full.places) == (256, 66) and full.fill > 0.95 and full.bound == "compute"
    few = estimate(tc4, Problem(512, 512, 32768, "bf16"), roofs)
    assert few.fill < 0.1 and few.ms > estimate(get_kernel(TC6), Problem(512, 512, 32768, "bf16"), roofs).ms
    tc1 = get_kernel("cuda/tc1_mma_sync_bf16")
    copied = estimate(tc1, Problem(1024, 4096, 4096, "bf16"), roofs, W_T, ("B",))
    plain = estimate(tc1, Problem(1024, 4096, 4096, "bf16"), roofs)
    assert copied.ms - plain.ms == pytest.approx(2 * 2 * 4096 * 4096 / (roofs.dram_gbs * 1e9) * 1e3
                                                 + dispatch_launch_ms())


def test_the_scaling_model_tiles_each_product_of_a_batch_and_reads_a_broadcast_operand_once():
    """1024 products of 16×16×16 are 1024 tiles of tc1's 128 rows (one each), not the 128 of their 16384 stacked
    rows: eight waves, each tile mostly padding; a weight broadcast over the batch is read from DRAM once."""
    roofs = ceilings_for(device_spec("h200"))
    tc1 = get_kernel("cuda/tc1_mma_sync_bf16")
    batch = BatchedProblem(16, 16, 16, "bf16", 1024, 16 * 16, 16 * 16)
    each, stacked = estimate(tc1, batch, roofs), estimate(tc1, batch.flattened(), roofs)
    assert (each.tiles, stacked.tiles) == (1024, 128) and each.compute_ms == pytest.approx(8 * stacked.compute_ms)
    big = BatchedProblem(512, 4096, 4096, "bf16", 8, 512 * 4096, 4096 * 4096)
    shared = BatchedProblem(512, 4096, 4096, "bf16", 8, 512 * 4096, 0)
    saved = (estimate(tc1, big, roofs).dram_ms - estimate(tc1, shared, roofs).dram_ms) * 1e-3 * roofs.dram_gbs * 1e9
    assert saved == pytest.approx(7 * 2 * 4096 * 4096)


def dispatch_launch_ms():
    from gemmlab.analysis.scaling import LAUNCH_US

    return LAUNCH_US / 1e3


def test_a_huge_problem_is_answered_in_bounded_time():
    t0 = time.perf_counter()
    choice = dispatch.choose(Problem(10**6, 10**6, 10**6, "bf16"), W_T, H200)
    assert time.perf_counter() - t0 < 1.0 and choice.spec.name.startswith("cuda/tc")
    with pytest.raises(Exception, match="32-bit index range"):  # no FP32 level indexes 10^12 elements
        dispatch.choose(Problem(10**6, 10**6, 10**6, "fp32"), W_T, H200)


def test_the_shipped_table_gives_its_measured_choices_at_its_measured_shapes():
    """At each shape the shipped table measured, in every precision it holds: the first kernel of its rows (fastest
    first) that "auto" may run and that reads the layout in place, the build that was measured, as before predictions
    between shapes existed."""
    table = json.loads(dispatch.SHIPPED.read_text())["NVIDIA H200"]
    checked = dict.fromkeys(table, 0)
    for precision, shapes in table.items():
        for label, rows in shapes.items():
            # the layout its first rows were measured in (the grid's: B as w.t()), else the harness's natural one
            layout = parse_layout(rows[0]["layout"]) if "layout" in rows[0] else \
                W_T if precision.startswith("fp8") else ROW_MAJOR
            rows = [r for r in rows if r.get("layout") == rows[0].get("layout")]
            problem = Problem(*map(int, label.split("x")), precision)
            specs = [get_kernel(r["kernel"]) for r in rows if not r.get("failed")]
            # rows timed with a copy their kernel no longer makes (FP32 and TF32 on w.t(), measured before those
            # levels read it in place) describe another call: the model ranks them now, not the measurement
            live = [r for r in rows if not r.get("failed")]
            if any(tuple(r.get("copies", ())) != operand_copies(layout, s) for r, s in zip(live, specs)):
                continue
            # rows timed on a tile height their kernel no longer picks there (tc8's, before it picked one per
            # problem) describe another build, which short_cost ranks now: the others keep their measured order
            moved = {s.name for r, s in zip(live, specs) if getattr(s, "short_tile", None) and
                     r.get("BM", s.params["BM"]) != s.for_problem(problem).params["BM"]}
            usable = [s for s in specs if not s.auto_refusal() and not s.is_valid(problem) and s.name not in moved]
            # one that reads the layout in place first; where none does (FP32 on w.t()), the first after a copy
            expected = next((s for s in usable if layout in s.layouts), usable[0])
            chosen = dispatch.choose(problem, layout, H200).spec
            if chosen.name in moved:
                continue
            if chosen.name not in {r["kernel"] for r in rows}:  # measured in another layout only (v11 in the
                continue  # grid's w.t() at a shape FP32's ladder run timed row-major): ranked by the model
            assert chosen is expected, (precision, label)
            checked[precision] += 1
    assert min(checked.values()) >= 20, checked


def test_dispatch_prints_the_choice_its_prediction_and_the_runners_up():
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--shape", "512x512x32768", "--precision",
                           "bf16", "--layout", "row,col"], capture_output=True, text=True,
                          env={**__import__("os").environ, "COLUMNS": "250"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    chosen = [line for line in lines if line.startswith("  * ")]
    assert len(chosen) == 1 and "ms a call" in chosen[0]
    assert sum(line.startswith("    ") and " ms a call " in line for line in lines) == 5  # the runners-up
    assert "predicted" in proc.stdout and "tiles over" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--shape", "1000000", "--precision", "bf16",
                           "--precision", "fp32"], capture_output=True, text=True, timeout=120)
    # no precision's A, B and C fit the GPU: refused in one line before any choice is printed
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "GiB" in proc.stderr and "H200" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--layout", "row,diagonal"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "row or col" in proc.stderr


def test_the_table_is_written_from_results_files_and_read_back(tmp_path, monkeypatch):
    first, second, out = tmp_path / "grid_bf16.json", tmp_path / "more.json", tmp_path / "table.json"
    first.write_text(json.dumps(results(rec(TC2, 0.01, (512, 512, 4096), layout="row,col"),
                                        rec("cuda/tc1_mma_sync_bf16", 0.03, (512, 512, 4096), layout="row,col",
                                            copies=["B"]))))
    second.write_text(json.dumps(results(rec(TC2, 0.02, (512, 512, 4096), layout="row,col"),
                                         rec(TC6, 0.015, (512, 512, 4096), layout="row,col"))))
    for args in (["--write", str(first), "--out", str(out)], ["--write", str(second), "--out", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", *args], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["NVIDIA H200"]["bf16"]["512x512x4096"]
    assert [(r["kernel"], r["ms"]) for r in rows] == [(TC6, 0.015), (TC2, 0.02), ("cuda/tc1_mma_sync_bf16", 0.03)]
    assert rows[2]["layout"] == "row,col" and rows[2]["copies"] == ["B"]
    # --build: the table of the files named alone
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--build", str(first), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and [r["kernel"] for r in json.loads(out.read_text())["NVIDIA H200"]["bf16"][
        "512x512x4096"]] == [TC2, "cuda/tc1_mma_sync_bf16"]
    # without --out, --write adds to this machine's table, which kernel="auto" reads at once
    path, _ = dispatch.write_table([json.loads(second.read_text())])
    assert path == dispatch.local_path()
    assert dispatch.choose(Problem(512, 512, 4096, "bf16"), W_T, H200).spec.name == TC6


def test_the_grid_covers_the_suite_and_fits_the_budget():
    assert len(grid.SHAPES) == 14 * 4 + 9 + 4 and (512, 512, 16384) in grid.SHAPES and (1, 14336, 4096) in grid.SHAPES
    for precision in ("bf16", "fp8_block", "tf32"):
        rows, seconds = grid.plan(precision, W_T, H200)
        assert all(timed for _, timed, _ in rows)  # every shape times some candidate
        assert seconds < 240
        for name in grid.CANDIDATES[precision].split(","):
            assert not get_kernel(name).auto_refusal()  # "auto" may run every candidate


def test_a_kernel_the_shipped_table_never_measured_is_timed_at_every_shape(monkeypatch):
    """A new level (tc10 TF32, as before the table measured it) has no row for the pruner to predict it from: the
    TF32 grid times it at every shape, so its records are there for the dispatch table to pick it from."""
    name = "cuda/tc10_split_k_tf32"
    table = grid.shipped_table()
    without = {gpu: {prec: {shape: [r for r in rows if r["kernel"] != name] for shape, rows in shapes.items()}
                     for prec, shapes in precs.items()} for gpu, precs in table.items()}
    monkeypatch.setattr(grid, "shipped_table", lambda: without)
    rows, _ = grid.plan("tf32", W_T, H200)
    assert all(name in timed for _, timed, _ in rows)
    assert any(skipped for _, _, skipped in rows)  # the others are still pruned where the table predicts them hopeless


def test_a_grid_run_records_why_it_skips_a_candidate():
    skip = grid.pruner(W_T, H200)
    problem = Problem(1, 4096, 14336, "bf16")
    reason = skip(get_kernel("cuda/tc3_warp_specialized_bf16"), problem)
    assert "predicts" in reason and "the fastest candidate" in reason
    r = BenchRecord("cuda/tc3_warp_specialized_bf16", "cuda", 1, "bf16", "", {}, *problem.shape)
    opts = bench.BenchOptions(layout=W_T, skip=skip)
    assert bench_one(get_kernel("cuda/tc3_warp_specialized_bf16"), problem, r, None, opts, None, None, None) is None
    assert r.status == Status.SKIPPED and r.reason == reason


def test_operands_arranged_in_a_layout_and_run_as_gemmlab_matmul_would():
    import numpy as np

    problem = Problem(5, 7, 3, "fp32")
    a, b = problem.make_inputs(1)
    a2, b2 = arrange(a, b, W_T)
    assert b2.flags["F_CONTIGUOUS"] and not b2.flags["C_CONTIGUOUS"] and np.array_equal(b2, b)
    run, copies = launch(get_kernel("cpu/blas"), problem, W_T)  # reads B row-major only: copied first
    c = np.empty((5, 7), np.float32)
    run(a2, b2, c)
    assert copies == ("B",) and np.allclose(c, a @ b)
    assert run_layout(bench.BenchOptions(layout=W_T), Problem(4, 4, 4, "fp8")) is None  # FP8's own layout
    assert run_layout(bench.BenchOptions(layout=ROW_MAJOR), problem) is None
    assert run_layout(bench.BenchOptions(layout=W_T), problem) == W_T

