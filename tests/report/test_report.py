"""The report rendered from the committed sample JSON: figures hold the expected points, tables the expected
rows and ratios, and no kernel is ever compared with a peer of another precision."""
import copy
import json
import math
from pathlib import Path

import pytest

from gemmlab.report import data as D
from gemmlab.report import markdown, plots, render_report

SAMPLE = Path(__file__).parent / "data" / "sample_results.json"
S4 = (4096, 4096, 4096)
SEED = (2048, 3072, 4096)


@pytest.fixture(scope="module")
def results():
    return D.load_results(SAMPLE)


def _rec(results, kernel, shape=S4):
    return next(r for r in results["records"] if r["kernel"] == kernel and D.shape_of(r) == shape)


def _by_gid(ax, gid):
    return [a for a in list(ax.lines) + list(ax.collections) + list(ax.patches) if a.get_gid() == gid]


# -- the whole report ------------------------------------------------------------------------------------------
def test_render_report_writes_every_file(tmp_path):
    paths = render_report(SAMPLE, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted([
        "report.md", "ladder_4096x4096x4096.png", "ladder_2048x3072x4096.png",
        "roofline_fp32_4096x4096x4096.png", "roofline_tf32_4096x4096x4096.png", "roofline_bf16_4096x4096x4096.png",
        "roofline_fp32_2048x3072x4096.png"])
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (tmp_path / "report.md").read_text()
    for p in paths:
        if p.suffix == ".png":
            assert f"]({p.name})" in text  # every figure is linked from the report


def test_report_names_the_commands(tmp_path):
    render_report(SAMPLE, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "written by `gemmlab bench --shape 4096 --shape 2048x3072x4096 --json results/h200/results.json`" in text
    assert f"gemmlab report {SAMPLE} --out {tmp_path}" in text
    assert "`gemmlab profile cuda/v1_naive --shape 4096x4096x4096 --json results/h200/results.json`" in text


# -- tables ----------------------------------------------------------------------------------------------------
def _rows(text: str, after: str, first_cell: str) -> list[list[str]]:
    """Cells of the rows starting with ``first_cell`` in the first table after the heading ``after``."""
    body = text[text.index(after):]
    out = []
    for line in body.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] == first_cell:
                out.append(cells)
    return out


def test_kernel_table_rows_and_ratios(results):
    text = markdown.render_markdown(results, "sample_results.json")
    section = text[text.index("## 4096x4096x4096"):]
    fp32 = section[section.index("### FP32"):section.index("### TF32")]
    table = [line for line in fp32.splitlines() if line.startswith("| `")]
    kernels = [line.split("|")[1].strip().strip("`") for line in table]
    assert kernels == ["cpu/v0_naive", "numba/v1_naive", "numba/v2_smem", "cuda/v1_naive", "cuda/v2_smem",
                       "cuda/v4_2d_blocktile", "cuda/v6_bank_conflict_free", "peers/cublas_fp32",
                       "peers/triton_fp32"]
    rows = {line.split("|")[1].strip().strip("`"): [c.strip() for c in line.strip().strip("|").split("|")]
            for line in table}
    # ratio = cuBLAS FP32 time / kernel time: 2.684 / 4.628
    assert rows["cuda/v4_2d_blocktile"][6] == f"{2.684 / 4.628:.2f}× cublas_fp32" == "0.58× cublas_fp32"
    assert rows["peers/triton_fp32"][6] == "0.85× cublas_fp32"
    assert rows["peers/cublas_fp32"][6] == "peer"
    assert rows["cuda/v2_smem"][7] == f"{22.18 / 15.61:.2f}×"  # speedup over cuda/v1_naive
    assert rows["cuda/v1_naive"][4] == "6.20" and rows["cuda/v1_naive"][8] == "0.250"  # seeds: 0.25 FLOP/byte
    assert rows["cuda/v1_naive"][10] == "550 GB" and rows["cuda/v1_naive"][11] == "4.33 GB"  # 8MNK vs ncu
    assert rows["cuda/v6_bank_conflict_free"][2].startswith("**FAILED**")
    assert rows["cuda/v6_bank_conflict_free"][3] == "—" and rows["cuda/v6_bank_conflict_free"][6] == "—"
    assert rows["cpu/v0_naive"][2].startswith("skipped")

    bf16 = section[section.index("### BF16"):section.index("## Model against counters")]
    assert f"{0.1901 / 0.2863:.2f}× cublas_bf16" in bf16


def test_a_time_with_host_bound_samples_says_how_many():
    from gemmlab.report.markdown import _ms

    rec = {"median_ms": 0.0123, "iqr_ms": 0.0004, "samples": 50}
    assert "host-bound" not in _ms(rec) and "host-bound" not in _ms({**rec, "late": 0})
    assert _ms({**rec, "late": 7}).endswith("(host-bound in 7 of 50)")


def test_seeds_table(results):
    text = markdown.render_markdown(results, "sample_results.json")
    section = text[text.index("## 4096x4096x4096"):]
    seeds = section[section.index("The seeds' table"):]
    assert "| 实现版本 version | 耗时 time | GFLOPS | 带宽利用率 bandwidth utilization (model) |" in seeds
    row = _rows(seeds, "The seeds' table", "cuda/v1_naive")[0]
    bw = results["env"]["ceilings"]["copy_bw_gbs"]
    assert row[1] == "22.180 ms"
    assert row[2] == f"{2 * 4096**3 / 22.18e-3 / 1e9:,.0f}"
    # the seeds' bandwidth utilization: modeled bytes (8MNK + 4MN) / time / bandwidth
    assert row[3] == f"{100 * (8 * 4096**3 + 4 * 4096**2) / 22.18e-3 / (bw * 1e9):.1f}%"
    dram = _rec(results, "cuda/v1_naive")["profile"]["dram_bytes"]
    assert row[4] == f"{100 * dram / 22.18e-3 / (bw * 1e9):.1f}%"
    # a failed kernel has no time, so no row
    assert not _rows(seeds, "The seeds' table", "cuda/v6_bank_conflict_free")


def test_seeds_table_takes_the_bandwidth_utilization_from_the_model_the_record_holds(results):
    """A stored bw_util_model is of the model at bench time and of that run's bandwidth: after a remodel, or in a
    file where a --no-ceilings run (the datasheet's 4800 GB/s) was appended to one that measured its copy, it is
    stale. The table takes the record's modeled bytes now, over the bandwidth its footer names."""
    stale = copy.deepcopy(results)
    rec = _rec(stale, "peers/cublas_fp32", SEED)
    rec["bw_util_model"] = 28.8  # of a model counting its tile re-reads; the sample's counts compulsory bytes only
    _rec(stale, "cuda/v2_smem", SEED)["bw_util_model"] *= 4312.6 / 4800  # the datasheet's bandwidth
    text = markdown.render_markdown(stale, "x.json")
    seeds = text[text.index("## 2048x3072x4096"):]
    assert "/ measured copy 4313 GB/s" in seeds
    for kernel in ("peers/cublas_fp32", "cuda/v2_smem"):
        mine = _rec(stale, kernel, SEED)
        expected = 100 * D.modeled_bytes(mine) / (mine["median_ms"] * 1e-3) / 4312.6e9
        assert _rows(seeds, "The seeds' table", kernel)[0][3] == f"{expected:.1f}%" != f"{mine['bw_util_model']:.1f}%"


def test_traffic_table(results):
    text = markdown.render_markdown(results, "sample_results.json")
    rows = {r[0]: r for r in [row for k in ("`cuda/v1_naive`", "`cuda/v2_smem`", "`peers/cublas_fp32`")
                              for row in _rows(text, "## Model against counters", k)]}
    naive = rows["`cuda/v1_naive`"]
    assert naive[2] == "550 GB" and naive[3] == "4.26 GB"
    assert naive[6] == "129×"  # 8MNK modeled / DRAM read
    assert naive[7] == "0.250" and naive[8] == f"{2 * 4096**3 / 4_333_509_120:#.3g}"
    assert rows["`cuda/v2_smem`"][10] == f"{751_725 + 19_392_584:,}"
    assert "absorbed 99.2%" in text


# -- precision discipline --------------------------------------------------------------------------------------
def test_no_ratio_against_another_precision(results):
    bad = copy.deepcopy(results)
    rec = _rec(bad, "cuda/v4_2d_blocktile")
    rec["peer"] = "peers/cublas_tf32"  # a tensor-core peer for an FP32 kernel
    rec["peer_ratio"] = 0.3776 / rec["median_ms"]
    records = D.attach_profiles(bad)
    assert D.peer_ratio(_rec({"records": records}, "cuda/v4_2d_blocktile"), records) is None
    text = markdown.render_markdown(bad, "x.json")
    row = [line for line in text.splitlines() if line.startswith("| `cuda/v4_2d_blocktile`")][0]
    assert row.split("|")[7].strip() == "—"
    fig = plots.ladder_figure(bad, S4)
    bottom = fig.axes[1]
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    bars = _by_gid(bottom, "ratio")
    assert len(bars) == len(labels)
    heights = [p.get_height() for p in bars]
    visible = [p.get_visible() for p in bars]
    i = labels.index("cuda/v4_2d_blocktile")
    assert heights[i] == 0.0 and not visible[i]


def test_ratio_comes_from_the_interleaved_timing_when_the_run_made_one(results):
    from gemmlab.harness.bench_records import link_ratios
    from gemmlab.harness.record import BenchRecord

    paired = copy.deepcopy(results)
    rec = _rec(paired, "cuda/v4_2d_blocktile")
    peer = _rec(paired, "peers/cublas_fp32")
    assert D.peer_ratio(rec, paired["records"]) == pytest.approx(peer["median_ms"] / rec["median_ms"])
    # the two sampled through one interval: a hotter (slower) GPU taxed both, and the ratio is theirs
    rec["interleaved"] = {"kernel_ms": 2.0 * rec["median_ms"], "peer_ms": 1.5 * rec["median_ms"], "rounds": 20}
    assert D.peer_ratio(rec, paired["records"]) == pytest.approx(0.75)
    own = peer["median_ms"] / rec["median_ms"]
    assert D.peer_ratio_own_medians(rec, paired["records"]) == pytest.approx(own)
    assert D.peer_ratio_own_medians(_rec(paired, "cuda/v2_smem"), paired["records"]) is None  # not interleaved
    typed = [BenchRecord.from_json(r) for r in paired["records"]]
    link_ratios(typed)
    assert typed[paired["records"].index(rec)].peer_ratio == pytest.approx(0.75)
    paired["records"] = [r.to_json() for r in typed]
    rec = _rec(paired, "cuda/v4_2d_blocktile")
    row = [line for line in markdown.render_markdown(paired, "x.json").splitlines()
           if line.startswith("| `cuda/v4_2d_blocktile`") and f"0.75× ({own:.2f}×)" in line]
    assert row
    assert f"(0.75× / {own:.2f}×)" in markdown.summary_markdown(paired)  # the README ladder shows both
    # bench --blocks adds the steady-state ratio from alternating blocks, third
    rec["blocks"] = {"kernel": {"median_ms": 1.0}, "peer": {"median_ms": 0.8}, "ratio": 0.8, "rounds": 4}
    assert D.peer_ratio_blocks(rec) == 0.8 and D.peer_ratio_blocks(peer) is None
    assert f"(0.75× / {own:.2f}× / 0.80×)" in markdown.summary_markdown(paired)
    text = markdown.render_markdown(paired, "x.json")
    assert f"0.75× ({own:.2f}×; blocks 0.80×)" in text and "Blocks: from the medians of blocks" in text


def test_peer_missing_from_run_gives_no_ratio(results):
    only = copy.deepcopy(results)
    only["records"] = [r for r in only["records"] if r["kernel"] != "peers/cublas_bf16"]
    records = D.attach_profiles(only)
    assert D.peer_ratio(_rec({"records": records}, "cuda/tc2_wgmma_tma"), records) is None


# -- figures ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def remodeled(results):
    """The sample with the hierarchical model in its records (its BF16 tc2 record names a level since renamed,
    and Triton may be absent here: those keep the seeds' model and stay out of the figure)."""
    from gemmlab.analysis.remodel import remodel_results
    from gemmlab.analysis.roofline import DEVICES, ceilings_for

    out, _ = remodel_results(results, ceilings_for(DEVICES["h200"], 4000.0), "test")
    return out


def _roof(ax, name):
    (line,) = _by_gid(ax, f"roof_{name}")
    x, y = line.get_xdata(), line.get_ydata()
    return line, (y[0] / x[0] if name != "compute" else y[0])


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
def test_roofline_no_point_above_its_roof(remodeled, precision):
    ax = plots.roofline_figure(remodeled, precision, S4).axes[0]
    _, peak = _roof(ax, "compute")
    drawn = 0
    for level, roof in (("dram", "dram"), ("l2", "l2"), ("smem", "smem"), ("l1", "smem")):
        for points in _by_gid(ax, f"points_{level}"):
            _, slope = _roof(ax, roof)
            for x, y in points.get_offsets():
                assert y <= slope * x * (1 + 1e-9) and y <= peak, (level, x, y)
                drawn += 1
    assert drawn >= 2


def test_roofline_has_a_roof_per_level(remodeled):
    ax = plots.roofline_figure(remodeled, "fp32", S4).axes[0]
    line, slope = _roof(ax, "dram")
    assert slope == pytest.approx(4.0)  # 4000 GB/s, in TFLOPS per FLOP/byte
    assert "measured" in line.get_label()
    assert _roof(ax, "l2")[1] == pytest.approx(5120 * 1980e6 / 1e12)  # the assumed L2 roof
    assert _roof(ax, "smem")[1] == pytest.approx(132 * 128 * 1980e6 / 1e12)
    assert _roof(ax, "compute")[1] == pytest.approx(132 * 256 * 1980e6 / 1e12)
    # the naive kernel once per level: FLOPs over its DRAM, L2 and L1 bytes, at its measured TFLOPS
    naive = _rec(remodeled, "cuda/v1_naive")
    y = naive["tflops"]
    for level in ("dram", "l2", "l1"):
        xs = {round(float(x), 6) for x, yy in _by_gid(ax, f"points_{level}")[0].get_offsets() if yy == y}
        assert round(D.flops(naive) / naive["model"]["levels"][level]["bytes"], 6) in xs


@pytest.mark.parametrize("precision, shape", [("fp32", S4), ("fp32", SEED), ("bf16", S4)])
def test_roofline_labels_do_not_overlap(remodeled, precision, shape):
    fig = plots.roofline_figure(remodeled, precision, shape)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_gid() == "label"]
    timed = [r for r in D.group(remodeled["records"], precision, shape) if D.is_timed(r) and r["backend"] != "cpu"
             and "levels" in r["model"]]
    assert len(labels) == len(timed) > 0
    boxes = [t.get_window_extent(renderer) for t in labels]
    frame = ax.get_window_extent(renderer)
    for i, a in enumerate(boxes):
        assert frame.y0 <= a.y0 and a.y1 <= frame.y1 and a.x1 <= frame.x1
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
    fig.canvas.draw()  # where the axis title lands is settled when the figure is drawn, as it is saved
    assert ax.yaxis.label.get_window_extent(renderer).x0 >= 0  # the axis title inside the figure


