"""gemmlab chapter: every claim of the two seed texts judged on a run. Without a GPU the command runs end to end (V0
timed, the CUDA C kernels compiled, the numba ones simulated) and says first what it could not measure; the claims
table, its formulas, the Chinese table and the two generated pages are checked here; a GPU run's judgments are
checked on records shaped as the H200 run writes them."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import device
from gemmlab.chapter import claims_table, facts_of
from gemmlab.chapter.claim import (BLAS, CUBLAS, CUBLAS_TF32, FAILS, HOLDS, NOT_MEASURED, NV1, NV1_16, NV2, ONLY_AS, V0,
                                   V1, V1_16, V1_ROWS, V2, V2_16)
from gemmlab.chapter.claims import CLAIMS
from gemmlab.chapter.emulate import emulate_swapped, seed_guard_stores, seed_guard_strays
from gemmlab.chapter.command import load, write_docs
from gemmlab.chapter.facts import S512, S1024, SHAPES
from gemmlab.chapter.render import CACHES, SECTIONS, page, verdict_text
from gemmlab.problem import SEED_SHAPE
from gemmlab.problem import Problem
from gemmlab.report import render_report

cpu_only = pytest.mark.skipif(device.gpu() is not None, reason="checks the path without a GPU")
VERDICTS = {HOLDS, FAILS, ONLY_AS, NOT_MEASURED}
NO_RUN_MEASURES = {"v1.fma_cycles"}  # an FFMA's latency in cycles: gemmlab has no latency probe


def gemmlab(*args, timeout=900):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "gemmlab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One run of the command without a GPU, V0 at small shapes: its output and its JSON."""
    out = tmp_path_factory.mktemp("chapter") / "chapter.json"
    proc = gemmlab("chapter", "--cpu-shape", "32x48x40", "--cpu-shape", "64x96x80", "--json", str(out))
    return proc, out


def _gpu_like(ms_of: dict) -> dict:
    """A chapter JSON as a GPU run writes it: verified, timed records of every kernel at its shapes."""
    records = []
    for (kernel, shape), ms in ms_of.items():
        p = Problem(*shape)
        records.append({"kernel": kernel, "m": shape[0], "n": shape[1], "k": shape[2], "precision": "fp32",
                        "median_ms": ms, "iqr_ms": ms / 100, "samples": 20, "verified": True, "status": "ok",
                        "rel_err": 1e-7, "max_abs_err": 3e-4,
                        "gflops": p.flops() / ms / 1e6, "tflops": p.flops() / ms / 1e9, "bw_util_model": 500.0})
    return {"records": records, "not_measured": None, "shapes": {"cpu": ["512x512x512", "1024x1024x1024"]},
            "env": {"ceilings": {"copy_bw_gbs": 4000.0}}}


GPU_MS = {(V0, S512): 600.0, (V0, S1024): 5000.0, (BLAS, S512): 1.0, (BLAS, S1024): 2.0}
for _shape in SHAPES:
    _scale = Problem(*_shape).flops() / Problem(*S1024).flops()
    GPU_MS.update({(k, _shape): ms * _scale for k, ms in ((V1, 0.36), (NV1, 1.5), (V2, 0.25), (NV2, 0.5),
                                                         (V1_ROWS, 2.4), (V1_16, 0.4), (NV1_16, 1.6), (V2_16, 0.3),
                                                         (CUBLAS, 0.064), (CUBLAS_TF32, 0.02))})


def test_claims_cover_both_seeds_with_every_field():
    rows = claims_table(facts_of(_gpu_like(GPU_MS)))
    assert len(rows) >= 25 and len({r["id"] for r in rows}) == len(rows)
    assert {r["seed"] for r in rows} == {"000", "002"}
    assert sum(r["seed"] == "002" for r in rows) >= 10
    for r in rows:
        assert r["quote"] and r["seed_figure"] and r["command"] and r["section"], r["id"]
        if r["id"] not in NO_RUN_MEASURES:  # a GPU run judges every claim a gemmlab run can measure
            assert r["verdict"] in VERDICTS - {NOT_MEASURED}, (r["id"], r["verdict"])
        for field in ("claim", "measured", "reason"):
            assert r[field]["en"] and r[field]["zh"], (r["id"], field)
    # the walk-through places every claim once
    placed = [cid for _, ids in SECTIONS for cid in ids]
    assert sorted(placed) == sorted(r["id"] for r in rows)


