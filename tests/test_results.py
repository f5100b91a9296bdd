"""Results files read back and merged: bench --append's merge of a new run into an earlier one on the same GPU."""
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