def test_roofline_makes_room_for_long_labels(remodeled):
    """A kernel named with its changed parameters (bench --variant) still ends inside the axes."""
    import copy

    results = copy.deepcopy(remodeled)
    rec = next(r for r in results["records"] if r["kernel"] == "cuda/v1_naive" and (r["m"], r["n"], r["k"]) == S4)
    rec["kernel"] = "cuda/v1_naive[BM=128,STAGES=6,CONSUMER_REGS=232,PRODUCER_REGS=40,SCALE_AHEAD=2]"
    fig = plots.roofline_figure(results, "fp32", S4)
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    labels = [t for t in ax.texts if t.get_gid() == "label"]
    assert any("SCALE_AHEAD=2" in t.get_text() for t in labels)
    assert all(t.get_window_extent(renderer).x1 <= frame.x1 for t in labels)


@pytest.fixture(scope="module")
def fp32_on_tensor_cores(results):
    """cuBLAS SGEMM and tc7 (FP32 from three TF32 tensor-core products a multiply-add) at 4096³, remodeled; tc7's
    record without a stored pct_peak, so the report takes its own."""
    from gemmlab.analysis.remodel import remodel_record
    from gemmlab.analysis.roofline import DEVICES, ceilings_for

    cublas = {k: v for k, v in _rec(results, "peers/cublas_fp32").items() if k not in ("profile", "interleaved")}
    tc7 = {**cublas, "kernel": "cuda/tc7_3xtf32", "backend": "cuda", "level": 11, "peer": "peers/cublas_fp32",
           "median_ms": 2 * 4096**3 / 103.7e12 * 1e3, "tflops": 103.7}
    tc7.pop("pct_peak")
    roofs = ceilings_for(DEVICES["h200"], 4000.0)
    for rec in (cublas, tc7):
        rec["model"] = remodel_record(rec, roofs)
    return {"env": copy.deepcopy(results["env"]), "records": [cublas, tc7]}