def test_gpu_judgments_follow_the_measurements():
    by_id = {r["id"]: r for r in claims_table(facts_of(_gpu_like(GPU_MS)))}
    assert by_id["v1.slower_than_cpu"]["verdict"] == FAILS  # 0.36 ms against 5,000 ms
    assert by_id["v1.coalescing"]["values"]["ms_rows_on_x"] / by_id["v1.coalescing"]["values"]["ms"] == \
        pytest.approx(2.4 / 0.36)
    assert by_id["next.tens_of_times"]["verdict"] == FAILS and by_id["next.tens_of_times"]["values"]["gain"] == \
        pytest.approx(0.36 / 0.25)
    assert by_id["v0.cubic"]["values"]["ratio"] == pytest.approx(5000 / 600)
    # V1 above the single DRAM roof 4,000 GB/s × 0.25 = 1 TFLOPS
    assert by_id["roofline.bandwidth_bound"]["verdict"] == FAILS
    slow = {**GPU_MS, **{(V1, s): GPU_MS[(V1, s)] * 20 for s in SHAPES}}  # a V1 under the roof
    assert {r["id"]: r for r in claims_table(facts_of(_gpu_like(slow)))}["roofline.bandwidth_bound"]["verdict"] == HOLDS


def test_formulas():
    rows = {r["id"]: r for r in claims_table(facts_of(_gpu_like(GPU_MS)))}
    m, n, k = 2048, 3072, 4096
    assert rows["model.flops"]["values"]["flops"] == 2 * m * n * k
    assert rows["model.bytes"]["values"]["compulsory"] == 4 * 3 * 4096 ** 2
    assert rows["model.intensity"]["values"]["intensity"] == pytest.approx(m * n * k / (2 * (m * k + k * n + m * n)))
    assert rows["model.n_over_6"]["values"]["n4096"] == pytest.approx(4096 / 6)
    assert rows["v1.ratio_one"]["values"]["per_element"] == pytest.approx(4 * 0.25, rel=1e-3)  # 0.25 FLOP/byte
    assert rows["roofline.ridge"]["values"]["a100"] == pytest.approx(19.5e12 / 1555e9)
    assert rows["v1.per_thread"]["values"] == {"bytes": 8 * 1024 + 4, "flops": 2 * 1024}
    assert rows["v1.five_hundred"]["values"]["seed"] == 512 and rows["v1.five_hundred"]["values"]["each"] == 1024
    assert rows["table.v1_roof"]["values"]["roof"] == pytest.approx(1555 * 0.25)
    assert rows["table.bw_util"]["values"]["seed_count_pct"] == pytest.approx(8 * 4096 ** 3 / 0.12 / 1555e9 * 100)
    assert rows["table.cublas"]["values"]["seed_tflops"] > 156  # past the A100's dense TF32 peak


def test_the_seeds_launch_and_store_guard_fail_where_they_should():
    assert emulate_swapped(64, 64, 64) < 1e-6  # M = N = K: the swap is harmless
    assert emulate_swapped(64, 96, 128) > 0.1
    assert seed_guard_strays(2048, 3072) == 0 and seed_guard_strays(1000, 1000) > 0
    rows, cols = 33, 17
    brute = sum(((r < rows) or (c < cols)) and not (r < rows and c < cols) for r in range(64) for c in range(32))
    assert seed_guard_strays(rows, cols) == brute


