"""Results files read back and merged: bench --append's merge of a new run into an earlier one on the same GPU, and
what a path must be to be read."""
import json
from pathlib import Path

import pytest

from gemmlab.results import merge_runs


def test_append_says_what_a_replacement_drops_and_which_ratios_stay_with_an_earlier_peer():
    def rec(kernel, backend="cuda", **extra):
        return {"kernel": kernel, "backend": backend, "precision": "bf16", "m": 64, "n": 64, "k": 64,
                "peer": "peers/cublas_bf16", **extra}

    old = {"env": {"command": "first", "git_sha": "aaa", "time": "t0"}, "notes": [],
           "records": [rec("peers/cublas_bf16", "peer"), rec("cuda/tc4_persistent_bf16", profile={"dram": 1}),
                       rec("cuda/tc2_wgmma_tma_bf16")],
           "noise": [{"kernel": "peers/cublas_bf16", "m": 64, "n": 64, "k": 64, "diff_pct": 9.0}]}
    new = {"env": {"command": "second", "git_sha": "bbb", "time": "t1"}, "notes": [],
           "records": [rec("peers/cublas_bf16", "peer"), rec("cuda/tc4_persistent_bf16")],
           "noise": [{"kernel": "peers/cublas_bf16", "m": 64, "n": 64, "k": 64, "diff_pct": 1.0}]}
    merged = merge_runs(old, new)
    assert [r["kernel"] for r in merged["records"]] == ["cuda/tc2_wgmma_tma_bf16", "peers/cublas_bf16",
                                                         "cuda/tc4_persistent_bf16"]
    assert [n["diff_pct"] for n in merged["noise"]] == [1.0]
    assert any("tc4_persistent_bf16" in n and "profile" in n for n in merged["notes"])
    assert any("cuda/tc2_wgmma_tma_bf16 keep their ratios" in n for n in merged["notes"])
    assert merged["env"]["runs"] == [{"command": "first", "git_sha": "aaa", "time": "t0"},
                                     {"command": "second", "git_sha": "bbb", "time": "t1", "records": 2}]


def test_append_keeps_a_layouts_records_beside_the_natural_ones_and_pairs_medians_within_a_run():
    """A --layout run's record of a kernel at a shape is another record than the row-major one; a ratio from two
    medians takes the peer timed in the same run, never one an --append run timed later under other conditions."""
    from gemmlab.report.data import peer_ratio

    def rec(kernel, ms, layout=None, backend="cuda"):
        r = {"kernel": kernel, "backend": backend, "precision": "bf16", "m": 64, "n": 64, "k": 64,
             "peer": "peers/cublas_bf16", "median_ms": ms, "status": "ok", "verified": True}
        return {**r, "layout": layout} if layout else r

    old = {"env": {"command": "first", "time": "t0"}, "records": [rec("peers/cublas_bf16", 2.0, backend="peer"),
                                                                   rec("cuda/tc4_persistent_bf16", 1.0)]}
    new = {"env": {"command": "--layout row,col", "time": "t1"},
           "records": [rec("cuda/tc4_persistent_bf16", 1.5, "row,col")]}
    merged = merge_runs(old, new)
    assert [(r["kernel"], r.get("layout"), r["run"]) for r in merged["records"]] == [
        ("peers/cublas_bf16", None, "t0"), ("cuda/tc4_persistent_bf16", None, "t0"),
        ("cuda/tc4_persistent_bf16", "row,col", "t1")]
    assert peer_ratio(merged["records"][1], merged["records"]) == 2.0
    assert peer_ratio(merged["records"][2], merged["records"]) is None  # no peer of its layout in its run
    later = {"env": {"command": "--no-peers --warm", "time": "t2"}, "records": [rec("cuda/tc4_persistent_bf16", 0.5)]}
    again = merge_runs(merged, later)
    tc4 = next(r for r in again["records"] if r["run"] == "t2")
    assert peer_ratio(tc4, again["records"]) is None  # the peer's median is t0's, of another run


def test_a_results_path_is_read_only_where_it_is_a_regular_file_of_a_bounded_size(tmp_path, monkeypatch):
    """A pipe (whose reading may never end), a device (/dev/zero: never ends) and a file past any results JSON's size
    are refused before a byte is read, as a directory is."""
    import os

    from gemmlab import results
    from gemmlab.errors import ResultsFileError

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path, words in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"), (tmp_path, "a directory")):
        with pytest.raises(ResultsFileError, match=words):
            results.read_text(path)
    big = tmp_path / "big.json"
    big.write_text("[]" + " " * 2000)
    monkeypatch.setattr(results, "MAX_JSON_BYTES", 1024)
    with pytest.raises(ResultsFileError, match="big.json: 0 MiB, past the 0 MiB of any results JSON"):
        results.load(big)


def test_report_summarizes_a_chapter_json_claim_by_claim():
    from gemmlab.report import summary

    table = summary(Path(__file__).resolve().parents[1] / "results" / "h200" / "chapter.json")
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    claims = json.loads((Path(__file__).resolve().parents[1] / "results" / "h200" / "chapter.json").read_text())[
        "claims"]
    assert len(rows) == len(claims) and all(row.rstrip(" |").split(" | ")[-1] for row in rows)


def test_an_empty_gemmlab_cache_is_the_default_folder(monkeypatch):
    from gemmlab.cache import cache_root

    monkeypatch.setenv("GEMMLAB_CACHE", "")
    assert cache_root() == Path.home() / ".cache" / "gemmlab"
