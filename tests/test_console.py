"""Tables on a narrow terminal: every header and cell whole (stacked where the table does not fit), never cut."""
from rich.console import Console

from gemmlab.console import Fitted, timed_table

RECORD = {"kernel": "cuda/tc8_block_scaled_fp8[BM=128,STAGES=5]", "status": "ok", "median_ms": 0.1302,
          "tflops": 1055.4, "pct_peak": 53.3, "peer": "peers/cublaslt_fp8_block", "peer_ratio": 0.79,
          "speedup_prev": 1.02, "rel_err": 2.1e-3, "model": {"modeled_intensity": 143.71, "bound": "smem"},
          "bw_util_model": 61.0}


def _render(renderable, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def test_a_table_too_wide_for_80_columns_is_stacked_whole():
    text = _render(Fitted(timed_table([RECORD])), 80)
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines())
    lines = text.splitlines()
    assert lines[0] == "cuda/tc8_block_scaled_fp8[BM=128,STAGES=5]"
    assert "  ms: 0.130" in lines and "  × cublaslt_fp8_block: 0.79" in lines and "  bound: smem" in lines


def test_a_table_that_fits_is_drawn_as_a_table():
    text = _render(Fitted(timed_table([RECORD])), 200)
    assert "┃ kernel" in text and "cuda/tc8_block_scaled_fp8[BM=128,STAGES=5]" in text and "…" not in text


def test_bench_names_the_records_whose_samples_waited_on_the_host():
    """More than half of a record's samples late (the GPU idle before the host issued the launch): bench's closing
    lines name it, with its count, so that its time and ratio are not read as GPU time; half or fewer, no line."""
    from gemmlab.console import HOST_BOUND_SHOWN, bench_closing, host_bound_lines

    def rec(kernel, late, samples=30, m=8):
        return {"kernel": kernel, "m": m, "n": 4096, "k": 4096, "late": late, "samples": samples}

    assert host_bound_lines([rec("cuda/gemv2_mma_swap_fp8", 2), rec("peers/cublaslt_fp8", 15)]) == []
    [(line, _)] = host_bound_lines([rec("cuda/gemv2_mma_swap_fp8", 1), rec("peers/cublaslt_fp8", 30)])
    assert "1 record(s)" in line and "peers/cublaslt_fp8 at 8x4096x4096 (30/30)" in line and "gemv2" not in line
    many = [rec("peers/cublaslt_fp8", 16, m=m) for m in range(1, HOST_BOUND_SHOWN + 3)]
    [(line, _)] = host_bound_lines(many)
    assert f"{HOST_BOUND_SHOWN + 2} record(s)" in line and line.endswith("and 2 more")
    closing = [text for text, _ in bench_closing({"records": [rec("peers/cublaslt_fp8", 30)]}, None, None)]
    assert any(text.startswith("host-bound: 1 record(s)") for text in closing)