@cpu_only
def test_without_a_gpu_it_runs_and_says_first_what_it_could_not_measure(cpu_run):
    proc, out = cpu_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    first = proc.stdout.lstrip().splitlines()[0]
    assert first.startswith("No CUDA GPU") and "Not measured here" in proc.stdout.split("\n\n")[0]
    results = load(str(out))
    assert results["not_measured"] and len(results["claims"]) >= 25
    verdicts = {r["id"]: r["verdict"] for r in results["claims"]}
    assert verdicts["v1.kernel"] == NOT_MEASURED and verdicts["model.flops"] == HOLDS
    v0 = next(r for r in results["records"] if r["kernel"] == V0 and r["m"] == 64)
    assert v0["verified"] and v0["median_ms"] > 0  # V0 ran here
    sims = [r for r in results["records"] if r["kernel"] in (NV1, NV2, NV1_16) and r.get("status") == "simulated"]
    assert {r["kernel"] for r in sims} == {NV1, NV2, NV1_16}
    compiled = {r["kernel"] for r in results["records"] if r.get("status") == "compiled"}
    assert {V1, V2, V1_ROWS, V1_16, V2_16} <= compiled


@cpu_only
def test_chinese_table(cpu_run):
    _, out = cpu_run
    proc = gemmlab("chapter", "--from", str(out), "--lang", "zh")
    assert proc.returncode == 0, proc.stderr
    assert "种子章节逐条核对" in proc.stdout and "没有 CUDA GPU" in proc.stdout
    assert "成立" in proc.stdout and "未测量" in proc.stdout and "不成立" in proc.stdout
    assert "does not hold" not in proc.stdout


NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?")


def _claim_rows(page: str) -> list[list[str]]:
    """The claims' rows of a page's tables (each begins with the seed it quotes)."""
    return [line.split(" | ") for line in page.splitlines() if re.match(r"\| (first|second) seed|\| 第[一二]篇", line)]


@pytest.mark.parametrize("source", ["gpu", "cpu"])
def test_english_and_chinese_pages_carry_the_same_claims_and_numbers(tmp_path, source, request):
    if source == "gpu":
        results = dict(_gpu_like(GPU_MS), kind="chapter")
        results["claims"] = claims_table(facts_of(results))
    else:
        if device.gpu() is not None:
            pytest.skip("the CPU run's JSON")
        results = load(str(request.getfixturevalue("cpu_run")[1]))
    en_path, zh_path = write_docs(results, tmp_path, "chapter.json")
    en, zh = _claim_rows(en_path.read_text()), _claim_rows(zh_path.read_text())
    assert len(en) == len(zh) == len(results["claims"])
    by_id = {c["id"]: c for c in results["claims"]}
    in_page_order = [by_id[cid] for _, ids in SECTIONS for cid in ids]
    for a, b, claim in zip(en, zh, in_page_order):
        assert a[1] == b[1] == claim["quote"].replace("|", "\\|")  # the same claim, row by row
        numbers = [sorted(NUMBER.findall(" ".join(row[3:6]))) for row in (a, b)]
        assert numbers[0] == numbers[1], (claim["id"], a[3:6], b[3:6])
    # the numbers come from the JSON: a measured figure changed there changes both pages
    bumped = dict(results, claims=[dict(c, measured={"en": c["measured"]["en"] + " 12345",
                                                     "zh": c["measured"]["zh"] + " 12345"}) for c in results["claims"]])
    en2, zh2 = write_docs(bumped, tmp_path / "b", "chapter.json")
    assert en2.read_text().count("12345") == zh2.read_text().count("12345") == len(results["claims"])


def test_report_draws_the_single_roof_beside_the_levels(tmp_path):
    import json

    results = dict(_gpu_like(GPU_MS), kind="chapter")
    results["claims"] = claims_table(facts_of(results))
    path = tmp_path / "chapter.json"
    path.write_text(json.dumps(results))
    written = {p.name for p in render_report(path, tmp_path / "out")}
    assert {"roofline_single.png", "roofline_levels.png", "report.md", "report_zh.md"} <= written
    report = (tmp_path / "out" / "report.md").read_text()
    assert "roofline_single.png" in report and "roofline_levels.png" in report


