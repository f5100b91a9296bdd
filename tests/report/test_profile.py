"""Parsing Nsight Compute output: a real CSV saved from an H200 (cuda/v2_smem and cuda/v1_naive at 4096³,
``ncu --clock-control none --csv --page raw --print-units base``), the missing-ncu path and ncu's error lines."""
import os
import stat
from pathlib import Path

import pytest

from gemmlab.harness import profile as P
from gemmlab.problem import Problem

DATA = Path(__file__).parent / "data"
SAMPLE = (DATA / "ncu_sample.csv").read_text()
NAIVE = (DATA / "ncu_v1_naive.csv").read_text()
N = 4096


def test_parse_skips_prof_lines_and_units_row():
    rows = P.parse_ncu_csv(SAMPLE)
    assert len(rows) == 1  # one launch; the ==PROF== lines, the target's JSON line and the units row are gone
    row = rows[0]
    assert row["Kernel Name"] == "v2_smem"
    assert row["dram__bytes_read.sum"] == 8_399_594_240  # "8,399,594,240" in the file
    assert row["launch__registers_per_thread"] == 32
    assert row["Block Size"] == "(32, 32, 1)"  # not a number: stays text
    assert row["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(99.55)


def test_summarize_v2_smem():
    prof = P.summarize(P.parse_ncu_csv(SAMPLE))
    assert prof["status"] == "ok" and prof["launches"] == 1 and prof["kernel_names"] == ["v2_smem"]
    assert prof["dram_read_bytes"] == 8_399_594_240
    assert prof["dram_write_bytes"] == 69_209_088
    assert prof["dram_bytes"] == 8_399_594_240 + 69_209_088
    assert prof["l2_bytes"] == 20_654_512_256
    assert prof["smem_bank_conflicts_ld"] == 751_725
    assert prof["smem_bank_conflicts_st"] == 19_392_584
    assert prof["achieved_occupancy_pct"] == pytest.approx(99.55)
    assert prof["registers_per_thread"] == 32
    assert prof["smem_static_bytes"] == 8192
    assert prof["duration_ms"] == pytest.approx(15.63184)
    # every C element takes K FFMAs: the counter confirms the 2MNK FLOP model exactly
    assert prof["ffma_thread_inst"] == N**3
    # C is written once: DRAM writes are within a few percent of 4MN bytes
    assert prof["dram_write_bytes"] == pytest.approx(4 * N * N, rel=0.05)


def test_naive_kernel_model_against_counters():
    """The seeds' naive model counts 8MNK bytes of global reads; L1 and L2 serve all but about 1% of them."""
    prof = P.summarize(P.parse_ncu_csv(NAIVE))
    modeled = 8 * N**3
    assert prof["kernel_names"] == ["v1_naive"]
    assert modeled / prof["dram_read_bytes"] > 100
    assert prof["l1_bytes"] > prof["l2_bytes"] > prof["dram_read_bytes"]
    assert P.measured_intensity(2 * N**3, prof) > 0.25 * 100  # far above the modeled 0.25 FLOP/byte


def test_summarize_adds_launches_of_one_call():
    rows = P.parse_ncu_csv(SAMPLE) * 2
    prof = P.summarize(rows)
    assert prof["launches"] == 2
    assert prof["dram_read_bytes"] == 2 * 8_399_594_240
    assert prof["registers_per_thread"] == 32  # a maximum, not a sum
    assert prof["achieved_occupancy_pct"] == pytest.approx(99.55)  # a time-weighted mean


def test_parse_rejects_text_without_csv():
    with pytest.raises(ValueError):
        P.parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")


@pytest.mark.parametrize("text, expected", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", "permission"),
    ("==ERROR== Failed to initialize the profiler: LibraryNotLoaded", "LibraryNotLoaded"),
    ("==PROF== Disconnected\n==WARNING== No kernels were profiled.", "No kernels were profiled"),
])
def test_counter_errors_become_unavailable(text, expected):
    result = P.result_from_output(text, "", 1)
    assert result["status"] == "unavailable"
    assert result["reason"].startswith("unavailable: ") and expected in result["reason"]


def test_ncu_missing(monkeypatch):
    monkeypatch.setattr(P, "find_ncu", lambda: None)
    result = P.profile_kernel("cuda/v2_smem", Problem(64, 64, 64))
    assert result == {"status": "unavailable", "reason": result["reason"]}
    assert result["reason"].startswith("unavailable:") and "ncu" in result["reason"]


