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
from gemmlab.chapter.emulate import emulate_swapped, seed_guard_strays
from gemmlab.chapter.command import load, write_docs
from gemmlab.chapter.facts import S512, S1024, SHAPES
from gemmlab.chapter.render import SECTIONS
from gemmlab.problem import Problem
from gemmlab.report import render_report

cpu_only = pytest.mark.skipif(device.gpu() is not None, reason="checks the path without a GPU")
VERDICTS = {HOLDS, FAILS, ONLY_AS, NOT_MEASURED}


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
        assert r["verdict"] in VERDICTS - {NOT_MEASURED}, (r["id"], r["verdict"])  # a GPU run judges every claim
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