def test_the_committed_pages_say_the_same_thing():
    """docs/chapter.md and docs/zh/chapter.md, as generated from one chapter JSON: the same claims in the same
    order, with the same numbers (a hand edit of one page fails here)."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    en, zh = _claim_rows((docs / "chapter.md").read_text()), _claim_rows((docs / "zh" / "chapter.md").read_text())
    assert len(en) == len(zh) == len(CLAIMS)
    for a, b in zip(en, zh):
        assert a[1] == b[1]
        assert sorted(NUMBER.findall(" ".join(a[3:6]))) == sorted(NUMBER.findall(" ".join(b[3:6]))), (a, b)


# -- the committed H200 run, judged again by these claims ----------------------------------------------------------
H200_JSON = Path(__file__).resolve().parents[1] / "results" / "h200" / "chapter.json"


@pytest.fixture(scope="module")
def h200():
    """The claims judged on the committed H200 chapter run's records (and results/h200/fp32.json's counters)."""
    results = load(str(H200_JSON))
    results["claims"] = claims_table(facts_of(results))
    return results, {r["id"]: r for r in results["claims"]}


def _rec(results, kernel, shape):
    return next(r for r in results["records"] if r["kernel"] == kernel and (r["m"], r["n"], r["k"]) == shape)


def test_tens_of_times_is_only_tf32s_gap_to_v1(h200):
    results, by_id = h200
    row = by_id["next.tens_of_times"]
    v1 = _rec(results, V1, S1024)["median_ms"]
    fp32, tf32 = _rec(results, CUBLAS, S1024)["median_ms"], _rec(results, CUBLAS_TF32, S1024)["median_ms"]
    assert row["verdict"] == FAILS
    assert row["values"]["cublas_fp32_gain"] == pytest.approx(v1 / fp32) and 5 < v1 / fp32 < 10  # 0.356 / 0.0637
    assert row["values"]["cublas_tf32_gain"] == pytest.approx(v1 / tf32) and v1 / tf32 > 20  # 0.356 / 0.0158
    assert row["values"]["cublas_fp32_gain_4096"] == pytest.approx(by_id["table.gap"]["values"]["gap"])
    for lang in ("en", "zh"):
        assert "0.0637" in row["measured"][lang] and "0.0158" in row["measured"][lang]
        assert "22.6×" in row["reason"][lang] and "5.6×" in row["reason"][lang] and "8.2×" in row["reason"][lang]
    assert "is the gap to cuBLAS" not in row["reason"]["en"] and "only TF32" in row["reason"]["en"]


def test_tiling_cuts_loads_issued_but_doubles_dram_bytes(h200):
    _, by_id = h200
    for cid in ("v2.fewer_loads", "next.smem"):
        row = by_id[cid]
        v = row["values"]
        assert row["verdict"] == ONLY_AS and row["only_as"]["en"] == "per load issued", cid
        assert v["dram_v1"] == pytest.approx(4.33e9, rel=0.01) and v["dram_v2"] == pytest.approx(8.47e9, rel=0.01)
        assert v["l2_v1"] == pytest.approx(19.7e9, rel=0.01) and v["l2_v2"] == pytest.approx(20.6e9, rel=0.01)
        for lang in ("en", "zh"):
            assert "4.33" in row["reason"][lang] and "8.47" in row["reason"][lang] and "1.96×" in row["reason"][lang]
        assert "about the same bytes" in row["reason"]["en"] and "DRAM see about" not in row["reason"]["en"]
    assert "4.33 GB" in by_id["v2.fewer_loads"]["measured"]["en"]


def test_one_quantity_one_verdict_per_load_issued(h200):
    _, by_id = h200
    ids = ("v1.quarter", "v1.ratio_one", "v1.read_global", "table.accesses", "v1.per_thread", "v1.rows_reread",
           "v1.redundancy", "v1.reread", "roofline.below_ridge")
    for cid in ids:
        row = by_id[cid]
        assert row["verdict"] == ONLY_AS and row["only_as"] == {"en": "per load issued", "zh": "发出的加载"}, cid
    assert verdict_text(by_id["v1.quarter"], "en") == "holds only as: per load issued"
    assert verdict_text(by_id["v1.quarter"], "zh") == "仅就发出的加载而言成立"
    # the reasons agree: 0.25 per byte a thread loads, about 32 per DRAM byte
    assert by_id["v1.quarter"]["values"]["dram_intensity"] == pytest.approx(
        by_id["v1.ratio_one"]["values"]["per_dram_element"] / 4)
    assert "0.25" in by_id["v1.ratio_one"]["reason"]["en"] and "issued" in by_id["table.accesses"]["reason"]["en"]


def test_waiting_on_memory_is_latency_on_l1_hits_in_both_claims(h200):
    _, by_id = h200
    latency, waiting = by_id["v1.latency"], by_id["roofline.waiting"]
    assert latency["verdict"] == waiting["verdict"] == ONLY_AS and latency["only_as"] == waiting["only_as"]
    assert "L1 hits" in latency["only_as"]["en"]
    assert latency["values"]["ratio"] == pytest.approx(2.22, abs=0.01)
    assert "hundreds of cycles" in latency["reason"]["en"] and "几百个时钟周期" in latency["reason"]["zh"]
    assert "by L1 at" in waiting["measured"]["en"] and "按 gemmlab 的分级模型，瓶颈在 L1" in waiting["measured"]["zh"]


def test_tolerance_a_sequential_fp32_sum_errs_by_more_cublas_stays_within(h200):
    """Against float64 V1 and V2 err past 5e-4; the seed's check compares with its own FP32 CPU loop, which sums in
    V1's order and so errs alike, a comparison the run does not make: the claim is not measured, not refuted."""
    results, by_id = h200
    row = by_id["harness.tolerance"]
    v1, v2, cublas = (_rec(results, k, SEED_SHAPE)["max_abs_err"] for k in (V1, V2, CUBLAS))
    assert row["verdict"] == NOT_MEASURED
    assert row["values"] == {"max_abs_err": v1, "v2_max_abs_err": v2, "cublas_max_abs_err": cublas}
    assert v1 > 5e-4 and v2 > 5e-4 and cublas < 5e-4
    assert "this run does not make that comparison" in row["reason"]["en"]
    assert "one FP32 add after another" in row["reason"]["en"] and "cuBLAS FP32 stays within 5e-4 (4.2e-04)" in \
        row["reason"]["en"]
    assert "a correct FP32 sum over" not in row["reason"]["en"]
    for lang in ("en", "zh"):
        assert f"{v1:.1e}" in row["reason"][lang] and f"{v2:.1e}" in row["reason"][lang]


