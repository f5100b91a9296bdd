"""What a results file puts into the dispatch table: the registered kernels' verified timings only, never a bench
--variant's record, nor a timing whose check did not pass (whatever order the table then ranks them in)."""
from gemmlab import dispatch


def _record(kernel, ms, **extra):
    return {"kernel": kernel, "backend": "cuda", "precision": "bf16", "m": 512, "n": 512, "k": 512, "median_ms": ms,
            "verified": True, "status": "ok", **extra}


def test_a_variant_and_an_unverified_timing_never_enter_the_table():
    table = dispatch.table_from_results({"env": {"gpu": {"name": "NVIDIA H200"}}, "records": [
        _record("cuda/tc4_persistent_bf16", 0.030),
        _record("cuda/tc4_persistent_bf16", 0.010, variant_of="cuda/tc4_persistent_bf16", variant="BM=64"),
        _record("cuda/tc6_stream_k_bf16", 0.020, verified=False),
    ]})
    assert table["NVIDIA H200"]["bf16"]["512x512x512"] == [{"kernel": "cuda/tc4_persistent_bf16", "ms": 0.030}]
