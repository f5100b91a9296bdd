"""kernel="auto": the dispatch table (built from bench records, shipped for the H200, written per machine) and the
choice it makes for a problem, a layout and a GPU."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import dispatch
from gemmlab.device import GPUInfo
from gemmlab.errors import LayoutError, SizeLimitError
from gemmlab.kernels.plan import ANY, COL, ROW, ROW_MAJOR, Layout
from gemmlab.kernels.registry import get_kernel
from gemmlab.problem import Problem

ROOT = Path(__file__).resolve().parents[1]
H200 = GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "13.0", "13.0")
H100 = GPUInfo("NVIDIA H100 PCIe", 114, (9, 0), 50 * 2**20, 232448, 1755.0, 80 * 2**30, "13.0", "13.0")
A100 = GPUInfo("NVIDIA A100-SXM4-80GB", 108, (8, 0), 40 * 2**20, 166912, 1410.0, 80 * 2**30, "13.0", "13.0")


# each test on a dispatch table of its own: an empty cache folder, the tables read afresh (conftest.py)
pytestmark = pytest.mark.usefixtures("own_dispatch_cache")


def record(kernel, ms, precision="bf16", shape=(4096, 4096, 4096), verified=True, backend="cuda", host_us=None):
    m, n, k = shape
    r = {"kernel": kernel, "backend": backend, "precision": precision, "m": m, "n": n, "k": k,
         "median_ms": ms if verified else None, "verified": verified, "status": "ok" if verified else "FAILED"}
    if host_us is not None:
        r["call_host_us"] = host_us
    return r


def run(*records, gpu="NVIDIA H200"):
    return {"env": {"gpu": {"name": gpu}}, "records": list(records)}


@pytest.mark.parametrize("precision,shape,layout,expected", [
    ("fp32", (4096, 4096, 4096), ROW_MAJOR, "cuda/v10_register_prefetch"),
    # tc6 2.5% ahead of tc4 there with the FP8 run's BF16 rows (fp8.json) pooled with tensor_cores.json; the
    # table follows the measurement (an earlier FP8 run had tc4 0.9% ahead)
    ("bf16", (2048, 3072, 4096), ROW_MAJOR, "cuda/tc6_stream_k_bf16"),
    ("tf32", (2048, 3072, 4096), ROW_MAJOR, "cuda/tc6_stream_k_tf32"),
    # tc6 401 µs, tc5 402 µs there (the maps' rounding, update_grid_tf32_tma_round_row_major.json): no tile split,
    # both run tc5's binary, so whichever measured faster
    ("tf32", (4096, 4096, 4096), ROW_MAJOR, "cuda/tc6_stream_k_tf32"),
    # between measured shapes with B as w.t(): the nearest shape's winner in that layout (the grid's rows at 4096³
    # put tc6 0.2115 ms ahead of tc4 0.2169), which no prediction displaces by the margin
    ("bf16", (4000, 4100, 4096), Layout(b=COL), "cuda/tc6_stream_k_bf16"),
])
def test_the_shipped_table_picks_the_measured_winner(precision, shape, layout, expected):
    choice = dispatch.choose(Problem(*shape, precision), layout, H200)
    assert choice.spec.name == expected and not choice.copies
    assert "NVIDIA H200" in choice.why and "in place" in choice.why


def test_no_kernel_reads_the_layout_in_place_so_the_fastest_runs_after_a_copy():
    choice = dispatch.choose(Problem(4096, 4096, 4096, "fp32"), Layout(a=COL), H200)  # no FP32 level reads Aᵀ
    assert choice.spec.name == "cuda/v10_register_prefetch" and choice.copies == ("A",)


@pytest.mark.parametrize("precision,shape,expected", [
    ("fp32", (4096, 4096, 4096), "cuda/v10_register_prefetch"), ("fp32", (2048, 2048, 2048), "cuda/v10_register_prefetch"),
    ("fp32", (64, 4096, 4096), "cuda/v11_split_k"), ("tf32", (4096, 4096, 4096), "cuda/tc5_swap_ab_tf32"),
    ("tf32", (64, 4096, 4096), "cuda/tc10_split_k_tf32"), ("tf32", (512, 512, 32768), "cuda/tc10_split_k_tf32")])
def test_fp32_and_tf32_read_b_given_as_w_t_in_place(precision, shape, expected):
    """x @ w.t(): the SIMT levels (B_KMAJOR) and the swapped TF32 levels (SWAP_B_KMAJOR) read w as it is."""
    choice = dispatch.choose(Problem(*shape, precision), Layout(b=COL), H200)
    assert choice.spec.name == expected and choice.copies == () and "in place" in choice.why


@pytest.mark.parametrize("precision,shape,layout", [
    *[(p, shape, layout) for p in ("fp32", "tf32")
      for shape, layout in (((1, 4096, 4096), Layout(ANY, COL)), ((1, 1000, 129), Layout(ANY, COL)),
                            ((4096, 1, 4096), Layout(ROW, ANY)), ((17, 1, 33), Layout(ROW, ANY)),
                            ((1, 1, 1), Layout(ANY, ANY)))]])
def test_vectors_and_few_fp32_rows_against_w_t_run_gemv_in_fp32(precision, shape, layout):
    """M = 1 or N = 1: gemv1, FP32 products for TF32 calls too (torch's
    matrix-vector path), wherever the table would have put them."""
    choice = dispatch.choose(Problem(*shape, precision), layout, H200)
    assert choice.spec.name == f"cuda/gemv1_warp_dot_{precision}" and choice.copies == ()
    assert "FP32 matrix-vector" in choice.why


@pytest.mark.parametrize("m, level", [(1, "gemv1_warp_dot"), (8, "gemv2_mma_swap"), (32, "tc10_split_k")])
def test_fp16_decode_reads_bf16s_table_onto_its_own_gemv_levels(m, level):
    """FP16 has no grid of its own: BF16's winner at the shape, renamed to its FP16 build, which the gemv levels have
    as the tensor-core levels do (the same instruction rates, FP16's own binaries)."""
    fp16 = dispatch.choose(Problem(m, 4096, 4096, "fp16"), Layout(b=COL), H200)
    bf16 = dispatch.choose(Problem(m, 4096, 4096, "bf16"), Layout(b=COL), H200)
    assert bf16.spec.name == f"cuda/{level}_bf16" and fp16.spec.name == f"cuda/{level}_fp16"
    assert fp16.copies == () and "bf16's dispatch table" in fp16.why


def test_few_fp32_rows_follow_the_table():
    """FP32 with a few rows against w.t(): gemv1 where the grid measured it fastest (8 rows against 14336×4096), the
    split-K level from 16 rows (its 32-row tiles split along K fill the GPU where gemv1's blocks run out of rows)."""
    assert dispatch.choose(Problem(8, 14336, 4096, "fp32"), Layout(b=COL), H200).spec.name == \
        "cuda/gemv1_warp_dot_fp32"
    assert dispatch.choose(Problem(16, 14336, 4096, "fp32"), Layout(b=COL), H200).spec.name == "cuda/v11_split_k"


def test_few_tf32_rows_follow_the_table():
    """TF32 with 2 to 16 rows against w.t(): the table's choice, not the FP32 matrix-vector path a vector takes
    ahead of it; at 16 rows a tensor-core level, measured fastest there."""
    for m in (2, 8, 16):
        choice = dispatch.choose(Problem(m, 4096, 4096, "tf32"), Layout(b=COL), H200)
        assert "dispatch table" in choice.why and "FP32 matrix-vector" not in choice.why, (m, choice.why)
    assert dispatch.choose(Problem(16, 4096, 4096, "tf32"), Layout(b=COL), H200).spec.name.startswith("cuda/tc")


def test_past_gemv_or_where_it_would_need_a_copy_the_table_decides():
    assert dispatch.choose(Problem(17, 4096, 4096, "tf32"), Layout(b=COL), H200).spec.name.startswith("cuda/tc")
    # a row-major K×N B is not gemv's layout: the table's kernels run it
    assert not dispatch.choose(Problem(8, 4096, 4096, "fp32"), ROW_MAJOR, H200).spec.name.startswith("cuda/gemv")


def test_a_gpu_without_a_table_runs_the_defaults_it_can():
    assert dispatch.choose(Problem(1024, 1024, 1024, "bf16"), ROW_MAJOR, H100).spec.name == "cuda/tc4_persistent_bf16"
    choice = dispatch.choose(Problem(1024, 1024, 1024, "bf16"), ROW_MAJOR, A100)
    assert choice.spec.name == "cuda/tc1_mma_sync_bf16" and "A100" in choice.why  # no wgmma before Hopper


H100_SXM = GPUInfo("NVIDIA H100 80GB HBM3", 132, (9, 0), 50 * 2**20, 232448, 1980.0, 80 * 2**30, "13.0", "13.0")


@pytest.mark.parametrize("shape,precision", [((128, 4096, 4096), "bf16"), ((16, 14336, 4096), "fp8"),
                                             ((1024, 1024, 1024), "bf16"), ((4096, 4096, 4096), "tf32")])
def test_a_gpu_of_the_shipped_table_s_chip_reads_its_rows(shape, precision):
    """An H100 SXM (compute capability 9.0, 132 SMs: the H200's chip with HBM3) has no rows of its own: it reads the
    H200's, and says so (the times it predicts are the H200's); at a shape the H200 measured it takes the kernel measured fastest
    there, as the H200 does (its memory is slower, the ranking at a measured shape is the measurement's). An H100
    PCIe (114 SMs) is not of that chip and runs the defaults."""
    problem = Problem(*shape, precision)
    table = dispatch.load_table()
    assert H100_SXM.name not in table and dispatch.sibling(H100_SXM, table) == H200.name
    assert dispatch.sibling(H100, table) is None and dispatch.sibling(H200, table) is None
    theirs, ours = (dispatch.choose(problem, Layout(b=COL), g) for g in (H200, H100_SXM))
    assert ours.spec.name == theirs.spec.name
    assert ours.why.startswith(f"dispatch table for {H200.name}, read for this {H100_SXM.name} (the same chip: "
                               "compute capability 9.0, 132 SMs")
    assert theirs.why.startswith(f"dispatch table for {H200.name}: ")
    assert "no dispatch table entry" in dispatch.choose(problem, Layout(b=COL), H100).why


def test_a_few_rows_of_its_own_lie_over_the_h200_s_and_hide_none_of_the_rest():
    """An H100 SXM with rows of its own (a bench's `gemmlab dispatch --write`) at one BF16 shape: there its own
    measurement decides; at every other shape and precision the H200's rows still do, and the choice says both."""
    table = dispatch.load_table()
    mine = {"bf16": {"1024x1024x1024": [{"kernel": "cuda/tc4_persistent_bf16", "ms": 0.001}]}}
    table = {**table, H100_SXM.name: mine}
    rows = dispatch.table_rows(H100_SXM, table, "bf16")
    assert rows["1024x1024x1024"] == mine["bf16"]["1024x1024x1024"]
    assert set(rows) == set(table[H200.name]["bf16"]) | {"1024x1024x1024"}
    assert dispatch.table_rows(H100_SXM, table, "fp8") == table[H200.name]["fp8"]
    mine_pick = dispatch.choose(Problem(1024, 1024, 1024, "bf16"), Layout(b=COL), H100_SXM, table=table)
    assert mine_pick.spec.name == "cuda/tc4_persistent_bf16" and "under its own rows" in mine_pick.why
    for problem in (Problem(128, 4096, 4096, "bf16"), Problem(16, 14336, 4096, "fp8")):
        theirs = dispatch.choose(problem, Layout(b=COL), H200, table=table)
        assert dispatch.choose(problem, Layout(b=COL), H100_SXM, table=table).spec.name == theirs.spec.name


def test_table_from_results_ranks_verified_kernels_of_gemmlab_only():
    table = dispatch.table_from_results(run(
        record("cuda/tc4_persistent_bf16", 0.21), record("cuda/tc6_stream_k_bf16", 0.20),
        record("cuda/tc3_warp_specialized_bf16", 0.19, verified=False), record("peers/cublas_bf16", 0.1,
                                                                               backend="peer"),
        record("cuda/tc4_persistent_bf16", 0.205)))
    rows = table["NVIDIA H200"]["bf16"]["4096x4096x4096"]
    assert [(r["kernel"], r["ms"]) for r in rows[:2]] == [("cuda/tc6_stream_k_bf16", 0.20),
                                                          ("cuda/tc4_persistent_bf16", 0.205)]
    assert rows[2:] == [{"kernel": "cuda/tc3_warp_specialized_bf16", "failed": True}]  # failed there: last, no time
    assert dispatch.table_from_results({"env": {"gpu": None}, "records": []}) == {}


def test_a_call_costs_its_host_time_then_its_gpu_time():
    """A table row's call from an idle GPU waits for its host time, then its kernels; a kernel timed twice (two runs
    merged) keeps its faster call, and a record with a host time over one without. Rows go by the host time of
    their call path (``_host_us``): tc5 and tc6 launch once at 256³ TF32 with a row-major B and share the median of
    their measurements, 20 µs, so the GPU time orders them; tc4 transposes B first, its two-launch call path's own
    19 µs, or where no two-launch call was timed the one-launch median and HOST_LAUNCH_US more."""
    small = (256, 256, 256)
    table = dispatch.table_from_results(run(
        record("cuda/tc5_swap_ab_tf32", 0.0120, "tf32", small, host_us=25.0),
        record("cuda/tc6_stream_k_tf32", 0.0135, "tf32", small, host_us=15.0),
        record("cuda/tc4_persistent_tf32", 0.0150, "tf32", small),
        record("cuda/tc6_stream_k_tf32", 0.0130, "tf32", small, host_us=30.0),  # slower a call than 28.5 µs
        record("cuda/tc4_persistent_tf32", 0.0170, "tf32", small, host_us=19.0)))  # kept over the one without
    rows = table["NVIDIA H200"]["tf32"]["256x256x256"]
    assert [(r["kernel"], r["ms"], r["host_us"]) for r in rows] == [
        ("cuda/tc5_swap_ab_tf32", 0.0120, 25.0),  # 32 µs a call
        ("cuda/tc6_stream_k_tf32", 0.0135, 15.0),  # 33.5 µs: within HOST_TIE, behind the faster GPU time
        ("cuda/tc4_persistent_tf32", 0.0170, 19.0)]  # 36 µs
    assert dispatch.per_call_ms(rows[0]) == pytest.approx(0.037)  # the row's own measurement
    untimed = dispatch.table_from_results(run(
        record("cuda/tc5_swap_ab_tf32", 0.0120, "tf32", small, host_us=25.0),
        record("cuda/tc6_stream_k_tf32", 0.0135, "tf32", small, host_us=15.0),
        record("cuda/tc4_persistent_tf32", 0.0060, "tf32", small)))["NVIDIA H200"]["tf32"]["256x256x256"]
    # no two-launch call timed: tc4 pays the one-launch median and one launch more, 6 + 20 + 5 = 31 µs, and ties
    # with tc5's 32 (by GPU time, ahead); tc6's 33.5 µs is past HOST_TIE of 31
    assert dispatch.HOST_LAUNCH_US == 5.0
    assert [r["kernel"] for r in untimed] == ["cuda/tc4_persistent_tf32", "cuda/tc5_swap_ab_tf32",
                                              "cuda/tc6_stream_k_tf32"]


def test_host_time_is_the_call_paths_not_the_kernels(tmp_path, monkeypatch):
    """``rank`` counts one host time for the kernels whose calls launch as many kernels at a shape (the median of
    theirs: one kernel's host time differs more from run to run than two one-launch kernels' in one run), so among
    those the GPU time decides; a call that launches a pre-pass too pays the median of the two-launch calls. At
    256³ TF32 with a row-major B, tc5 and tc6 launch once, tc4 and tc10 transpose B first."""
    small = (256, 256, 256)
    problem = Problem(*small, "tf32")
    assert [launches(k, problem) for k in ("tc5_swap_ab", "tc6_stream_k", "tc4_persistent", "tc10_split_k")] == \
        [1, 1, 2, 2]
    monkeypatch.setattr(dispatch, "SHIPPED", tmp_path / "none.json")  # this machine's measurements alone
    dispatch.record(run(record("cuda/tc5_swap_ab_tf32", 0.0120, "tf32", small, host_us=25.0),
                        record("cuda/tc6_stream_k_tf32", 0.0135, "tf32", small, host_us=15.0),  # 28.5 µs as measured
                        record("cuda/tc4_persistent_tf32", 0.0150, "tf32", small, host_us=28.0),
                        record("cuda/tc10_split_k_tf32", 0.0110, "tf32", small, host_us=30.0)))
    ranked = dispatch.rank(problem, ROW_MAJOR, H200)
    calls = {c.spec.name.split("/")[1]: round(1e3 * c.per_call_ms, 3) for c in ranked}
    assert calls == {"tc5_swap_ab_tf32": 32.0, "tc6_stream_k_tf32": 33.5,  # 20 µs: the median of 25 and 15
                     "tc4_persistent_tf32": 44.0, "tc10_split_k_tf32": 40.0}  # 29 µs: of 28 and 30
    choice = dispatch.choose(problem, ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/tc5_swap_ab_tf32" and "after 20 µs of host time a call" in choice.why
    # a kernel faster on the GPU by more than its extra launch's host time leads
    dispatch.record(run(record("cuda/tc10_split_k_tf32", 0.0020, "tf32", small, host_us=30.0)))
    choice = dispatch.choose(problem, ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/tc10_split_k_tf32" and "after 29 µs of host time a call" in choice.why


def test_between_measured_shapes_the_nearest_winner_is_the_one_its_call_path_ranks_first(tmp_path, monkeypatch):
    """The winner measured at the nearest shape, which stands against a prediction within the model's margin, is
    ranked there as ``rank`` ranks it: by its call path's host time, not by its own measurement's. tc5 and tc6 launch
    once at 256³ TF32 (row-major B); tc5 is faster on the GPU and the two share a host time, so at 240x256x256, where
    the model predicts the two alike, tc5 runs as it does at 256³."""
    monkeypatch.setattr(dispatch, "SHIPPED", tmp_path / "none.json")
    dispatch.record(run(record("cuda/tc5_swap_ab_tf32", 0.0120, "tf32", (256, 256, 256), host_us=25.0),
                        record("cuda/tc6_stream_k_tf32", 0.0135, "tf32", (256, 256, 256), host_us=15.0)))
    assert dispatch.choose(Problem(256, 256, 256, "tf32"), ROW_MAJOR, H200).spec.name == "cuda/tc5_swap_ab_tf32"
    near = dispatch.choose(Problem(240, 256, 256, "tf32"), ROW_MAJOR, H200)
    assert near.spec.name == "cuda/tc5_swap_ab_tf32" and "256x256x256" in near.why


def launches(level: str, problem: Problem) -> int:
    from gemmlab.analysis.scaling import estimate

    return estimate(get_kernel(f"cuda/{level}_tf32"), problem, dispatch._roofs("NVIDIA H200", 132), ROW_MAJOR).launches


def test_calls_within_host_tie_of_the_fastest_go_by_gpu_time(tmp_path, monkeypatch):
    """Two kernels a call from an idle GPU waits nearly as long for are one time a call: the faster on the GPU leads,
    what a CUDA graph waits for. Past HOST_TIE apart, the faster call leads whatever its GPU time. At 256³ TF32 with
    a row-major B, tc6 launches once and tc10 transposes B first: two call paths, each with its own host time."""
    small = (256, 256, 256)
    tied = run(record("cuda/tc6_stream_k_tf32", 0.0326, "tf32", small, host_us=15.3),
               record("cuda/tc10_split_k_tf32", 0.0285, "tf32", small, host_us=20.4))  # 47.9 and 48.9 µs
    assert [r["kernel"] for r in dispatch.table_from_results(tied)["NVIDIA H200"]["tf32"]["256x256x256"]] == [
        "cuda/tc10_split_k_tf32", "cuda/tc6_stream_k_tf32"]
    apart = run(record("cuda/tc6_stream_k_tf32", 0.0326, "tf32", small, host_us=15.3),
                record("cuda/tc10_split_k_tf32", 0.0285, "tf32", small, host_us=25.0))  # 47.9 and 53.5 µs
    assert [r["kernel"] for r in dispatch.table_from_results(apart)["NVIDIA H200"]["tf32"]["256x256x256"]] == [
        "cuda/tc6_stream_k_tf32", "cuda/tc10_split_k_tf32"]
    monkeypatch.setattr(dispatch, "SHIPPED", tmp_path / "none.json")  # this machine's measurements alone
    dispatch.record(tied)  # this machine's table: auto follows it
    assert dispatch.choose(Problem(*small, "tf32"), ROW_MAJOR, H200).spec.name == "cuda/tc10_split_k_tf32"
    dispatch.record(apart)
    assert dispatch.choose(Problem(*small, "tf32"), ROW_MAJOR, H200).spec.name == "cuda/tc6_stream_k_tf32"


def test_a_bench_run_updates_this_machines_table(tmp_path):
    path = dispatch.record(run(record("cuda/tc6_stream_k_bf16", 0.10), record("cuda/tc4_persistent_bf16", 0.30)))
    assert path == tmp_path / "cache" / "dispatch.json" and path.exists()  # own_dispatch_cache sets the cache root
    choice = dispatch.choose(Problem(4096, 4096, 4096, "bf16"), ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/tc6_stream_k_bf16"  # this machine's measurement over the shipped one
    # shapes this machine did not measure still come from the shipped table
    assert dispatch.choose(Problem(2048, 3072, 4096, "tf32"), ROW_MAJOR, H200).spec.name == "cuda/tc6_stream_k_tf32"


def test_a_later_run_of_fewer_kernels_replaces_only_their_rows(tmp_path):
    """A run of some kernels (a variant sweep times its registered kernels alone) replaces those kernels' rows at the
    shapes it timed; a kernel it did not time keeps its row and its place among them. (Times below the shipped
    table's at the shape, so these rows lead it.)"""
    fp8 = (4096, 4096, 4096)
    dispatch.record(run(record("cuda/tc8_block_scaled_fp8", 0.098, "fp8_block", fp8),
                        record("cuda/tc6_stream_k_fp8_block", 0.091, "fp8_block", fp8),
                        record("cuda/tc8_cluster_fp8_block", 0.095, "fp8_block", fp8)))
    dispatch.record(run(record("cuda/tc8_block_scaled_fp8", 0.097, "fp8_block", fp8)))
    mine = ("cuda/tc6_stream_k_fp8_block", "cuda/tc8_cluster_fp8_block", "cuda/tc8_block_scaled_fp8")
    rows = dispatch.load_table()["NVIDIA H200"]["fp8_block"]["4096x4096x4096"]
    assert [(r["kernel"], r["ms"]) for r in rows if r["kernel"] in mine] == [("cuda/tc6_stream_k_fp8_block", 0.091),
                                                      ("cuda/tc8_cluster_fp8_block", 0.095),
                                                      ("cuda/tc8_block_scaled_fp8", 0.097)]
    dispatch.record(run(record("cuda/tc8_block_scaled_fp8", 0.090, "fp8_block", fp8)))
    assert dispatch.choose(Problem(*fp8, "fp8_block"), Layout(b=COL), H200).spec.name == "cuda/tc8_block_scaled_fp8"
    # a kernel that fails verification in a later run loses its earlier row there, and auto passes it over
    failed = {**record("cuda/tc8_block_scaled_fp8", None, "fp8_block", fp8, verified=False), "status": "FAILED"}
    dispatch.record(run(failed))
    rows = dispatch.load_table()["NVIDIA H200"]["fp8_block"]["4096x4096x4096"]
    assert rows[-1] == {"kernel": "cuda/tc8_block_scaled_fp8", "failed": True}
    choice = dispatch.choose(Problem(*fp8, "fp8_block"), Layout(b=COL), H200)
    assert choice.spec.name == "cuda/tc6_stream_k_fp8_block" and choice.why.count("#1 of the") == 1


def test_kernels_this_gemmlab_lacks_or_that_refuse_the_problem_are_passed_over():
    # a table written by another version of gemmlab names a kernel this one does not have
    dispatch.record(run(record("cuda/nope", 0.0001, precision="fp32"), record("cuda/v2_smem", 0.5, precision="fp32")))
    assert dispatch.choose(Problem(4096, 4096, 4096, "fp32"), ROW_MAJOR, H200).spec.name == "cuda/v2_smem"
    # past the 32-bit element offsets of v2 (M·N > 2^31): tc4 (64-bit C offsets) takes it in BF16
    dispatch.record(run(record("cuda/tc2_wgmma_tma_bf16", 0.5, shape=(65536, 65536, 8)),
                        record("cuda/tc4_persistent_bf16", 0.9, shape=(65536, 65536, 8))))
    huge = Problem(65536 * 129, 64, 8, "bf16")  # tc2 would need more than 65535 row blocks
    assert dispatch.choose(huge, ROW_MAJOR, H200).spec.name == "cuda/tc4_persistent_bf16"
    # and no FP32 level takes M·N past 2^31: the refusal says why, with its own error class
    with pytest.raises(SizeLimitError, match="32-bit index range"):
        dispatch.choose(Problem(65536, 65536, 8, "fp32"), ROW_MAJOR, H200)


SHIPPED_FROM = [ROOT / "results" / "h200" / f for f in ("fp32.json", "tensor_cores.json", "fp8.json")] + \
    sorted((ROOT / "results" / "h200").glob("grid_*.json")) + \
    [ROOT / "results" / "h200" / "split_k.json"]  # the suite's grid (run.sh), once measured; tc10 at long K
# kernels timed again over the grid after a change to them: their rows replace their own (gemmlab dispatch --write),
# in the order they were measured, so a kernel timed again later keeps only its latest rows
SHIPPED_UPDATES = sorted((json.loads(p.read_text()) for p in (ROOT / "results" / "h200").glob("update_grid_*.json")),
                         key=lambda run: run["env"]["time"])


def test_the_shipped_table_is_the_committed_h200_results():
    table = dispatch.table_from_runs([json.loads(p.read_text()) for p in SHIPPED_FROM])
    for run in SHIPPED_UPDATES:
        table = dispatch.merge(table, dispatch.table_from_runs([run]))
    assert json.loads(dispatch.SHIPPED.read_text()) == json.loads(json.dumps(table))


def test_the_model_scales_by_the_h200_s_measured_roofs_shipped_beside_its_table(tmp_path, monkeypatch):
    """The shipped table's GPU without a measurement of its own reads the one shipped beside the table (the L2's
    datasheet figure is an assumption, two thirds of the measured); a measurement stored on this machine comes first;
    another GPU keeps its datasheet."""
    from gemmlab.analysis.ceilings import SHIPPED, stored_path

    committed = json.loads((ROOT / "results" / "h200" / "ceilings.json").read_text())
    assert json.loads(SHIPPED.read_text()) == committed
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path))
    dispatch._roofs.cache_clear()
    try:
        roofs = dispatch._roofs("NVIDIA H200", 132)
        assert (roofs.source["l2"], roofs.source["dram"]) == ("measured", "measured")
        assert (roofs.l2_gbs, roofs.dram_gbs) == (committed["l2_gbs"], committed["dram_gbs"])
        assert "ceilings-h200.json" in roofs.origin
        assert dispatch._roofs("NVIDIA H100 80GB HBM3", 132).source["l2"] == "assumed"
        stored_path("NVIDIA H200").parent.mkdir(parents=True)
        stored_path("NVIDIA H200").write_text(json.dumps({"gpu": "NVIDIA H200", "l2_gbs": 12000.0}))
        dispatch._roofs.cache_clear()
        mine = dispatch._roofs("NVIDIA H200", 132)
        assert mine.l2_gbs == 12000.0 and mine.source["dram"] == "datasheet"
    finally:
        dispatch._roofs.cache_clear()


def test_dispatch_build_writes_the_table_of_the_records_it_is_given(tmp_path):
    """Two files measuring one shape pool their kernels (merge would let the second replace the first's)."""
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "table.json"
    a.write_text(json.dumps({**run(record("cuda/tc4_persistent_bf16", 0.2), record("cuda/tc6_stream_k_bf16", 0.3),
                                   record("peers/cublas_bf16", 0.1, backend="peer")), "env": {
                                       "gpu": {"name": "NVIDIA H200"}, "command": "gemmlab bench"}}))
    b.write_text(json.dumps({**run(record("cuda/tc2_wgmma_tma_bf16", 0.25), gpu="NVIDIA H100 PCIe"), "env": {
        "gpu": {"name": "NVIDIA H100 PCIe"}, "command": "gemmlab bench"}}))
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--build", str(a), str(b), str(a), "--out",
                           str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(out.read_text())
    assert [r["kernel"] for r in table["NVIDIA H200"]["bf16"]["4096x4096x4096"]] == \
        ["cuda/tc4_persistent_bf16", "cuda/tc6_stream_k_bf16"]
    assert list(table["NVIDIA H100 PCIe"]["bf16"]) == ["4096x4096x4096"]
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({**run(record("cuda/tc4_persistent_bf16", 0.2, verified=False)), "env": {
        "gpu": {"name": "NVIDIA H200"}, "command": "gemmlab bench"}}))
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "dispatch", "--build", str(failed), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no verified GPU records" in proc.stderr and "Traceback" not in proc.stderr


def test_a_vector_is_read_in_whichever_major_the_kernel_takes():
    from gemmlab.kernels.plan import ANY, ROW, target_layout

    fp8_like = frozenset({Layout(ROW, COL)})
    assert target_layout(Layout(ROW, ANY), fp8_like) == Layout(ROW, COL)  # a K×1 B is also a 1×K row
    assert target_layout(Layout(ANY, ANY), frozenset({ROW_MAJOR})) == ROW_MAJOR
    assert target_layout(Layout(ROW, ROW), fp8_like) is None  # a K×N B is not K-major, and no copy makes it so
    # kernel="auto" on a K×1 FP8 B (w.t() of a 1×K w): one of the table's FP8 kernels, reading it in place
    choice = dispatch.choose(Problem(17, 1, 200, "fp8"), Layout(ROW, ANY), H200)
    assert choice.spec.precision == "fp8" and Layout(ROW, COL) in choice.spec.layouts and choice.copies == ()
    assert "none of the measured" not in choice.why and "that takes 17x1x200 with A row-major, B a vector" in choice.why
    with pytest.raises(LayoutError, match="K-major"):
        dispatch.choose(Problem(17, 2, 200, "fp8"), ROW_MAJOR, H200)
    assert dispatch.choose(Problem(1, 1, 1, "fp32"), Layout(ANY, ANY), H200).copies == ()


def test_auto_runs_tf32_rounded_to_nearest_whichever_kernel_the_shape_picks():
    """A truncating TF32 build measured fastest is passed over for a rounding one, in place with B as w.t() too
    (the swapped levels read a K-major B); a named truncating build still runs."""
    dispatch.record(run(record("cuda/tc4_persistent_tf32", 0.30, precision="tf32"),
                        record("cuda/tc5_swap_ab_tf32", 0.40, precision="tf32")))
    choice = dispatch.choose(Problem(4096, 4096, 4096, "tf32"), ROW_MAJOR, H200)
    assert choice.spec.name == "cuda/tc5_swap_ab_tf32" and "#2" in choice.why
    choice = dispatch.choose(Problem(4096, 4096, 4096, "tf32"), Layout(b=COL), H200)
    assert choice.spec.name == "cuda/tc5_swap_ab_tf32" and choice.copies == ()
    assert "truncates" in get_kernel("cuda/tc4_persistent_tf32").auto_refusal()
    assert get_kernel("cuda/tc5_swap_ab_tf32").auto_refusal() == ""
    rounded = dataclasses.replace(get_kernel("cuda/tc4_persistent_tf32"), params={
        **get_kernel("cuda/tc4_persistent_tf32").params, "TF32_ROUND": 2})
    assert rounded.auto_refusal() == ""
    # without a table, the explicit defaults: tc1 TF32 (truncating) is what a GPU without wgmma runs
    dispatch.load_table.cache_clear()
    assert dispatch.choose(Problem(1024, 1024, 1024, "tf32"), ROW_MAJOR, A100).spec.name == "cuda/tc1_mma_sync_tf32"


def test_the_shipped_gpu_is_the_h200_its_table_was_measured_on():
    """Without a GPU, dispatch answers for the GPU of the shipped table: the H200 its results record (memory: the
    datasheet's 141 GiB, as the roofline's device has it)."""
    from gemmlab.analysis.roofline import device_spec

    measured = json.loads((Path(__file__).parents[1] / "results" / "h200" / "fp32.json").read_text())["env"]["gpu"]
    shipped = dispatch.shipped_gpu()
    for name in ("name", "sm_count", "l2_bytes", "smem_per_block_optin", "max_sm_clock_mhz"):
        assert getattr(shipped, name) == measured[name], name
    assert list(shipped.cc) == measured["cc"] and shipped.arch == "sm_90a"
    assert shipped.total_mem_bytes == device_spec("h200").memory_bytes


def test_a_batch_past_grid_z_runs_on_the_level_that_reads_any_pitch():
    """A BF16 batch of 70000 products 70 bytes apart: tc4 reads a batch with TMA, which steps by 16 bytes; tc1 reads
    any pitch, a product per gridDim.z index, in launches of 65535 products at most. FP32 and TF32 batches of as
    many go to their batched levels too."""
    from gemmlab.problem import BatchedProblem

    gpu = dispatch.shipped_gpu()
    assert dispatch.choose(BatchedProblem(5, 3, 7, "bf16", 70000, 35, 21), Layout(ROW, ROW), gpu).spec.name == \
        "cuda/tc1_mma_sync_bf16"
    for precision, level in (("fp32", "cuda/v9_autotuned"), ("tf32", "cuda/tc1_mma_sync_tf32")):
        problem = BatchedProblem(64, 64, 64, precision, 131072, 64 * 64, 64 * 64)
        assert dispatch.choose(problem, Layout(ROW, ROW), gpu).spec.name == level


@pytest.mark.parametrize("name", ["cuda/gemv1_warp_dot_fp32", "cuda/gemv1_warp_dot_bf16", "cuda/tc1_mma_sync_fp16",
                                  "cuda/v11_split_k", "cuda/v10_register_prefetch"])
def test_a_32_bit_kernel_refuses_a_dimension_its_rounding_up_would_overflow(name):
    """K = 2^31 - 1 at M = N = 1 has operands of fewer than 2^31 elements, but these kernels count K's tiles or
    vectors in an int after rounding K up: on the H200 gemv1 returned 0.0 and tc1 dropped the tail there."""
    spec = get_kernel(name)
    why = spec.is_valid(Problem(1, 1, 2**31 - 1, spec.precision))
    assert why and why.error is SizeLimitError and ("32-bit" in why or "int count" in why)
    assert not spec.is_valid(Problem(1, 1, 2**31 - 2048, spec.precision))


def test_a_gemv_measurement_scales_only_to_rows_that_run_its_build(tmp_path, monkeypatch):
    """gemv2's row counts of x are separate binaries (MAX_M 8, 16, 32: their registers, unroll and warps), whose
    speed the scaling model does not see. At 24 rows (the 32-row build) the prediction reads the 32-row measurement
    alone, though the 16-row one is as near; at 12 rows, the 16-row one. Where no neighbour ran the build, it reads
    them all, as for any kernel."""
    monkeypatch.setattr(dispatch, "SHIPPED", tmp_path / "none.json")
    name = "cuda/gemv2_mma_swap_bf16"
    rows = [dict(record(name, ms, "bf16", (m, 4096, 4096), host_us=15.0), layout="row,col")
            for m, ms in ((16, 0.0138), (32, 0.0197))]
    dispatch.record(run(*rows))
    w_t = Layout(b=COL)

    def prediction(m):
        return next(c for c in dispatch.rank(Problem(m, 4096, 4096, "bf16"), w_t, H200) if c.spec.name == name)

    at24, at12 = prediction(24), prediction(12)
    assert {b[0]: b[5] for b in at24.basis} == {"32x4096x4096": True, "16x4096x4096": False}
    assert {b[0]: b[5] for b in at12.basis} == {"32x4096x4096": False, "16x4096x4096": True}
    assert 0.0138 * 0.8 < at12.ms < 0.0138 and 0.0197 * 0.8 < at24.ms < 0.0197  # each its own build's, scaled down
    mixed = next(c for c in dispatch.rank(Problem(24, 4096, 4096, "bf16"), w_t, H200, table={
        "NVIDIA H200": {"bf16": {"16x4096x4096": [{"kernel": name, "ms": 0.0138, "layout": "row,col"}]}}})
        if c.spec.name == name)
    assert [b[5] for b in mixed.basis] == [True] and mixed.ms > 0.0138  # no 32-row measurement: the 16-row one


def test_only_the_gemv_levels_hold_their_builds_apart():
    gemv1, gemv2 = get_kernel("cuda/gemv1_warp_dot_fp32"), get_kernel("cuda/gemv2_mma_swap_fp8")
    assert gemv1.same_build(Problem(3, 4096, 4096, "fp32"), Problem(4, 14336, 4096, "fp32"))
    assert not gemv1.same_build(Problem(8, 4096, 4096, "fp32"), Problem(16, 4096, 4096, "fp32"))
    assert gemv2.same_build(Problem(9, 4096, 4096, "fp8"), Problem(16, 14336, 4096, "fp8"))
    assert not gemv2.same_build(Problem(16, 4096, 4096, "fp8"), Problem(17, 4096, 4096, "fp8"))
    # 24 rows against a 1024-row weight run the 16-row build in two slices: not 16 rows' unsliced binary
    assert not gemv2.same_build(Problem(16, 4096, 4096, "fp8"), Problem(24, 1024, 8192, "fp8"))
    tiled = get_kernel("cuda/tc10_split_k_bf16")  # its tiles and splits are the model's own terms
    assert tiled.same_build(Problem(16, 4096, 4096, "bf16"), Problem(4096, 1024, 8192, "bf16"))


def _timed_tall(table: dict) -> dict:
    """A copy of ``table`` whose tc8 rows say they were timed on 192-row tiles, as every one was before tc8 picked
    its height per problem (the shipped table's grid has since timed the 128-row tiles where they are picked)."""
    tall = json.loads(json.dumps(table))
    for rows in tall["NVIDIA H200"]["fp8_block"].values():
        for r in rows:
            if "tc8" in r["kernel"]:
                r["BM"] = 192
    return tall


def test_the_shipped_rows_of_tc8_name_both_heights():
    """The shipped grid timed each tc8 spec on the height it picks at each shape it timed: 128 rows where short_pays
    (1024x4096x14336, 512x4096x4096), 192 at 4096³; every row says which (a row the grid did not time again, where
    the spec was predicted hopeless, keeps the height it was timed on)."""
    rows = json.loads(dispatch.SHIPPED.read_text())["NVIDIA H200"]["fp8_block"]
    for name in ("cuda/tc8_block_scaled_fp8", "gluon/tc8_block_scaled_fp8", "cuda/tc8_cluster_fp8_block"):
        mine = {label: {r["BM"] for r in rs if r["kernel"] == name} for label, rs in rows.items()}
        assert set().union(*mine.values()) == {128, 192}
        assert mine["1024x4096x14336"] == mine["512x4096x4096"] == {128} and mine["4096x4096x4096"] == {192}


def test_a_measurement_is_modeled_on_the_tile_height_it_ran():
    """tc8's block-scaled specs pick 128 or 192 rows per problem (short_tile); a table's rows name the height each
    was measured on. A prediction between measured shapes scales the measurement by the model of that build there,
    not of what the spec would pick there now: at 768×4096×4096 the cluster build runs 192 rows, and with its
    neighbours 512 and 1024 (where it would now run 128) timed on 192 rows, they keep their 192-row models, so the
    prediction is what it was with one height."""
    name = "cuda/tc8_cluster_fp8_block"
    spec, w_t = get_kernel(name), Layout(b=COL)
    table = _timed_tall(json.loads(dispatch.SHIPPED.read_text()))
    problem = Problem(768, 4096, 4096, "fp8_block")
    assert spec.for_problem(problem).params["BM"] == 192
    assert spec.for_problem(Problem(512, 4096, 4096, "fp8_block")).params["BM"] == 128

    def predicted(table):
        ranked = dispatch.rank(problem, w_t, H200, table=table)
        return next(c for c in ranked if c.spec.name == name)

    unnamed = json.loads(json.dumps(table))  # the same rows without their heights: modeled as the spec picks now
    for label in unnamed["NVIDIA H200"]["fp8_block"]:
        for r in unnamed["NVIDIA H200"]["fp8_block"][label]:
            r.pop("BM", None)
    named, now = predicted(table), predicted(unnamed)
    ratios = {b[0]: b[2] for b in named.basis}
    assert ratios != {b[0]: b[2] for b in now.basis}
    from gemmlab.analysis.scaling import estimate

    tall = dataclasses.replace(spec, short_tile=None)
    roofs = dispatch._roofs("NVIDIA H200", 132)
    for label, ratio in ratios.items():
        there = Problem(*(int(x) for x in label.split("x")), "fp8_block")
        want = estimate(tall, problem, roofs, w_t, ()).ms / estimate(tall, there, roofs, w_t, ()).ms
        assert ratio == pytest.approx(want)


def test_at_a_measured_shape_a_measurement_moves_to_the_height_the_kernel_picks_by_the_rule_that_picks_it():
    """At 1024x4096x14336 tc8 runs 128 rows (short_pays): a row timed there on 192 rows predicts that measurement
    times short_cost, the rule's own count (fitted to both heights' times at the same shapes), not the 192-row
    time; at 4096³, where it keeps 192 rows, the measurement stands as it is, as does a row timed on the height the
    kernel picks (the shipped table's)."""
    from gemmlab.kernels.cuda.tc.model.tiles import short_cost

    w_t = Layout(b=COL)
    shipped = json.loads(dispatch.SHIPPED.read_text())
    tall = _timed_tall(shipped)
    explained = 0
    for name in ("cuda/tc8_block_scaled_fp8", "gluon/tc8_block_scaled_fp8", "cuda/tc8_cluster_fp8_block"):
        spec = get_kernel(name)
        for label, runs in (("1024x4096x14336", 128), ("4096x4096x4096", 192)):
            problem = Problem(*map(int, label.split("x")), "fp8_block")
            assert spec.for_problem(problem).params["BM"] == runs
            for table, timed_on in ((tall, 192), (shipped, runs)):
                row = next(r for r in table["NVIDIA H200"]["fp8_block"][label] if r["kernel"] == name)
                assert row["BM"] == timed_on
                c = next(c for c in dispatch.rank(problem, w_t, H200, table=table) if c.spec.name == name)
                moved = runs == 128 and timed_on == 192
                factor = short_cost(problem.m, problem.n, spec.params, 128) if moved else 1.0
                assert c.ms == pytest.approx(row["ms"] * factor)
                choice = dispatch.choose(problem, w_t, H200, table=table)
                if choice.spec.name == name:  # the pick says what its time was scaled by, if it was
                    said = f"on 192-row tiles, × {factor:.3g} for the 128 rows it runs here" in choice.why
                    assert said == moved
                    explained += said
    assert explained == 1
    assert 0.6 < short_cost(1024, 4096, get_kernel("cuda/tc8_block_scaled_fp8").params, 128) < 1


def test_a_table_row_names_the_height_of_a_kernel_that_picks_one():
    base = {"precision": "fp8_block", "m": 256, "n": 14336, "k": 4096, "verified": True, "median_ms": 0.04}
    made = dispatch.table_from_results({"env": {"gpu": {"name": "NVIDIA H200"}}, "records": [
        {**base, "kernel": "cuda/tc8_block_scaled_fp8", "params": {"BM": 128}},
        {**base, "kernel": "gluon/tc8_block_scaled_fp8"},  # no params recorded: its registered height
        {**base, "kernel": "cuda/tc10_split_k_fp8_block", "params": {"BM": 128}}]})
    rows = {r["kernel"]: r for r in made["NVIDIA H200"]["fp8_block"]["256x14336x4096"]}
    assert rows["cuda/tc8_block_scaled_fp8"]["BM"] == 128 and rows["gluon/tc8_block_scaled_fp8"]["BM"] == 192
    assert "BM" not in rows["cuda/tc10_split_k_fp8_block"]
    spec = get_kernel("cuda/tc8_block_scaled_fp8")
    assert dispatch._measured_build(spec, rows["cuda/tc8_block_scaled_fp8"]).params["BM"] == 128
    assert dispatch._measured_build(spec, {"BM": 192}).for_problem(Problem(256, 14336, 4096, "fp8_block")) \
        .params["BM"] == 192
    assert dispatch._measured_build(spec, {}) is spec