def test_the_h200_ridge_is_labelled_and_the_same_everywhere(h200):
    _, by_id = h200
    ridge = by_id["roofline.ridge"]["values"]
    assert ridge["h200"] == pytest.approx(66.9 / 4.8) and ridge["h200_measured"] == pytest.approx(16.1, abs=0.05)
    assert by_id["v1.needs_ten"]["values"]["per_element"] == pytest.approx(4 * ridge["h200_measured"])
    assert by_id["v1.needs_ten"]["values"]["per_element_datasheet"] == pytest.approx(4 * ridge["h200"])
    near = by_id["v2.near_ridge"]
    assert near["values"]["ridge"] == ridge["h200_measured"] and near["values"]["ridge_datasheet"] == ridge["h200"]
    assert near["values"]["dram_intensity"] == pytest.approx(16.2, abs=0.05)  # V2's FLOPs per DRAM byte at 4096³
    assert "per DRAM byte V2 does 16.2" in near["measured"]["en"]
    for cid in ("roofline.ridge", "roofline.below_ridge", "v2.near_ridge", "v1.needs_ten"):
        text = by_id[cid]["measured"]
        assert "measured roofs" in text["en"] and "datasheet" in text["en"], cid
        assert "实测屋顶" in text["zh"] and "规格" in text["zh"], cid
    assert "16.2" not in by_id["roofline.ridge"]["measured"]["en"]  # datasheet peak over measured DRAM: not a ridge