def test_command_profiles_only_the_nvtx_range():
    cmd = P.ncu_command("ncu", "cuda/v2_smem", Problem(2048, 3072, 4096), launch_count=1, python="python3")
    text = " ".join(cmd)
    assert "--clock-control none" in text and "--target-processes all" in text
    assert "--nvtx --nvtx-include gemmlab_profile/" in text
    assert "--launch-skip 0 --launch-count 1" in text and "--csv --page raw" in text
    assert "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum" in text
    i = cmd.index("gemmlab._profile_target")
    assert cmd[i - 2:i + 4] == ["python3", "-m", "gemmlab._profile_target", "--shape", "2048x3072x4096", "--seed"]
    assert cmd[-1] == "cuda/v2_smem"
    many = P.ncu_command("ncu", ["cuda/v1_naive", "peers/cublas_fp32"], Problem(64, 64, 64), python="python3")
    assert many[-2:] == ["cuda/v1_naive", "peers/cublas_fp32"] and "--launch-count" not in many


def _with_markers(groups):
    """ncu CSV text for several kernel calls, each preceded by the target's marker launch."""
    lines = SAMPLE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header, units, row = lines[start], lines[start + 1], lines[start + 2]
    marker = row.replace('"v2_smem"', '"gemmlab_profile_marker"')
    body = []
    for count in groups:
        body.append(marker)
        body += [row] * count
    summary = '{"ok": true, "kernels": ["cuda/v2_smem", "cuda/v6_bank_conflict_free"], "skipped": {"cpu/x": "no"}}'
    return "\n".join([header, units, *body, summary]) + "\n"


def test_markers_split_one_ncu_run_into_kernels():
    rows = P.parse_ncu_csv(_with_markers([1, 2]))
    groups = P.split_by_marker(rows)
    assert [len(g) for g in groups] == [1, 2]
    assert P.split_by_marker(P.parse_ncu_csv(SAMPLE)) == [P.parse_ncu_csv(SAMPLE)]  # no markers: one group
    out = P.results_from_output(_with_markers([1, 2]), "", 0, ["cuda/v2_smem", "cuda/v6_bank_conflict_free", "cpu/x"])
    assert out["cuda/v2_smem"]["launches"] == 1 and out["cuda/v2_smem"]["dram_read_bytes"] == 8_399_594_240
    assert out["cuda/v6_bank_conflict_free"]["launches"] == 2
    assert out["cpu/x"]["status"] == "unavailable" and "did not run: no" in out["cpu/x"]["reason"]

@pytest.mark.skipif(os.name != "posix", reason="fake ncu is a shell script")
def test_profile_kernel_through_a_fake_ncu(tmp_path):
    """The whole path without a GPU: an 'ncu' that prints the saved output stands in for the real one."""
    sample = tmp_path / "out.csv"
    sample.write_text(SAMPLE)
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\ncat '{sample}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    kept = tmp_path / "kept.csv"
    result = P.profile_kernel("cuda/v2_smem", Problem(N, N, N), ncu=str(fake), csv_path=kept)
    assert result["status"] == "ok" and result["dram_read_bytes"] == 8_399_594_240
    assert result["kernel"] == "cuda/v2_smem" and result["problem"]["m"] == N
    assert result["command"].startswith(str(fake)) and result["command"].endswith(" cuda/v2_smem")
    assert "gemmlab._profile_target --shape 4096x4096x4096" in result["command"]
    assert kept.read_text() == SAMPLE


def test_merge_profile(tmp_path):
    import json

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"env": {}, "records": [{"kernel": "cuda/v2_smem", "m": N, "n": N, "k": N}]}))
    prof = P.summarize(P.parse_ncu_csv(SAMPLE)) | {"kernel": "cuda/v2_smem", "problem": {"m": N, "n": N, "k": N}}
    assert P.merge_profile(path, prof)
    assert json.loads(path.read_text())["records"][0]["profile"]["dram_read_bytes"] == 8_399_594_240
    other = prof | {"kernel": "cuda/v1_naive"}
    assert not P.merge_profile(path, other)
    assert json.loads(path.read_text())["profiles"][0]["kernel"] == "cuda/v1_naive"


def test_target_refusal_is_reported():
    out = '==PROF== Connected to process 7\n{"ok": false, "reason": "K too large"}\n==WARNING== No kernels were profiled.\n'
    result = P.result_from_output(out, "", 2)
    assert result["status"] == "unavailable" and "K too large" in result["reason"]