def test_roofline_draws_the_precision_s_roof_and_another_units_roof_apart(fp32_on_tensor_cores):
    ax = plots.roofline_figure(fp32_on_tensor_cores, "fp32", S4).axes[0]
    line, fp32 = _roof(ax, "compute")
    assert fp32 == pytest.approx(132 * 256 * 1980e6 / 1e12)  # FP32 FFMA, whichever kernel comes first
    assert line.get_label().startswith(f"FP32 roof: {fp32:,.1f} TFLOPS at 1980 MHz")
    (tf32,) = _by_gid(ax, "roof_compute_tf32_3")
    assert tf32.get_ydata()[0] == pytest.approx(132 * 2048 / 3 * 1980e6 / 1e12)
    assert tf32.get_label().startswith("cuda/tc7_3xtf32: TF32 / 3 roof: 178.4 TFLOPS")
    # each kernel under its own units' roof: tc7's 103.7 TFLOPS passes FP32's
    heights = {round(float(y), 3) for points in _by_gid(ax, "points_dram") for _, y in points.get_offsets()}
    assert heights == {round(_rec(fp32_on_tensor_cores, "peers/cublas_fp32")["tflops"], 3), 103.7}
    assert fp32 < 103.7 < tf32.get_ydata()[0]


def test_percent_of_peak_is_against_the_peak_of_the_units_a_kernel_runs_on(fp32_on_tensor_cores):
    text = markdown.render_markdown(fp32_on_tensor_cores, "x.json")
    cublas = _rec(fp32_on_tensor_cores, "peers/cublas_fp32")
    assert _rows(text, "### FP32", "`peers/cublas_fp32`")[0][5] == f"{100 * cublas['tflops'] / 66.9:.1f}%"
    assert _rows(text, "### FP32", "`cuda/tc7_3xtf32`")[0][5] == f"{100 * 103.7 / (494.7 / 3):.1f}% (TF32 / 3)"
    assert ("% of peak: against 66.9 TFLOPS FP32 (datasheet); `cuda/tc7_3xtf32` (marked TF32 / 3) against 165 "
            "TFLOPS, the TF32 peak 495 over the 3 TF32 products each of its multiply-adds takes") in text