def test_bw_util_on_the_measured_roof(h200):
    results, by_id = h200
    row = by_id["table.bw_util"]
    v1 = _rec(results, V1, (4096, 4096, 4096))
    pct = 8 * 4096 ** 3 / (v1["median_ms"] * 1e-3) / (results["env"]["ceilings"]["copy_bw_gbs"] * 1e9) * 100
    assert row["values"]["h200_pct"] == pytest.approx(pct) and round(pct) == 601
    assert "601% of the measured 4,118 GB/s" in row["measured"]["en"] and "516%" not in row["measured"]["en"]


def test_cublas_figure_is_16_bit_tensor_cores_or_sparse_tf32(h200):
    _, by_id = h200
    row = by_id["table.cublas"]
    assert row["reason"]["en"].endswith("16-bit tensor cores, or sparse TF32") and "half-precision" not in \
        row["reason"]["en"]
    assert "BF16/FP16 稠密峰值 312 TFLOPS（或稀疏 TF32，2 × 156）才容得下这一数值" in row["measured"]["zh"]
    assert "只有 BF16" not in row["measured"]["zh"]
    assert "半精度" not in by_id["table.gap"]["only_as"]["zh"]


def test_ten_or_more_is_a_loose_lower_bound(h200):
    _, by_id = h200
    row = by_id["v1.needs_ten"]
    assert row["verdict"] == ONLY_AS and row["only_as"]["en"] == "a loose lower bound"
    assert row["values"]["per_element"] > 10 and row["values"]["per_element_datasheet"] > 10


def test_the_seeds_store_guard_overwrites_valid_elements():
    got = seed_guard_stores(1000, 1000)
    # 1000 rows × 24 columns past N, and 24 rows past M × 1000 columns; those past N and above the last row wrap to
    # C[row + 1][col − N], inside C; the last row's and every row past M's land past C's end
    assert got == {"stray": 48_000, "inside": 999 * 24, "outside": 24 + 24 * 1000, "targets": 999 * 24}
    assert seed_guard_stores(2048, 3072)["stray"] == 0
    m, n, tile = 33, 17, 32
    gm, gn = 64, 32
    strays = [(r, c) for r in range(gm) for c in range(gn) if (r < m or c < n) and not (r < m and c < n)]
    inside = [(r, c) for r, c in strays if c + r * n < m * n]
    assert seed_guard_stores(m, n, tile) == {"stray": len(strays), "inside": len(inside),
                                             "outside": len(strays) - len(inside),
                                             "targets": len({c + r * n for r, c in inside})}
    rows = {r["id"]: r for r in claims_table(facts_of(_gpu_like(GPU_MS)))}
    row = rows["v2.store_guard"]
    assert row["values"]["ragged_inside"] == 999 * 24 and "can overwrite it with 0" in row["reason"]["en"]
    assert "stores outside C" not in row["measured"]["en"]


def test_each_claim_sits_under_the_heading_its_reason_belongs_to():
    assert "harness.timing" in CACHES and "v1.slower_than_cpu" not in CACHES
    assert {"v1.latency", "v1.ratio_one", "table.accesses"} <= CACHES
    results = dict(_gpu_like(GPU_MS), kind="chapter")
    results["claims"] = claims_table(facts_of(results))
    en = page(results, "en", "chapter.json")
    caches, text = en.split("## Where real caches change the story")[1].split("## Where the seeds' text is wrong")
    text = text.split("## Glossary")[0]
    assert "an average of back-to-back launches" in caches and "an average of back-to-back launches" not in text
    assert "a first run's context start" in text and "a first run's context start" not in caches


