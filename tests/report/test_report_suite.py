"""The shape suite's report (gemmlab.report.suite) from data/sample_suite.json, a made-up run of BF16 and
FP8 block-scaled records (one whose torch result is wrong, one torch could not run, one failed): the summary, the
tables, the figures and the command."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.report import render_report, summary
from gemmlab.report import suite as R
from gemmlab.results import load

SAMPLE = Path(__file__).parent / "data" / "sample_suite.json"


def _rows(md: str, heading: str) -> list[list[str]]:
    part = md[md.index(heading):]
    part = part[:part.find("\n#", 1)] if "\n#" in part[1:] else part  # up to the next heading of any level
    return [[c.strip() for c in line.strip("|").split("|")] for line in part.splitlines()
            if line.startswith("| ") and not line.startswith("| op ") and not line.startswith("| shapes ")]


def test_the_sample_is_a_suite_json():
    kind, results = load(SAMPLE)
    assert kind == "suite" and len(results["records"]) == 12


def test_the_summary_reads_the_bars_without_the_records_whose_peer_is_wrong():
    md = R.markdown(load(SAMPLE)[1])
    bf16, block = _rows(md, "## Summary")
    # the eager host time: the medians of the records' own (gemmlab 10-17 µs, torch 9-16), none recorded for FP8
    assert bf16[:8] == ["mm", "BF16", "8", "0.997", "0.833 (256x256x256)", "0.960", "13.5 / 12.5",
                        "80% (64x4096x4096)"]
    assert bf16[-1] == ("gpu_geomean ≥ 1.0× no, gpu_min ≥ 0.85× no, eager_geomean ≥ 0.95× yes, "
                        "decode_dram ≥ 75% yes")
    # fp8_block: 4 records, 256³ whose torch result is wrong (†), 1×4096×4096 without a peer, 16×4096×4096
    # failed: the geomeans hold 1024³ alone; with † they hold 256³ too
    assert block[:7] == ["mm", "FP8 block-scaled", "4", "0.900", "0.900 (1024x1024x1024)", "0.886", "—"]
    assert block[8:12] == ["0.900 / 0.900", "1", "1", "1"]


def test_the_regimes_table_splits_the_linear_rows_by_m_and_leaves_out_a_precision_of_one_regime():
    rows = _rows(R.markdown(load(SAMPLE)[1]), "### By regime")
    # BF16's linear rows at M = 1-64 and 4096, one square, one long K; FP8 block-scaled has one regime with a correct
    # peer (1024³), so no rows
    assert [r[:3] for r in rows] == [["mm", "BF16", "decode (M ≤ 128)"], ["mm", "BF16", "large (M > 2048)"],
                                     ["mm", "BF16", "squares"], ["mm", "BF16", "long K"]]
    assert rows[0][3:6] == ["4", f"{(0.9 * 1.0 * 1.1 * 0.9375) ** 0.25:.3f}", "0.900 (1x4096x4096)"]
    assert rows[1][3:6] == ["2", f"{(1.05 * 1.0) ** 0.5:.3f}", "1.000 (4096x14336x4096)"]
    assert rows[3][3:5] == ["1", "1.200"]
    assert rows[0][6] == f"{(10 / 11 * 21 / 23 * 25 / 24 * 41 / 45) ** 0.25:.3f}"  # the eager ratios' geomean


def test_the_regimes_table_names_each_regimes_bounds():
    def rec(m, ratio, group="linear"):
        return {"op": "mm", "precision": "bf16", "group": group, "m": m, "n": 4096, "k": 4096, "verified": True,
                "gpu_ratio": ratio, "eager_ratio": ratio / 2}
    md = R.markdown({"env": {}, "records": [rec(1, 1.0), rec(512, 0.8), rec(8192, 1.1)]})
    assert [(r[2], r[4], r[6]) for r in _rows(md, "### By regime")] == [
        ("decode (M ≤ 128)", "1.000", "0.500"), ("mid sizes (128 < M ≤ 2048)", "0.800", "0.400"),
        ("large (M > 2048)", "1.100", "0.550")]


def test_each_precision_gets_its_table_in_order_with_wrong_peers_marked():
    md = R.markdown(load(SAMPLE)[1], {("mm", "bf16"): "suite_mm_bf16.png"})
    assert "![ratio against M: mm bf16](suite_mm_bf16.png)" in md and "suite_mm_fp8_block.png" not in md
    rows = _rows(md, "## mm, BF16")
    assert [r[1] for r in rows] == ["1×4096×4096", "16×4096×4096", "64×4096×4096", "4096×4096×4096",
                                    "1×14336×4096", "4096×14336×4096", "256×256×256", "256×256×16384"]
    assert rows[0][3:8] == ["10.0 / 9.0", "0.900", "22.0 / 20.0", "0.909", "84%"]
    assert rows[5][8].endswith("(rows sampled)")
    block = _rows(md, "## mm, FP8 block-scaled")
    assert [r[1] for r in block] == ["1×4096×4096", "16×4096×4096", "256×256×256", "1024×1024×1024"]
    assert block[2][4] == "0.900 †" and block[3][4] == "0.900"
    assert block[1][3] == "FAILED" and block[0][4] == "—"
    assert "- † 256×256×256: torch's blockwise scaled mm is wrong where ceil(K/128) is not a multiple of 4" in md
    assert "- 1×4096×4096: torch could not run it: RuntimeError: Invalid scaling configuration" in md


def test_the_figure_plots_each_nk_against_m_with_parity_and_the_bar():
    records = load(SAMPLE)[1]["records"]
    fig = R.figure(records, "mm", "bf16", "NVIDIA H200")
    gpu_ax, eager_ax = fig.axes[:2]
    lines = {line.get_gid(): line for line in gpu_ax.get_lines()}
    assert list(lines["gpu_ratio:N=4096, K=4096"].get_xdata()) == [1, 16, 64, 4096]
    assert list(lines["gpu_ratio:N=4096, K=4096"].get_ydata()) == pytest.approx([0.9, 1.0, 1.1, 1.05])
    assert list(lines["gpu_ratio:N=14336, K=4096"].get_xdata()) == [1, 4096]
    assert "gpu_ratio:M=N=K" in lines and "gpu_ratio:long K: N=M, K=16384" in lines
    assert list(lines["parity"].get_ydata()) == [1.0, 1.0] and list(lines["bar"].get_ydata()) == [0.85, 0.85]
    assert gpu_ax.get_xscale() == "log" and "eager_ratio:N=4096, K=4096" in {x.get_gid() for x in eager_ax.get_lines()}
    assert "bar" not in {x.get_gid() for x in eager_ax.get_lines()}  # the shape bar is GPU time's; eager has a geomean
    # the legend sits below both panels: no overlap with either
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in (gpu_ax, eager_ax):
        assert legend.y1 <= ax.get_tightbbox(renderer).y0 + 1
    wrong = R.figure(records, "mm", "fp8_block")
    assert any(line.get_gid() == "gpu_ratio:wrong" for line in wrong.axes[0].get_lines())


def test_gemmlab_report_writes_the_markdown_and_a_png_per_op_and_precision(tmp_path):
    written = render_report(SAMPLE, tmp_path)
    assert sorted(p.name for p in written) == ["report.md", "suite_mm_bf16.png", "suite_mm_fp8_block.png"]
    assert all(p.stat().st_size > 10_000 for p in written if p.suffix == ".png")
    text = (tmp_path / "report.md").read_text()
    assert "![ratio against M: mm fp8_block](suite_mm_fp8_block.png)" in text
    short = summary(SAMPLE)
    assert short.startswith("## Summary") and "## mm, BF16" not in short and "| mm | BF16 | 8 |" in short


def test_a_partial_run_says_so(tmp_path):
    results = json.loads(SAMPLE.read_text())
    results["partial"], results["env"]["runs"][0]["finished"] = True, False
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(results))
    md = R.markdown(load(path)[1])
    assert "**Partial**: a run above did not finish." in md and "**not finished**" in md


def test_the_report_command_renders_it(tmp_path):
    env = dict(os.environ, COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "gemmlab.cli", "report", str(SAMPLE), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "suite_mm_bf16.png").exists() and (tmp_path / "report.md").exists()


def test_bmm_records_get_their_table_figure_and_bar():
    results = load(SAMPLE)[1]
    base = {"op": "bmm", "precision": "bf16", "group": "bmm", "layout": "A (batch, M, K) @ B (batch, K, N)",
            "kernel": "cuda/tc4_persistent_bf16", "verified": True, "gpu_us": 10.0, "torch_gpu_us": 9.7,
            "eager_us": 20.0, "torch_eager_us": 19.0, "gpu_ratio": 0.97, "eager_ratio": 0.95, "dram_fraction": 0.5,
            "rel_err": 1e-3, "torch_rel_err": 1e-3, "verify": "full", "out_dtype": "float32"}
    bmm = [dict(base, m=s, n=s, k=s, batch=b) for s in (1024, 512) for b in (16, 8)]
    results = dict(results, records=results["records"] + bmm)
    md = R.markdown(results)
    rows = _rows(md, "## bmm, BF16")
    assert [r[1] for r in rows] == ["8 × 512×512×512", "16 × 512×512×512", "8 × 1024×1024×1024",
                                    "16 × 1024×1024×1024"]
    assert "`torch.bmm`" in md
    assert next(r for r in _rows(md, "## Summary") if r[0] == "bmm")[-1] == "gpu_geomean ≥ 0.95× yes"
    fig = R.figure(results["records"], "bmm", "bf16")
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    assert list(lines["gpu_ratio:bmm: batch 8 of M=N=K"].get_xdata()) == [512, 1024]
    assert "batched matmul" in fig._suptitle.get_text()


def test_fused_records_show_their_plain_gemms_time_and_the_epilogues_bar():
    results = load(SAMPLE)[1]
    base = {"op": "linear_bias_gelu", "precision": "bf16", "group": "linear", "n": 4096, "k": 4096,
            "layout": "x @ w.T + bias, then gelu", "kernel": "cuda/tc4_persistent_bf16", "verified": True,
            "gpu_us": 10.5, "torch_gpu_us": 11.0, "eager_us": 20.0, "torch_eager_us": 21.0, "gpu_ratio": 11 / 10.5,
            "eager_ratio": 1.05, "dram_fraction": 0.5, "rel_err": 1e-3, "torch_rel_err": 1e-3, "verify": "full",
            "out_dtype": "bfloat16", "plain_kernel": "cuda/tc4_persistent_bf16", "plain_gpu_us": 10.0,
            "over_plain": 1.05}
    fused = [dict(base, m=128, over_plain=1.2, gpu_us=12.0), dict(base, m=2048), dict(base, m=8192)]
    md = R.markdown(dict(results, records=results["records"] + fused))
    cost = _rows(md, "### The fused epilogue's cost")
    assert cost == [["linear_bias_gelu", "BF16", "1.050 (2)", "1.050 (2048x4096x4096)",
                     f"{(1.2 * 1.05 * 1.05) ** (1 / 3):.3f}", "no", "—"]]
    rows = _rows(md, "## linear_bias_gelu, BF16")
    assert [r[1] for r in rows] == ["128×4096×4096", "2048×4096×4096", "8192×4096×4096"]
    assert rows[0][-3:] == ["10.0 (`cuda/tc4_persistent_bf16`)", "1.200", "—"]
    # where the run timed torch's own fused call: its cost over torch.mm, per row and at M ≥ 2048
    peer = [dict(r, torch_over_plain=t) for r, t in zip(fused, (1.1, 1.02, 1.04))]
    md = R.markdown(dict(results, records=results["records"] + peer))
    assert _rows(md, "### The fused epilogue's cost")[0][-1] == f"{(1.02 * 1.04) ** 0.5:.3f}"
    assert _rows(md, "## linear_bias_gelu, BF16")[0][-1] == "1.100"
    fused = next(r for r in _rows(md, "## Summary") if r[0] == "linear_bias_gelu")
    assert fused[-1].endswith("over_plain ≤ 1.03× no")
    assert "fused epilogue's cost" not in R.markdown(results) and "plain GEMM µs" not in R.markdown(results)


def test_the_suites_ops_keep_their_order_whichever_a_later_run_replaced():
    """A run of one op (--op mm) appends its records after the others' in the file; the report still lists mm
    first in each precision, then bmm and the fused ops, the precisions in their order."""
    from gemmlab.report.suite import groups

    records = [{"op": "linear_bias_gelu", "precision": "bf16"}, {"op": "bmm", "precision": "bf16"},
               {"op": "mm", "precision": "fp8"}, {"op": "mm", "precision": "bf16"},
               {"op": "linear_bias", "precision": "bf16"}]
    assert groups(records) == [("mm", "bf16"), ("bmm", "bf16"), ("linear_bias", "bf16"),
                               ("linear_bias_gelu", "bf16"), ("mm", "fp8")]


def test_records_with_the_kernels_each_side_launched_show_them_in_a_last_column():
    results = load(SAMPLE)[1]
    rec = next(r for r in results["records"] if (r["precision"], r["m"], r["n"], r["k"]) == ("bf16", 1, 4096, 4096))
    rec["kernels"] = [{"name": "gemv2_mma_swap", "grid": [64, 1, 1], "block": [512, 1, 1], "us": 9.5}]
    rec["torch_kernels"] = [{"name": "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_splitK_TNT", "grid": [4, 20, 1],
                             "block": [384, 1, 1], "us": 8.1},
                            {"name": "cublasLt::splitKreduce_kernel", "grid": [32, 1, 1], "block": [32, 16, 1],
                             "us": 1.9}]
    md = R.markdown(results)
    assert "kernels launched [grid]: gemmlab / torch" in md.split("## mm, BF16")[1].split("\n## ")[0]
    rows = _rows(md, "## mm, BF16")
    assert rows[0][1] == "1×4096×4096" and rows[0][-1] == (
        "gemv2_mma_swap [64] / nvjet_sm90_tst_64x16_64x16_4x1_v_bz_splitK_TNT [4×20] + "
        "cublasLt::splitKreduce_kernel [32]")
    assert rows[1][-1] == "— / —"  # a record of the same table without them
    assert "kernels launched" not in md.split("## mm, FP8 block-scaled")[1]  # a table none of whose records has them


def test_the_files_notes_are_quoted_under_its_runs():
    results = load(SAMPLE)[1]
    assert "> " not in R.markdown(results).split("## Summary")[0]
    results["notes"] = ["Its eager times are not valid: the profiler stayed attached."]
    head = R.markdown(results).split("## Summary")[0]
    assert "\n> Its eager times are not valid: the profiler stayed attached.\n" in head