def test_roofline_of_records_with_only_the_seeds_model(results):
    ax = plots.roofline_figure(results, "fp32", S4).axes[0]
    assert not _by_gid(ax, "roof_dram") and "--remodel" in ax.texts[0].get_text()


def test_levels_against_counters_table(remodeled):
    text = markdown.render_markdown(remodeled, "sample_results.json")
    row = _rows(text, "## The roofline's levels against counters", "`cuda/v1_naive`")[0]
    m = _rec(remodeled, "cuda/v1_naive")["model"]
    assert row[2] == D.fmt_bytes(m["dram_bytes"]) and row[5] == "4.33 GB"
    assert row[6] == f"{m['dram_bytes'] / 4_333_509_120:.2f}×"
    # two CTAs per SM: one CTA per SM in step reads more than the resident wave in step
    assert m["dram_bytes_staggered"] > m["dram_bytes"] and row[3] == D.fmt_bytes(m["dram_bytes_staggered"])
    assert row[7] == f"{m['dram_bytes_staggered'] / 4_333_509_120:.2f}×"
    assert row[4] == D.fmt_bytes(m["dram_bytes_estimate"])
    assert row[8] == f"{m['dram_bytes_estimate'] / 4_333_509_120:.2f}×"
    assert row[10] == "19.6 GB" and row[15] == "l1"
    assert row[16].startswith("latency")  # 22 ms against a prediction under half of it: the reason is named
    assert "levels beneath it" in markdown.render_markdown(D.load_results(SAMPLE), "x.json")  # the seeds alone


