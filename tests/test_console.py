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