def test_new_claims_the_harness_formula_and_shape_the_ridge_and_the_fma(h200):
    results, by_id = h200
    v1 = _rec(results, V1, SEED_SHAPE)
    m, n, k = SEED_SHAPE
    gflops = by_id["harness.gflops"]
    assert gflops["verdict"] == HOLDS and gflops["values"]["seed_formula"] == pytest.approx(
        2.0 * m * n * k / (v1["median_ms"] * 1e6)) == pytest.approx(v1["gflops"])
    shape = by_id["harness.shape"]
    assert shape["verdict"] == HOLDS and (shape["values"]["m"], shape["values"]["k"], shape["values"]["n"]) == \
        (2048, 4096, 3072)
    below = by_id["roofline.below_ridge"]
    assert below["values"]["dram_intensity"] > below["values"]["h200_measured"] > below["values"]["a100"] > 0.25
    fma = by_id["v1.fma_cycles"]
    assert fma["verdict"] == NOT_MEASURED and fma["seed_figure"]["zh"] == "几个周期"
    assert "no gemmlab command" in fma["command"]


def test_sections_name_their_heading_and_quotes_follow_the_seed():
    claims = {c.id: c for c in CLAIMS}
    for cid in ("v1.kernel", "harness.shape", "harness.tolerance", "harness.timing", "harness.gflops"):
        assert claims[cid].section == "版本V1朴素矩阵乘法 › CUDA Kernel 代码实现", cid
    for cid in ("v2.launch", "v2.store_guard"):
        assert claims[cid].section == "版本V1共享内存分块 › CUDA Kernel 代码实现", cid
    assert not any(c.section in ("CUDA Kernel 代码实现", "实测性能参考") for c in CLAIMS)
    assert claims["table.gap"].section == "性能瓶颈与 Roofline 模型"
    assert "…" in claims["v1.warp_friendly"].quote
    assert "(GFLOPS)" not in claims["table.v1_roof"].quote
    assert claims["table.v1_roof"].claim[1] == "V1 的 1150 GFLOPS 低于种子自己的 0.25 × 1555 GB/s 屋顶"


def test_the_chinese_page_speaks_chinese(h200):
    results, by_id = h200
    zh = page(results, "zh", "results/h200/chapter.json")
    # the seed's figures as the seed writes them
    rows = {r[1]: r for r in _claim_rows(zh)}
    figures = {cid: rows[by_id[cid]["quote"].replace("|", "\\|")][2] for cid in
               ("v1.latency", "v1.slower_than_cpu", "v1.coalescing", "v1.rows_reread", "v1.per_thread")}
    assert figures == {"v1.latency": "几百个时钟周期", "v1.slower_than_cpu": "比CPU还慢", "v1.coalescing": "无法合并",
                       "v1.rows_reread": "N 次、M 次", "v1.per_thread": "8K + 4 字节，2K FLOPs"}
    assert "hundreds of cycles" not in zh and "(tens of times)" not in zh
    # roof sources, names, verdicts and wording
    assert "4,118 GB/s（实测）" in by_id["roofline.model"]["measured"]["zh"] and "（measured）" not in zh
    assert "sgemm_cpu（000，参考实现）" in zh and "float64 参考结果（`harness/reference.py`）；`cpu/blas` 为 CPU 对照" in zh
    assert "the reference" not in zh and "is the CPU peer" not in zh
    assert "仅在以下意义上成立" not in zh and "：：" not in zh and "仅就发出的加载而言成立" in zh
    assert "仅就数量级（缓存缺失使增长超过 N³）而言成立" in zh
    assert re.search(r"^- .+（仅就[^）]*(?:（[^）]*）[^）]*)*而言成立）：", zh, re.M)  # "：" after the parenthesis
    assert "N 翻倍时耗时增至 31.6 倍" in zh and "（仅为其 1/32）" in zh
    assert "缓存使几乎全部重复读取无需访问 DRAM" in zh and "分级模型给出的下界" in zh and "分级模型界" not in zh
    assert "| 重复读取 |" in zh and "| 冗余比 |" in zh and "冗余读取" not in zh