def test_ladder_bars(results):
    fig = plots.ladder_figure(results, S4)
    top, bottom = fig.axes[:2]
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert labels[:5] == ["numba/v1_naive", "numba/v2_smem", "cuda/v1_naive", "cuda/v2_smem", "cuda/v4_2d_blocktile"]
    assert "cuda/v6_bank_conflict_free" not in labels and "cpu/v0_naive" not in labels
    heights = dict(zip(labels, (p.get_height() for p in _by_gid(top, "tflops"))))
    assert heights["peers/cublas_fp32"] == pytest.approx(2 * 4096**3 / 2.684e-3 / 1e12)
    assert heights["peers/cublas_bf16"] == pytest.approx(_rec(results, "peers/cublas_bf16")["tflops"])
    ratios = dict(zip(labels, (p.get_height() for p in _by_gid(bottom, "ratio"))))
    assert ratios["cuda/v4_2d_blocktile"] == pytest.approx(2.684 / 4.628)
    assert ratios["peers/triton_bf16"] == pytest.approx(0.1901 / 0.3450)
    assert ratios["peers/cublas_tf32"] == 1.0  # the peer is its own reference
    # linear from zero: a bar twice as tall is twice as fast (on a log axis from a clipped base, 440 against 1286
    # TFLOPS looked tenfold); every value label inside the axes, below the title
    assert top.get_yscale() == "linear" and top.get_ylim()[0] == 0
    assert top.get_ylim()[1] > max(heights.values()) * 1.1


H200 = Path(__file__).resolve().parents[2] / "results" / "h200"


def test_ladder_marks_an_erratic_peer_and_the_ratios_against_it():
    """The committed FP8 run at the seed shape: the cuBLASLt peers' quartiles spread 18-23% of their medians, so the
    2.79× and 2.06× against them carry a * and the figure says they are no comparison."""
    results = D.load_results(H200 / "fp8.json")
    assert set(plots.erratic_peers(results["records"], SEED)) == {
        "peers/cublaslt_fp8", "peers/cublaslt_fp8_promoted", "peers/cublaslt_fp8_block"}
    fig = plots.ladder_figure(results, SEED)
    top, bottom = fig.axes[:2]
    texts = {a.get_text() for a in bottom.texts}
    assert "2.79×*" in texts and "2.06×*" in texts and "1.00×" in texts  # BF16's peer ran steadily
    note = next(t for t in bottom.texts if t.get_gid() == "erratic_note").get_text()
    assert "peers/cublaslt_fp8: IQR 20% of its median" in note and "no comparison" in note
    # a steady run marks nothing
    assert plots.erratic_peers(results["records"], S4) == {}
    assert not [t for t in plots.ladder_figure(results, S4).axes[1].texts if t.get_gid() == "erratic_note"]


def test_ladder_shows_the_peer_where_the_paired_timings_had_it():
    """fp8_variants at 4096³: cuBLASLt's own median is 345 TFLOPS while every ratio, from the paired timings,
    reads about 1.00×; a diamond on its bar shows the TFLOPS it ran at beside the kernels."""
    results = D.load_results(H200 / "fp8_variants.json")
    peer = _rec(results, "peers/cublaslt_fp8")
    paired = plots.paired_peer_tflops(peer, results["records"])
    assert D.tflops(peer) == pytest.approx(344.7, abs=0.1) and paired > 1100
    top = plots.ladder_figure(results, S4).axes[0]
    (diamond,) = _by_gid(top, "peer_paired")
    assert diamond.get_ydata()[0] == pytest.approx(paired)