def test_the_docs_link_the_figures_wherever_they_are_written(h200, tmp_path):
    results, _ = h200
    a = write_docs(results, tmp_path / "a", "results/h200/chapter.json")
    b = write_docs(results, tmp_path / "x" / "y" / "docs", "results/h200/chapter.json")
    assert [p.read_text() for p in a] == [p.read_text() for p in b]
    if (H200_JSON.parent / "chapter" / "roofline_single.png").exists():
        assert "![](../results/h200/chapter/roofline_single.png)" in a[0].read_text()
        assert "![](../../results/h200/chapter/roofline_levels.png)" in a[1].read_text()


# -- --json without a path: the committed H200 run is not replaced by another machine's ---------------------------
H200_INFO = device.GPUInfo("NVIDIA H200", 132, (9, 0), 60 * 2**20, 232448, 1980.0, 141 * 2**30, "", "")


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """An empty folder with results/h200/chapter.json (a copy of the committed H200 run) as the current directory,
    and a chapter "run" that returns that run as measured on the GPU the probe finds (none unless a test says so):
    the command's choice of where to write, without the minutes of a run."""
    import json

    import gemmlab.chapter

    default = tmp_path / "results" / "h200" / "chapter.json"
    default.parent.mkdir(parents=True)
    default.write_text(H200_JSON.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(device, "probe", lambda: (None, "hidden from this test"))

    def run(opts=None, listener=None):
        info, why = device.probe()
        results = json.loads(H200_JSON.read_text())
        results["env"]["gpu"] = None if info is None else {"name": info.name}
        results["not_measured"] = None if info else {"en": "No CUDA GPU", "zh": "No CUDA GPU"}
        return results

    monkeypatch.setattr(gemmlab.chapter, "run", run)
    return default


def test_json_without_a_path_does_not_replace_another_gpus_run(checkout, capsys):
    """Without a GPU, `gemmlab chapter --json` replaced the committed H200 run with one whose GPU claims are not
    measured: refused in one line before anything runs, the file untouched; a path named writes there."""
    import json

    from gemmlab.cli import main

    before = checkout.read_bytes()
    assert main(["chapter", "--json"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1, captured
    assert lines[0].startswith("gemmlab chapter: error: --json: results/h200/chapter.json") and \
        "NVIDIA H200, this run is on no GPU" in lines[0] and "--json PATH" in lines[0], lines[0]
    assert checkout.read_bytes() == before
    assert main(["chapter", "--json", "mine.json"]) == 0  # a path named is the user's to write
    assert json.loads(Path("mine.json").read_text())["env"]["gpu"] is None and checkout.read_bytes() == before
    # a saved run of no GPU, rewritten to the default path: the same refusal
    assert main(["chapter", "--from", "mine.json", "--json"]) == 2
    assert "mine.json's run is on no GPU" in capsys.readouterr().err and checkout.read_bytes() == before


def test_json_without_a_path_on_the_h200_writes_the_committed_file(checkout, monkeypatch, capsys):
    """On an H200, `gemmlab chapter --json` writes results/h200/chapter.json as before; on another GPU it is refused;
    where no file is there yet, any run writes it."""
    import json

    from gemmlab.cli import main

    monkeypatch.setattr(device, "probe", lambda: (H200_INFO, ""))
    checkout.write_text(json.dumps({**json.loads(checkout.read_text()), "stale": True}))
    assert main(["chapter", "--json"]) == 0, capsys.readouterr().err
    written = json.loads(checkout.read_text())
    assert "stale" not in written and written["env"]["gpu"]["name"] == "NVIDIA H200"
    h100 = device.GPUInfo("NVIDIA H100 80GB HBM3", 132, (9, 0), 50 * 2**20, 232448, 1980.0, 80 * 2**30, "", "")
    monkeypatch.setattr(device, "probe", lambda: (h100, ""))
    capsys.readouterr()
    assert main(["chapter", "--json"]) == 2
    assert "holds the chapter measured on NVIDIA H200, this run is on NVIDIA H100 80GB HBM3" in capsys.readouterr().err
    checkout.unlink()
    monkeypatch.setattr(device, "probe", lambda: (None, "hidden from this test"))
    assert main(["chapter", "--json"]) == 0 and json.loads(checkout.read_text())["env"]["gpu"] is None