def test_ladder_wraps_a_variants_parameters_under_its_name():
    label = plots._tick_label("cuda/tc8_block_scaled_fp8[BM=128,BN=192,CONSUMER_REGS=232,PRODUCER_REGS=40]")
    assert label.split("\n") == ["cuda/tc8_block_scaled_fp8", "[BM=128,BN=192,", "CONSUMER_REGS=232,",
                                  "PRODUCER_REGS=40]"]
    assert plots._tick_label("cuda/tc4_persistent_fp8") == "cuda/tc4_persistent_fp8"


def test_cpu_only_results_render(tmp_path):
    """A run without a GPU (compiled and simulated records, no times) still renders tables, and no figure."""
    results = D.load_results(SAMPLE)
    for rec in results["records"]:
        rec.update(status="compiled" if rec["backend"] == "cuda" else "simulated", median_ms=None, tflops=None,
                   gflops=None, peer_ratio=None, speedup_prev=None, profile=None)
    results["env"].update(mode="cpu-only", gpu=None)
    results["env"].pop("ceilings")
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(results))
    paths = render_report(path, tmp_path / "out")
    assert [p.name for p in paths] == ["report.md"]
    text = paths[0].read_text()
    assert "| `cuda/v2_smem` | 2 | compiled |" in text
    assert "No record in this JSON was profiled" in text


def test_fmt():
    assert D.fmt(None) == "—"
    assert D.fmt(0.25) == "0.250" and D.fmt(6.2) == "6.20" and D.fmt(51.2) == "51.2" and D.fmt(683.0) == "683"
    assert D.fmt(1024.0) == "1,024"
    assert D.fmt_bytes(550e9) == "550 GB" and D.fmt_bytes(4.26e9) == "4.26 GB"
    assert not math.isnan(D.roofs({"env": {}}, "fp32").ridge or 0.0)


# -- the other JSONs gemmlab writes ------------------------------------------------------------------------------
TIMELINE = Path(__file__).parent / "data" / "sample_timeline.json"
VERIFY_ROWS = Path(__file__).parent / "data" / "sample_verify_rows.json"  # verify --json before it kept the env


def test_timeline_json_renders_its_own_table(tmp_path):
    from gemmlab.harness import timeline
    from gemmlab.report import summary

    kind, results = D.load(TIMELINE)
    assert kind == "timeline"
    paths = render_report(TIMELINE, tmp_path / "out")
    assert [p.name for p in paths] == ["report.md"]  # no bench figures for a timeline
    text = paths[0].read_text()
    assert text == timeline.markdown(results)  # the same table timeline --json writes beside the JSON
    assert text.startswith("# gemmlab timeline: NVIDIA H200")
    table = summary(TIMELINE).splitlines()
    assert table[0] == "| " + " | ".join(timeline.COLUMNS) + " |"
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    assert [(r[0], r[1]) for r in rows] == [("cuda/tc4_persistent_tf32", "4096x4096x4096"),
                                            ("cuda/tc4_persistent_bf16", "4096x4096x4096"),
                                            ("cuda/tc4_persistent_tf32", "256x256x4096")]
    epilogue = results["records"][0]["summary"]["epilogue_cycles"]["median"]
    assert rows[0][5] == f"{epilogue:,.0f}"


def test_api_json_renders_the_table_bench_api_writes_beside_it(tmp_path):
    """The file ``bench --api --json`` writes is a results file like the others: report renders the same table
    the command wrote beside it, and --summary prints it."""
    from gemmlab.report import summary

    api = Path(__file__).resolve().parents[2] / "results" / "h200" / "api.json"
    kind, results = D.load(api)
    assert kind == "api"
    paths = render_report(api, tmp_path / "out")
    assert [p.name for p in paths] == ["report.md"]
    assert paths[0].read_text() == api.with_suffix(".md").read_text()
    assert "| fp8 | 8192×8192×8192 | x @ w.T (B column-major) | `cuda/tc4_persistent_fp8` |" in summary(api)


def _verify_rows(text: str) -> dict:
    return {cells[0].strip("`"): cells for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| `"))}


def test_verify_json_of_bare_rows_renders_per_kernel_and_per_check(tmp_path):
    from gemmlab.report import summary

    kind, _ = D.load(VERIFY_ROWS)
    assert kind == "verify"
    per_kernel = _verify_rows(summary(VERIFY_ROWS))
    # kernel: passed, failed, skipped, worst rel err (at), tolerance, ran on, memcheck, racecheck
    assert per_kernel["cuda/v1_naive"][1:] == ["3", "0", "0", "1.1e-06 at 33x31x4097", "1e-05", "gpu", "clean",
                                               "clean"]
    assert per_kernel["cuda/v2_smem"][1:4] == ["1", "1", "0"] and per_kernel["cuda/v2_smem"][7] == "ERRORS"
    assert per_kernel["cuda/v2_smem"][4] == "3.0e-02 at 33x17x65"
    paths = render_report(VERIFY_ROWS, tmp_path / "out")
    assert [p.name for p in paths] == ["report.md"]
    text = paths[0].read_text()
    assert text.startswith("# gemmlab verify: GPU not recorded\n")
    assert "8 checks: 7 passed, 1 failed, 0 skipped." in text
    every = text[text.index("## Every check"):]
    row = next(line for line in every.splitlines() if line.startswith("| `cuda/tc4_persistent_bf16` | 2047x3071x4097"))
    assert row == "| `cuda/tc4_persistent_bf16` | 2047x3071x4097 | passed | 4.4e-06 | 1e-02 | gpu |  |"


def test_verify_json_with_env_names_where_it_ran(tmp_path):
    from gemmlab.harness.sweep import _row

    results = {"env": {"mode": "cpu-only", "gpu": None, "command": "gemmlab verify --kernels cpu/blas",
                       "git_sha": "abc123", "time": "2026-12-01T00:00:00+00:00", "host": "box"},
               "records": [_row("cpu/blas", "33x17x65", "passed", "cpu", "rel err 1.0e-07 (tol 1e-05), cpu", 1e-7, 1e-5),
                           _row("cuda/v2_smem", "sm_90a", "compiled", "nvrtc", "32 regs, 0 spill bytes; not run")]}
    path = tmp_path / "verify.json"
    path.write_text(json.dumps(results))
    text = render_report(path, tmp_path / "out")[0].read_text()
    assert text.startswith("# gemmlab verify: no GPU\n")
    assert "written by `gemmlab verify --kernels cpu/blas`" in text and "git abc123" in text
    assert "1 checks: 1 passed" in text  # the compiled kernel is no check
    rows = _verify_rows(text[text.index("## Per kernel"):text.index("## Every check")])
    assert rows["cuda/v2_smem"][1:8] == ["0", "0", "0", "compiled", "—", "nvrtc", "—"]


def test_cpu_only_report_is_not_headed_with_a_gpu(results):
    cpu = copy.deepcopy(results)
    cpu["env"].update(mode="cpu-only", gpu=None)
    assert markdown.render_markdown(cpu, "x.json").startswith(
        "# gemmlab report: no GPU (the roofline model is for the NVIDIA H200)\n")
    assert markdown.render_markdown(results, "x.json").startswith("# gemmlab report: NVIDIA H200\n")
